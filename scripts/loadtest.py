#!/usr/bin/env python
"""Load and crash test of the grading queue (not a timed test; run with `make loadtest`).

Starts the site and its grading workers on loopback with a throw-away database, simulates
students over HTTP (sign up, enrol, open the lesson, submit correct, wrong and hostile code,
poll the status), kills a grading worker with SIGKILL twice while they work (the supervisor
restarts it), and prints what happened to every submission.
"""

import argparse
import http.cookiejar
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
COURSE, LESSON, EXERCISE = "attention", "scaled-dot-product", "attention-function"
EXERCISE_DIR = ROOT / "courses" / "content" / COURSE / "06-scaled-dot-product" / EXERCISE
sys.path.insert(0, str(ROOT))

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


class Student:
    def __init__(self, base: str, index: int):
        self.base = base
        self.name = f"yuk{index:03d}"
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=60) as response:
            return response.read().decode()

    def post(self, path: str, data: dict, json_reply: bool = False, fragment: bool = False):
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": self.csrf()}).encode()
        request = urllib.request.Request(self.base + path, data=body, headers={"Referer": self.base + path})
        if json_reply or fragment:
            request.add_header("X-Requested-With", "dikkat")
        try:
            with self.opener.open(request, timeout=60) as response:
                text = response.read().decode()
                return response.status, (json.loads(text) if json_reply else text), response.headers
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return (
                error.code,
                (json.loads(text) if json_reply and text.startswith("{") else text),
                error.headers,
            )

    def join(self) -> None:
        self.get("/accounts/kayit/")
        password = "Yuk-testi-parola-2026"
        status, _, _ = self.post(
            "/accounts/kayit/", {"username": self.name, "password1": password, "password2": password}
        )
        if status != 200:
            raise RuntimeError(f"sign-up failed for {self.name}: {status}")
        self.get(f"/kurs/{COURSE}/")
        self.post(f"/kurs/{COURSE}/kaydol/", {})
        self.get(f"/kurs/{COURSE}/{LESSON}/")


def pick_code(rng: random.Random, label: str) -> tuple[str, str]:
    roll = rng.random()
    if roll < 0.06:
        kind = rng.choice(sorted(HOSTILE))
        return f"hostile:{kind}", HOSTILE[kind] + f"# {label}\n"
    if roll < 0.30:
        return "wrong", WRONG + f"# {label}\n"
    return "correct", CORRECT + f"# {label}\n"


FILL_IN = "sdp-mask-fill"  # a self-test question with a code blank: graded through the same queue
FILL_IN_ANSWERS = ["-np.inf", "-1e9", "0", "np.inf"]  # right, right, two known misconceptions


def answer_fill_in(
    student: Student, rng: random.Random, answers: list, lock: threading.Lock, deadline: float
) -> None:
    """Answer the lesson's code fill-in once and follow it to its result, as static/js/selftest.js does."""
    started = time.monotonic()
    status, html, _ = student.post(
        f"/kurs/{COURSE}/{LESSON}/soru/{FILL_IN}/", {"blank-0": rng.choice(FILL_IN_ANSWERS)}, fragment=True
    )
    found = re.search(r'data-status-url="(/cevap/(\d+)/durum/)"', html) if status == 200 else None
    if found is None:
        with lock:
            answers.append({"id": None, "error": f"HTTP {status}, no pending answer", "seconds": None})
        return
    url, record, delay = found.group(1), {"id": int(found.group(2)), "seconds": None}, 0.5
    while time.monotonic() < deadline:
        time.sleep(delay)
        with student.opener.open(student.base + url, timeout=60) as response:
            state = json.loads(response.read())["status"]
        if state not in ("queued", "running"):
            record["seconds"] = time.monotonic() - started
            break
        delay = min(delay * 1.3, 3.0)
    with lock:
        answers.append(record)


def run_student(
    student: Student,
    count: int,
    results: list,
    answers: list,
    lock: threading.Lock,
    ready: threading.Barrier,
    deadline: float,
    seed: int,
) -> None:
    rng = random.Random(seed)
    # Before the rush: sign up (which logs in), enrol, open the lesson. Then everybody waits
    # for the deadline rush together, as a class at its desks would.
    try:
        student.join()
    except Exception as error:  # noqa: BLE001 -- counted below as refused submissions
        with lock:
            results.extend(
                {"kind": "join", "id": None, "error": repr(error), "seconds": None} for _ in range(count)
            )
        ready.wait()
        return
    ready.wait()
    path = f"/kurs/{COURSE}/{LESSON}/alistirma/{EXERCISE}/gonder/"
    for attempt in range(count):
        if attempt == count // 2:
            answer_fill_in(student, rng, answers, lock, deadline)
        kind, code = pick_code(rng, f"{student.name}-{attempt}")
        while True:
            started = time.monotonic()
            status, reply, headers = student.post(path, {"code": code, "mode": "submit"}, json_reply=True)
            if status == 429:
                time.sleep(float(headers.get("Retry-After", "1")))
                continue
            break
        if status not in (200, 202):
            with lock:
                results.append({"kind": kind, "id": None, "error": f"HTTP {status}", "seconds": None})
            continue
        record = {
            "kind": kind,
            "id": reply["id"],
            "verdict": reply.get("verdict"),
            "seconds": None,
            "polls": [],
        }
        url = reply["status_url"]
        # As static/js/exercise.js polls: when the server expects the verdict (poll_after_ms),
        # else backing off from 0.5 s to 3 s.
        backoff = 0.5
        delay = reply.get("poll_after_ms", 500) / 1000
        while reply["status"] != "done" and time.monotonic() < deadline:
            time.sleep(delay)
            with student.opener.open(student.base + url, timeout=60) as response:
                reply = json.loads(response.read())
            record["polls"].append(reply["status"])
            backoff = min(backoff * 1.3, 3.0)
            delay = reply.get("poll_after_ms", backoff * 1000) / 1000
        if reply["status"] == "done":
            record["verdict"] = reply["verdict"]
            record["seconds"] = time.monotonic() - started
        with lock:
            results.append(record)


def grader_rates(workers: int) -> dict[str, float]:
    """The grader benchmark's throughput (fresh sandboxes, no web, no queue), measured now:
    on the loadtest's exercise and on `make bench`'s built-in sample."""
    from grader.bench import load_exercise, throughput
    from grader.core import run_reference

    rates = {}
    for name, folder in ((EXERCISE, EXERCISE_DIR), ("make bench sample", None)):
        spec, solution, cases = load_exercise(folder)
        ref = run_reference(solution, spec, cases)
        throughput(solution, spec, cases, ref, workers, 2 * workers)  # warm up
        rates[name] = throughput(solution, spec, cases, ref, workers, 40)
    return rates


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
            f"           {other:7.1f} s {100 * other / busy:3.0f} %  everything else (kernel, sandbox set-up outside the cgroups)"
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--per-student", type=int, default=10)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument(
        "--timeout", type=float, default=900, help="give up on the run after this many seconds"
    )
    args = parser.parse_args()

    print(
        f"==> Grader benchmark now, before the site starts ({args.workers} graders in parallel, fresh sandboxes)"
    )
    rates = grader_rates(args.workers)
    for name, rate in rates.items():
        print(f"    {name}: {rate:.2f} grades/s")

    var = Path(tempfile.mkdtemp(prefix="dikkat-loadtest-"))
    marker = f"DIKKAT_LOADTEST={var.name}"
    env = {
        **os.environ,
        "DIKKAT_VAR_DIR": str(var),
        "DIKKAT_LOADTEST": var.name,
        "GRADER_DATA_DIR": str(ROOT / "var" / "grader"),
        # Students here submit as fast as grading allows; the per-student pending cap stays.
        "GRADING_RATE_LIMIT": "1000",
    }
    env.pop("DATABASE_URL", None)
    print(f"==> Preparing a throw-away site in {var}")
    for command in (["migrate", "-v", "0"], ["import_course", f"courses/content/{COURSE}"]):
        subprocess.run(
            [PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )
    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [
            PYTHON,
            "manage.py",
            "serve",
            "--bind",
            f"127.0.0.1:{args.port}",
            "--workers",
            str(args.workers),
            "--web-workers",
            "2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(var / "serve.log", "w"),  # noqa: SIM115 -- the server keeps it
        start_new_session=True,
    )
    try:
        wait_for(base + "/", 60)
        total = args.students * args.per_student
        print(f"==> {args.students} students sign up, enrol and open the lesson")
        results: list[dict] = []
        answers: list[dict] = []
        lock = threading.Lock()
        ready = threading.Barrier(args.students + 1)
        joined = time.monotonic()
        deadline = joined + args.timeout
        threads = [
            threading.Thread(
                target=run_student,
                args=(Student(base, i), args.per_student, results, answers, lock, ready, deadline, i),
                daemon=True,
            )
            for i in range(args.students)
        ]
        for thread in threads:
            thread.start()
        try:
            ready.wait(timeout=args.timeout)
            print(f"    ready after {time.monotonic() - joined:.1f} s")
        except threading.BrokenBarrierError:
            print("    some students never got ready (see the refused count below)")
        print(
            f"==> The rush: {args.students} students × {args.per_student} submissions = {total}, {args.workers} grading workers"
        )
        account = CpuAccount(marker)
        started = time.monotonic()
        kills = 0
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(1)
            account.sample()
            with lock:
                done = len(results)
            if kills < args.kills and done >= total * (kills + 1) / (args.kills + 1):
                victims = grading_workers(marker)
                if victims:
                    victim = random.choice(victims)
                    os.kill(victim, signal.SIGKILL)
                    kills += 1
                    print(f"    killed grading worker {victim} with SIGKILL after {done} verdicts")
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        elapsed = time.monotonic() - started
        account.sample()
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)

    # The database's own account of every submission, after the run.
    check = subprocess.run(
        [
            PYTHON,
            "manage.py",
            "shell",
            "-v",
            "0",
            "-c",
            "import json; from grader.models import Submission as S; from courses.models import Attempt as A; "
            "print(json.dumps({'submissions': {str(s.pk): [s.status, s.verdict, s.tries] for s in S.objects.all()}, "
            "'answers': {str(a.pk): [a.status, a.correct, a.tries] for a in A.objects.filter(kind='answer')}}))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    stored_all = json.loads(check.stdout)
    stored = stored_all["submissions"]
    accepted = [r for r in results if r["id"] is not None]
    lost = [r for r in accepted if str(r["id"]) not in stored]
    stuck = [r for r in accepted if str(r["id"]) in stored and stored[str(r["id"])][0] != "done"]
    times = sorted(r["seconds"] for r in accepted if r["seconds"] is not None)
    retried = sum(1 for v in stored.values() if v[2] > 1)
    verdicts: dict[str, int] = {}
    for r in accepted:
        key = f"{r['kind'].split(':')[0]}→{stored.get(str(r['id']), [None, 'lost'])[1]}"
        verdicts[key] = verdicts.get(key, 0) + 1
    graded = sum(1 for v in stored.values() if v[0] == "done")
    print(f"submitted: {len(accepted)} (refused by HTTP: {len(results) - len(accepted)})")
    print(f"graded:    {graded}")
    print(f"lost:      {len(lost)}")
    print(f"stuck:     {len(stuck)}")
    print(f"re-graded after a killed worker: {retried}; workers killed: {kills}")
    if times:
        p50 = statistics.median(times)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print(f"time to verdict: p50 {p50:.2f} s, p95 {p95:.2f} s")
    stored_answers = stored_all["answers"]
    sent = [a for a in answers if a["id"] is not None]
    answers_graded = sum(1 for v in stored_answers.values() if v[0] in ("done", "failed"))
    print(
        f"code fill-in answers (same queue): sent {len(sent)} (refused: {len(answers) - len(sent)}), "
        f"graded {sum(1 for v in stored_answers.values() if v[0] == 'done')}, "
        f"grader failed {sum(1 for v in stored_answers.values() if v[0] == 'failed')}, "
        f"lost {sum(1 for a in sent if str(a['id']) not in stored_answers)}, "
        f"stuck {sum(1 for a in sent if stored_answers.get(str(a['id']), ['done'])[0] in ('queued', 'running'))}"
    )
    rate = graded / elapsed
    print(
        f"throughput: {rate:.2f} graded submissions/s over {elapsed:.1f} s (first submission to last verdict)"
    )
    for name, bench in rates.items():
        print(
            f"            = {rate / bench:.2f} x the grader benchmark's {bench:.2f}/s on {name} (target >= 0.8)"
        )
    print(f"            with the fill-in answers: {(graded + answers_graded) / elapsed:.2f} sandbox jobs/s")
    polls = [r["polls"] for r in accepted if "polls" in r]
    if polls:
        found = {state: sum(p.count(state) for p in polls) for state in ("queued", "running", "done")}
        print(
            f"status polls: {sum(map(len, polls))} ({statistics.mean(map(len, polls)):.1f} per submission); "
            f"they found it " + ", ".join(f"{state} {n}" for state, n in found.items())
        )
    print("verdicts:  " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    print("\n".join(account.report(elapsed, graded)))
    shutil.rmtree(var, ignore_errors=True)
    answers_ok = len(sent) == len(answers) == args.students and all(
        stored_answers.get(str(a["id"]), ["lost"])[0] in ("done", "failed") for a in sent
    )
    return (
        0
        if not lost and not stuck and answers_ok and len(accepted) == args.students * args.per_student
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
