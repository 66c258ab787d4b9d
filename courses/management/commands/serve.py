"""Serve the site and its grading workers together; Ctrl-C stops everything it started.

A grading worker that dies is restarted at once, and what it was grading goes back to the queue
at once: each start of a worker has an id of its own, its leases carry that id, and the
supervisor releases exactly the dead worker's leases (jobs.sweeper.release) and puts the task it
had taken back on the queue. Nothing of it waits for a lease to expire; a live worker's leases
are never touched (a reused PID cannot mix them up: the id is random per start)."""

import logging
import os
import secrets
import select
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from jobs.sweeper import release

log = logging.getLogger("grader")


def worker_id(index: int) -> str:
    """An id for one start of grading worker ``index``: unique (random), short enough for the
    lease tokens to carry it whole (jobs.queue.lease_holder)."""
    return f"{os.uname().nodename[:12]}-w{index}-{secrets.token_hex(6)}"


def give_back(dead: str) -> None:
    """What the dead worker ``dead`` held goes back to the queue: its jobs (their tries counting
    a lost worker, as the queue's rules say) and the tasks it had taken from django-tasks-db but
    not finished (one killed between taking a task and claiming its job would otherwise wait for
    the sweeper's GRADING_REQUEUE_AFTER). A task that lost GRADING_MAX_TRIES workers is left
    failed, so that a task that kills its workers cannot loop."""
    release(dead)
    for task in DBTaskResult.objects.running().only("id", "worker_ids"):
        if not task.worker_ids or task.worker_ids[-1] != dead:
            continue
        if len(task.worker_ids) >= settings.GRADING_MAX_TRIES:
            DBTaskResult.objects.filter(pk=task.pk, status=TaskResultStatus.RUNNING).update(
                status=TaskResultStatus.FAILED,
                exception_class_path="grading_worker.died",
                traceback=f"its worker died {len(task.worker_ids)} times",
            )
        else:
            # Claiming a job is idempotent: the task finds its job queued (and grades it) or not.
            DBTaskResult.objects.filter(pk=task.pk, status=TaskResultStatus.RUNNING).update(
                status=TaskResultStatus.READY, started_at=None
            )


class Command(BaseCommand):
    help = "Run the web server (gunicorn) and N grading workers; restart a worker that dies."

    def add_arguments(self, parser):
        port = os.environ.get("PORT", "8000")
        parser.add_argument(
            "--bind",
            default=f"127.0.0.1:{port}",
            help="address of the web server (default: 127.0.0.1 and $PORT, else 8000)",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=settings.GRADING_WORKERS,
            help="grading workers (default: GRADING_WORKERS, i.e. one more than the cores)",
        )
        parser.add_argument("--web-workers", type=int, default=2)

    def handle(self, *args, bind: str, workers: int, web_workers: int, **options):
        from grader.core import sandbox_problem

        if workers and (problem := sandbox_problem()):
            # Fail closed: without a safe sandbox no worker could grade, and submissions would pile up.
            raise CommandError(f"Grading cannot run safely on this machine: {problem}")
        if workers and os.geteuid() == 0:
            from grader.core import cgroups

            # cgroup v2: the workers are born in a leaf, so our cgroup can hand controllers to the runs.
            cgroups.prepare_for_workers()
        python = sys.executable
        manage = os.path.join(settings.BASE_DIR, "manage.py")
        web_cmd = [
            python,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            bind,
            "--workers",
            str(web_workers),
            "--threads",
            "4",
            "--access-logfile",
            "-",
        ]
        # serve ran Django's system checks once as it started: a worker restarted after a crash,
        # while students wait for its jobs, does not spend its first second on them again.
        worker_cmd = [python, manage, "grading_worker", "--no-startup-delay", "--skip-checks"]
        processes: dict[str, tuple[list[str], subprocess.Popen]] = {}

        # Each worker keeps one sandbox warm (NumPy imported, used for one job only) unless told otherwise.
        env = {"DIKKAT_GRADER_POOL": "1", **os.environ}

        # The id each worker was started with, to release exactly its leases when it dies.
        worker_ids: dict[str, str] = {}
        # Dead workers whose leases are still to be released (the database may be busy).
        to_release: list[str] = []

        def start(name: str, cmd: list[str]) -> None:
            # Each in a process group of its own: a Ctrl-C reaches only us, and stopping a group
            # also stops what its leader started (gunicorn's workers) should the leader go first.
            args = cmd
            if name.startswith("worker-"):
                worker_ids[name] = worker_id(int(name.removeprefix("worker-")))
                args = [*cmd, "--worker-id", worker_ids[name]]
            processes[name] = (
                cmd,
                subprocess.Popen(args, cwd=settings.BASE_DIR, env=env, start_new_session=True),
            )

        def signal_group(process: subprocess.Popen, signum: int) -> None:
            try:
                os.killpg(process.pid, signum)
            except ProcessLookupError:
                pass  # the whole group is gone

        stopping = False

        def stop(signum, frame):
            nonlocal stopping
            stopping = True

        # A child's death (SIGCHLD) or Ctrl-C wakes the loop below at once, through this pipe.
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        previous = {
            signum: signal.signal(signum, handler)
            for signum, handler in (
                (signal.SIGINT, stop),
                (signal.SIGTERM, stop),
                (signal.SIGCHLD, lambda signum, frame: None),
            )
        }
        previous_wakeup = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
        start("web", web_cmd)
        for index in range(workers):
            start(f"worker-{index + 1}", worker_cmd)
        self.stdout.write(
            self.style.SUCCESS(
                f"Dikkat is running on http://{bind}/ with {workers} grading worker(s). Press Ctrl-C to stop."
            )
        )
        try:
            while not stopping:
                select.select([wake_read], [], [], 1.0 if not to_release else 0.2)
                try:
                    while os.read(wake_read, 512):
                        pass
                except BlockingIOError:
                    pass
                for name, (cmd, process) in list(processes.items()):
                    if process.poll() is not None and not stopping:
                        if name == "web":
                            self.stderr.write(
                                f"The web server exited with code {process.returncode}; stopping."
                            )
                            stopping = True
                            break
                        # Nothing it started may outlive it (and write as it): then its leases are free.
                        signal_group(process, signal.SIGKILL)
                        to_release.append(worker_ids[name])
                        self.stderr.write(f"{name} exited with code {process.returncode}; restarting it.")
                        start(name, cmd)
                while to_release and not stopping:
                    try:
                        give_back(to_release[0])
                    except Exception:  # a locked database: again soon (the sweeper is the fallback)
                        log.exception(
                            "could not release the leases of dead worker %s; retrying", to_release[0]
                        )
                        break
                    finally:
                        close_old_connections()
                    to_release.pop(0)
        finally:
            signal.set_wakeup_fd(previous_wakeup)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.close(wake_read)
            os.close(wake_write)
            for _cmd, process in processes.values():
                signal_group(process, signal.SIGTERM)
            deadline = time.monotonic() + 10
            for _cmd, process in processes.values():
                try:
                    process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                # Whatever of the group is still there (a web worker stuck in a thread, say) would
                # keep the port: it is killed, not left behind.
                signal_group(process, signal.SIGKILL)
                process.wait()
            # Every worker is gone now: what they were grading waits for no lease at the next start.
            for dead in dict.fromkeys([*to_release, *worker_ids.values()]):
                try:
                    give_back(dead)
                except Exception:  # the sweeper of the next start is the fallback
                    log.exception("could not release the leases of worker %s", dead)
            self.stdout.write("Stopped.")
