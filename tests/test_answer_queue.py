"""Code fill-in answers are graded by a worker through the queue, never in the web request."""

from datetime import timedelta
from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from courses import answer_queue
from courses.models import Attempt, Question
from courses.selftest import states_for
from jobs.sweeper import sweep

pytestmark = pytest.mark.django_db(transaction=True)


def answer(client, blank: str, slug: str = "score-fill"):
    return client.post(
        reverse("answer_question", args=["quiz", "selftest", slug]),
        {"blank-0": blank},
        HTTP_X_REQUESTED_WITH="dikkat",
    )


def test_the_request_stores_the_answer_and_queues_it_without_running_anything(student, alice):
    with mock.patch("courses.kinds.fill_in.FillIn._grade_code") as run:
        response = answer(student, "K.T")
    run.assert_not_called()
    attempt = Attempt.objects.get(user=alice)
    assert attempt.status == "queued" and attempt.enqueued_at is not None
    assert DBTaskResult.objects.count() == 1  # enqueued once the row was committed
    assert "data-attempt-pending" in response.text
    assert '<button type="submit" disabled>Cevabımı kontrol et</button>' in response.text


@pytest.mark.sandbox
@pytest.mark.queue
def test_the_worker_grades_it_and_the_status_shows_the_feedback(student, alice, run_queue):
    answer(student, "K")
    attempt = Attempt.objects.get(user=alice)
    url = reverse("attempt_status", args=[attempt.pk])
    assert student.get(url).json() == {"status": "queued"}  # nothing rendered while it waits
    run_queue()
    data = student.get(url).json()
    assert data["status"] == "done"
    assert "Boyutlara bakın" in data["html"] and "data-attempt-pending" not in data["html"]
    attempt.refresh_from_db()
    assert (attempt.correct, attempt.score) == (False, 0.0)
    answer(student, "np.swapaxes(K, -1, -2)")
    run_queue()
    question = Question.objects.get(slug="score-fill")
    state = states_for(alice, [question])[question.pk]
    assert state.solved and state.answer_count == 2 and state.score("best") == 1.0


def test_a_second_answer_while_the_first_is_checked_is_refused_and_not_stored(student, alice):
    answer(student, "K.T")
    response = answer(student, "K")
    assert "hâlâ kontrol ediliyor" in response.text
    assert Attempt.objects.filter(user=alice).count() == 1


def test_a_pending_answer_counts_as_an_attempt_but_not_as_a_score(student, alice):
    question = Question.objects.get(slug="score-fill")
    answer(student, "K.T")
    state = states_for(alice, [question])[question.pk]
    assert state.answer_count == 1 and state.pending is not None
    assert state.score("best") is None and state.score("last") is None and not state.solved


def test_another_students_answer_status_is_a_404(student, bob, quiz, client):
    quiz.enroll(bob)
    question = Question.objects.get(slug="score-fill")
    theirs = Attempt.objects.create(user=bob, question=question, answer={"blanks": ["K.T"]}, status="queued")
    assert student.get(reverse("attempt_status", args=[theirs.pk])).status_code == 404


def test_a_lost_worker_is_retried_then_the_answer_fails_without_counting(student, alice, settings):
    answer(student, "K.T")
    attempt = Attempt.objects.get(user=alice)
    for try_number in range(1, settings.GRADING_MAX_TRIES + 1):
        assert answer_queue.claim(attempt.pk) is not None  # a worker takes it, then dies
        Attempt.objects.filter(pk=attempt.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        swept = (1, 0) if try_number < settings.GRADING_MAX_TRIES else (0, 1)
        assert sweep() == {"courses.Attempt": swept}
    attempt.refresh_from_db()
    assert attempt.status == "failed" and "worker lost" in attempt.last_error
    question = Question.objects.get(slug="score-fill")
    state = states_for(alice, [question])[question.pk]
    assert state.answer_count == 0 and state.pending is None  # not counted; may answer again
    page = student.get(reverse("lesson", args=["quiz", "selftest"])).text
    assert "bu cevap sayılmaz" in page


def test_a_late_result_from_a_presumed_dead_worker_is_dropped(student, alice):
    answer(student, "K")
    attempt = Attempt.objects.get(user=alice)
    _claimed, stale_token = answer_queue.claim(attempt.pk)
    Attempt.objects.filter(pk=attempt.pk).update(status="queued", lease_token="")  # swept
    answer_queue.claim(attempt.pk)  # another worker has it now
    with mock.patch.object(answer_queue, "claim", return_value=(attempt, stale_token)):
        with mock.patch("courses.kinds.fill_in.FillIn.grade") as grade:
            grade.return_value = mock.Mock(score=1.0, correct=True, feedback=[], misconceptions=[])
            assert answer_queue.grade_claimed(attempt.pk) == "stale"
    attempt.refresh_from_db()
    assert attempt.status == "running" and not attempt.correct


def test_a_grader_failure_is_recorded_and_not_counted(student, alice):
    answer(student, "K.T")
    attempt = Attempt.objects.get(user=alice)
    with mock.patch("courses.kinds.fill_in.FillIn.grade", side_effect=RuntimeError("sandbox gone")):
        assert answer_queue.grade_claimed(attempt.pk) == "failed"
    attempt.refresh_from_db()
    assert attempt.status == "failed" and "sandbox gone" in attempt.last_error


def test_a_grader_side_error_inside_the_sandbox_does_not_use_up_an_attempt(student, alice):
    from grader.core import GradeResult, Verdict

    Question.objects.filter(slug="score-fill").update(max_attempts=1)
    answer(student, "K.T")
    attempt = Attempt.objects.get(user=alice)
    with mock.patch("grader.core.grade", return_value=GradeResult(verdict=Verdict.INTERNAL_ERROR)):
        assert answer_queue.grade_claimed(attempt.pk) == "failed"
    question = Question.objects.get(slug="score-fill")
    state = states_for(alice, [question])[question.pk]
    assert state.answer_count == 0 and state.can_answer  # the one attempt is still there to use


def test_a_student_cannot_queue_more_code_answers_than_the_pending_cap(student, alice, settings, quiz):
    settings.GRADING_MAX_PENDING = 1
    other = Question.objects.get(slug="score-fill")
    Attempt.objects.create(
        user=alice, question=Question.objects.exclude(pk=other.pk).first(), answer={}, status="queued"
    )  # waiting on another question
    response = answer(student, "K.T")
    assert "hâlâ kontrol ediliyor" in response.text
    assert not Attempt.objects.filter(question=other).exists()
