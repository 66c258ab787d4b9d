"""`manage.py serve` supervises the grading workers: a worker killed mid-job is restarted and
its job is graded again at once, not after its lease expires; a live worker keeps its jobs."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dikkat_support import worker_env

from grader.grading import lease_duration, submit
from grader.models import Submission
from jobs.queue import lease_holder

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sandbox, pytest.mark.queue]

ROOT = Path(__file__).resolve().parent.parent
SLOW = "import time\ntime.sleep(2.5)\ntotal = x.sum()\n"


def grading_workers(serve: subprocess.Popen) -> dict[str, int]:
    """The grading workers serve started: their --worker-id → their PID."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode().split("\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue  # it ended meanwhile
        if parent == serve.pid and "grading_worker" in args and "--worker-id" in args:
            found[args[args.index("--worker-id") + 1]] = int(entry.name)
    return found


def wait_until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not (result := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    return result


@pytest.fixture
def serve(tmp_path):
    """serve with two grading workers on the tests' database; no sweeper could recover a job
    within the test (it sweeps once an hour), so only the supervisor can."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "manage.py", "serve", "--workers", "2", "--web-workers", "1"]
    with open(tmp_path / "serve.log", "wb") as log:
        process = subprocess.Popen(
            [*command, "--bind", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=worker_env(GRADING_SWEEP_INTERVAL="3600"),
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        yield process
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_a_worker_killed_mid_job_is_restarted_and_its_job_graded_again_long_before_its_lease_ends(
    serve, alice, bob, lab
):
    slow = lab.exercises.get(slug="slow")
    lease = lease_duration(slow)
    wait_until(lambda: len(grading_workers(serve)) == 2, 60, "serve never started two grading workers")
    doomed = submit(alice, slow, SLOW).submission
    spared = submit(bob, slow, SLOW + "# another\n").submission

    def both_running():
        rows = list(Submission.objects.filter(pk__in=[doomed.pk, spared.pk], status="running"))
        return len(rows) == 2 and {row.pk: row for row in rows}

    running = wait_until(both_running, 60, "the two workers never took one submission each")
    first, other = running[doomed.pk], running[spared.pk]
    holder = first.lease_token.rsplit(".", 1)[0]
    assert holder != other.lease_token.rsplit(".", 1)[0]  # each worker's leases carry its own id
    # Worker ids by the name their leases carry (a digest of the id when it does not fit a token).
    workers = {lease_holder(worker_id): pid for worker_id, pid in grading_workers(serve).items()}
    os.kill(workers[holder], signal.SIGKILL)  # as the OOM killer or a crash would: the worker only

    done = wait_until(
        lambda: Submission.objects.filter(pk=doomed.pk, status="done").first(),
        lease.total_seconds(),
        "the dead worker's submission was not graded again within its lease",
    )
    # Graded again (a second try, counted) and stored before its first lease would have run out:
    # without the supervisor it would have waited for that, and for a sweep.
    assert (done.verdict, done.tries) == ("passed", 2)
    assert done.finished_at < first.lease_expires_at
    assert "worker died" in done.last_error
    # The dead worker was replaced by a new start with an id of its own.
    restarted = wait_until(
        lambda: (
            len(grading_workers(serve)) == 2
            and {lease_holder(worker_id) for worker_id in grading_workers(serve)}
        ),
        60,
        "no restart",
    )
    assert holder not in restarted and set(workers) - {holder} <= set(restarted)

    # The live worker kept its lease the whole time and stored its own result on its first try.
    kept = wait_until(
        lambda: Submission.objects.filter(pk=spared.pk, status="done").first(),
        60,
        "the live worker never finished",
    )
    assert (kept.verdict, kept.tries, kept.started_at) == ("passed", 1, other.started_at)
    assert kept.last_error == ""
