"""An instructor authors the course in a real browser: edits a lesson's text with a formula in
the code editor, sees the live preview with MathML, saves a draft that a student does not see,
publishes it through the queue and the student sees it; a broken TOML file is refused at its
line and nothing is published; a new lesson with a formula and a figure, a question of every
kind in the registry written through its form, and a new exercise with a misconception variant
are checked by a real grading worker and published at once, and a student reads the lesson,
answers every question (a code blank graded by the worker) and submits to the exercise. Screenshots of the pages at 1280 and 390 px, in both
languages."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.test_accessibility import AXE, serious_violations

pytestmark = [pytest.mark.browser]

PASSWORD = "Yazarlik-2026"
SHOTS = Path(os.environ.get("DIKKAT_STUDIO_SHOTS", "/tmp/shots-studioflow"))


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
    page, teacher, run_queue, make_user
):
    from courses.models import Course
    from studio import drafts

    course = Course.objects.get(slug="mini")
    lesson = "01-first/lesson.md"
    drafts.save_draft(course, lesson, drafts.read_text(course, lesson) + "\nEk $x^2$.\n", teacher)
    # A student's answer, then the question's right option changes: the publish page offers a regrade.
    from courses.models import Enrollment
    from courses.selftest import submit_answer

    student = make_user("ogrenci")
    Enrollment.objects.create(user=student, course=course)
    submit_answer(student, course.questions.get(slug="first-choice"), {"option": "a"})
    questions = "01-first/questions.toml"
    text = drafts.read_text(course, questions).replace("correct = true\n", "", 1)
    drafts.save_draft(
        course, questions, text.replace('"Query ve Value"', '"Query ve Value"\ncorrect = true'), teacher
    )
    published = drafts.publish(course, teacher, summary="Bir ek")
    run_queue()
    from studio import answer_regrade

    # A regrade's page (not tied to the publish, whose page then still shows its offer).
    regrade = answer_regrade.start(course, [course.questions.get(slug="first-choice")], teacher)
    drafts.save_draft(course, lesson, drafts.read_text(course, lesson) + "\nTaslak $y$.\n", teacher)
    from studio import structure
    from studio.models import ExerciseCheck, folder_digest

    folder = structure.create_exercise(course, "02-second", "ikiyle-carp", "İkiyle çarp", teacher)
    check = ExerciseCheck.objects.create(
        course=course,
        folder=folder,
        digest=folder_digest(drafts.working_copy(course), folder),
        status=ExerciseCheck.Status.DONE,
        passed=False,
        report={
            "problems": [
                {"file": f"{folder}/exercise.toml", "line": 9, "message": "misconception 'x' passes"}
            ],
            "cases": [{"name": "ornek", "hidden": False, "passed": True, "message": ""}],
            "misconceptions": [{"tag": "x", "file": "variants/x.py", "caught": False, "failed": []}],
            "variants": 1,
        },
    )
    assert AXE.exists(), "axe-core is missing: run `make setup` (npm ci)"
    _login(page, "hoca")
    SHOTS.mkdir(parents=True, exist_ok=True)
    found = []
    pages = {
        "outline": "/egitmen/mini/yazarlik/",
        "editor": f"/egitmen/mini/yazarlik/dosya/{lesson}",
        "revisions": "/egitmen/mini/yazarlik/surumler/",
        "publish": f"/egitmen/mini/yazarlik/yayin/{published.result_id}/",
        "answer-regrade": f"/egitmen/mini/yazarlik/yeniden-notlandirma/{regrade.pk}/",
        "new-lesson": "/egitmen/mini/yazarlik/yeni-ders/",
        "exercise": f"/egitmen/mini/yazarlik/dosya/{folder}/exercise.toml",
        "check": f"/egitmen/mini/yazarlik/kontrol/{check.pk}/",
        "retire": "/egitmen/mini/yazarlik/ders/02-second/emekliye-ayir/",
    }
    for language in ("tr", "en"):
        page.context.add_cookies([{"name": "django_language", "value": language, "url": page.base_url}])
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in pages.items():
                assert page.goto(page.base_url + path).ok
                if name == "revisions":
                    page.locator("details summary").first.click()
                if name == "publish":
                    assert page.locator("#regrade-heading").is_visible()
                    assert page.locator("input[name=question]").is_checked()
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                assert scroll <= width, f"{path} scrolls sideways at {width} px"
                _nav_tools_sit_together(page, width)
                found += [f"{path} [{language}, {width}]: {v}" for v in serious_violations(page)]
                page.screenshot(path=str(SHOTS / f"{name}-{language}-{width}.png"), full_page=True)
    assert not found, "\n".join(found)


def _nav_tools_sit_together(page, width: int) -> None:
    """The navigation's tools ("Yeni yanılgı adayları", "LMS bağlantıları") share one line: at
    the right of the breadcrumbs on a wide screen, at the start of a line of their own on a phone."""
    nav = page.locator("nav.breadcrumbs").bounding_box()
    crumb = page.locator("nav.breadcrumbs > a").first.bounding_box()
    tools = [tool.bounding_box() for tool in page.locator("nav.breadcrumbs > .nav-tool").all()]
    assert len(tools) == 2 and abs(tools[0]["y"] - tools[1]["y"]) < 2, tools
    if width >= 1280:
        assert (
            abs(tools[0]["y"] - crumb["y"]) < 2
            and abs(tools[1]["x"] + tools[1]["width"] - nav["x"] - nav["width"]) < 2
        )
    else:
        assert tools[0]["y"] > crumb["y"] + crumb["height"] - 2 and abs(tools[0]["x"] - crumb["x"]) < 2


# -- one question of each kind, written through its form and answered by a student ----------------


def _new_question(page, folder: str, kind: str, slug: str, prompt: str) -> None:
    """A new question of ``kind`` in the lesson ``folder``, started from the authoring outline."""
    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    lesson = page.locator(f"#lesson-{folder}")
    lesson.get_by_label("Yeni sorunun türü").select_option(kind)
    lesson.get_by_role("button", name="Yeni soru").click()
    page.wait_for_load_state()
    page.get_by_label("Kısa ad").fill(slug)
    page.get_by_label("Soru metni (Markdown, $matematik$ ile)").fill(prompt)


def _rows(page, group: str, label: str, *values: str, exact: bool = False) -> None:
    """Fill the field ``label`` of the group's rows, one value a row."""
    fields = page.locator(f"#grup-{group}").get_by_label(label, exact=exact)
    for index, value in enumerate(values):
        fields.nth(index).fill(value)


def _add_row(page, group: str) -> None:
    """One more empty row (a round trip to the server that keeps what was written)."""
    page.locator(f"#grup-{group}").get_by_role("button", name="Bir satır daha ekle").click()
    page.wait_for_load_state()


def _write_single_choice(page) -> None:
    _rows(page, "options", "Seçenek metni", "Softmax doymasın diye", "Skorlar negatif olmasın diye")
    page.locator("#grup-options").get_by_label("Doğru", exact=True).nth(0).check()


def _write_multiple_choice(page) -> None:
    _add_row(page, "options")
    _rows(page, "options", "Seçenek metni", "Query", "Key", "Softmax")
    correct = page.locator("#grup-options").get_by_label("Doğru", exact=True)
    correct.nth(0).check()
    correct.nth(1).check()
    _rows(page, "options", "Seçildiğinde gösterilen ipucu", "", "", "Softmax bir işlemdir.")


def _write_fill_in(page) -> None:
    page.get_by_label("Boşluklu program (____)").fill("skor = Q @ ____")
    page.get_by_label("Çalıştırmadan sonra karşılaştırılan değişkenler (virgülle)").fill("skor")
    _rows(page, "blanks", "Doğru cevap", "K.T")
    _rows(page, "wrong", "Bilinen yanlış cevap", "K")
    _rows(page, "wrong", "İpucu", "Boyutlara bakın.")
    _rows(page, "cases", "Durumun adı", "a")
    _rows(
        page,
        "cases",
        "Girdiler (her satıra bir ad = değer)",
        "Q = [[1.0, 2.0]]\nK = [[1.0, 0.0], [0.0, 1.0]]",
    )


def _write_matching(page) -> None:
    _rows(page, "pairs", "Sol", "Query", "Key", exact=True)
    _rows(page, "pairs", "Sağ", "Ne arıyorum?", "Bende ne var?", exact=True)
    page.get_by_label("Çeldiriciler: hiçbir şeyle eşleşmeyen sağ taraf öğeleri").fill("Ne hesaplarım?")


def _write_numeric(page) -> None:
    page.get_by_label("Doğru cevap", exact=True).fill("0,125")
    page.get_by_label("Tolerans", exact=True).fill("0.001")
    _rows(page, "wrong_values", "Yanlış değer", "8")
    _rows(page, "wrong_values", "İpucu", "Karekökün tersini alın.")


def _write_matrix(page) -> None:
    page.get_by_label("Doğru matris, [[1, 2], [3, 4]] biçiminde").fill("[[1, 2], [3, 4]]")
    page.get_by_label("Hücre başına tolerans").fill("0.001")
    _rows(page, "wrong", "Yanlış matris", "[[1, 3], [2, 4]]")
    _rows(page, "wrong", "İpucu", "Bu devriği.")


def _write_ordering(page) -> None:
    _add_row(page, "steps")
    _rows(page, "steps", "Kimlik", "scores", "scale", "softmax", exact=True)
    _rows(page, "steps", "Adım metni", "Skorları hesaplayın", "Ölçekleyin", "Softmax alın")
    _rows(page, "steps", "Şu adımlardan sonra gelir (kimlikler, virgülle)", "", "scores", "scale")


def _answer_single_choice(question) -> None:
    question.get_by_label("Softmax doymasın diye").check()


def _answer_multiple_choice(question) -> None:
    question.get_by_label("Query", exact=True).check()
    question.get_by_label("Key", exact=True).check()


def _answer_fill_in(question) -> None:
    question.get_by_label("1. boşluk").fill("K.T")


def _answer_matching(question) -> None:
    question.get_by_role("combobox", name="Query").select_option(label="Ne arıyorum?")
    question.get_by_role("combobox", name="Key").select_option(label="Bende ne var?")


def _answer_numeric(question) -> None:
    question.get_by_label("Cevabınız").fill("0,125")


def _answer_matrix(question) -> None:
    for row, values in enumerate([["1", "2"], ["3", "4"]], start=1):
        for col, value in enumerate(values, start=1):
            question.get_by_label(f"Satır {row}, sütun {col}").fill(value)


def _answer_ordering(question) -> None:
    """Each step to its place with Alt+↑, as a keyboard user orders them."""
    target = ["Skorları hesaplayın", "Ölçekleyin", "Softmax alın"]
    for index, text in enumerate(target):
        step = question.locator("[data-used] [data-step]", has_text=text)
        step.focus()
        placed = [t.strip() for t in question.locator("[data-used] .ordering-text").all_inner_texts()]
        for _ in range(placed.index(text) - index):
            step.page.keyboard.press("Alt+ArrowUp")


# kind: (slug, prompt, its form's fields, a right answer on the lesson page)
KINDS = {
    "single_choice": (
        "tek-secim",
        "Skorlar neden $\\sqrt{d_k}$ ile bölünür?",
        _write_single_choice,
        _answer_single_choice,
    ),
    "multiple_choice": (
        "coklu-secim",
        "Hangileri bir tokenın vektörüdür?",
        _write_multiple_choice,
        _answer_multiple_choice,
    ),
    "fill_in": ("bosluk-kod", "Skor matrisini tamamlayın.", _write_fill_in, _answer_fill_in),
    "matching": ("eslestir", "Rolleri eşleştirin.", _write_matching, _answer_matching),
    "numeric": ("sayi", "$d_k = 64$ ise $1/\\sqrt{d_k}$ kaçtır?", _write_numeric, _answer_numeric),
    "matrix": ("matris", "$S = Q K^T$'yi yazın.", _write_matrix, _answer_matrix),
    "ordering": ("sirala", "Adımları sıraya koyun.", _write_ordering, _answer_ordering),
}


def _write_every_kind(page, folder: str) -> None:
    from courses.kinds import REGISTRY

    assert set(KINDS) == set(REGISTRY), "a question of every kind in the registry"
    for kind, (slug, prompt, write, _answer) in KINDS.items():
        _new_question(page, folder, kind, slug, prompt)
        write(page)
        page.get_by_role("button", name="Taslağı kaydet").click()
        page.wait_for_load_state()
        assert "Taslak kaydedildi" in page.get_by_role("status").first.inner_text(), (
            kind,
            page.inner_text("main"),
        )


def _answer_every_kind(page) -> None:
    for kind, (slug, _prompt, _write, answer) in KINDS.items():
        question = page.locator(f"#q-{slug}")
        answer(question)
        question.get_by_role("button", name="Cevabımı kontrol et").click()
        # Code blanks are graded by the grading worker: the page waits for its result.
        expect(page.locator(f"#q-{slug}")).to_contain_text(
            "Doğru!", timeout=30_000 if kind == "fill_in" else 10_000
        )


MISCONCEPTION = """
[[misconceptions]]
tag = "no-doubling"
file = "variants/no_doubling.py"
hint = "Her öğeyi 2 ile çarptınız mı?"
"""


def _type_in_editor(page, text: str, *, replace: bool = False) -> None:
    page.locator(".cm-content[aria-labelledby]").click()
    page.keyboard.press("Control+A" if replace else "Control+End")
    page.keyboard.insert_text(text)  # one input event, like a paste: no auto-indent


@pytest.mark.sandbox
@pytest.mark.console_allows(r"status of 400")  # the publish refused before the check answers 400
def test_an_instructor_creates_a_lesson_every_kind_of_question_and_an_exercise_a_student_answers_them(
    page, teacher, student_page, grading_worker
):
    _login(page, "hoca")
    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    page.get_by_role("link", name="Yeni ders").click()
    page.get_by_label("Kısa ad (slug)").fill("deger")
    page.get_by_label("Başlık").fill("Değer: Ne taşırım?")
    page.get_by_role("button", name="Taslak olarak oluştur").click()

    # The new lesson.md in the editor (Markdown mode): a formula and a figure, previewed live.
    assert page.get_by_role("heading", level=1).first.inner_text() == "03-deger/lesson.md"
    _type_in_editor(
        page, "\nAğırlıklar $\\frac{e^{s_i}}{\\sum_j e^{s_j}}$ ile bulunur.\n\n::: visual playground\n:::\n"
    )
    preview = page.locator("#preview-body")
    preview.get_by_text("ile bulunur").wait_for()
    assert preview.locator("mfrac").count() == 1
    expect(preview.locator("table.matrix-table").first).to_be_visible()
    assert page.locator("#preview-problems").inner_text() == ""
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()

    # A question of every kind in the registry, each through its own form.
    _write_every_kind(page, "03-deger")

    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    page.locator("#lesson-03-deger").get_by_role("link", name="Yeni alıştırma").click()
    page.get_by_label("Kısa ad (slug)").fill("ikiyle-carp")
    page.get_by_label("Başlık").fill("İkiyle çarp")
    page.get_by_role("button", name="Taslak olarak oluştur").click()
    assert page.get_by_role("heading", level=1).inner_text() == "03-deger/ikiyle-carp/exercise.toml"
    _type_in_editor(page, MISCONCEPTION)
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()
    page.get_by_role("link", name="Bu alıştırmada yeni dosya").click()
    page.get_by_label("Dosya adı").fill("variants/no_doubling.py")
    page.get_by_role("button", name="Taslak olarak oluştur").click()
    _type_in_editor(page, "def scale(x):\n    return x * 3\n")
    page.get_by_role("button", name="Taslağı kaydet").click()
    page.wait_for_load_state()

    # Publishing before the check is refused at the exercise.
    page.get_by_role("link", name="Ana hatlara dön").click()
    page.get_by_role("button", name="Kursun tamamını yayınla").click()
    assert "03-deger/ikiyle-carp/exercise.toml:1" in page.get_by_role("alert").inner_text()

    page.goto(page.base_url + "/egitmen/mini/yazarlik/dosya/03-deger/ikiyle-carp/exercise.toml")
    page.get_by_role("button", name="Kontrol et").click()
    expect(page.get_by_text("Her şey geçti")).to_be_visible(timeout=90_000)  # the page refreshes itself
    expect(page.locator("table").first.get_by_role("row", name="gizli-0")).to_contain_text("✓ geçti")
    expect(page.get_by_role("row", name="no-doubling")).to_contain_text("✓ yakalandı")

    page.get_by_role("link", name="Ana hatlara dön").click()
    assert "kontrolden geçti" in page.locator("#item-ikiyle-carp").inner_text()
    page.get_by_role("button", name="Kursun tamamını yayınla").click()
    expect(page.get_by_text("Sürüm 1 olarak yayınlandı")).to_be_visible(timeout=90_000)

    student_page.goto(student_page.base_url + "/kurs/mini/deger/")
    lesson = student_page.locator("article.lesson")
    assert "Ağırlıklar" in lesson.inner_text() and lesson.locator("mfrac").count() == 1
    expect(lesson.locator("table.matrix-table").first).to_be_visible()
    _answer_every_kind(student_page)  # each right, the code blank graded by the worker
    exercise = student_page.locator("#ex-ikiyle-carp")
    exercise.get_by_role("textbox", name="Kodunuz (NumPy ile Python)").click()
    student_page.keyboard.press("Control+A")
    student_page.keyboard.insert_text("import numpy as np\n\n\ndef scale(x):\n    return x * 3\n")
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    result = exercise.locator("[data-result]")
    expect(result).to_contain_text("Bazı durumlar geçmedi", timeout=30_000)
    expect(result).to_contain_text("Her öğeyi 2 ile çarptınız mı?")  # the variant's hint
    student_page.keyboard.press("Control+A")
    exercise.get_by_role("textbox", name="Kodunuz (NumPy ile Python)").click()
    student_page.keyboard.press("Control+A")
    student_page.keyboard.insert_text("import numpy as np\n\n\ndef scale(x):\n    return 2 * x\n")
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    expect(result).to_contain_text("Bütün durumlar geçti", timeout=30_000)


def test_an_instructor_moves_a_lesson_up_and_publishes_the_new_order(page, teacher, student_page, run_queue):
    _login(page, "hoca")
    page.goto(page.base_url + "/egitmen/mini/yazarlik/")
    lessons = page.locator("ol.studio-lessons > li h2")
    expect(lessons.first).to_contain_text("1. Birinci ders")
    page.get_by_role("button", name="Yukarı: İkinci ders", exact=True).click()
    expect(lessons.first).to_contain_text("İkinci ders")
    expect(lessons.nth(1)).to_contain_text("Birinci ders")
    page.get_by_role("button", name="Kursun tamamını yayınla").click()
    page.wait_for_load_state()
    run_queue()
    page.reload()
    assert "Sürüm 1 olarak yayınlandı" in page.inner_text("main")
    student_page.goto(student_page.base_url + "/kurs/mini/")
    titles = student_page.locator("main").get_by_role("link", name=re.compile(r"^(Birinci|İkinci) ders$"))
    expect(titles.first).to_have_text("İkinci ders")
