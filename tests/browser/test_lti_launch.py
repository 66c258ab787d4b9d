"""LTI launches in a real chromium: from the test platform's course page (another site: the
platform is served on 127.0.0.1, Dikkat on localhost) through Dikkat's login initiation, the
platform's authorisation endpoint and its auto-submitted form into Dikkat's course page."""

from io import StringIO

import pytest
from django.core.management import call_command
from lti_platform import INSTRUCTOR, LEARNER, Launch, TestPlatform
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]


@pytest.fixture
def platform(transactional_db, mini_course_dir, live_server, settings):
    from courses.importer import import_course

    import_course(mini_course_dir)
    settings.SITE_URL = live_server.url
    with TestPlatform() as lms:
        call_command("lti_platform", *lms.registration_args(), "--course", "mini", stdout=StringIO())
        from lti.endpoints import tool_endpoints

        lms.tool = tool_endpoints()
        yield lms


def test_instructor_links_the_lms_course_then_a_student_lands_in_it(page, browser, platform):
    from courses.models import Course, Enrollment
    from lti.models import LtiUser

    assert "127.0.0.1" in platform.url and "localhost" in page.base_url  # two sites, as in real life
    page.goto(platform.course_page_url(Launch(sub="teacher-1", roles=[INSTRUCTOR], name="Ayşe Hoca")))
    page.get_by_role("button", name="Open Dikkat").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("LMS kursunuzu bağlayın")
    expect(page.get_by_role("main")).to_contain_text("“Dikkat 101 (LMS)” hangi Dikkat kursunu açsın?")
    page.get_by_label("Mini kurs").check()
    page.get_by_role("button", name="Kursu bağla").click()
    expect(
        page.get_by_text("LMS kursunuz “Dikkat 101 (LMS)” artık “Mini kurs” Dikkat kursunu açıyor.")
    ).to_be_visible()
    assert page.url == page.base_url + "/kurs/mini/"
    teacher = LtiUser.objects.get(sub="teacher-1").user
    assert Course.objects.get(slug="mini").is_instructor(teacher)

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
