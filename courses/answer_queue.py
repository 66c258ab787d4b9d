"""Answers whose grading runs code (fill-in code blanks) go through the grading queue.

The same rules and the same lease mechanism (grader/leases.py) as exercise submissions: the
answer is stored first (status ``queued``) and a task is enqueued when that transaction
commits; a worker claims it with a lease, grades it in the sandbox and stores the result only
while its lease holds; the workers' sweeper queues expired leases again and gives up after
GRADING_MAX_TRIES. Nothing runs in the web request. Students' answers (Attempt) and
instructors' unrecorded previews (AnswerPreview, ``preview=True``) go the same way.
"""

import logging
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from grader import leases
from grader.core import Limits
from grader.core.sandbox import max_run_seconds

from .kinds import get_kind
from .models import AnswerPreview, Attempt, GradedAnswer

log = logging.getLogger("grader")


def _model(preview: bool) -> type[GradedAnswer]:
    return AnswerPreview if preview else Attempt


def enqueue(attempt_id: int, stamped: bool = False, preview: bool = False) -> None:
    """Put a grading task for an answer on the queue; ``stamped`` when enqueued_at is set,
    ``preview`` for an instructor's unrecorded preview."""
    from .tasks import grade_attempt

    if not stamped:
        _model(preview).objects.filter(pk=attempt_id).update(enqueued_at=timezone.now())
    grade_attempt.enqueue(attempt_id, preview)


def lease_duration(question) -> timedelta:
    """Longer than grading can take: every sandbox run of one answer, each with the sandbox's
    start-up budget plus its wall limit (a busy host must not hand a live job out again)."""
    from .kinds.fill_in import FILL_IN_LIMITS

    runs = max(1, get_kind(question.kind).code_runs(question.spec))
    per_run = max_run_seconds(Limits(**FILL_IN_LIMITS))
    return timedelta(seconds=runs * per_run + settings.GRADING_LEASE_MARGIN)


def claim(attempt_id: int, preview: bool = False) -> tuple[GradedAnswer, str] | None:
    model = _model(preview)
    attempt = model.objects.select_related("question").filter(pk=attempt_id).first()
    if attempt is None or attempt.status != model.Status.QUEUED:
        return None
    token = leases.take(model, attempt_id, lease_duration(attempt.question))
    return None if token is None else (attempt, token)


def grade_claimed(attempt_id: int, preview: bool = False) -> str:
    """The task body: claim, grade in the sandbox, store (if our lease still holds)."""
    model = _model(preview)
    try:
        claimed = claim(attempt_id, preview)
    except Exception as exc:  # e.g. the question's kind is gone: never leave it queued forever
        log.exception("claiming answer %s failed", attempt_id)
        model.objects.filter(pk=attempt_id, status=model.Status.QUEUED).update(
            status=model.Status.FAILED, last_error=repr(exc)[:2000]
        )
        return "failed"
    if claimed is None:
        return "skipped"
    attempt, token = claimed
    question = attempt.question
    rows = leases.holding(model, attempt_id, token)
    try:
        grade = get_kind(question.kind).grade(question.spec, attempt.answer)
    except Exception as exc:  # the grader's fault (sandbox unavailable, a bug): not counted
        log.exception("grading answer %s failed", attempt_id)
        stored = rows.update(
            status=model.Status.FAILED, lease_token="", lease_expires_at=None, last_error=repr(exc)[:2000]
        )
        return "failed" if stored else "stale"
    stored = rows.update(
        status=model.Status.DONE,
        score=0.0 if attempt.after_reveal else grade.score,
        correct=grade.correct,
        feedback=grade.feedback,
        misconceptions=grade.misconceptions,
        lease_token="",
        lease_expires_at=None,
    )
    if not stored:
        log.warning("dropped a late result for answer %s (lease lost)", attempt_id)
    return ("correct" if grade.correct else "wrong") if stored else "stale"


def sweep(now=None) -> tuple[int, int]:
    """Queue again answers whose worker lease expired (or whose task may be lost); give up
    after GRADING_MAX_TRIES lost workers. Returns (queued again, given up)."""
    now = now or timezone.now()
    # Queued for many re-enqueue rounds and never claimed: stop, so the student can answer again.
    given_up = now - timedelta(seconds=settings.GRADING_REQUEUE_AFTER * 10)
    requeued = failed = 0
    for preview, what in ((False, "answer"), (True, "answer preview")):
        model = _model(preview)
        failed += model.objects.filter(status=model.Status.QUEUED, created_at__lt=given_up).update(
            status=model.Status.FAILED, last_error="never claimed by a grading worker"
        )
        again, lost = leases.sweep(
            model,
            now,
            partial(enqueue, preview=preview),
            lambda tries: {"status": GradedAnswer.Status.FAILED},
            what,
        )
        requeued, failed = requeued + again, failed + lost
    return requeued, failed
