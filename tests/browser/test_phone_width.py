"""On a 390 px phone no page of the course scrolls sideways: wide tables, figures and code
scroll inside their own frame."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

COURSE = Path(__file__).resolve().parents[2] / "courses" / "content" / "attention"


def test_no_page_of_the_course_is_wider_than_a_phone(browser, live_server, transactional_db, make_user):
    from courses.importer import import_course
    from courses.models import Course

    import_course(COURSE)
    course = Course.objects.get(slug="attention")
    user = make_user("dar-ekran", password="Gizli-parola-2026")
    course.enroll(user)
    context = browser.new_context(locale="tr-TR", viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    try:
        page.goto(live_server.url + "/accounts/login/")
        page.locator("#id_username").fill("dar-ekran")
        page.locator("#id_password").fill("Gizli-parola-2026")
        page.locator("main form button[type=submit]").click()
        page.wait_for_load_state()
        urls = ["/", course.get_absolute_url(), "/panom/"]
        urls += [lesson.get_absolute_url() for lesson in course.lessons.order_by("order")]
        too_wide = {}
        for url in urls:
            page.goto(live_server.url + url)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > 390:
                too_wide[url] = width
        assert too_wide == {}, too_wide
    finally:
        context.close()
