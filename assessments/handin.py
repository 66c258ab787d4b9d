"""Work handed in on an assessment's page: the assessment's rules, then the ordinary answer or
submission path, then the link that makes it count for the assessment.

The rules are checked twice: before anything is graded (a refused post never starts a
sandbox) and, inside the transaction that stores the row, on the row's own ``created_at``: the
time the server received it is the time that counts, and a post that crosses the deadline
while it is being handled is rolled back, never stored half-counted.
"""

from django.db import transaction
from django.utils import timezone

from courses.models import Attempt, Enrollment, Question
from courses.selftest import submit_answer
from grader.grading import Accepted, submit
from grader.models import Submission
from jobs.signals import send_score_changed

from .models import Assessment, ExamLogEntry, HandIn


def _lock_student(assessment: Assessment, user) -> None:
    # The same row answers and submissions lock: one student's hand-ins go one at a time, so
    # two posts at once cannot both pass the attempt limit (SQLite serialises writers anyway).
    Enrollment.objects.select_for_update().filter(user=user, course_id=assessment.course_id).first()


def _link(assessment: Assessment, user, item: str, received_at, **row) -> HandIn:
    assessment.check_hand_in(user, item, received_at)  # Refused rolls the whole hand-in back
    hand_in = HandIn.objects.create(
        assessment=assessment, user=user, item=item, received_at=received_at, **row
    )
    if assessment.is_exam:
        ExamLogEntry.objects.create(
            assessment=assessment, user=user, at=received_at, event=ExamLogEntry.Event.SAVED, item=item
        )
    send_score_changed(HandIn, [user.pk], assessment.course_id)  # the assessment's total
    return hand_in


def record_answer(assessment: Assessment, user, question: Question, raw_answer) -> Attempt:
    """Store an answer to ``question`` for ``assessment`` or raise Refused (nothing stored)."""
    assessment.check_hand_in(user, question.slug, timezone.now())
    with transaction.atomic():
        _lock_student(assessment, user)
        attempt = submit_answer(user, question, raw_answer)
        _link(assessment, user, question.slug, attempt.created_at, attempt=attempt)
    return attempt


def record_submission(assessment: Assessment, user, exercise, code: str, mode: str) -> Accepted:
    """Store code for ``exercise`` for ``assessment`` or raise Refused (nothing stored). A run on
    the examples is allowed while the student may hand in, and never counts."""
    assessment.check_hand_in(user, exercise.slug, timezone.now())
    with transaction.atomic():
        _lock_student(assessment, user)
        accepted = submit(user, exercise, code, mode)
        submission = accepted.submission
        if mode == Submission.Mode.SUBMIT:
            linked = HandIn.objects.filter(assessment=assessment, submission=submission).exists()
            if not linked:
                # Identical code sent earlier (in the lesson) is handed in now, so counts from now.
                received = timezone.now() if accepted.reused else submission.created_at
                _link(assessment, user, exercise.slug, received, submission=submission)
    return accepted


def log_refusal(assessment: Assessment, user, item: str, reason: str) -> None:
    if assessment.is_exam:
        ExamLogEntry.objects.create(
            assessment=assessment, user=user, event=ExamLogEntry.Event.REFUSED, item=item, detail=reason
        )
