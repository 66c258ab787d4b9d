"""An answer refused for the network's address, in chromium: the question says so and the
answer is not sent a second time."""

import pytest
from playwright.sync_api import expect

from accounts.models import RateCounter
from courses.models import Attempt

pytestmark = [pytest.mark.browser]


@pytest.mark.console_allows(r"status of 429")
def test_an_answer_over_the_address_limit_shows_in_the_question_and_is_sent_once(
    page, quiz_live, logged_in, settings
):
    settings.ANSWER_LIMIT_PER_IP = 1
    logged_in(quiz_live)
    page.goto(page.base_url + "/kurs/quiz/selftest/")
    question = page.locator("#q-who-attends")
    question.get_by_label("Query ve Value").check()
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    expect(page.locator("#q-who-attends").get_by_text("Henüz değil.")).to_be_visible()

    question = page.locator("#q-who-attends")
    question.get_by_label("Birinin Query'si ile diğerinin Key'i").check()
    question.get_by_role("button", name="Cevabımı kontrol et").click()
    alert = page.locator("#q-who-attends [role=alert]")
    expect(alert).to_contain_text("Şu anda ağınızdan çok fazla cevap gönderiliyor.")
    expect(alert).to_contain_text("sonra yeniden deneyin")
    assert page.url.endswith("/kurs/quiz/selftest/")  # still the lesson, not a page of its own
    assert RateCounter.objects.get(key="answer:127.0.0.1").count == 2
    assert Attempt.objects.count() == 1
