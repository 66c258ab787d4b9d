""" "Cevabı göster" before solving asks first, in place with JavaScript and as a page without."""

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]

LESSON = "/kurs/quiz/selftest/"


def walk(page):
    question = page.locator("#q-sqrt-dk")
    expect(question).to_contain_text("Cevabı şimdi görürseniz bu soru 0 puan alır")
    question.get_by_role("button", name="Cevabı göster").click()
    confirm = page.locator("#q-sqrt-dk").get_by_role("group", name="Cevap gösterilsin mi?")
    expect(confirm).to_be_visible()
    expect(page.locator("#q-sqrt-dk [data-solution]")).to_have_count(0)
    confirm.get_by_role("button", name="Hayır, denemeye devam edeyim").click()
    expect(page.locator("#q-sqrt-dk").get_by_role("group", name="Cevap gösterilsin mi?")).to_have_count(0)
    expect(page.locator("#q-sqrt-dk [data-solution]")).to_have_count(0)
    page.locator("#q-sqrt-dk").get_by_role("button", name="Cevabı göster").click()
    page.locator("#q-sqrt-dk").get_by_role("button", name="Evet, cevabı göster").click()
    expect(page.locator("#q-sqrt-dk [data-solution]")).to_contain_text("0,125")


def test_reveal_asks_first_with_javascript(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    walk(page)
    # With the script the page never reloaded; the confirm step had the focus.
    assert page.url == page.base_url + LESSON


@pytest.mark.nojs
def test_reveal_asks_first_without_javascript(page, quiz_live, logged_in):
    logged_in(quiz_live)
    page.goto(page.base_url + LESSON)
    walk(page)
