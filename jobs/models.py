"""The abstract model of a queued job; jobs.queue has its statuses and what is done with one."""

from typing import Any, ClassVar

from django.db import models
from django.utils.translation import gettext_lazy as _

from .queue import JobQuerySet, JobStatus


class Job(models.Model):
    """A row a worker does something with: a submission to grade, an answer with code blanks,
    an item check, a regraded submission, a grade to send. A concrete model names its task
    (``task_path``, called with the row's primary key and ``task_kwargs``) and its priority;
    jobs.sweeper finds every concrete model by itself."""

    Status = JobStatus

    task_path: ClassVar[str]
    task_kwargs: ClassVar[dict[str, Any]] = {}
    priority: ClassVar[int] = 0  # Django's task priority: students' grading 0, instructors' tools below
    # Give up on a job queued this many GRADING_REQUEUE_AFTER rounds without a worker taking
    # it, counted from the ``queued_since`` field (None: keep queueing it again).
    unclaimed_rounds: ClassVar[int | None] = None
    queued_since: ClassVar[str] = "created_at"

    status = models.CharField(
        _("status"), max_length=8, choices=JobStatus, default=JobStatus.QUEUED, db_index=True
    )
    # When a task was last put on the queue for it: the sweeper gives a job queued for longer
    # than GRADING_REQUEUE_AFTER a new task (its task may be lost; claiming is idempotent).
    enqueued_at = models.DateTimeField(_("queued at"), null=True, blank=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    # The lease of the worker that claimed it: a dead worker's lease expires and the sweeper
    # queues the job again; a late result with a stale lease is dropped.
    lease_token = models.CharField(_("lease"), max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(_("lease expires"), null=True, blank=True)
    tries = models.PositiveSmallIntegerField(_("grading tries"), default=0)
    last_error = models.TextField(_("last grader error"), blank=True)

    # A model with its own queryset methods sets ``objects`` from a subclass of JobQuerySet.
    objects = JobQuerySet.as_manager()

    class Meta:
        abstract = True

    @property
    def is_pending(self) -> bool:
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)

    @classmethod
    def given_up_fields(cls, tries: int) -> dict[str, Any]:
        """What else a job stores when the sweeper gives up on it after ``tries`` lost workers."""
        return {}
