"""Answers whose grading runs code (fill-in code blanks) go through the grading queue.

The same queue as exercise submissions (jobs.queue): the answer is stored first (status
``queued``) and a task is enqueued when that transaction commits; a worker claims it with a
lease, grades it in the sandbox and stores the result only while its lease holds; the workers'
sweeper (jobs.sweeper) queues expired leases again and gives up after GRADING_MAX_TRIES.
Nothing runs in the web request. Students' answers (Attempt) and
instructors' unrecorded previews (AnswerPreview, ``preview=True``) go the same way.
"""

import logging
from datetime import timedelta

from django.conf import settings

from grader.core import Limits
from grader.core.sandbox import max_run_seconds
from jobs.signals import send_score_changed

from .kinds import QuestionKind, get_kind
from .kinds.fill_in import FILL_IN_LIMITS
from .models import AnswerPreview, Attempt, Question

log = logging.getLogger("grader")


def _model(preview: bool) -> type[Attempt] | type[AnswerPreview]:
    return AnswerPreview if preview else Attempt


def enqueue(attempt_id: int, stamped: bool = False, preview: bool = False) -> None:
    """Put a grading task for an answer on the queue; ``stamped`` when enqueued_at is set,
    ``preview`` for an instructor's unrecorded preview."""
    _model(preview).objects.enqueue(attempt_id, stamped=stamped)


def _kind(question: Question) -> QuestionKind:
    kind = get_kind(question.kind)
    if kind is None:
        raise LookupError(f"no question kind {question.kind!r}")
    return kind


def lease_duration(question: Question) -> timedelta:
    """Longer than grading can take: every sandbox run of one answer, each with the sandbox's
    start-up budget plus its wall limit (a busy host must not hand a live job out again)."""
    runs = max(1, _kind(question).code_runs(question.spec))
    per_run = max_run_seconds(Limits(**FILL_IN_LIMITS))
    return timedelta(seconds=runs * per_run + settings.GRADING_LEASE_MARGIN)


def claim(attempt_id: int, preview: bool = False) -> tuple[Attempt | AnswerPreview, str] | None:
    model = _model(preview)
    return model.objects.select_related("question", "variant").take(
        attempt_id, lambda attempt: lease_duration(attempt.question)
    )


def grade_claimed(attempt_id: int, preview: bool = False) -> str:
    """The task body: claim, grade in the sandbox, store (if our lease still holds)."""
    model = _model(preview)
    try:
        claimed = claim(attempt_id, preview)
    except Exception as exc:  # e.g. the question's kind is gone: never leave it queued forever
        log.exception("claiming answer %s failed", attempt_id)
        model.objects.filter(pk=attempt_id, status=model.Status.QUEUED).give_up(attempt_id, None, repr(exc))
        return "failed"
    if claimed is None:
        return "skipped"
    attempt, token = claimed
    question = attempt.question.ask(attempt.variant)  # graded on the variant the student was asked
    try:
        grade = _kind(question).grade(question.spec, attempt.answer or {})
    except Exception as exc:  # the grader's fault (sandbox unavailable, a bug): not counted
        log.exception("grading answer %s failed", attempt_id)
        return "failed" if model.objects.give_up(attempt_id, token, repr(exc)) else "stale"
    stored = model.objects.finish(
        attempt_id,
        token,
        score=0.0 if attempt.after_reveal else grade.score,
        correct=grade.correct,
        feedback=grade.feedback,
        misconceptions=grade.misconceptions,
    )
    if not stored:
        log.warning("dropped a late result for answer %s (lease lost)", attempt_id)
    elif not preview:
        send_score_changed(Attempt, [attempt.user_id], question.course_id, question.lesson_id)
    return ("correct" if grade.correct else "wrong") if stored else "stale"
