"""Serve the site and its grading workers together; Ctrl-C stops everything it started."""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


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
            help="grading workers (default: GRADING_WORKERS, i.e. the core count)",
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
        worker_cmd = [python, manage, "grading_worker", "--no-startup-delay"]
        processes: dict[str, tuple[list[str], subprocess.Popen]] = {}

        # Each worker keeps one sandbox warm (NumPy imported, used for one job only) unless told otherwise.
        env = {"DIKKAT_GRADER_POOL": "1", **os.environ}

        def start(name: str, cmd: list[str]) -> None:
            # Each in a process group of its own: a Ctrl-C reaches only us, and stopping a group
            # also stops what its leader started (gunicorn's workers) should the leader go first.
            processes[name] = (
                cmd,
                subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, start_new_session=True),
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

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        start("web", web_cmd)
        for index in range(workers):
            start(
                f"worker-{index + 1}",
                worker_cmd + ["--worker-id", f"{os.uname().nodename}-{os.getpid()}-{index + 1}"],
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"Dikkat is running on http://{bind}/ with {workers} grading worker(s). Press Ctrl-C to stop."
            )
        )
        try:
            while not stopping:
                time.sleep(0.5)
                for name, (cmd, process) in list(processes.items()):
                    if process.poll() is not None and not stopping:
                        if name == "web":
                            self.stderr.write(
                                f"The web server exited with code {process.returncode}; stopping."
                            )
                            stopping = True
                            break
                        self.stderr.write(f"{name} exited with code {process.returncode}; restarting it.")
                        start(name, cmd)
        finally:
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
            self.stdout.write("Stopped.")
