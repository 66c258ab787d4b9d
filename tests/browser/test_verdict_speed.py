"""The verdict appears on the page without a reload, brought by a status poll that was already
waiting for it (the server holds a poll that asks, ?wait=1), not by a later timer."""

import pytest
from django_tasks_db.models import DBTaskResult
from playwright.sync_api import expect

from courses.models import Attempt
from grader.models import Submission

pytestmark = [pytest.mark.browser, pytest.mark.sandbox]

SOLUTION = """import numpy as np


def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""
# The status JSON the pages (and anything else that polls) rely on.
SUBMISSION_KEYS = {
    "id",
    "status",
    "position",
    "wait_seconds",
    "verdict",
    "score",
    "reused",
    "status_url",
    "html",
}


def status_polls(page, marker: str) -> list:
    """The page's status polls (their responses), as they come."""
    seen: list = []
    page.on("response", lambda response: seen.append(response) if marker in response.url else None)
    return seen


def mark_page(page) -> None:
    page.evaluate("() => { window.sameDocument = true; }")


def started_ms(response) -> float:
    return response.request.timing["startTime"]


def test_an_exercise_verdict_comes_from_a_poll_that_waited_for_it(
    page, lab_live, grading_worker, logged_in, write_code
):
    student = logged_in(lab_live)
    page.goto(page.base_url + "/kurs/lab/lab/")
    polls = status_polls(page, "/durum/")
    mark_page(page)
    exercise = page.locator("#ex-attn")
    write_code(exercise, SOLUTION)
    exercise.get_by_role("button", name="Notlandırmaya gönder").click()
    expect(exercise.locator("[data-result]")).to_contain_text("Bütün durumlar geçti", timeout=30_000)

    assert page.evaluate("() => window.sameDocument") is True  # no reload
    assert polls and all("wait=1" in poll.url for poll in polls)
    last = polls[-1]
    data = last.json()
    assert data["status"] == "done" and data["verdict"] == "passed"
    assert set(data) - {"poll_after_ms"} == SUBMISSION_KEYS
    stored = Submission.objects.get(user=student).finished_at.timestamp() * 1000
    assert started_ms(last) < stored  # asked before the verdict existed, answered with it


def test_a_code_blank_result_comes_from_a_poll_that_waited_for_it(page, quiz_live, grading_worker, logged_in):
    student = logged_in(quiz_live)
    page.goto(page.base_url + "/kurs/quiz/selftest/")
    polls = status_polls(page, "/durum/")
    mark_page(page)
    page.locator("#q-score-fill").get_by_label("1. boşluk").fill("K.T")
    page.locator("#q-score-fill").get_by_role("button", name="Cevabımı kontrol et").click()
    expect(page.locator("#q-score-fill").get_by_text("Doğru!")).to_be_visible(timeout=30_000)

    assert page.evaluate("() => window.sameDocument") is True
    assert polls and all("wait=1" in poll.url for poll in polls)
    last = polls[-1]
    data = last.json()
    assert set(data) == {"status", "html"} and data["status"] == "done"
    assert Attempt.objects.get(user=student).correct
    task = DBTaskResult.objects.get(task_path__endswith="grade_attempt")
    assert started_ms(last) < task.finished_at.timestamp() * 1000  # in flight while it was graded
