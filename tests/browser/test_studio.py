"""An instructor authors the course in a real browser: edits a lesson's text with a formula in
the code editor, sees the live preview with MathML, saves a draft that a student does not see,
publishes it through the queue and the student sees it; a broken TOML file is refused at its
line and nothing is published. Screenshots of the pages at 1280 and 390 px, in both languages."""

import os
from pathlib import Path

import pytest

from tests.browser.test_accessibility import AXE, serious_violations

pytestmark = [pytest.mark.browser]

PASSWORD = "Yazarlik-2026"
SHOTS = Path(os.environ.get("DIKKAT_STUDIO_SHOTS", "/tmp/shots-studio"))


@pytest.fixture
def teacher(transactional_db, make_user, mini_course):
    user = make_user("hoca", password=PASSWORD)
    mini_course.instructors.add(user)
    return user


def _login(page, username: str, password: str = PASSWORD) -> None:
    page.goto(page.base_url + "/accounts/login/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()


@pytest.fixture
def student_page(browser, live_server, make_user, mini_course):
    """A second browser, a student's, enrolled in the course."""
    user = make_user("ogrenci", password=PASSWORD)
    mini_course.enroll(user)
    context = browser.new_context(locale="tr-TR")
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.base_url = live_server.url
    _login(page, "ogrenci")
    yield page
    context.close()


def _lesson_text(page) -> str:
    page.goto(page.base_url + "/kurs/mini/first/")
    return page.locator("article.lesson").inner_text()


def test_an_instructor_edits_previews_saves_and_publishes_a_lesson(page, teacher, student_page, run_queue):
    _login(page, "hoca")
    page.goto(page.base_url + "/egitmen/mini/")
    page.get_by_role("link", name="Yazarlık").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Yazarlık"
    page.get_by_role("link", name="Ders metnini düzenle").first.click()

    # The code editor over the textarea, named by the textarea's label.
    page.locator(".cm-content[aria-labelledby]").click()
    assert page.get_by_role("textbox", name="Dosyanın metni").count() == 1
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("\nDikkat ağırlığı $\\frac{e^{s}}{Z}$ olarak yazılır.\n")
    preview = page.locator("#preview-body")
    # The live preview, rendered by the server as MathML: the lesson's own fraction and the new one.
    preview.get_by_text("Dikkat ağırlığı").wait_for()
    assert preview.locator("mfrac").count() == 2

    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()
    assert "Taslak kaydedildi" in page.get_by_role("status").first.inner_text()
    assert "Dikkat ağırlığı" not in _lesson_text(student_page)  # a draft: students do not see it

    page.get_by_role("link", name="Ana hatlara dön").click()
    page.get_by_role("button", name="Kursun tamamını yayınla").click()
    page.wait_for_load_state()
    assert "sırada bekliyor" in page.inner_text("main")
    run_queue()
    page.reload()
    assert "Sürüm 1 olarak yayınlandı" in page.inner_text("main")

    assert "Dikkat ağırlığı" in _lesson_text(student_page)
    assert student_page.locator("article.lesson mfrac").count() == 2

    page.get_by_role("link", name="Sürümler").first.click()
    page.locator("summary", has_text="01-first/lesson.md").click()  # opens the file's diff
    assert "+Dikkat ağırlığı" in page.locator("pre.studio-diff").inner_text()


@pytest.mark.console_allows(r"status of 400")  # the refused publish answers 400, as a form error should
def test_a_broken_toml_file_is_refused_at_its_line_and_nothing_is_published(page, teacher, student_page):
    from courses.models import Course, Question

    prompt = Question.objects.get(slug="first-choice").prompt_html
    _login(page, "hoca")
    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    page.get_by_role("link", name="01-first/questions.toml").click()
    # The code editor over the textarea, named by the textarea's label.
    page.locator(".cm-content[aria-labelledby]").click()
    assert page.get_by_role("textbox", name="Dosyanın metni").count() == 1
    page.keyboard.press("Control+A")
    text = Path(Course.objects.get(slug="mini").source_path, "01-first/questions.toml").read_text()
    page.keyboard.insert_text(
        text.replace('kind = "single_choice"', 'kind = "single_choice').replace(
            "Skor hangi", "Yeni soru: hangi"
        )
    )
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()
    page.get_by_role("link", name="Ana hatlara dön").click()
    page.get_by_role("button", name="Kursun tamamını yayınla").click()
    page.wait_for_load_state()

    alert = page.get_by_role("alert").inner_text()
    assert "Hiçbir şey yayınlanmadı" in alert and "01-first/questions.toml:3" in alert
    page.get_by_role("link", name="01-first/questions.toml:3").click()
    assert "Satır 3" in page.get_by_role("alert").inner_text()
    assert Question.objects.get(slug="first-choice").prompt_html == prompt
    assert "Yeni soru" not in _lesson_text(student_page)


def test_the_authoring_pages_fit_a_phone_and_have_no_serious_accessibility_violation(
    page, teacher, run_queue
):
    from courses.models import Course
    from studio import drafts

    course = Course.objects.get(slug="mini")
    lesson = "01-first/lesson.md"
    drafts.save_draft(course, lesson, drafts.read_text(course, lesson) + "\nEk $x^2$.\n", teacher)
    drafts.publish(course, teacher, summary="Bir ek")
    run_queue()
    drafts.save_draft(course, lesson, drafts.read_text(course, lesson) + "\nTaslak $y$.\n", teacher)
    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    _login(page, "hoca")
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = []
    pages = {
        "outline": "/egitmen/mini/yazarlik/",
        "editor": f"/egitmen/mini/yazarlik/dosya/{lesson}",
        "revisions": "/egitmen/mini/yazarlik/surumler/",
    }
    for language in ("tr", "en"):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in pages.items():
                assert page.goto(page.base_url + path).ok
                if name == "revisions":
                    page.locator("details summary").first.click()
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                assert scroll <= width, f"{path} scrolls sideways at {width} px"
                found += [f"{path} [{language}, {width}]: {v}" for v in serious_violations(page)]
                page.screenshot(path=str(SHOTS / f"{name}-{language}-{width}.png"), full_page=True)
    assert not found, "\n".join(found)
