"""LTI launches in a real chromium: from the test platform's course page (another site: the
platform is served on 127.0.0.1, Dikkat on localhost) through Dikkat's login initiation, the
platform's authorisation endpoint and its auto-submitted form into Dikkat's course page."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from lti_platform import INSTRUCTOR, LEARNER, Launch, TestPlatform
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture
def platform(transactional_db, mini_course_dir, live_server, settings):
    from datetime import timedelta

    from django.utils import timezone

    from courses.importer import import_course

    now = timezone.now()
    (mini_course_dir / "assessments").mkdir()
    (mini_course_dir / "assessments" / "odev.toml").write_text(
        f"""slug = "odev"
title = "Birinci ödev"
kind = "homework"
opens = {(now - timedelta(days=1)).isoformat(timespec="seconds")}
due = {(now + timedelta(days=7)).isoformat(timespec="seconds")}
items = ["first-choice"]
""",
        encoding="utf-8",
    )
    import_course(mini_course_dir)
    settings.SITE_URL = live_server.url
    settings.LTI_ALLOW_PRIVATE_HOSTS = True  # the test platform is http on 127.0.0.1
    with TestPlatform() as lms:
        call_command("lti_platform", *lms.registration_args(), "--course", "mini", stdout=StringIO())
        from lti.endpoints import tool_endpoints

        lms.tool = tool_endpoints()
        yield lms


def test_instructor_links_the_lms_course_then_a_student_lands_in_it(page, browser, platform, make_user):
    from courses.models import Course, Enrollment
    from lti.models import LtiUser

    assert "127.0.0.1" in platform.url and "localhost" in page.base_url  # two sites, as in real life
    course = Course.objects.get(slug="mini")
    page.goto(platform.course_page_url(Launch(sub="teacher-1", roles=[INSTRUCTOR], name="Ayşe Hoca")))
    page.get_by_role("button", name="Open Dikkat").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("LMS kursunuzu bağlayın")
    expect(page.get_by_role("main")).to_contain_text("“Dikkat 101 (LMS)” hangi Dikkat kursunu açsın?")
    page.get_by_label("Mini kurs").check()
    page.get_by_role("button", name="Kursu bağla").click()
    # Not an instructor of the course here: the link waits for one of its instructors.
    expect(page.get_by_role("status")).to_contain_text(
        "“Mini kurs” kursundaki bir eğitmen tarafından onaylanmasını bekliyor"
    )
    teacher = LtiUser.objects.get(sub="teacher-1").user
    assert not course.is_instructor(teacher)

    course.instructors.add(make_user("hoca", password="Gizli-parola-2026"))
    approver_context = browser.new_context(locale="tr-TR")
    approver = approver_context.new_page()
    approver.goto(page.base_url + "/accounts/login/")
    approver.locator("#id_username").fill("hoca")
    approver.locator("#id_password").fill("Gizli-parola-2026")
    approver.locator("main form button[type=submit]").click()
    approver.goto(page.base_url + "/lti/baglantilar/mini/")
    expect(approver.get_by_role("table")).to_contain_text("Ayşe Hoca")  # who asks, to know them
    approver.get_by_role("button", name="“Dikkat 101 (LMS)” isteğini onayla").click()
    expect(approver.get_by_text("“Dikkat 101 (LMS)” artık “Mini kurs” kursunu açıyor")).to_be_visible()
    approver_context.close()
    assert course.is_instructor(teacher)

    page.goto(platform.course_page_url(Launch(sub="teacher-1", roles=[INSTRUCTOR], name="Ayşe Hoca")))
    page.get_by_role("button", name="Open Dikkat").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Mini kurs")
    assert page.url == page.base_url + "/kurs/mini/"

    student_context = browser.new_context(locale="tr-TR")
    student = student_context.new_page()
    student.goto(
        platform.course_page_url(Launch(sub="student-1", roles=[LEARNER], email="selin@lms.example"))
    )
    student.get_by_role("button", name="Open Dikkat").click()
    expect(student.get_by_role("heading", level=1)).to_have_text("Mini kurs")
    assert student.url == page.base_url + "/kurs/mini/"
    linked = LtiUser.objects.get(sub="student-1").user
    expect(student.get_by_role("button", name=f"Çıkış yap ({linked.username})")).to_be_visible()
    assert Enrollment.objects.filter(user=linked, course__slug="mini").exists()
    student.get_by_role("link", name="Birinci ders").first.click()
    expect(student.get_by_role("heading", level=1)).to_have_text("Birinci ders")
    student_context.close()


@pytest.mark.console_allows(r"status of 403 \(Forbidden\) \(http://localhost:\d+/lti/launch/\)")
def test_a_learner_before_the_instructor_sees_what_to_do(page, platform):
    from django.contrib.sessions.models import Session

    page.goto(platform.course_page_url(Launch(sub="student-1", roles=[LEARNER])))
    page.get_by_role("button", name="Open Dikkat").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("LMS üzerinden giriş reddedildi")
    expect(page.get_by_role("alert")).to_contain_text("Bu LMS kursu henüz bir Dikkat kursuna bağlanmadı.")
    assert Session.objects.count() == 0


def test_a_student_works_inside_the_lms_frame(page, platform):
    from courses.models import Course
    from lti.models import LtiContext, Platform

    course = Course.objects.get(slug="mini")
    LtiContext.objects.create(platform=Platform.objects.get(), context_id="lms-course-1", course=course)
    page.goto(platform.course_page_url(Launch(sub="student-1", roles=[LEARNER]), framed=True))
    page.get_by_role("button", name="Open Dikkat").click()
    frame = page.frame_locator('iframe[name="dikkat"]')
    expect(frame.get_by_role("heading", level=1)).to_have_text("Mini kurs")
    # A click inside the frame is a cross-site request: the session cookie must come with it.
    frame.get_by_role("link", name="Birinci ders").first.click()
    expect(frame.get_by_role("heading", level=1)).to_have_text("Birinci ders")
    expect(frame.get_by_role("button", name=re.compile(r"Çıkış yap \(lms-"))).to_be_visible()


def test_dynamic_registration_in_the_lms_frame_tells_the_lms_it_is_done(page, live_server, settings):
    from lti.models import Platform

    settings.SITE_URL = live_server.url
    settings.LTI_ALLOW_PRIVATE_HOSTS = True  # the test platform is http on 127.0.0.1
    out = StringIO()
    call_command("lti_platform", "invite", stdout=out)
    registration_url = out.getvalue().split()[-1]
    with TestPlatform(client_id="dyn-client") as lms:
        page.goto(f"{lms.url}/admin/register-tool?url={registration_url}")
        expect(page.locator("#status")).to_have_text(f"Tool registered: closed by {live_server.url}")
        frame = page.frame_locator('iframe[name="tool"]')
        expect(frame.get_by_role("heading", level=1)).to_have_text("Dikkat kaydedildi")
        assert Platform.objects.get().client_id == "dyn-client"


def test_instructor_picks_a_lesson_and_the_answer_reaches_the_lms(page, platform):
    from courses.models import Course
    from lti.models import LtiContext, Platform

    course = Course.objects.get(slug="mini")
    LtiContext.objects.create(platform=Platform.objects.get(), context_id="lms-course-1", course=course)
    page.goto(
        platform.course_page_url(Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True), framed=True)
    )
    page.get_by_role("button", name="Open Dikkat").click()
    frame = page.frame_locator('iframe[name="dikkat"]')
    expect(frame.get_by_role("heading", level=1)).to_have_text("Dikkat bağlantısı ekleyin")
    frame.get_by_label("İkinci ders").check()
    frame.get_by_role("button", name="Bağlantıyı LMS'e ekle").click()
    # The signed answer is posted to the platform by the page's script (CSP form-action allows it).
    expect(frame.locator("#added")).to_have_text("Link added: İkinci ders")
    assert platform.deep_links[0]["custom"] == {"dikkat_lesson": "mini/second"}


def test_instructor_picks_an_assessment_and_a_student_lands_on_it_in_the_frame(page, browser, platform):
    from courses.models import Course
    from lti.models import LtiContext, Platform

    course = Course.objects.get(slug="mini")
    LtiContext.objects.create(platform=Platform.objects.get(), context_id="lms-course-1", course=course)
    page.goto(
        platform.course_page_url(Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True), framed=True)
    )
    page.get_by_role("button", name="Open Dikkat").click()
    frame = page.frame_locator('iframe[name="dikkat"]')
    frame.get_by_role("group", name="Değerlendirme").get_by_label("Birinci ödev").check()
    frame.get_by_role("button", name="Bağlantıyı LMS'e ekle").click()
    expect(frame.locator("#added")).to_have_text("Link added: Birinci ödev")
    (item,) = platform.deep_links
    assert item["custom"] == {"dikkat_assessment": "mini/odev"} and item["lineItem"]["scoreMaximum"] == 1.0

    student_context = browser.new_context(locale="tr-TR")
    student = student_context.new_page()
    launch = Launch(
        sub="student-1",
        roles=[LEARNER],
        resource_link_id="link-2",
        claims={"https://purl.imsglobal.org/spec/lti/claim/custom": item["custom"]},
    )
    student.goto(platform.course_page_url(launch, framed=True))
    student.get_by_role("button", name="Open Dikkat").click()
    frame = student.frame_locator('iframe[name="dikkat"]')
    expect(frame.get_by_role("heading", level=1)).to_contain_text("Birinci ödev")
    expect(frame.get_by_role("main")).to_contain_text("Skor hangi iki parçadan hesaplanır?")
    student_context.close()


def test_the_picker_fits_a_phone_and_has_no_serious_accessibility_violation(page, platform):
    from courses.models import Course
    from lti.models import LtiContext, Platform
    from tests.browser.test_accessibility import AXE, serious_violations

    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    course = Course.objects.get(slug="mini")
    LtiContext.objects.create(platform=Platform.objects.get(), context_id="lms-course-1", course=course)
    page.goto(platform.course_page_url(Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True)))
    page.get_by_role("button", name="Open Dikkat").click()  # a new window: no frame
    expect(page.get_by_role("heading", level=1)).to_have_text("Dikkat bağlantısı ekleyin")
    found = []
    for language, heading in (("tr", "Dikkat bağlantısı ekleyin"), ("en", "Add a Dikkat link")):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 844})
            assert page.goto(page.base_url + "/lti/icerik-sec/").ok
            expect(page.get_by_role("heading", level=1)).to_have_text(heading)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= width
            page.screenshot(path=str(SHOTS / f"lti-picker-{language}-{width}.png"), full_page=True)
            found += [f"[{language}, {width}]: {v}" for v in serious_violations(page)]
    assert not found, "\n".join(found)
