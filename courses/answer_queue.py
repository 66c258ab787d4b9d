"""Answers whose grading runs code (fill-in code blanks) go through the grading queue.

The same rules and the same lease mechanism (grader/leases.py) as exercise submissions: the
answer is stored first (status ``queued``) and a task is enqueued when that transaction
commits; a worker claims it with a lease, grades it in the sandbox and stores the result only
while its lease holds; the workers' sweeper queues expired leases again and gives up after
GRADING_MAX_TRIES. Nothing runs in the web request.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from grader import leases

from .kinds import get_kind
from .models import Attempt

log = logging.getLogger("grader")


def enqueue(attempt_id: int, stamped: bool = False) -> None:
    """Put a grading task for an answer on the queue; ``stamped`` when enqueued_at is set."""
    from .tasks import grade_attempt

    if not stamped:
        Attempt.objects.filter(pk=attempt_id).update(enqueued_at=timezone.now())
    grade_attempt.enqueue(attempt_id)


def lease_duration(question) -> timedelta:
    """Longer than grading can take: every sandbox run of one answer at its wall limit, twice."""
    from .kinds.fill_in import FILL_IN_LIMITS

    runs = max(1, get_kind(question.kind).code_runs(question.spec))
    return timedelta(seconds=runs * FILL_IN_LIMITS["wall_seconds"] * 2 + settings.GRADING_LEASE_MARGIN)


def claim(attempt_id: int) -> tuple[Attempt, str] | None:
    attempt = Attempt.objects.select_related("question").filter(pk=attempt_id).first()
    if attempt is None or attempt.status != Attempt.Status.QUEUED:
        return None
    token = leases.take(Attempt, attempt_id, lease_duration(attempt.question))
    return None if token is None else (attempt, token)


def grade_claimed(attempt_id: int) -> str:
    """The task body: claim, grade in the sandbox, store (if our lease still holds)."""
    try:
        claimed = claim(attempt_id)
    except Exception as exc:  # e.g. the question's kind is gone: never leave it queued forever
        log.exception("claiming answer %s failed", attempt_id)
        Attempt.objects.filter(pk=attempt_id, status=Attempt.Status.QUEUED).update(
            status=Attempt.Status.FAILED, last_error=repr(exc)[:2000])
        return "failed"
    if claimed is None:
        return "skipped"
    attempt, token = claimed
    question = attempt.question
    rows = leases.holding(Attempt, attempt_id, token)
    try:
        grade = get_kind(question.kind).grade(question.spec, attempt.answer)
    except Exception as exc:  # the grader's fault (sandbox unavailable, a bug): not counted
        log.exception("grading answer %s failed", attempt_id)
        stored = rows.update(status=Attempt.Status.FAILED, lease_token="", lease_expires_at=None,
                             last_error=repr(exc)[:2000])
        return "failed" if stored else "stale"
    stored = rows.update(
        status=Attempt.Status.DONE, score=0.0 if attempt.after_reveal else grade.score, correct=grade.correct,
        feedback=grade.feedback, misconceptions=grade.misconceptions, lease_token="", lease_expires_at=None,
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
    never_claimed = Attempt.objects.filter(status=Attempt.Status.QUEUED, created_at__lt=given_up).update(
        status=Attempt.Status.FAILED, last_error="never claimed by a grading worker")
    requeued, failed = leases.sweep(Attempt, now, enqueue, lambda tries: {"status": Attempt.Status.FAILED}, "answer")
    return requeued, failed + never_claimed
