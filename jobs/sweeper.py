"""One sweeper for every kind of queued job: each concrete subclass of jobs.models.Job is swept
(a new job model is covered by being one; nothing here changes). ``release`` gives back at once
what a worker that its supervisor saw die was holding."""

import logging
from datetime import datetime

from django.apps import apps
from django.utils import timezone

from .models import Job

log = logging.getLogger("grader")


def job_models() -> list[type[Job]]:
    """Every concrete job model Django knows."""
    return [model for model in apps.get_models() if issubclass(model, Job)]


def sweep(now: datetime | None = None) -> dict[str, tuple[int, int]]:
    """Sweep every job model once; (queued again, given up) per model label, for the models
    where something happened."""
    now = now or timezone.now()
    happened = {}
    for model in job_models():
        requeued, given_up = model.objects.sweep(now)
        if requeued or given_up:
            happened[model._meta.label] = (requeued, given_up)
            log.warning("sweeper: %s: %d queued again, %d given up", model._meta.label, requeued, given_up)
    return happened


def release(worker_id: str) -> dict[str, tuple[int, int]]:
    """Give back every job of every model that the worker ``worker_id`` held, once that worker
    is known to be dead (its supervisor saw it exit): (queued again, given up) per model label,
    for the models where something happened. A live worker's jobs are never touched: each
    start of a worker has an id of its own, and its leases carry it."""
    happened = {}
    for model in job_models():
        requeued, given_up = model.objects.release(worker_id)
        if requeued or given_up:
            happened[model._meta.label] = (requeued, given_up)
            log.warning(
                "worker %s died: %s: %d queued again, %d given up",
                worker_id,
                model._meta.label,
                requeued,
                given_up,
            )
    return happened
