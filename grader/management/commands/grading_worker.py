"""A grading worker: django-tasks-db's db_worker plus the sweeper thread (jobs.sweeper) that
gives every kind of job whose task or worker was lost back to the queue.

Its leases carry its ``--worker-id`` (jobs.queue.hold_leases_as): `manage.py serve` gives each
start of a worker an id of its own and, when it sees that process die, gives back that worker's
jobs at once (jobs.sweeper.release). A worker run alone has a random id; should it die, its jobs
wait for their leases to expire and the sweeper of another worker."""

import logging
import threading
import time

from django.conf import settings
from django.core.management.base import CommandError
from django.db import close_old_connections
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

from grader.core import sandbox_problem
from grader.core.pool import enable_from_env
from jobs.queue import hold_leases_as
from jobs.sweeper import sweep

log = logging.getLogger("grader")


def _sweep_forever(interval: float) -> None:
    while True:
        time.sleep(interval)
        try:
            sweep()  # logs what it queued again or gave up on
        except Exception:  # a locked or lost database must not kill the sweeper
            log.exception("sweeper failed; retrying")
        finally:
            close_old_connections()


class Command(DbWorkerCommand):
    help = "Run a grading worker (db_worker) that also gives the work of dead workers back to the queue."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        # db_worker looks for work once a second when idle; a student would wait for that.
        parser.set_defaults(interval=settings.GRADING_WORKER_INTERVAL_MS / 1000)

    def handle(self, *args, **options):
        problem = sandbox_problem()
        if problem:  # fail closed: a worker that cannot sandbox (with caps) takes no work
            raise CommandError(f"This worker cannot grade safely: {problem}")

        hold_leases_as(options["worker_id"])  # unique per start: db_worker's default is random
        enable_from_env()  # DIKKAT_GRADER_POOL=N keeps N sandboxes with NumPy already imported, each used once
        threading.Thread(
            target=_sweep_forever, args=(settings.GRADING_SWEEP_INTERVAL,), name="lease-sweeper", daemon=True
        ).start()
        return super().handle(*args, **options)
