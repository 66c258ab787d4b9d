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

    def post(self, path: str, data: dict, json_reply: bool = False):
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": self.csrf()}).encode()
        request = urllib.request.Request(self.base + path, data=body, headers={"Referer": self.base + path})
        if json_reply:
            request.add_header("X-Requested-With", "dikkat")
        try:
            with self.opener.open(request, timeout=60) as response:
                text = response.read().decode()
                return response.status, (json.loads(text) if json_reply else text), response.headers
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            return error.code, (json.loads(text) if json_reply and text.startswith("{") else text), error.headers

    def join(self) -> None:
        self.get("/accounts/kayit/")
        password = "Yuk-testi-parola-2026"
        status, _, _ = self.post("/accounts/kayit/", {"username": self.name, "password1": password, "password2": password})
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


def run_student(student: Student, count: int, results: list, lock: threading.Lock, deadline: float, seed: int) -> None:
    rng = random.Random(seed)
    student.join()
    path = f"/kurs/{COURSE}/{LESSON}/alistirma/{EXERCISE}/gonder/"
    for attempt in range(count):
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
        record = {"kind": kind, "id": reply["id"], "verdict": reply.get("verdict"), "seconds": None}
        url = reply["status_url"]
        delay = 0.5  # as static/js/exercise.js polls: from 0.5 s, growing to 3 s
        while reply["status"] != "done" and time.monotonic() < deadline:
            time.sleep(delay)
            delay = min(delay * 1.3, 3.0)
            with student.opener.open(student.base + url, timeout=60) as response:
                reply = json.loads(response.read())
        if reply["status"] == "done":
            record["verdict"] = reply["verdict"]
            record["seconds"] = time.monotonic() - started
        with lock:
            results.append(record)


def grading_workers(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"grading_worker" in cmdline and marker.encode() in environ:
            pids.append(int(proc.name))
    return pids


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
    parser.add_argument("--timeout", type=float, default=900, help="give up on the run after this many seconds")
    args = parser.parse_args()

    var = Path(tempfile.mkdtemp(prefix="dikkat-loadtest-"))
    marker = f"DIKKAT_LOADTEST={var.name}"
    env = {**os.environ, "DIKKAT_VAR_DIR": str(var), "DIKKAT_LOADTEST": var.name,
           "GRADER_DATA_DIR": str(ROOT / "var" / "grader"),
           # Students here submit as fast as grading allows; the per-student pending cap stays.
           "GRADING_RATE_LIMIT": "1000"}
    env.pop("DATABASE_URL", None)
    print(f"==> Preparing a throw-away site in {var}")
    for command in (["migrate", "-v", "0"], ["import_course", f"courses/content/{COURSE}"]):
        subprocess.run([PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [PYTHON, "manage.py", "serve", "--bind", f"127.0.0.1:{args.port}", "--workers", str(args.workers), "--web-workers", "2"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(var / "serve.log", "w"), start_new_session=True,
    )
    try:
        wait_for(base + "/", 60)
        total = args.students * args.per_student
        print(f"==> {args.students} students × {args.per_student} submissions = {total}, {args.workers} workers")
        results: list[dict] = []
        lock = threading.Lock()
        started = time.monotonic()
        deadline = started + args.timeout
        threads = [
            threading.Thread(target=run_student, args=(Student(base, i), args.per_student, results, lock, deadline, i), daemon=True)
            for i in range(args.students)
        ]
        for thread in threads:
            thread.start()
        kills = 0
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(1)
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
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)

    # The database's own account of every submission, after the run.
    check = subprocess.run(
        [PYTHON, "manage.py", "shell", "-v", "0", "-c",
         "import json; from grader.models import Submission as S; "
         "print(json.dumps({str(s.pk): [s.status, s.verdict, s.tries] for s in S.objects.all()}))"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    stored = json.loads(check.stdout)
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
    print(f"throughput: {graded / elapsed:.2f} graded submissions/s over {elapsed:.1f} s")
    print("verdicts:  " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    shutil.rmtree(var, ignore_errors=True)
    return 0 if not lost and not stuck and len(accepted) == args.students * args.per_student else 1


if __name__ == "__main__":
    sys.exit(main())
