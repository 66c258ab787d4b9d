"""A status poll that asks to wait (?wait=1) answers the moment the verdict is stored, briefly
and within limits, with the same JSON as a poll that does not."""

import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from courses.models import AnswerPreview, Attempt, Question
from grader import waiting
from grader.grading import submit
from grader.models import Submission

FIXTURES = Path(__file__).parent / "fixtures"
SOLUTION = (FIXTURES / "lab" / "01-lab" / "attn" / "solution.py").read_text()
# What the status of an exercise submission has always said; poll_after_ms only when known.
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

pytestmark = pytest.mark.django_db


@pytest.fixture
def mine(client, alice, lab) -> Submission:
    """Alice's submission, queued (no worker runs in these tests)."""
    lab.enroll(alice)
    client.force_login(alice)
    return submit(alice, lab.exercises.get(slug="attn"), SOLUTION).submission


def stored_after(looks: int, store):
    """A stand-in for the pause between two looks at the job: the worker stores the result
    while the request waits, before look number ``looks``."""
    calls = []

    def pause(seconds: float) -> None:
        calls.append(seconds)
        if len(calls) == looks - 1:
            store()

    return mock.patch.object(waiting, "sleep", side_effect=pause), calls


def graded(submission: Submission) -> None:
    Submission.objects.filter(pk=submission.pk).update(
        status="done", verdict="passed", score=1.0, started_at=timezone.now(), finished_at=timezone.now()
    )


def status(client, submission: Submission, query: str = "") -> dict:
    return client.get(reverse("submission_status", args=[submission.pk]) + query).json()


def waited_header(client, submission: Submission, query: str) -> str | None:
    return client.get(reverse("submission_status", args=[submission.pk]) + query).headers.get("Dikkat-Waited")


def test_a_poll_that_asks_to_wait_answers_with_the_verdict_as_soon_as_it_is_stored(client, mine):
    pause, calls = stored_after(3, lambda: graded(mine))
    with pause:
        data = status(client, mine, "?wait=1")
    assert (data["status"], data["verdict"], data["score"]) == ("done", "passed", 1.0)
    assert "Bütün durumlar geçti" in data["html"]
    assert len(calls) == 2  # answered on the look right after the verdict was stored
    assert set(data) == SUBMISSION_KEYS


def test_a_poll_that_does_not_ask_is_answered_at_once_with_the_same_json(client, mine):
    with mock.patch.object(waiting, "sleep") as pause:
        data = status(client, mine)
    pause.assert_not_called()
    assert (data["status"], data["position"], data["verdict"]) == ("queued", 1, None)
    assert set(data) == SUBMISSION_KEYS
    assert data["status_url"] == reverse("submission_status", args=[mine.pk])
    assert 'data-status="queued"' in data["html"]


def test_the_wait_ends_after_status_wait_ms_with_the_job_still_queued(client, mine, settings):
    settings.STATUS_WAIT_MS = 200
    started = time.monotonic()
    data = status(client, mine, "?wait=1")
    took = time.monotonic() - started
    assert 0.2 <= took < 1.5
    assert data["status"] == "queued" and set(data) == SUBMISSION_KEYS
    # The reply says it was held, so the page may ask again at once; an unheld one does not.
    assert waited_header(client, mine, "?wait=1") == "1"
    assert waited_header(client, mine, "") is None


def test_with_the_wait_switched_off_a_poll_is_answered_at_once(client, mine, settings):
    settings.STATUS_WAIT_MS = 0
    with mock.patch.object(waiting, "sleep") as pause:
        assert status(client, mine, "?wait=1")["status"] == "queued"
    pause.assert_not_called()


def test_a_finished_submission_is_answered_at_once(client, mine):
    graded(mine)
    with mock.patch.object(waiting, "sleep") as pause:
        assert status(client, mine, "?wait=1")["verdict"] == "passed"
    pause.assert_not_called()


def test_a_verdict_expected_only_after_the_wait_is_not_waited_for(client, mine, alice, lab):
    # Two seconds a grade, one running and three classmates ahead: about 8 s to go.
    attn = lab.exercises.get(slug="attn")
    end = timezone.now() - timedelta(seconds=60)
    Submission.objects.create(
        user=alice, exercise=attn, code="x", code_hash="x", status="done", verdict="failed",
        started_at=end - timedelta(seconds=2), finished_at=end,
    )  # fmt: skip
    Submission.objects.create(
        user=alice, exercise=attn, code="y", code_hash="y", status="running", started_at=timezone.now()
    )
    for index in range(3):
        other = User.objects.create_user(username=f"sinif{index}", password=None)
        lab.enroll(other)
        submit(other, attn, SOLUTION + f"\n# {index}")
    Submission.objects.filter(pk=mine.pk).update(created_at=timezone.now())  # behind them
    with mock.patch.object(waiting, "sleep") as pause:
        data = status(client, mine, "?wait=1")
    pause.assert_not_called()  # the page comes back near the verdict instead
    assert data["status"] == "queued" and data["poll_after_ms"] == 8_000


def test_a_web_process_holds_only_a_few_polls_at_once(client, mine):
    taken = [waiting._slots.acquire(blocking=False) for _ in range(waiting.HOLD_SLOTS)]
    try:
        assert all(taken)
        with mock.patch.object(waiting, "sleep") as pause:
            data = status(client, mine, "?wait=1")
        pause.assert_not_called()  # no thread of the web server left to wait in: at once
        assert data["status"] == "queued"
        assert waited_header(client, mine, "?wait=1") is None  # the page waits before asking again
    finally:
        for _ in taken:
            waiting._slots.release()
    pause, _ = stored_after(2, lambda: graded(mine))
    with pause:
        assert status(client, mine, "?wait=1")["status"] == "done"  # a slot is free again


@pytest.fixture
def queued_answer(student, alice) -> Attempt:
    """Alice's answer to a code blank, waiting for a grading worker."""
    question = Question.objects.get(slug="score-fill")
    return Attempt.objects.create(user=alice, question=question, answer={"blanks": ["K.T"]}, status="queued")


def test_a_code_blank_poll_that_asks_to_wait_answers_with_the_result(student, queued_answer):
    url = reverse("attempt_status", args=[queued_answer.pk])
    assert student.get(url).json() == {"status": "queued"}  # at once, as before
    pause, calls = stored_after(
        4,
        lambda: Attempt.objects.filter(pk=queued_answer.pk).update(status="done", correct=True, score=1.0),
    )
    with pause:
        data = student.get(url + "?wait=1").json()
    assert set(data) == {"status", "html"} and data["status"] == "done"
    assert "Doğru!" in data["html"] and "data-attempt-pending" not in data["html"]
    assert len(calls) == 3


def test_an_instructors_preview_answer_waits_the_same_way(client, teacher, quiz):
    client.force_login(teacher)
    question = Question.objects.get(slug="score-fill")
    preview = AnswerPreview.objects.create(
        user=teacher, question=question, answer={"blanks": ["K"]}, status="queued"
    )
    url = reverse("attempt_status", args=[preview.pk]) + "?onizleme=1"
    pause, _ = stored_after(
        2, lambda: AnswerPreview.objects.filter(pk=preview.pk).update(status="done", correct=False)
    )
    with pause:
        data = client.get(url + "&wait=1").json()
    assert data["status"] == "done" and "Henüz değil" in data["html"]


def test_another_students_answer_is_not_found_even_when_asked_to_wait(client, bob, queued_answer):
    client.force_login(bob)
    with mock.patch.object(waiting, "sleep") as pause:
        response = client.get(reverse("attempt_status", args=[queued_answer.pk]) + "?wait=1")
    assert response.status_code == 404
    pause.assert_not_called()
