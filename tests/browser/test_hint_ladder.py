"""The hint ladder in chromium: after a wrong answer the first hint opens by keyboard, in place
(no reload, no jump), with the focus on it and inside a live region; it stays after a reload,
and the second hint is not offered before a second wrong answer. Without JavaScript the same
button posts and the page comes back at the hint."""

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LESSON = "/kurs/quiz/selftest/"
HINTS = """hints = [
  "Skorun **iki** tarafı var: soran ve sorulan.",
  "Soran taraf Query'dir; sorulan taraf neyle karşılaştırılır?",
]
"""


@pytest.fixture
def hinted_quiz(transactional_db, tmp_path):
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Course

    folder = tmp_path / "quiz"
    shutil.copytree(FIXTURES / "quiz", folder)
    questions = folder / "01-selftest" / "questions.toml"
    anchor = 'reveal = "after_first_attempt"\n'
    questions.write_text(
        questions.read_text(encoding="utf-8").replace(anchor, anchor + HINTS, 1), encoding="utf-8"
    )
    import_course(folder, prepare_exercises=lambda source: check_exercises(source, build=True))
    return Course.objects.get(slug="quiz")


def answer_wrong(page):
    question = page.locator("#q-who-attends")
    question.get_by_label("Query ve Value").check()
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(page.locator("#q-who-attends").get_by_text("Henüz değil.")).to_be_visible()


def tab_to(page, name: str, presses: int = 20) -> None:
    """Press Tab until the focused element is the button called ``name``."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.textContent.trim()") == name:
            return
    raise AssertionError(f"Tab never reached {name!r}")


def test_first_hint_opens_by_keyboard_in_place_and_stays(page, hinted_quiz, logged_in):
    logged_in(hinted_quiz)
    page.goto(page.base_url + LESSON)
    question = page.locator("#q-who-attends")
    expect(question).to_contain_text("2 ipucu var: ilki ilk yanlış denemenizden sonra")
    expect(question.get_by_role("button", name="İpucu 1'i göster")).to_have_count(0)

    answer_wrong(page)
    question = page.locator("#q-who-attends")
    button = question.get_by_role("button", name="İpucu 1'i göster")
    expect(button).to_be_visible()
    tab_to(page, "İpucu 1'i göster")
    before = page.evaluate(
        "() => [window.scrollY, document.querySelector('#q-who-attends').getBoundingClientRect().top]"
    )
    page.keyboard.press("Enter")

    hint = page.locator("#q-who-attends-hint-1")
    expect(hint).to_contain_text("Skorun iki tarafı var")
    expect(hint).to_be_focused()
    # Announced: it is inside a polite live region, which stayed on the page.
    assert hint.evaluate("e => e.closest('[aria-live]').getAttribute('aria-live')") == "polite"
    after = page.evaluate(
        "() => [window.scrollY, document.querySelector('#q-who-attends').getBoundingClientRect().top]"
    )
    assert after == before, "the page moved when the hint appeared"
    assert page.url == page.base_url + LESSON  # no reload
    # The second step needs a second wrong answer.
    expect(question.get_by_role("button", name="İpucu 2'yi göster")).to_have_count(0)
    expect(question).to_contain_text("Sonraki ipucu, bir sonraki yanlış denemenizden sonra açılır.")
    expect(question).not_to_contain_text("Soran taraf Query'dir")

    page.reload()
    question = page.locator("#q-who-attends")
    expect(question.locator("#q-who-attends-hint-1")).to_contain_text("Skorun iki tarafı var")
    expect(question.get_by_role("button", name="İpucu 2'yi göster")).to_have_count(0)
    expect(question).to_contain_text("1 / 2 açık")


@pytest.mark.nojs
def test_without_javascript_the_page_comes_back_at_the_hint(page, hinted_quiz, logged_in):
    logged_in(hinted_quiz)
    page.goto(page.base_url + LESSON)
    answer_wrong(page)
    page.locator("#q-who-attends").get_by_role("button", name="İpucu 1'i göster").click()
    expect(page.locator("#q-who-attends-hint-1")).to_contain_text("Skorun iki tarafı var")
    assert page.url.endswith(LESSON + "#q-who-attends-hint-1")


# The lab's attention() without the scaling: a failed submission.
UNSCALED = """import numpy as np


def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


@pytest.fixture
def hinted_lab(transactional_db, tmp_path):
    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Course

    folder = tmp_path / "lab"
    shutil.copytree(FIXTURES / "lab", folder)
    toml = folder / "01-lab" / "attn" / "exercise.toml"
    toml.write_text(
        'hints = ["Ölçekleme nerede?", "Skorları böldünüz mü?"]\n' + toml.read_text(encoding="utf-8")
    )
    import_course(folder, prepare_exercises=lambda source: check_exercises(source, build=True))
    return Course.objects.get(slug="lab")


@pytest.mark.sandbox
def test_a_failed_submission_offers_the_exercise_hint_without_a_reload(
    page, hinted_lab, grading_worker, logged_in, write_code
):
    logged_in(hinted_lab)
    page.goto(page.base_url + "/kurs/lab/lab/")
    exercise = page.locator("#ex-attn")
    expect(exercise.locator("[data-hints]")).to_contain_text("2 ipucu var")
    write_code(exercise, UNSCALED)
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    expect(exercise.locator("[data-result]")).to_contain_text("Bazı durumlar geçmedi", timeout=30_000)
    exercise.get_by_role("button", name="İpucu 1'i göster").click()
    expect(page.locator("#ex-attn-hint-1")).to_contain_text("Ölçekleme nerede?")
    expect(page.locator("#ex-attn-hint-1")).to_be_focused()
    assert page.url == page.base_url + "/kurs/lab/lab/"
