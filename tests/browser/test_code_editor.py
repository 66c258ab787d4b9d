"""The code editor of an exercise: CodeMirror over the plain textarea, under the site's CSP."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]

LESSON = "/kurs/lab/lab/"


def editor_of(page, slug="attn"):
    return page.locator(f"#ex-{slug}").get_by_role("textbox", name="Kodunuz (NumPy ile Python)")


def test_editor_numbers_lines_highlights_python_and_indents_with_tab(page, lab_live, logged_in):
    logged_in(lab_live)
    response = page.goto(page.base_url + LESSON)
    assert "unsafe-inline" not in response.headers["content-security-policy"]
    exercise = page.locator("#ex-attn")
    editor = editor_of(page)
    expect(editor).to_be_visible()
    expect(exercise.locator("textarea")).to_be_hidden()
    expect(editor).to_contain_text("def attention(Q, K, V, mask=None):")  # the starter code
    gutter = exercise.locator(".cm-lineNumbers")
    expect(gutter).to_contain_text("1")
    expect(gutter).to_contain_text("6")
    expect(exercise.locator(".tok-keyword", has_text="def")).to_be_visible()  # Python highlighting

    # Clicking the label puts the caret in the editor; Ctrl+A and typing replace the starter.
    exercise.get_by_text("Kodunuz (NumPy ile Python)").click()
    expect(editor).to_be_focused()
    page.keyboard.press("Control+A")
    page.keyboard.type("def f(x):")
    page.keyboard.press("Enter")  # indents the body by itself
    page.keyboard.type("return (x + 1)")
    page.keyboard.press("ArrowLeft")  # the caret next to ")": its "(" is matched
    expect(exercise.locator(".cm-matchingBracket")).to_have_count(2)
    page.keyboard.press("End")
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+Tab")  # back to column 0
    page.keyboard.type("y = 1")
    page.keyboard.press("Home")
    page.keyboard.press("Tab")  # Tab indents instead of leaving the editor
    expect(editor).to_be_focused()
    # The textarea (the form field) always holds the editor's text.
    assert exercise.locator("textarea").input_value() == "def f(x):\n    return (x + 1)\n    y = 1"

    # Escape, then Tab, leaves the editor for the next control (no keyboard trap).
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(exercise.get_by_role("button", name="Örneklerde çalıştır")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(editor).to_be_focused()


@pytest.mark.console_allows(r"Failed to load resource: net::ERR_FAILED \(.*/build/editor\.js\)")
def test_without_the_editor_bundle_the_plain_textarea_still_works(page, lab_live, logged_in):
    page.route(re.compile(r".*/build/editor\.js$"), lambda route: route.abort())
    logged_in(lab_live)
    page.goto(page.base_url + LESSON)
    textarea = page.locator("#ex-attn").get_by_label("Kodunuz (NumPy ile Python)")
    expect(textarea).to_be_visible()
    expect(page.locator("#ex-attn .cm-editor")).to_have_count(0)
    textarea.focus()
    page.keyboard.press("Control+End")
    page.keyboard.press("Tab")  # exercise.js: Tab still indents here
    expect(textarea).to_be_focused()
    assert textarea.input_value().endswith("    ")
