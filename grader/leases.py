"""Leases for queued grading work: one mechanism for exercise submissions and for answers
with code blanks (any model with status queued/running, enqueued_at, created_at,
lease_token, lease_expires_at, tries and last_error).

A worker takes a queued row with a conditional UPDATE that sets a random lease token; only
the holder of the current token may store a result. The workers' sweeper queues again rows
whose lease expired, gives up after GRADING_MAX_TRIES lost workers, and re-enqueues rows
queued so long that their task may have been lost (taking is idempotent).
"""

import logging
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Model, Q
from django.utils import timezone

log = logging.getLogger("grader")

QUEUED, RUNNING = "queued", "running"


def take(model: type[Model], pk: int, lease: timedelta, **fields) -> str | None:
    """Move a queued row to running under a new lease; its token, or None if it was not queued."""
    token = secrets.token_hex(16)
    taken = model.objects.filter(pk=pk, status=QUEUED).update(
        status=RUNNING,
        lease_token=token,
        lease_expires_at=timezone.now() + lease,
        tries=F("tries") + 1,
        **fields,
    )
    return token if taken else None


def holding(model: type[Model], pk: int, token: str):
    """The row, only while ``token`` is still its lease (a presumed-dead worker's write matches nothing)."""
    return model.objects.filter(pk=pk, status=RUNNING, lease_token=token)


def sweep(
    model: type[Model],
    now: datetime,
    enqueue: Callable[[int], None],
    give_up: Callable[[int], dict],
    what: str,
) -> tuple[int, int]:
    """Queue again what lost its task or its worker; ``give_up(tries)`` gives the fields of a row
    whose workers died GRADING_MAX_TRIES times. Returns (queued again, given up)."""
    requeued = failed = 0
    lost_before = now - timedelta(seconds=settings.GRADING_REQUEUE_AFTER)
    waiting = model.objects.filter(status=QUEUED).filter(
        Q(enqueued_at__lt=lost_before) | Q(enqueued_at__isnull=True, created_at__lt=lost_before)
    )
    for pk in waiting.values_list("pk", flat=True)[:500]:
        enqueue(pk)
        requeued += 1
    expired = model.objects.filter(status=RUNNING, lease_expires_at__lt=now)
    for row in expired.only("pk", "tries", "lease_token"):
        rows = holding(model, row.pk, row.lease_token)
        if row.tries >= settings.GRADING_MAX_TRIES:
            if rows.update(
                lease_token="",
                lease_expires_at=None,
                last_error=f"worker lost {row.tries} times (lease expired)",
                **give_up(row.tries),
            ):
                failed += 1
                log.error("%s %s failed after %s tries", what, row.pk, row.tries)
        elif rows.update(
            status=QUEUED,
            lease_token="",
            lease_expires_at=None,
            last_error=f"worker lost on try {row.tries}; queued again",
        ):
            requeued += 1
            transaction.on_commit(lambda pk=row.pk: enqueue(pk))
    return requeued, failed
