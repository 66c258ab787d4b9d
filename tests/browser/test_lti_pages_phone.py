"""The course's LMS links page on a phone: an instructor approving an LMS course's request sees
who asks and the Approve / Decline buttons without scrolling sideways (each request is a card of
labelled lines below 48rem), and the Unlink button of a linked LMS course stays on the screen;
at 1280 px the requests are still a table with its header row. In Turkish and in English, with
no serious accessibility violation."""

import os
from pathlib import Path

import pytest
import test_lti_launch
import test_lti_roster
from django.test import Client
from lti_platform import INSTRUCTOR, LEARNER, Launch
from playwright.sync_api import Page, expect
from test_lti_launch import run_launch

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("DIKKAT_LTI_SHOTS", Path(__file__).resolve().parents[2] / "test-artifacts"))
PASSWORD = "Gizli-parola-2026"
PHONE, DESKTOP = 390, 1280
platform = test_lti_launch.platform
linked = test_lti_launch.linked
roster = test_lti_roster.roster
# Long on purpose: a real LMS course title and a professor's name and address do not fit a phone's line.
ASKING_COURSE = "Derin Öğrenmeye Giriş: Dikkat Mekanizmaları, 2026 Güz Dönemi, Şube 3 (LMS)"
ASKER = "Prof. Dr. Mehmet Ali Öztürkoğlu"
ASKER_EMAIL = "mehmet.ali.ozturkoglu@bilgisayar-muhendisligi.universite.example.edu.tr"

WORDS = {
    "tr": {
        "heading": "“Mini kurs” kursunun LMS kursları",
        "approve": f"“{ASKING_COURSE}” isteğini onayla",
        "decline": f"“{ASKING_COURSE}” isteğini reddet",
        "unlink": "Bağlantıyı kaldır: “Dikkat 101 (LMS)”",
        "asked_by": "İsteyen",
        "decision": "Karar",
    },
    "en": {
        "heading": "LMS courses of “Mini kurs”",
        "approve": f"Approve “{ASKING_COURSE}”",
        "decline": f"Decline “{ASKING_COURSE}”",
        "unlink": "Unlink: “Dikkat 101 (LMS)”",
        "asked_by": "Asked by",
        "decision": "Decision",
    },
}


@pytest.fixture
def links_page(platform, linked, make_user):
    """The mini course is opened by "Dikkat 101 (LMS)" (linked), and a second LMS course asks
    for it: its instructor teaches nothing in Dikkat, so the request waits for "hoca"."""
    from lti.models import LtiContext

    asker = Client()
    launch = Launch(
        sub="teacher-2",
        roles=[INSTRUCTOR],
        context_id="lms-course-2",
        context_title=ASKING_COURSE,
        resource_link_id="link-2",
        name=ASKER,
        email=ASKER_EMAIL,
    )
    assert run_launch(asker, platform, launch)["Location"] == "/lti/kurs-sec/"
    assert asker.post("/lti/kurs-sec/", {"course": "mini"}).status_code == 302
    assert LtiContext.objects.get(context_id="lms-course-2").awaits_approval
    linked.instructors.add(make_user("hoca", password=PASSWORD))
    return "/lti/baglantilar/mini/"


def log_in(page: Page, username: str) -> None:
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def sideways_overflow(page: Page) -> list[str]:
    """What a person would have to scroll sideways to see: the page itself, or a table's region."""
    return page.evaluate(
        """() => {
          const found = [];
          const root = document.documentElement;
          if (root.scrollWidth > window.innerWidth) found.push(`page ${root.scrollWidth} > ${window.innerWidth}`);
          for (const region of document.querySelectorAll('.table-scroll')) {
            if (region.scrollWidth > region.clientWidth)
              found.push(`${region.getAttribute('aria-labelledby')} ${region.scrollWidth} > ${region.clientWidth}`);
          }
          return found;
        }"""
    )


def assert_on_screen(locator, width: int) -> None:
    """The element is shown and lies wholly between the screen's left and right edges."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{box} is outside 0..{width}"


def label_before(cell) -> str:
    """The column's name the stylesheet writes before a cell (CSS generated content), or 'none'."""
    return cell.evaluate("cell => getComputedStyle(cell, '::before').content")


def each_view(page: Page, path: str, headings: dict[str, str], shot: str, *, exact: bool = True):
    """Open ``path`` in each language (``headings``: its h1 there, whole or, not ``exact``, in
    part) at 1280 and 390 px: a screenshot, nothing to scroll sideways; yields (language, width)
    for the caller's own checks of that view, then gathers axe's serious violations of it and
    fails at the end if there were any."""
    from tests.browser.test_accessibility import AXE, serious_violations

    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = []
    for language, heading in headings.items():
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (DESKTOP, PHONE):
            page.set_viewport_size({"width": width, "height": 844})
            assert page.goto(page.base_url + path).ok
            h1 = expect(page.get_by_role("heading", level=1))
            h1.to_have_text(heading) if exact else h1.to_contain_text(heading)
            page.screenshot(path=str(SHOTS / f"{shot}-{language}-{width}.png"), full_page=True)
            assert sideways_overflow(page) == [], f"[{language}, {width}]"
            yield language, width
            found += [f"[{language}, {width}]: {v}" for v in serious_violations(page)]
    assert not found, "\n".join(found)


def header_row_is_a_row(page: Page) -> bool:
    """The table's header row is on the screen with its column headers side by side."""
    header = page.locator("thead tr").first
    if not header.is_visible():
        return False
    boxes = [th.bounding_box() for th in header.locator("th").all()]
    return all(b is not None and b["height"] > 1 for b in boxes) and len({round(b["y"]) for b in boxes}) == 1


def test_an_instructor_on_a_phone_sees_who_asks_and_the_decision_buttons_without_scrolling(page, links_page):
    log_in(page, "hoca")
    headings = {language: words["heading"] for language, words in WORDS.items()}
    for language, width in each_view(page, links_page, headings, "lti-links"):
        words = WORDS[language]
        request = page.get_by_role("table").get_by_role("row").filter(has_text=ASKER)
        asked_by = request.get_by_role("cell").filter(has_text=ASKER)
        for button in (words["approve"], words["decline"]):
            assert_on_screen(request.get_by_role("button", name=button, exact=True), width)
        assert_on_screen(page.get_by_role("button", name=words["unlink"], exact=True), width)
        assert_on_screen(asked_by.get_by_text(ASKER), width)
        if width == PHONE:
            # A card: the column's name stands before what it names; the header row is not shown.
            assert not header_row_is_a_row(page)
            assert label_before(asked_by) == f'"{words["asked_by"]}"'
            decision = request.get_by_role("cell").filter(has=page.get_by_role("button"))
            assert label_before(decision) == f'"{words["decision"]}"'
        else:
            assert header_row_is_a_row(page)
            expect(page.get_by_role("columnheader", name=words["asked_by"])).to_be_visible()
            assert label_before(asked_by) == "none"

    # The buttons still post the decision (with the form's CSRF token), from the phone.
    page.get_by_role("button", name=WORDS["en"]["approve"], exact=True).click()
    expect(page.get_by_text(f"“{ASKING_COURSE}” now opens “Mini kurs”")).to_be_visible()
    from lti.models import LtiContext

    assert LtiContext.objects.get(context_id="lms-course-2").course is not None


ROSTER_WORDS = {
    "tr": {"heading": "“Dikkat 101 (LMS)” üyeleri", "account": "Dikkat hesabı", "dropped": "Kurstan ayrıldı"},
    "en": {"heading": "Members of “Dikkat 101 (LMS)”", "account": "Dikkat account", "dropped": "Dropped"},
}


@pytest.fixture
def roster_page(roster, linked, make_user):
    """The roster of "Dikkat 101 (LMS)" read twice: a member with a long name left in between."""
    from lti.models import LtiContext
    from lti.roster import sync_roster

    roster.members["lms-course-1"].append(
        roster.member("student-9", [LEARNER], email="ayse@lms.example", name="Ayşe Nur Karaosmanoğlu-Yılmaz")
    )
    context = LtiContext.objects.get(context_id="lms-course-1")
    sync_roster(context)
    roster.members["lms-course-1"].pop()  # she leaves the LMS course
    sync_roster(context)
    linked.instructors.add(make_user("hoca", password=PASSWORD))
    return f"/lti/uyeler/{context.pk}/"


def test_the_roster_of_an_lms_course_reads_as_cards_on_a_phone(page, roster_page):
    log_in(page, "hoca")
    headings = {language: words["heading"] for language, words in ROSTER_WORDS.items()}
    for language, width in each_view(page, roster_page, headings, "lti-roster"):
        member = page.get_by_role("table").get_by_role("row").filter(has_text="Karaosmanoğlu")
        left = member.get_by_role("cell").last  # when she left the LMS course
        assert_on_screen(left, width)
        if width == PHONE:
            assert not header_row_is_a_row(page)
            assert label_before(left) == f'"{ROSTER_WORDS[language]["dropped"]}"'
        else:
            assert header_row_is_a_row(page)
            assert label_before(left) == "none"
