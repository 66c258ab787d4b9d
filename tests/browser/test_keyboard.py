"""A student who uses only the keyboard: Tab, arrows, Enter, Escape, typing. No clicks after
logging in. Every control a lesson needs must be reachable, usable and show where focus is."""

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]


def tab_to(page, target, limit=80):
    """Press Tab until the target has focus; fail if it never gets it. In a code editor Tab
    indents, so first press Escape there, as the help under the editor says."""
    for _ in range(limit):
        if page.evaluate("() => document.activeElement.classList.contains('cm-content')"):
            page.keyboard.press("Escape")
        page.keyboard.press("Tab")
        if target.evaluate("element => element === document.activeElement"):
            assert focus_ring_shown(page), f"{target} has focus but no visible focus ring"
            return
    raise AssertionError(f"{limit} presses of Tab never reached {target}")


def focus_ring_shown(page) -> bool:
    # The editor marks itself focused a moment after the focus event: wait a little for it.
    try:
        page.wait_for_function(
            """() => {
            let element = document.activeElement;
            if (element.classList.contains('cm-content')) element = element.closest('.cm-editor');
            const style = getComputedStyle(element);
            return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2;
        }""",
            timeout=1000,
        )
    except PlaywrightTimeout:
        return False
    return True


def choose_by_arrows(page, control, text, limit=10):
    """Arrow down through a radio group or a closed <select> until `text` is chosen."""
    for _ in range(limit):
        chosen = page.evaluate("""() => {
            const el = document.activeElement;
            if (el.tagName === 'SELECT') return el.selectedOptions[0].textContent;
            return el.checked ? el.labels[0].textContent : '';
        }""")
        if chosen.strip() == text:
            return
        page.keyboard.press("ArrowDown")
    raise AssertionError(f"the arrows never chose {text!r} in {control}")


def test_a_lesson_and_a_matching_question_by_keyboard_only(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + "/kurs/quiz/selftest/")

    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="İçeriğe geç")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()

    # A single choice: Tab into the group, arrows to choose, Enter on the button.
    who = page.locator("#q-who-attends")
    tab_to(page, who.locator("input[type=radio]:checked, input[type=radio]").first)
    page.keyboard.press("Space")
    choose_by_arrows(page, who, "Birinin Query'si ile diğerinin Key'i")
    tab_to(page, who.get_by_role("button", name="Cevabımı kontrol et"), limit=5)
    page.keyboard.press("Enter")
    feedback = page.locator("#q-who-attends [data-feedback]")
    expect(feedback).to_contain_text("Doğru!")
    expect(feedback).to_be_focused()  # the news is where the keyboard is

    # Matching: each left item has a <select>; arrows choose, Tab moves on.
    roles = page.locator("#q-roles")
    for left, right in (("Query", "Ne arıyorum?"), ("Key", "Bende ne var?"), ("Value", "Ne veririm?")):
        select = roles.get_by_role("combobox", name=left, exact=True)
        tab_to(page, select)
        choose_by_arrows(page, select, right)
    tab_to(page, roles.get_by_role("button", name="Cevabımı kontrol et"))
    page.keyboard.press("Enter")
    expect(page.locator("#q-roles [data-feedback]")).to_contain_text("Doğru!")
    expect(page.locator("#q-roles [data-feedback]")).to_be_focused()


SOLUTION_LINES = [  # typed as a student would: the editor indents the function body itself
    "import numpy as np",
    "def attention(Q, K, V, mask=None):",
    "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])",
    "w = np.exp(s - s.max(axis=-1, keepdims=True))",
    "return (w / w.sum(axis=-1, keepdims=True)) @ V",
]


@pytest.mark.sandbox
def test_an_exercise_is_written_and_submitted_by_keyboard_only(page, lab_live, logged_in, grading_worker):
    logged_in(lab_live)
    page.goto(page.base_url + "/kurs/lab/lab/")
    exercise = page.locator("#ex-attn")
    editor = exercise.get_by_role("textbox", name="Kodunuz (NumPy ile Python)")
    tab_to(page, editor)
    page.keyboard.press("Control+A")
    for number, line in enumerate(SOLUTION_LINES):
        if number:
            page.keyboard.press("Enter")
        page.keyboard.type(line)
    # Escape, then Tab: out of the editor to the buttons, and Enter submits.
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(exercise.get_by_role("button", name="Örneklerde çalıştır")).to_be_focused()
    page.keyboard.press("Tab")
    expect(exercise.get_by_role("button", name="Notlandırmaya gönder")).to_be_focused()
    page.keyboard.press("Enter")
    verdict = exercise.locator("[data-result] > *").first
    expect(verdict).to_contain_text("Bütün durumlar geçti", timeout=30_000)
    expect(verdict).to_be_focused()
