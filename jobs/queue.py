"""The queue every job model shares: enqueue on commit, claim under a lease, finish while the
lease holds, give up, sweep.

A job is a row (a subclass of jobs.models.Job) and a task that carries its primary key. The
row is stored queued and its task is put on Django's task queue when the transaction commits.
A worker claims the row by moving it from queued to running under a random lease token (on
PostgreSQL a row another worker is claiming is skipped, not waited for; on SQLite the
conditional UPDATE is the lock); only the holder of the current token may store a result, so
a presumed-dead worker's late result is dropped. The sweeper (jobs.sweeper) queues again what
lost its task or its worker and gives up after GRADING_MAX_TRIES lost workers.

A lease token names the worker that holds it (``hold_leases_as``, called once by a worker
process at start with a name unique to that start): when a supervisor sees a worker process
die it gives exactly that worker's jobs back to the queue at once (``release``) instead of
letting them wait for their leases to expire. The sweeper's expiry stays the fallback for a
worker that dies with no supervisor watching.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:
    from django.tasks import Task

log = logging.getLogger("grader")


class JobStatus(models.TextChoices):
    """One vocabulary for every job: waiting, being worked on, finished with a result, or
    given up on (the grader's own failure, never counted against a student)."""

    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("graded")
    FAILED = "failed", _("grader failed (not counted)")


QUEUED, RUNNING, DONE, FAILED = JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.DONE, JobStatus.FAILED
PENDING = (QUEUED, RUNNING)
SWEEP_BATCH = 500  # queued rows given a new task per sweep and model

# A lease token is "<holder>.<random>" (the field holds 64 characters): the holder names the
# worker process (unique per start of it), the random part tells one claim from the next.
HOLDER = re.compile(r"[A-Za-z0-9_-]{1,39}")
_holder = ""


def lease_holder(worker_id: str) -> str:
    """The name a worker's leases carry: its id when that fits in a token, else a digest of it
    (the supervisor and the worker compute the same)."""
    if HOLDER.fullmatch(worker_id):
        return worker_id
    return "h" + hashlib.sha256(worker_id.encode()).hexdigest()[:38]


def hold_leases_as(worker_id: str) -> None:
    """From now on this process's claims carry ``worker_id``: a supervisor that saw the process
    die can release them (``JobQuerySet.release``) without waiting for them to expire."""
    global _holder
    _holder = lease_holder(worker_id) if worker_id else ""


def new_token() -> str:
    """A lease token: this process's holder name (if it has one) and 96 random bits."""
    random = secrets.token_hex(12)
    return f"{_holder}.{random}" if _holder else random


@cache
def _task(path: str) -> Task:
    # A dotted path, as Django names backends and tasks in settings: the task module imports
    # the code that does the work, which imports the models; the models cannot import it back.
    return import_string(path)


def send(model: type[models.Model], pk: int, run_after: datetime | None = None) -> None:
    """Put the task of one job on Django's task queue, at its model's priority (not to run
    before ``run_after`` when given: a job waiting to be tried again)."""
    task = _task(model.task_path).using(priority=model.priority)  # type: ignore[attr-defined]
    if run_after is not None:
        task = task.using(run_after=run_after)
    task.enqueue(pk, **model.task_kwargs)  # type: ignore[attr-defined]


class JobQuerySet(models.QuerySet):
    def pending(self) -> JobQuerySet:
        return self.filter(status__in=PENDING)

    def enqueue(self, pk: int, stamped: bool = False) -> None:
        """Queue the job's task when the current transaction commits (at once outside one);
        ``stamped`` when enqueued_at was set with the row."""
        if not stamped:
            self.filter(pk=pk).update(enqueued_at=timezone.now())
        model = self.model
        transaction.on_commit(lambda: send(model, pk), using=self.db)

    def claim(self, pk: int, lease: timedelta, **fields: Any) -> str | None:
        """Move a queued job to running under a new lease; its token, or None if it was not
        queued (claimed by someone else, finished, or gone)."""
        token = new_token()
        now = timezone.now()
        values = {
            "status": RUNNING,
            "lease_token": token,
            "lease_expires_at": now + lease,
            "started_at": now,
            "tries": F("tries") + 1,
            **fields,
        }
        if not connections[self.db].features.has_select_for_update_skip_locked:
            return token if self.filter(pk=pk, status=QUEUED).update(**values) else None
        with transaction.atomic(using=self.db):
            locked = self.select_for_update(skip_locked=True).filter(pk=pk, status=QUEUED)
            if not list(locked.values_list("pk", flat=True)):
                return None
            self.filter(pk=pk).update(**values)
        return token

    def take(self, pk: int, lease: Callable[[Any], timedelta]) -> tuple[Any, str] | None:
        """The job ``pk`` as this queryset reads it (select_related, defer, ...) if it is queued,
        claimed under ``lease(job)``, with the claim's token; None when it is not queued
        (claimed by another worker, finished or gone). The row is read before the claim: its
        status, lease and tries are those it had then."""
        job: Any = self.filter(pk=pk).first()
        if job is None or job.status != QUEUED:
            return None
        # The claim on the plain table: no joins to lock, nothing deferred.
        token = type(self)(model=self.model, using=self.db).claim(pk, lease(job))
        return None if token is None else (job, token)

    def holding(self, pk: int, token: str) -> JobQuerySet:
        """The job, only while ``token`` is still its lease (a presumed-dead worker's write matches nothing)."""
        return self.filter(pk=pk, status=RUNNING, lease_token=token)

    def finish(self, pk: int, token: str | None, status: str = DONE, **fields: Any) -> bool:
        """Store a result if the lease ``token`` still holds (None: the job was never claimed,
        e.g. refused before it reached the queue); False when the result came too late."""
        rows = self.filter(pk=pk) if token is None else self.holding(pk, token)
        return bool(
            rows.update(
                status=status,
                finished_at=timezone.now(),
                lease_token="",
                lease_expires_at=None,
                **fields,
            )
        )

    def give_up(self, pk: int, token: str | None, error: str, **fields: Any) -> bool:
        """Stop trying: the job ends as failed (the grader's fault, never the student's)."""
        return self.finish(pk, token, status=FAILED, last_error=error[:2000], **fields)

    def sweep(self, now: datetime | None = None) -> tuple[int, int]:
        """Queue again what lost its task or its worker; give up on a job whose workers died
        GRADING_MAX_TRIES times (and, for models that say so, on one never claimed).
        Returns (queued again, given up)."""
        now = now or timezone.now()
        model = self.model
        requeued = given_up = 0
        requeue_after = timedelta(seconds=settings.GRADING_REQUEUE_AFTER)
        rounds = model.unclaimed_rounds  # type: ignore[attr-defined]
        if rounds is not None:
            given_up += self.filter(
                status=QUEUED,
                **{f"{model.queued_since}__lt": now - requeue_after * rounds},  # type: ignore[attr-defined]
            ).update(status=FAILED, finished_at=now, last_error="never claimed by a grading worker")
        lost_before = now - requeue_after
        waiting = self.filter(status=QUEUED).filter(
            Q(enqueued_at__lt=lost_before) | Q(enqueued_at__isnull=True)
        )
        for pk in list(waiting.values_list("pk", flat=True)[:SWEEP_BATCH]):
            self.filter(pk=pk).update(enqueued_at=now)
            send(model, pk)  # the row is already committed: no transaction to wait for
            requeued += 1
        expired = self.filter(status=RUNNING, lease_expires_at__lt=now)
        back, lost = self._take_back(expired, "lease expired")
        return requeued + back, given_up + lost

    def release(self, worker_id: str) -> tuple[int, int]:
        """Give back to the queue at once every job the worker ``worker_id`` holds: call it only
        once that worker process is known to be dead (its supervisor reaped it). Its tries count
        as lost workers, as when a lease expires. Returns (queued again, given up)."""
        held = self.filter(status=RUNNING, lease_token__startswith=f"{lease_holder(worker_id)}.")
        return self._take_back(held, "its worker died")

    def _take_back(self, lost: JobQuerySet, how: str) -> tuple[int, int]:
        """Queue again the running jobs ``lost`` whose worker is gone (a new task each), or
        give up on those that lost GRADING_MAX_TRIES workers; (queued again, given up)."""
        model = self.model
        requeued = given_up = 0
        for pk, tries, token in lost.values_list("pk", "tries", "lease_token"):
            if tries >= settings.GRADING_MAX_TRIES:
                error = f"worker lost {tries} times ({how})"
                if self.give_up(pk, token, error, **model.given_up_fields(tries)):  # type: ignore[attr-defined]
                    given_up += 1
                    log.error("%s %s given up after %s tries", model._meta.label, pk, tries)
            elif self.holding(pk, token).update(
                status=QUEUED,
                lease_token="",
                lease_expires_at=None,
                last_error=f"worker lost on try {tries} ({how}); queued again",
            ):
                requeued += 1
                self.enqueue(pk)
        return requeued, given_up

    def requeue(self, pks: Iterable[int]) -> int:
        """Queue again jobs that ended failed or still wait (a running one is left to its
        worker or the sweeper), each with a fresh count of tries; returns how many were queued."""
        ids = list(self.filter(pk__in=list(pks), status__in=(QUEUED, FAILED)).values_list("pk", flat=True))
        # The status again in the UPDATE: a job a worker claimed meanwhile stays its. (Its task,
        # sent below all the same, finds nothing queued to claim.)
        self.filter(pk__in=ids, status__in=(QUEUED, FAILED)).update(
            status=QUEUED, finished_at=None, enqueued_at=timezone.now(), tries=0, last_error=""
        )
        model = self.model

        def send_all() -> None:
            for pk in ids:
                send(model, pk)

        transaction.on_commit(send_all, using=self.db)
        return len(ids)
