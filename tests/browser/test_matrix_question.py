"""A matrix question in a real browser: the student types the cells by keyboard (arrow keys move
between them), sees the wrong cells marked, pastes a whole matrix into the grid, and without
JavaScript fills in the same plain form."""

import pytest
from playwright.sync_api import expect
from test_matrix_kind import QUESTIONS
from test_rendered_text import write_course

from browser.test_accessibility import serious_violations

pytestmark = [pytest.mark.browser]


@pytest.fixture
def question(page, live_server, transactional_db, tmp_path, logged_in):
    """An enrolled student at a lesson whose question asks for S = [[2, −1, 0,5], [4, 3, 1]]."""
    from courses.importer import import_course
    from courses.models import Course

    import_course(write_course(tmp_path, QUESTIONS))
    logged_in(Course.objects.get(slug="yazili"))
    page.goto(page.base_url + "/kurs/yazili/ders/")
    return page.locator("#q-skorlar")


def test_typed_by_keyboard_the_wrong_cells_are_marked(page, question):
    question.get_by_label("Satır 1 (ben), sütun 1 (a)").focus()
    # Tab goes along the row; the arrow keys go anywhere in the grid.
    for text in ("2", "-1", "0,5"):
        page.keyboard.type(text)
        page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowDown")
    expect(question.get_by_label("Satır 2 (sen), sütun 3 (c)")).to_be_focused()
    page.keyboard.type("7")  # wrong: 1
    page.keyboard.press("ArrowLeft")  # the caret is not at the start: it stays in the cell
    expect(question.get_by_label("Satır 2 (sen), sütun 3 (c)")).to_be_focused()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")
    page.keyboard.type("3")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.type("5")  # wrong: 4
    page.keyboard.press("Enter")

    feedback = question.locator("[data-feedback]")
    expect(feedback).to_contain_text("6 hücreden 2 tanesi henüz doğru değil")
    expect(feedback.locator("td.cell-bad")).to_have_count(2)
    expect(feedback.locator("td.cell-bad").first).to_have_text("5 ✗ (yanlış)")
    expect(feedback.locator("td.cell-ok")).to_have_count(4)
    # What was typed stays in the grid for the next try; the right values are nowhere.
    expect(question.get_by_label("Satır 2 (sen), sütun 1 (a)")).to_have_value("5")
    expect(question.locator("[data-solution]")).to_have_count(0)
    assert serious_violations(page) == []


def test_a_matrix_pasted_into_a_cell_fills_the_grid(page, question):
    first = question.get_by_label("Satır 1 (ben), sütun 1 (a)")
    first.focus()
    paste(first, "np.array([[2., -1., 0.5],\n       [4., 3., 1.]])")
    expect(question.get_by_label("Satır 2 (sen), sütun 3 (c)")).to_have_value("1.")
    expect(question.locator("[data-matrix-status]")).to_have_text("Matris tabloya yerleştirildi.")
    # A spreadsheet's row pasted into the second row goes in from that cell on.
    second_row = question.get_by_label("Satır 2 (sen), sütun 1 (a)")
    paste(second_row, "4\t3\t1,5")
    expect(question.get_by_label("Satır 2 (sen), sütun 3 (c)")).to_have_value("1,5")
    expect(question.get_by_label("Satır 1 (ben), sütun 3 (c)")).to_have_value("0.5")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(question.locator("[data-feedback]")).to_contain_text("6 hücreden 1 tanesi henüz doğru değil")

    # Pasted into the paste box, a matrix that fits goes into the grid and the box stays empty.
    question.get_by_text("Ya da matrisin tamamını yapıştırın").click()  # the box opens
    box = question.get_by_role("textbox", name="Ya da matrisin tamamını yapıştırın")
    box.focus()
    paste(box, "[[2, -1, 0,5], [4, 3, 1]]")
    expect(box).to_have_value("")
    expect(question.get_by_label("Satır 1 (ben), sütun 3 (c)")).to_have_value("0,5")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(question.locator("[data-feedback]")).to_contain_text("Doğru!")


def paste(locator, text: str) -> None:
    """What a paste from the clipboard sends the page: a paste event carrying the text."""
    locator.evaluate(
        """(element, text) => {
            const data = new DataTransfer();
            data.setData("text/plain", text);
            const event = new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true});
            if (element.dispatchEvent(event)) element.setRangeText(text, element.selectionStart, element.selectionEnd, "end");
        }""",
        text,
    )


@pytest.mark.nojs
def test_without_javascript_the_grid_and_the_paste_box_are_a_plain_form(page, question):
    expect(question.locator("[data-matrix-keys]")).to_be_hidden()  # the arrow keys need the script
    question.get_by_text("Ya da matrisin tamamını yapıştırın").click()
    question.get_by_role("textbox", name="Ya da matrisin tamamını yapıştırın").fill("2 -1 0,5\n4 3 9")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    question = page.locator("#q-skorlar")
    expect(question.locator("[data-feedback]")).to_contain_text(
        "6 hücreden 1 tanesi henüz doğru değil: satır 2, sütun 3 (sen → c)."
    )
    expect(question.locator("[data-feedback] td.cell-bad")).to_have_text("9 ✗ (yanlış)")
    # The grid shows the answer as it was read, ready to correct one cell.
    expect(question.get_by_label("Satır 2 (sen), sütun 3 (c)")).to_have_value("9")
    question.get_by_label("Satır 2 (sen), sütun 3 (c)").fill("1")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(page.locator("#q-skorlar [data-feedback]")).to_contain_text("Doğru!")


BIG = f"""
[[questions]]
slug = "buyuk"
kind = "matrix"
prompt = "Sekize sekiz."
answer = {[[i * 8 + j + 0.25 for j in range(8)] for i in range(8)]}
tolerance = 0.01
col_labels = ["kedi", "köpek", "kuş", "balık", "at", "inek", "koyun", "keçi"]
row_labels = ["kedi", "köpek", "kuş", "balık", "at", "inek", "koyun", "keçi"]
"""


def test_an_8_by_8_grid_and_its_marks_scroll_inside_a_phone_screen(
    page, live_server, transactional_db, tmp_path, logged_in
):
    from courses.importer import import_course
    from courses.models import Course

    import_course(write_course(tmp_path, BIG))
    logged_in(Course.objects.get(slug="yazili"))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(page.base_url + "/kurs/yazili/ders/")
    question = page.locator("#q-buyuk")
    question.get_by_text("Ya da matrisin tamamını yapıştırın").click()
    question.get_by_role("textbox", name="Ya da matrisin tamamını yapıştırın").fill(
        "\n".join(" ".join(str(i * 8 + j) for j in range(8)) for i in range(8))
    )
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(question.locator("[data-feedback]")).to_contain_text("64 hücreden 64 tanesi henüz doğru değil")
    expect(question.locator("[data-feedback] td.cell-bad")).to_have_count(64)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # The last column is there to scroll to, and to type in.
    last = question.get_by_label("Satır 8 (keçi), sütun 8 (keçi)")
    last.fill("63,25")
    expect(last).to_be_in_viewport()
