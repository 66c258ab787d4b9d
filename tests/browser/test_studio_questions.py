"""An instructor writes questions through their kind's form in a real browser: a single-choice
and a numeric question, each previewed and answered as a student would (wrong, with the
hint, then right), saved as drafts a student does not see, published with the existing
publish button; the student then sees and answers them on the lesson page. A question with
no correct option is refused at the options. Screenshots of the form at 1280 and 390 px in
both languages; the form fits a phone and has no serious accessibility violation."""

import os
from pathlib import Path

import pytest

from tests.browser.test_accessibility import AXE, serious_violations

pytestmark = [pytest.mark.browser]

PASSWORD = "Yazarlik-2026"
SHOTS = Path(os.environ.get("DIKKAT_STUDIO_SHOTS", "/tmp/shots-studioforms"))
QUESTIONS = "/egitmen/mini/yazarlik/sorular/01-first/"


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


def _new_question(page, kind: str) -> None:
    """A new question of the first lesson, started from the authoring outline."""
    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    lesson = page.locator("#lesson-01-first")
    lesson.get_by_label("Yeni sorunun türü").select_option(kind)
    lesson.get_by_role("button", name="Yeni soru").click()
    page.wait_for_load_state()


def _check(page, answer) -> str:
    """Answer the preview (``answer`` fills or ticks its input) and return its feedback."""
    preview = page.locator("#onizleme")
    answer(preview)
    preview.get_by_role("button", name="Cevabımı kontrol et").click()
    page.wait_for_load_state()
    return page.locator("#onizleme .feedback-area").inner_text()


def _write_single_choice(page) -> None:
    _new_question(page, "single_choice")
    page.get_by_label("Kısa ad").fill("olcek-secimi")
    page.get_by_label("Soru metni (Markdown, $matematik$ ile)").fill(
        "Skorlar neden $\\sqrt{d_k}$ ile bölünür?"
    )
    options = page.locator("#grup-options")
    options.get_by_label("Seçenek metni").nth(0).fill("Softmax doymasın diye")
    options.get_by_label("Doğru", exact=True).nth(0).check()
    options.get_by_label("Seçenek metni").nth(1).fill("Skorlar negatif olmasın diye")
    options.get_by_label("Seçildiğinde gösterilen açıklama").nth(1).fill("Bölmek işareti değiştirmez.")
    options.get_by_label("Seçildiğinde gösterilen ipucu").nth(1).fill("Büyük skorlarda softmax ne yapar?")


@pytest.mark.console_allows(r"status of 400")  # a refused form answers 400, as a form error should
def test_an_instructor_writes_previews_and_publishes_questions_a_student_answers(
    page, teacher, student_page, run_queue
):
    _login(page, "hoca")

    # Single choice: first with no correct option, refused at the options; nothing saved.
    _write_single_choice(page)
    page.locator("#grup-options").get_by_label("Doğru", exact=True).nth(0).uncheck()
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()
    assert "Hiçbir şey kaydedilmedi" in page.get_by_role("alert").first.inner_text()
    assert "exactly one correct option" in page.locator("#grup-options").inner_text()
    from courses.models import Course

    assert not Course.objects.get(slug="mini").draft_files.exists()

    page.locator("#grup-options").get_by_label("Doğru", exact=True).nth(0).check()
    page.get_by_role("button", name="Önizle", exact=True).click()
    page.wait_for_load_state()
    preview = page.locator("#onizleme")
    assert preview.locator("math msqrt").count() == 1  # the formula as MathML, as students see it
    feedback = _check(page, lambda p: p.get_by_label("Skorlar negatif olmasın diye").check())
    assert "Henüz değil" in feedback and "Büyük skorlarda softmax ne yapar?" in feedback
    feedback = _check(page, lambda p: p.get_by_label("Softmax doymasın diye").check())
    assert "Doğru!" in feedback
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()
    assert "Taslak kaydedildi" in page.get_by_role("status").first.inner_text()

    # Numeric: a known wrong value with its hint, then the answer written the Turkish way.
    _new_question(page, "numeric")
    page.get_by_label("Kısa ad").fill("ters-karekok")
    page.get_by_label("Soru metni (Markdown, $matematik$ ile)").fill("$d_k = 64$ ise $1/\\sqrt{d_k}$ kaçtır?")
    page.get_by_label("Doğru cevap", exact=True).fill("0,125")
    page.get_by_label("Tolerans", exact=True).fill("0.001")
    wrong = page.locator("#grup-wrong_values")
    wrong.get_by_label("Yanlış değer").nth(0).fill("8")
    wrong.get_by_label("İpucu").nth(0).fill("Karekökün tersini alın.")
    page.get_by_role("button", name="Önizle", exact=True).click()
    page.wait_for_load_state()
    feedback = _check(page, lambda p: p.get_by_label("Cevabınız").fill("8"))
    assert "Karekökün tersini alın." in feedback
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "preview-answered-tr-1280.png"))
    assert "Doğru!" in _check(page, lambda p: p.get_by_label("Cevabınız").fill("0,125"))
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()
    assert "Taslak kaydedildi" in page.get_by_role("status").first.inner_text()

    student_page.goto(student_page.base_url + "/kurs/mini/first/")
    assert "Karekökün" not in student_page.inner_text("main")  # drafts: students do not see them
    assert "kaçtır" not in student_page.inner_text("main")

    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    page.screenshot(path=str(SHOTS / "outline-drafts-tr-1280.png"), full_page=True)
    page.get_by_role("button", name="Kursun tamamını yayınla").click()
    page.wait_for_load_state()
    run_queue()
    page.reload()
    assert "Sürüm 1 olarak yayınlandı" in page.inner_text("main")

    student_page.goto(student_page.base_url + "/kurs/mini/first/")
    numeric = student_page.locator("#q-ters-karekok")
    numeric.get_by_label("Cevabınız").fill("0,125")
    numeric.get_by_role("button", name="Cevabımı kontrol et").click()
    numeric.get_by_text("Doğru!").wait_for()
    choice = student_page.locator("#q-olcek-secimi")
    choice.get_by_label("Skorlar negatif olmasın diye").check()
    choice.get_by_role("button", name="Cevabımı kontrol et").click()
    choice.get_by_text("Büyük skorlarda softmax ne yapar?").wait_for()


def test_the_question_form_fits_a_phone_and_has_no_serious_accessibility_violation(page, teacher):
    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    _login(page, "hoca")
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = []
    for language in ("tr", "en"):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in {
                "question-form": "/egitmen/mini/yazarlik/sorular/01-first/soru/first-choice/",
                "question-new": "/egitmen/mini/yazarlik/sorular/01-first/yeni-soru/?tur=numeric",
                "question-list": QUESTIONS,
            }.items():
                assert page.goto(page.base_url + path).ok
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                assert scroll <= width, f"{path} scrolls sideways at {width} px"
                found += [f"{path} [{language}, {width}]: {v}" for v in serious_violations(page)]
                page.screenshot(path=str(SHOTS / f"{name}-{language}-{width}.png"), full_page=True)
                page.screenshot(path=str(SHOTS / f"{name}-{language}-{width}-top.png"))
    assert not found, "\n".join(found)
