"""Answering every kind of question in chromium, with and without JavaScript."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]

LESSON = "/kurs/quiz/selftest/"


def item(page, slug):
    return page.locator(f"#q-{slug}")


def test_single_choice_wrong_then_right_then_reveal_and_reload(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    question = item(page, "who-attends")
    question.get_by_label("Query ve Value").check()
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "who-attends").get_by_text("Henüz değil.")).to_be_visible()
    expect(item(page, "who-attends")).to_contain_text("Value skora katılmaz")
    expect(item(page, "who-attends")).to_contain_text("Value dersinde")  # the misconception's hint
    item(page, "who-attends").get_by_label("Birinin Query'si ile diğerinin Key'i").check()
    item(page, "who-attends").get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "who-attends").get_by_text("Doğru!")).to_be_visible()
    item(page, "who-attends").get_by_role("button", name="Cevabı göster").click()
    expect(item(page, "who-attends").locator("[data-solution]")).to_contain_text(
        "Value yalnızca taşınan bilgidir"
    )
    page.reload()
    expect(item(page, "who-attends").get_by_text("Doğru!")).to_be_visible()
    expect(item(page, "who-attends")).to_contain_text("2 deneme")
    expect(item(page, "who-attends").locator("[data-solution]")).to_be_visible()


def test_multiple_choice_partial_credit(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    question = item(page, "true-facts")
    question.get_by_label("Softmax satırları 1'e tamamlar.").check()
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "true-facts")).to_contain_text("Kısmen doğru")
    expect(item(page, "true-facts")).to_contain_text("2 deneme hakkınız kaldı")


def test_matching_by_drag_and_drop_and_by_keyboard(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    question = item(page, "roles")
    question.locator(".chip", has_text="Ne arıyorum?").drag_to(question.locator("tr[data-left=l1]"))
    expect(question.get_by_label("Query")).to_have_value(
        question.get_by_label("Query").locator("option", has_text="Ne arıyorum?").get_attribute("value")
    )
    key = question.get_by_label("Key", exact=True)
    key.focus()
    key.select_option(label="Bende ne var?")
    question.get_by_label("Value", exact=True).select_option(label="Ne veririm?")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "roles").get_by_text("Doğru!")).to_be_visible()
    # after_correct: the answer may now be shown.
    expect(item(page, "roles").get_by_role("button", name="Cevabı göster")).to_be_visible()


@pytest.mark.sandbox
def test_code_fill_in_runs_equivalent_answers(page, quiz_live, logged_in, grading_worker):
    # Code blanks go through the grading queue: the page shows "checking", then the result.
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    question = item(page, "score-fill")
    question.get_by_label("1. boşluk").fill("K")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "score-fill")).to_contain_text("Boyutlara bakın")
    item(page, "score-fill").get_by_label("1. boşluk").fill("np.swapaxes(K, -1, -2)")
    item(page, "score-fill").get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "score-fill").get_by_text("Doğru!")).to_be_visible()
    # reveal = "never": no button to show the answer.
    expect(item(page, "score-fill").get_by_role("button", name="Cevabı göster")).to_have_count(0)


def test_numeric_with_decimal_comma_and_always_revealable(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    question = item(page, "sqrt-dk")
    question.get_by_label("Cevabın").fill("8")
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "sqrt-dk")).to_contain_text("Karekökün tersini alın.")
    item(page, "sqrt-dk").get_by_label("Cevabın").fill("0,125")
    item(page, "sqrt-dk").get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "sqrt-dk").get_by_text("Doğru!")).to_be_visible()


@pytest.mark.nojs
def test_every_kind_works_without_javascript(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    item(page, "who-attends").get_by_label("Query ve Value").check()
    item(page, "who-attends").get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "who-attends").get_by_text("Henüz değil.")).to_be_visible()
    roles = item(page, "roles")
    roles.get_by_label("Query").select_option(label="Ne arıyorum?")
    roles.get_by_label("Key", exact=True).select_option(label="Bende ne var?")
    roles.get_by_label("Value", exact=True).select_option(label="Ne veririm?")
    roles.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "roles").get_by_text("Doğru!")).to_be_visible()
    item(page, "sqrt-dk").get_by_label("Cevabın").fill("0.125")
    item(page, "sqrt-dk").get_by_role("button", name="Cevabımı kontrol et").click()
    expect(item(page, "sqrt-dk").get_by_text("Doğru!")).to_be_visible()
    item(page, "sqrt-dk").get_by_role("button", name="Cevabı göster").click()
    expect(item(page, "sqrt-dk").locator("[data-solution]")).to_contain_text("0,125")


@pytest.mark.nojs
@pytest.mark.sandbox
def test_a_code_blank_without_javascript_shows_checking_then_the_result(
    page, quiz_live, logged_in, grading_worker
):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    item(page, "score-fill").get_by_label("1. boşluk").fill("K.T")
    item(page, "score-fill").get_by_role("button", name="Cevabımı kontrol et").click()
    # Without scripts the question says it is being checked; "Yenile" shows the result once in.
    question = item(page, "score-fill")
    for _ in range(60):
        if "Doğru!" in question.inner_text():
            break
        expect(question).to_contain_text("Kodunuz korumalı alanda çalışıyor")
        page.wait_for_timeout(500)
        question.get_by_role("link", name="Yenile").click()
    expect(item(page, "score-fill").get_by_text("Doğru!")).to_be_visible()
