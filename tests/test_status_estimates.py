"""A queued submission's status says about how long is left, and tells the page when to ask again."""

import math
from datetime import timedelta
from pathlib import Path
from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone

from grader.grading import submit
from grader.models import Submission, forget_grading_pace
from jobs.sweeper import sweep

FIXTURES = Path(__file__).parent / "fixtures"
SOLUTION = (FIXTURES / "lab" / "01-lab" / "attn" / "solution.py").read_text()

pytestmark = pytest.mark.django_db


@pytest.fixture
def attn(lab):
    return lab.exercises.get(slug="attn")


def graded(user, exercise, index: int, seconds: float, ago: float = 60.0) -> Submission:
    """A finished submission whose worker spent ``seconds`` on it, ``ago`` seconds ago."""
    end = timezone.now() - timedelta(seconds=ago)
    return Submission.objects.create(
        user=user,
        exercise=exercise,
        code=f"x = {index}",
        code_hash=f"h{index}",
        status="done",
        verdict="failed",
        started_at=end - timedelta(seconds=seconds),
        finished_at=end,
    )


def classmate(name: str):
    """A student who never logs in here (no password hashing: it is slow on purpose)."""
    from django.contrib.auth.models import User

    return User.objects.create_user(username=name, password=None)


def status(client, submission) -> dict:
    return client.get(reverse("submission_status", args=[submission.pk])).json()


def test_a_queued_submission_shows_its_wait_and_when_to_poll(client, alice, bob, lab, attn):
    lab.enroll(alice)
    lab.enroll(bob)
    for index in range(4):
        graded(bob, attn, index, seconds=2.0, ago=60 * index)  # 2 s each, the queue idle in between
    Submission.objects.create(
        user=bob, exercise=attn, code="y = 1", code_hash="r", status="running", started_at=timezone.now()
    )
    others = [classmate(f"ogrenci{i}") for i in range(3)]
    for other in others:
        lab.enroll(other)
        submit(other, attn, SOLUTION + f"\n# {other.username}")
    mine = submit(alice, attn, SOLUTION).submission  # fourth in line, one worker busy
    client.force_login(alice)

    data = status(client, mine)
    assert (data["status"], data["position"]) == ("queued", 4)
    assert data["wait_seconds"] == (4 - 1) * 2 + 2  # three grades ahead of it, then its own
    assert data["poll_after_ms"] == 8_000
    assert "8 sn" in data["html"] and "4." in data["html"]


def test_a_busy_queue_is_estimated_by_the_spacing_of_its_verdicts(client, alice, bob, lab, attn):
    lab.enroll(alice)
    lab.enroll(bob)
    for index in range(11):  # two workers, 0.6 s each: a verdict every 0.3 s
        graded(bob, attn, index, seconds=0.6, ago=100 - 0.3 * index)
    for index in range(2):
        Submission.objects.create(
            user=bob,
            exercise=attn,
            code=f"r{index}",
            code_hash=f"r{index}",
            status="running",
            started_at=timezone.now(),
        )
    for index in range(29):
        other = classmate(f"kuyruk{index}")
        lab.enroll(other)
        submit(other, attn, SOLUTION + f"\n# {index}")
    mine = submit(alice, attn, SOLUTION).submission
    client.force_login(alice)
    data = status(client, mine)
    assert data["position"] == 30
    assert data["wait_seconds"] == math.ceil(29 * 0.3 + 0.6)  # ten seconds, not 29 × 0.6 / 2


def test_without_a_grading_worker_there_is_no_estimate_and_the_page_backs_off(client, alice, lab, attn):
    lab.enroll(alice)
    graded(alice, attn, 1, seconds=2.0)
    mine = submit(alice, attn, SOLUTION).submission
    client.force_login(alice)
    data = status(client, mine)
    assert data["status"] == "queued" and data["wait_seconds"] is None
    assert "poll_after_ms" not in data  # the page's own back-off (0.5 s growing to 3 s) applies
    assert "sn kaldı" not in data["html"]


def test_a_running_submission_is_polled_again_near_its_expected_end(client, alice, lab, attn):
    lab.enroll(alice)
    graded(alice, attn, 1, seconds=3.0)
    mine = Submission.objects.create(
        user=alice,
        exercise=attn,
        code="z = 1",
        code_hash="z",
        status="running",
        started_at=timezone.now() - timedelta(seconds=1),
    )
    client.force_login(alice)
    data = status(client, mine)
    assert data["status"] == "running"
    assert 1500 <= data["poll_after_ms"] <= 2100  # about 3 s per grade, 1 s already spent
    forget_grading_pace()
    Submission.objects.filter(pk=mine.pk).update(started_at=timezone.now() - timedelta(seconds=30))
    assert "poll_after_ms" not in status(client, mine)  # overdue: the page's own back-off (up to 3 s)


def test_the_estimate_is_reused_briefly_then_measured_again(alice, lab, attn):
    lab.enroll(alice)
    graded(alice, attn, 1, seconds=2.0)
    Submission.objects.create(
        user=alice, exercise=attn, code="w", code_hash="w", status="running", started_at=timezone.now()
    )
    assert grading_pace_now() == (2.0, 2.0, 1)
    Submission.objects.filter(status="running").update(status="done", finished_at=timezone.now())
    assert grading_pace_now() == (2.0, 2.0, 1)  # within PACE_SECONDS: the kept estimate
    with mock.patch("grader.models.time.monotonic", return_value=10**9):
        assert grading_pace_now() is None  # measured again: nothing runs now


def grading_pace_now():
    from grader.models import grading_pace

    return grading_pace()


def test_a_submission_whose_task_never_reached_the_queue_is_queued_again_by_the_sweeper(
    alice, lab, attn, settings
):
    lab.enroll(alice)
    with mock.patch("jobs.queue.send", side_effect=RuntimeError("queue down")):
        with pytest.raises(RuntimeError):
            with django_capture_on_commit():
                submit(alice, attn, SOLUTION)
    stored = Submission.objects.get(user=alice)
    assert stored.status == "queued" and stored.enqueued_at is not None
    assert sweep() == {}  # not yet: its task may still be on its way
    later = timezone.now() + timedelta(seconds=settings.GRADING_REQUEUE_AFTER + 1)
    with mock.patch("jobs.queue.send") as send:
        assert sweep(now=later) == {"grader.Submission": (1, 0)}
    send.assert_called_once_with(Submission, stored.pk)


def django_capture_on_commit():
    """Run on_commit callbacks when the block ends (the test's transaction never commits)."""
    from django.test import TestCase

    return TestCase.captureOnCommitCallbacks(execute=True)


def test_queued_code_answers_count_in_the_line(client, alice, bob, quiz, lab, attn):
    from courses.models import Attempt, Question

    lab.enroll(alice)
    quiz.enroll(bob)
    question = Question.objects.get(slug="score-fill")
    Attempt.objects.create(
        user=bob,
        question=question,
        answer={"blanks": ["K.T"]},
        status="queued",
        created_at=timezone.now() - timedelta(seconds=5),
    )
    mine = submit(alice, attn, SOLUTION).submission
    client.force_login(alice)
    assert status(client, mine)["position"] == 2  # behind a classmate's fill-in answer
