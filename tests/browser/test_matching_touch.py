"""Matching on a phone: it fits the screen, and a finger can place the answers (a tap on an
answer then on a row, or a drag); the selects stay the way that works everywhere."""

import pytest
from conftest import console_problems
from playwright.sync_api import expect
from test_rendered_text import write_course

pytestmark = [pytest.mark.browser]

# Long answers (wider than a phone as one line) and a formula.
QUESTION = """
    [[questions]]
    slug = "roles"
    kind = "matching"
    prompt = "Eşleştirin."
    distractors = ["Skorları $\\\\sqrt{d_k}$'ya bölerek küçültür"]

    [[questions.pairs]]
    left = "Query"
    right = "Ne arıyorum? Kendi Query/Key/Value matrisleriyle yan yana çalışan bir attention"

    [[questions.pairs]]
    left = "Key"
    right = "Bende ne var?"

    [[questions.pairs]]
    left = "Value"
    right = "Ne veririm?"
"""


@pytest.fixture
def phone(browser, live_server, transactional_db, tmp_path, make_user):
    """A logged-in, enrolled student on a 390 px touch screen, at a lesson with a matching question."""
    from courses.importer import import_course
    from courses.models import Course

    import_course(write_course(tmp_path, QUESTION))
    user = make_user("telefon", password="Gizli-parola-2026")
    Course.objects.get(slug="yazili").enroll(user)
    context = browser.new_context(
        locale="tr-TR",
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
        device_scale_factor=2,
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    problems = console_problems(page)
    page.goto(live_server.url + "/accounts/login/")
    page.locator("#id_username").fill("telefon")
    page.locator("#id_password").fill("Gizli-parola-2026")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    page.goto(live_server.url + "/kurs/yazili/ders/")
    yield page
    context.close()
    assert problems == []


def select_value(question, left_id):
    return question.locator(f"tr[data-left={left_id}] select").input_value()


def option_value(question, text):
    return question.locator("tr[data-left=l1] option", has_text=text).get_attribute("value")


def test_matching_fits_a_390_px_screen(phone):
    question = phone.locator("#q-roles")
    question.scroll_into_view_if_needed()
    box = question.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    for element in question.locator("select, .chip").all():
        right = element.bounding_box()
        assert right["x"] + right["width"] <= 390, element.inner_text()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    expect(question.locator(".chip math")).to_have_count(1)  # the formula is a formula


def test_tap_an_answer_then_a_row_places_it(phone):
    question = phone.locator("#q-roles")
    question.locator(".chip", has_text="Bende ne var?").tap()
    expect(question.locator(".chip", has_text="Bende ne var?")).to_have_class("chip chip-picked")
    question.locator("tr[data-left=l2] th").tap()
    assert select_value(question, "l2") == option_value(question, "Bende ne var?")
    expect(question.locator(".chip-picked")).to_have_count(0)  # one tap places one answer


def test_drag_with_a_finger_places_the_answer(phone):
    question = phone.locator("#q-roles")
    question.scroll_into_view_if_needed()
    chip = question.locator(".chip", has_text="Ne veririm?").bounding_box()
    row = question.locator("tr[data-left=l3] th").bounding_box()
    start = (chip["x"] + chip["width"] / 2, chip["y"] + chip["height"] / 2)
    end = (row["x"] + 20, row["y"] + row["height"] / 2)
    cdp = phone.context.new_cdp_session(phone)

    def touch(kind, points):
        return cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    touch("touchStart", [{"x": start[0], "y": start[1]}])
    for step in range(1, 11):
        x = start[0] + (end[0] - start[0]) * step / 10
        y = start[1] + (end[1] - start[1]) * step / 10
        touch("touchMove", [{"x": x, "y": y}])
    touch("touchEnd", [])
    assert select_value(question, "l3") == option_value(question, "Ne veririm?")
    assert select_value(question, "l1") == ""
