#!/usr/bin/env python
"""A deadline rush on the grading queue (run with `make loadtest`; not a timed test).

Starts the site and its grading workers (`manage.py serve`) on loopback with a throw-away
database. Students sign up, enrol and open the lesson over HTTP; then, over a few minutes that
ramp up towards the deadline as a class does, they send exercise submissions (correct, wrong and
a few hostile programs) and answer a code fill-in blank, each followed to its verdict by polling
as the lesson page does. The grading workers are all killed with SIGKILL a few times during the
rush (the supervisor restarts them). Then, after a grace period, the database says what became of
everything sent: per kind (exercise, blank) it prints the time to verdict from the POST to the
verdict being stored and as the student's polling saw it (p50/p95), and how many were lost
(sent, never got a verdict) or stuck (still waiting or being graded at the end).

Only HTTP and public management commands are used; the database is read once, at the end. The
site under test differs from a default one in two ways only: per-address limits are raised (one
loopback address stands for a whole class) and sign-up hashes passwords fast (preparing 500
students would otherwise take minutes; no password is checked during the rush). The exit status
says whether everything sent got its verdict (nothing refused, lost, stuck or failed by the
grader); times depend on the machine, so the target is judged in words only.
"""

from __future__ import annotations

import argparse
import bisect
import http.cookiejar
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
COURSE, LESSON, EXERCISE = "attention", "scaled-dot-product", "attention-function"
FILL_IN = "sdp-mask-fill"  # a self-test question with a code blank: graded by a worker through the queue
# Right, right, and two known misconceptions (both still run in the sandbox).
FILL_IN_ANSWERS = ["-np.inf", "-1e9", "0", "np.inf"]
# A status that means "no verdict yet" (what static/js/selftest.js keeps polling on).
PENDING = frozenset({"queued", "running", "claimed"})
TARGET_P95 = 2.0  # seconds, on 2 cores (issue 13)

CORRECT = """import numpy as np

def attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ V
"""
WRONG = CORRECT.replace(" / np.sqrt(Q.shape[-1])", "")
HOSTILE = {
    "fork-bomb": "import os\nwhile True:\n    os.fork()\n",
    "infinite-loop": "while True:\n    pass\n",
    "memory-bomb": "x = bytearray(1 << 34)\n",
    "output-flood": "while True:\n    print('x' * 10000)\n",
    "exit-zero": "import os\nos._exit(0)\n",
    "network": "import socket\nsocket.create_connection(('127.0.0.1', 1), timeout=1)\n",
}

# The site under test differs from a default one only where one loopback address stands for a
# whole class (per-address limits) and where sign-up's deliberately slow password hashing would
# make preparing 500 students take minutes (it plays no part in the rush).
SETTINGS = """from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
"""
PER_ADDRESS_LIMITS = {
    "SIGNUP_LIMIT_PER_IP": "100000",
    "SIGNUP_LIMIT_GLOBAL": "100000",
    "SUBMISSION_LIMIT_PER_IP": "3000",  # the site-wide limits (3,000 and 6,000 a minute) stay
    "ANSWER_LIMIT_PER_IP": "6000",
}

# A "the grader failed, send it again" outcome: not a verdict on the student's work.
GRADER_FAILED = "grader failed"
# What the database says, read once at the end: per kind, id → [status, pending, verdict (or
# GRADER_FAILED, or None while there is none), grading tries, when the outcome was stored (epoch
# seconds) or None]. Optional fields are read with getattr: missing shows as missing, not a crash.
OUTCOMES = f"""
import json
from django_tasks_db.models import DBTaskResult
from courses.models import Attempt
from grader.models import Submission


def row(obj, verdict):
    if obj.status == "failed" or verdict == "internal_error":
        verdict = "{GRADER_FAILED}"
    finished = getattr(obj, "finished_at", None)
    return [obj.status, bool(obj.is_pending), None if obj.is_pending else verdict,
            getattr(obj, "tries", 0), finished.timestamp() if finished else None]


print(json.dumps({{
    "exercise": {{str(s.pk): row(s, s.verdict or None) for s in Submission.objects.all()}},
    "blank": {{
        str(a.pk): row(a, ("correct" if a.correct else "wrong") if a.status == "done" else None)
        for a in Attempt.objects.filter(kind="answer")
    }},
    # When each task a grading worker finished (or was still in) ran: how busy the workers were.
    "tasks": [
        [t.started_at.timestamp(), t.finished_at.timestamp() if t.finished_at else None]
        for t in DBTaskResult.objects.filter(started_at__isnull=False).only("started_at", "finished_at")
    ],
}}))
"""


@dataclass
class Job:
    """One thing a student sends during the rush and what the student saw of it."""

    kind: str  # "exercise" or "blank"
    at: float  # seconds into the rush when the student sends it
    what: str  # correct, wrong, hostile:<name>; the blank's answer
    payload: str
    id: int | None = None
    posted: float | None = None  # wall-clock time of the accepted POST (compared with the database's)
    seen: float | None = None  # seconds from that POST until the student's page had the verdict
    error: str | None = None
    refused: int = 0  # "too many, wait" answers before the POST was accepted
    polls: int = 0


class Student:
    def __init__(self, base: str, index: int):
        self.base = base
        self.name = f"yuk{index:04d}"
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.jobs: list[Job] = []

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken" and c.value is not None)

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=60) as response:
            return str(response.read().decode())

    def poll(self, path: str) -> tuple[dict[str, Any], bool]:
        """A status poll as the page's script makes it: the JSON, and whether the server held
        the request to the end of its wait (the Dikkat-Waited header)."""
        request = urllib.request.Request(self.base + path, headers={"X-Requested-With": "dikkat"})
        with self.opener.open(request, timeout=60) as response:
            reply: dict[str, Any] = json.loads(response.read())
            return reply, response.headers.get("Dikkat-Waited") == "1"

    def post(self, path: str, data: dict[str, str], script: bool = True) -> tuple[int, str, dict[str, str]]:
        """POST as a form (or, ``script``, as the lesson page's script does); the status, the
        body and the headers."""
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": self.csrf()}).encode()
        request = urllib.request.Request(self.base + path, data=body, headers={"Referer": self.base + path})
        if script:
            request.add_header("X-Requested-With", "dikkat")
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.read().decode(), dict(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(), dict(error.headers)

    def join(self) -> None:
        self.get("/accounts/kayit/")
        password = "Yuk-testi-parola-2026"
        status, _, _ = self.post(
            "/accounts/kayit/",
            {"username": self.name, "password1": password, "password2": password},
            script=False,
        )
        if status != 200:
            raise RuntimeError(f"sign-up failed for {self.name}: HTTP {status}")
        self.get(f"/kurs/{COURSE}/")
        self.post(f"/kurs/{COURSE}/kaydol/", {}, script=False)
        self.get(f"/kurs/{COURSE}/{LESSON}/")


def pick_code(rng: random.Random) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.06:
        kind = rng.choice(sorted(HOSTILE))
        return f"hostile:{kind}", HOSTILE[kind]
    if roll < 0.30:
        return "wrong", WRONG
    return "correct", CORRECT


def schedule(
    students: list[Student], submissions: int, seconds: float, blank_share: float, seed: int
) -> None:
    """Hand out the rush's submissions: arrival times with a density rising linearly to the
    deadline (half of them in its last 29 %), each to a random student."""
    rng = random.Random(seed)
    for index in range(submissions):
        at = seconds * math.sqrt(rng.random())
        student = rng.choice(students)
        if rng.random() < blank_share:
            answer = rng.choice(FILL_IN_ANSWERS)
            student.jobs.append(Job("blank", at, answer, answer))
        else:
            what, code = pick_code(rng)
            # A unique comment: the site answers an exact resend with the earlier verdict, ungraded.
            student.jobs.append(Job("exercise", at, what, code + f"# {student.name}-{index}\n"))
    for student in students:
        student.jobs.sort(key=lambda job: job.at)


EARLY = 1.0  # seconds: the page asks this much before the verdict the server expects


def until_expected(reply: dict[str, Any]) -> float:
    """Seconds until shortly before the verdict the server expects (poll_after_ms), or 0."""
    return max(0.0, reply.get("poll_after_ms", 0) / 1000 - EARLY)


def follow(student: Student, job: Job, url: str, reply: dict[str, Any], started: float, until: float) -> None:
    """Poll a status URL as static/js/exercise.js and selftest.js do: each poll asks the server
    to wait for the verdict (?wait=1); a reply held to the end of that wait (Dikkat-Waited) is
    followed at once, any other after the back-off from 0.5 s to 3 s (or shortly before the
    verdict the server expects, if later); 3 s after a failed poll."""
    url += ("&" if "?" in url else "?") + "wait=1"
    backoff, delay = 0.5, until_expected(reply)
    while reply.get("status") in PENDING:
        if time.monotonic() + delay > until:
            return
        time.sleep(delay)
        try:
            reply, held = student.poll(url)
        except (OSError, ValueError):
            backoff = delay = 3.0
            continue
        job.polls += 1
        if held:
            delay = 0.0
        else:
            delay = max(backoff, until_expected(reply))
            backoff = min(backoff * 1.3, 3.0)
    job.seen = time.monotonic() - started


def send(student: Student, job: Job, until: float) -> None:
    """Send one job, as the page would, and follow it to its verdict."""
    while True:
        job.posted, started = time.time(), time.monotonic()
        if job.kind == "exercise":
            path = f"/kurs/{COURSE}/{LESSON}/alistirma/{EXERCISE}/gonder/"
            status, text, headers = student.post(path, {"code": job.payload, "mode": "submit"})
        else:
            path = f"/kurs/{COURSE}/{LESSON}/soru/{FILL_IN}/"
            status, text, headers = student.post(path, {"blank-0": job.payload})
        if status == 429 and time.monotonic() < until:
            job.refused += 1
            time.sleep(float(headers.get("Retry-After", "1")))
            continue
        break
    if job.kind == "exercise":
        if status not in (200, 202):
            job.error = f"HTTP {status}"
            return
        reply: dict[str, Any] = json.loads(text)
        job.id = int(reply["id"])
        follow(student, job, str(reply["status_url"]), reply, started, until)
        return
    found = re.search(r'data-status-url="(/cevap/(\d+)/durum/)"', text) if status == 200 else None
    if found is None:
        alert = re.search(r'role="alert"[^>]*>\s*([^<]*)', text)
        job.error = f"HTTP {status}, nothing sent to the grader" + (
            f": {alert.group(1).strip()}" if alert else ""
        )
        return
    job.id = int(found.group(2))
    follow(student, job, found.group(1), {"status": "queued"}, started, until)


def run_student(student: Student, start: float, until: float) -> None:
    """A student at the deadline: sends each job when its time comes (or as soon as the last
    verdict is in, when it came meanwhile), one at a time, as one browser tab does."""
    for job in student.jobs:
        time.sleep(max(0.0, start + job.at - time.monotonic()))
        if time.monotonic() >= until:
            job.error = "never sent (the run ended)"
            continue
        try:
            send(student, job, until)
        except Exception as error:  # noqa: BLE001 -- counted as a failure below
            job.error = job.error or repr(error)


def site_processes(marker: str) -> dict[int, bytes]:
    """The processes of the site under test (found by a marker in their environment)."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ:
            found[int(proc.name)] = cmdline
    return found


def grading_workers(marker: str) -> list[int]:
    return [pid for pid, cmdline in site_processes(marker).items() if b"grading_worker" in cmdline]


TICK = os.sysconf("SC_CLK_TCK")
SANDBOX_CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def process_cpu(pid: int) -> float:
    """CPU seconds a process used itself (not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def machine_busy() -> float:
    """CPU seconds all cores spent not idle since boot."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:8]]
    return (sum(values) - values[3] - values[4]) / TICK


def sandbox_cpu() -> float | None:
    """CPU seconds used by every grading sandbox so far (the grader's cpuacct parent cgroup)."""
    own = next(
        (
            line.split(":", 2)[2]
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.split(":", 2)[1].split(",").count("cpuacct")
        ),
        None,
    )
    if own is None:
        return None
    usage = SANDBOX_CPUACCT / own.lstrip("/") / "dikkat-grader" / "cpuacct.usage"
    try:
        return int(usage.read_text()) / 1e9
    except OSError:
        return None


class CpuAccount:
    """Where the machine's CPU went during the run: sandboxes, workers, web, this script."""

    def __init__(self, marker: str):
        self.marker = marker
        self.busy0, self.sandbox0 = machine_busy(), sandbox_cpu()
        self.self0 = time.process_time()
        self.base = {pid: process_cpu(pid) for pid in site_processes(marker)}
        self.seen: dict[int, tuple[str, float]] = {}
        self.samples: list[tuple[float, float]] = [(time.time(), self.busy0)]  # (epoch, machine_busy())

    def sample(self) -> None:
        """Note every site process's CPU so far (killed workers keep what they had used)."""
        for pid, cmdline in site_processes(self.marker).items():
            kind = (
                "grading workers (Django side)"
                if b"grading_worker" in cmdline
                else "web server (gunicorn)"
                if b"gunicorn" in cmdline
                else "supervisor"
            )
            self.seen[pid] = (kind, process_cpu(pid) - self.base.get(pid, 0.0))

    def report(self, elapsed: float, graded: int) -> list[str]:
        busy = machine_busy() - self.busy0
        parts: dict[str, float] = {}
        for kind, seconds in self.seen.values():
            parts[kind] = parts.get(kind, 0.0) + seconds
        sandbox = sandbox_cpu()
        if sandbox is not None and self.sandbox0 is not None:
            parts = {"grading sandboxes": sandbox - self.sandbox0, **parts}
        parts["load generator (this script)"] = time.process_time() - self.self0
        lines = [
            f"CPU:       {busy:.1f} s busy of {elapsed * (os.cpu_count() or 1):.1f} s on {os.cpu_count()} cores"
        ]
        for kind, seconds in parts.items():
            lines.append(
                f"           {seconds:7.1f} s {100 * seconds / busy:3.0f} %  {kind}"
                + (
                    f" ({1000 * seconds / graded:.0f} ms per graded submission)"
                    if graded and kind != "load generator (this script)"
                    else ""
                )
            )
        other = busy - sum(parts.values())
        lines.append(
            f"           {other:7.1f} s {100 * other / busy:3.0f} %  everything else (kernel, sandbox set-up outside the cgroups, other programs)"
        )
        return lines


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile (p95 of 20 values is the 19th)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def spread(values: Sequence[float]) -> str:
    if not values:
        return "none"
    return (
        f"p50 {percentile(values, 0.5):5.2f} s  p95 {percentile(values, 0.95):5.2f} s  "
        f"max {max(values):6.2f} s  (n={len(values)})"
    )


def prepare_site(var: Path) -> dict[str, str]:
    """A throw-away database and grading data with the course imported; the environment of the
    site under test."""
    (var / "loadtest_settings.py").write_text(SETTINGS)
    env = {
        **os.environ,
        **PER_ADDRESS_LIMITS,
        "DIKKAT_VAR_DIR": str(var),
        "DIKKAT_LOADTEST": var.name,  # marks the site's processes, to find the grading workers
        # Its own grading data, built by the import below: nothing is written to the checkout's var/.
        "GRADER_DATA_DIR": str(var / "grader"),
        "DJANGO_SETTINGS_MODULE": "loadtest_settings",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(var), str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("DATABASE_URL", None)
    for command in (["migrate", "-v", "0"], ["import_course", f"courses/content/{COURSE}"]):
        subprocess.run(
            [PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )
    return env


def sign_up(students: list[Student]) -> list[Student]:
    """Before the rush: every student signs up (which logs in), enrols and opens the lesson."""

    def join(student: Student) -> str | None:
        try:
            student.join()
            return None
        except Exception as error:  # noqa: BLE001 -- reported, and the student's jobs count as refused
            return repr(error)

    with ThreadPoolExecutor(max_workers=8) as pool:
        problems = list(pool.map(join, students))
    for student, problem in zip(students, problems, strict=True):
        if problem is not None:
            for job in student.jobs:
                job.error = f"could not sign up: {problem}"
    return [s for s, problem in zip(students, problems, strict=True) if problem is None]


KILL_WAIT = 30.0  # seconds a kill may wait for work in flight


def rush(
    args: argparse.Namespace, students: list[Student], marker: str
) -> tuple[CpuAccount, float, list[str]]:
    """Run the rush and kill the grading workers during it; CPU account, seconds, kill notes."""
    seconds = 60 * args.minutes
    start = time.monotonic() + 1
    until = start + seconds + args.grace
    threads = [threading.Thread(target=run_student, args=(s, start, until), daemon=True) for s in students]
    for thread in threads:
        thread.start()
    jobs = [job for student in students for job in student.jobs]
    kill_at = [start + seconds * (k + 1) / (args.kills + 1) for k in range(args.kills)]
    account = CpuAccount(marker)
    notes: list[str] = []
    report_at = start + 30
    busy_at_report = machine_busy()
    while any(t.is_alive() for t in threads) and time.monotonic() < until:
        time.sleep(0.5)
        account.sample()
        account.samples.append((time.time(), machine_busy()))
        now = time.monotonic()
        waiting = sum(1 for j in jobs if j.id is not None and j.seen is None)
        # A kill when nothing is in flight proves nothing: it waits (up to KILL_WAIT) for work
        # sent and not yet seen graded, which a killed worker may be holding.
        if kill_at and now >= kill_at[0] and (waiting or now >= kill_at[0] + KILL_WAIT):
            kill_at.pop(0)
            victims = grading_workers(marker)
            for pid in victims:
                os.kill(pid, signal.SIGKILL)
            notes.append(
                f"{now - start:4.0f} s: {len(victims)} grading workers killed, {waiting} awaiting a verdict"
            )
            print(f"    {notes[-1]}", flush=True)
        if now >= report_at:
            report_at += 30
            sent = sum(1 for j in jobs if j.id is not None)
            seen = sum(1 for j in jobs if j.seen is not None)
            busy, busy_at_report = machine_busy() - busy_at_report, machine_busy()
            print(
                f"    {now - start:4.0f} s: {sent} sent, {seen} verdicts seen, {sent - seen} waiting; "
                f"the machine was busy {100 * busy / (30 * (os.cpu_count() or 1)):.0f} % of the last 30 s",
                flush=True,
            )
    for thread in threads:
        thread.join(timeout=max(0.1, until - time.monotonic()))
    elapsed = time.monotonic() - start
    account.sample()
    return account, elapsed, notes


def stop_site(server: subprocess.Popen[bytes], marker: str) -> None:
    """Stop the site as Ctrl-C in its terminal does (SIGINT to its whole process group); kill
    and name whatever outlives that, so no stray process keeps the port or the CPU."""
    os.killpg(server.pid, signal.SIGINT)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        print("    the site did not stop within 20 s of SIGINT", flush=True)
    time.sleep(1)
    left = site_processes(marker)
    for pid, cmdline in left.items():
        print(
            f"    still running after the site stopped, killed: {pid} {cmdline.replace(b'\0', b' ').decode()[:100]}"
        )
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def read_outcomes(env: dict[str, str]) -> tuple[dict[str, dict[str, list[Any]]], list[list[float | None]]]:
    """What became of everything sent, per kind (see OUTCOMES), and when each task ran."""
    check = subprocess.run(
        [PYTHON, "manage.py", "shell", "-v", "0", "-c", OUTCOMES],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    outcomes = json.loads(check.stdout)
    tasks: list[list[float | None]] = outcomes.pop("tasks")
    return outcomes, tasks


def report(
    jobs: list[Job], stored: dict[str, dict[str, list[Any]]], seconds: float
) -> tuple[bool, list[str]]:
    """Print what happened, per kind, and the target; whether nothing was refused, lost, stuck
    or failed by the grader (times depend on the machine: they are only judged in words), and
    the lines judging the target."""
    sound = True
    targets: list[str] = []
    print(
        f"{'':10} {'sent':>5} {'refused':>7} {'verdicts':>8} {'lost':>5} {'stuck':>5} {'failed':>6} {'retried':>7}"
    )
    timing: list[str] = []
    for kind in ("exercise", "blank"):
        rows = stored[kind]
        mine = [j for j in jobs if j.kind == kind]
        accepted = [j for j in mine if j.id is not None]
        found = [(j, rows.get(str(j.id))) for j in accepted]
        lost = [j for j, row in found if row is None or (not row[1] and row[2] is None)]
        stuck = [j for j, row in found if row is not None and row[1]]
        failed = [j for j, row in found if row is not None and row[2] == GRADER_FAILED]
        graded = [
            (j, row)
            for j, row in found
            if row is not None and not row[1] and row[2] not in (None, GRADER_FAILED)
        ]
        retried = sum(1 for _, row in found if row is not None and row[3] > 1)
        unseen = [j for j, _ in graded if j.seen is None]
        print(
            f"{kind:10} {len(mine):5} {len(mine) - len(accepted):7} {len(graded):8} {len(lost):5} "
            f"{len(stuck):5} {len(failed):6} {retried:7}"
        )
        stored_times = [row[4] - j.posted for j, row in graded if row[4] is not None and j.posted is not None]
        seen_times = [j.seen for j, _ in graded if j.seen is not None]
        timing.append(f"  {kind}")
        timing.append(
            "    stored:      "
            + (spread(stored_times) if stored_times else "not known (the site keeps no time of the verdict)")
        )
        timing.append(f"    page saw it: {spread(seen_times)}")
        if kind == "exercise":
            ordinary = [j.seen for j, _ in graded if j.seen is not None and not j.what.startswith("hostile")]
            timing.append(f"    page saw it, hostile programs left out: {spread(ordinary)}")
        again = [row[4] - j.posted for j, row in graded if row[3] > 1 and row[4] is not None and j.posted]
        if again:
            timing.append(f"    stored, graded again after a killed worker: {spread(again)}")
        slowest = sorted(
            ((row[4] - j.posted, j, row) for j, row in graded if row[4] is not None and j.posted),
            key=lambda item: -item[0],
        )[:3]
        if slowest:
            timing.append(
                "    slowest stored: "
                + ", ".join(
                    f"#{j.id} {seconds:.1f} s ({j.what}, due at {j.at:.0f} s, {row[3]} tries)"
                    for seconds, j, row in slowest
                )
            )
        if unseen:
            timing.append(
                f"    {len(unseen)} verdicts stored that the page never showed before the run ended"
            )
        errors: dict[str, int] = {}
        for j in mine:
            if j.error:
                errors[j.error[:120]] = errors.get(j.error[:120], 0) + 1
        for error, count in sorted(errors.items(), key=lambda item: -item[1])[:3]:
            timing.append(f"    refused {count}×: {error}")
        verdicts: dict[str, int] = {}
        for j, row in found:
            key = f"{j.what.split(':')[0]}→{row[2] if row else 'lost'}"
            verdicts[key] = verdicts.get(key, 0) + 1
        timing.append("    verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
        refusals = sum(j.refused for j in mine)
        if refusals:
            timing.append(f"    told to wait (429) {refusals} times before being accepted")
        sound = sound and not (lost or stuck or failed or unseen) and len(accepted) == len(mine)
        p95 = {
            name: percentile(times, 0.95)
            for name, times in (("stored", stored_times), ("seen", seen_times))
            if times
        }
        judged = p95.get("stored", p95.get("seen", math.inf))
        met = judged <= TARGET_P95 and not (lost or stuck)
        targets.append(
            f"  {kind:9} p95 "
            + (f"{p95['stored']:.2f} s to the stored verdict, " if "stored" in p95 else "")
            + (f"{p95['seen']:.2f} s until the page showed it, " if "seen" in p95 else "")
            + f"lost {len(lost)}, stuck {len(stuck)}: {'met' if met else 'MISSED'}"
        )
    print("time to verdict (from the POST; hostile programs run until their limits):")
    print("\n".join(timing))
    slices = 5
    print(f"by when it was sent (the rush ramps up; each row is a {seconds / slices:.0f} s slice):")
    for index in range(slices):
        low, high = index * seconds / slices, (index + 1) * seconds / slices
        part = [j for j in jobs if low <= j.at < high or (index == slices - 1 and j.at >= high)]
        seen = [j.seen for j in part if j.seen is not None]
        print(
            f"  {low:4.0f}–{high:4.0f} s: {len(part):4} sent ({len(part) / (high - low):5.2f}/s), page saw it {spread(seen)}"
        )
    finished = sorted(row[4] for rows in stored.values() for row in rows.values() if row[4] is not None)
    window = min(60.0, seconds / 5)
    busiest = max((bisect.bisect_left(finished, t + window) - i for i, t in enumerate(finished)), default=0)
    print(
        f"grading pace: at most {busiest / window:.2f} verdicts/s over {window:.0f} s "
        f"(sending peaked at {2 * len(jobs) / seconds:.2f}/s)"
    )
    # The queue's depth over time: sent (accepted) and not yet graded. When sending outpaces
    # grading, the last to send wait behind this many, whatever else is done about the tail.
    events = sorted(
        [(j.posted, 1) for j in jobs if j.id is not None and j.posted is not None]
        + [(row[4], -1) for rows in stored.values() for row in rows.values() if row[4] is not None]
    )
    depth = deepest = 0
    deepest_at = first = events[0][0] if events else 0.0
    for when, step in events:
        depth += step
        if depth > deepest:
            deepest, deepest_at = depth, when
    print(
        f"queue depth: at most {deepest} sent and not yet graded, {deepest_at - first:.0f} s after the first was sent"
    )
    return sound, targets


def pace(
    jobs: list[Job],
    stored: dict[str, dict[str, list[Any]]],
    tasks: list[list[float | None]],
    samples: list[tuple[float, float]],
    workers: int,
    step: float = 30.0,
) -> list[str]:
    """Where the grading pace went, per ``step`` seconds of the run: sent, graded, still waiting
    at its end, how busy the machine was (all cores) and how much of the grading workers' time
    was spent in a task. A queue that grows while both are well below 100 % is lost to something
    other than the CPU (a worker waiting between tasks, on the database or on a sandbox)."""
    if len(samples) < 2:
        return []
    posted = sorted(j.posted for j in jobs if j.id is not None and j.posted is not None)
    finished = sorted(row[4] for rows in stored.values() for row in rows.values() if row[4] is not None)
    cores = os.cpu_count() or 1
    times = [t for t, _ in samples]

    def busy_at(when: float) -> float:
        return samples[max(0, bisect.bisect_right(times, when) - 1)][1]

    first, end = samples[0][0], samples[-1][0]
    lines = [
        f"pace per {step:.0f} s: sent, graded, waiting at its end, machine busy, grading workers in a task"
    ]
    low = first
    while low < end - 1:
        high = min(low + step, end)
        sent = bisect.bisect_left(posted, high) - bisect.bisect_left(posted, low)
        graded = bisect.bisect_left(finished, high) - bisect.bisect_left(finished, low)
        waiting = bisect.bisect_left(posted, high) - bisect.bisect_left(finished, high)
        machine = (busy_at(high) - busy_at(low)) / (cores * (high - low))
        in_task = sum(
            max(0.0, min(high, stop if stop is not None else end) - max(low, start))
            for start, stop in tasks
            if start is not None
        ) / (max(1, workers) * (high - low))
        lines.append(
            f"  {low - first:4.0f}–{high - first:4.0f} s: {sent:4} sent, {graded:4} graded, {waiting:4} waiting; "
            f"machine busy {100 * machine:3.0f} %, workers in a task {100 * in_task:3.0f} %"
        )
        low = high
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--students", type=int, default=500, help="students in the class (default 500)")
    parser.add_argument(
        "--submissions",
        type=int,
        default=1000,
        help="exercise submissions and code-blank answers sent during the rush (default 1000)",
    )
    parser.add_argument("--minutes", type=float, default=5, help="length of the rush (default 5)")
    parser.add_argument(
        "--kills",
        type=int,
        default=2,
        help="times all grading workers are SIGKILLed during the rush (default 2)",
    )
    parser.add_argument(
        "--blank-share", type=float, default=0.3, help="share of code-blank answers (default 0.3)"
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=180,
        help="seconds after the rush for the last verdicts before the rest counts as stuck (default 180)",
    )
    parser.add_argument(
        "--workers", type=int, help="grading workers (default: the site's own, GRADING_WORKERS)"
    )
    parser.add_argument("--port", type=int, default=0, help="port of the site (default: a free one)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--keep", action="store_true", help="keep the throw-away site (database, serve.log) to look into"
    )
    args = parser.parse_args()
    seconds = 60 * args.minutes

    var = Path(tempfile.mkdtemp(prefix="dikkat-loadtest-"))
    print(f"==> Preparing a throw-away site in {var}", flush=True)
    env = prepare_site(var)
    if not args.port:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            args.port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [
            PYTHON,
            "manage.py",
            "serve",
            "--bind",
            f"127.0.0.1:{args.port}",
            "--web-workers",
            "2",
            *(["--workers", str(args.workers)] if args.workers is not None else []),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(var / "serve.log", "w"),  # noqa: SIM115 -- the server keeps it
        start_new_session=True,
    )
    students = [Student(base, i) for i in range(args.students)]
    schedule(students, args.submissions, seconds, args.blank_share, args.seed)
    jobs = [job for student in students for job in student.jobs]
    try:
        wait_for(base + "/", 60)
        print(f"==> {args.students} students sign up, enrol and open the lesson", flush=True)
        began = time.monotonic()
        ready = sign_up(students)
        args.workers = len(grading_workers(f"DIKKAT_LOADTEST={var.name}"))  # serve started them meanwhile
        print(f"    {len(ready)} ready after {time.monotonic() - began:.0f} s", flush=True)
        exercises = sum(1 for j in jobs if j.kind == "exercise")
        print(
            f"==> The rush: {exercises} exercise submissions and {len(jobs) - exercises} code-blank answers "
            f"over {seconds:.0f} s, rising to {2 * len(jobs) / seconds:.1f}/s at the deadline; "
            f"{args.workers} grading workers, all SIGKILLed {args.kills} times; {args.grace:.0f} s of grace after",
            flush=True,
        )
        # Other programs on the machine take CPU from the site: the load before and after says how much.
        load_before = os.getloadavg()[0]
        account, elapsed, killed = rush(args, ready, f"DIKKAT_LOADTEST={var.name}")
    finally:
        stop_site(server, f"DIKKAT_LOADTEST={var.name}")

    stored, tasks = read_outcomes(env)
    print(f"==> What became of them (the database after {elapsed:.0f} s)")
    sound, targets = report(jobs, stored, seconds)
    print("\n".join(pace(jobs, stored, tasks, account.samples, args.workers)))
    print("SIGKILL: " + ("; ".join(note.strip() for note in killed) or "none"))
    polls = [j.polls for j in jobs if j.id is not None]
    if polls:
        print(f"status polls: {sum(polls)} ({statistics.mean(polls):.1f} per job)")
    graded = sum(1 for kind in stored.values() for row in kind.values() if not row[1])
    print("\n".join(account.report(elapsed, graded)))
    print(
        f"==> Target on 2 cores: p95 ≤ {TARGET_P95:.0f} s from the POST to the stored verdict, "
        f"nothing lost or stuck (measured on {os.cpu_count()} cores, load average "
        f"{load_before:.1f} before the rush, {os.getloadavg()[0]:.1f} at the end)"
    )
    print("\n".join(targets))
    if args.keep:
        print(f"The site's database and serve.log are kept in {var}")
    else:
        shutil.rmtree(var, ignore_errors=True)
    return 0 if sound else 1


if __name__ == "__main__":
    sys.exit(main())
