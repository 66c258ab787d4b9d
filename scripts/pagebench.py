#!/usr/bin/env python
"""Page benchmark (part of `make bench`): requests per second, p50 and p99 latency of the lesson
page and the student dashboard at 50 concurrent clients under gunicorn, next to a static file
served by the same server in the same run, and the database queries one request makes (a
repeated request: the lesson page's markup then comes from the page cache), as a student with
two answers on the lesson. Uses wrk (Debian package `wrk`). PAGEBENCH_WORKERS and
PAGEBENCH_THREADS change gunicorn's workers and threads (to compare configurations).

Target (issue 13): the lesson page at ≥ 250 req/s with p99 ≤ 300 ms on 2 cores."""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
PORT = 8766
CONNECTIONS, THREADS, SECONDS = 50, 2, 10


def wrk(url: str, cookie: str | None) -> tuple[float, float, float]:
    """(requests per second, p50 ms, p99 ms)."""
    command = ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{SECONDS}s", "--latency", url]
    if cookie:
        command[1:1] = ["-H", f"Cookie: {cookie}"]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in output:
        raise RuntimeError(f"{url} answered with errors:\n{output}")
    rps = re.search(r"Requests/sec:\s+([\d.]+)", output)
    assert rps is not None, output
    return float(rps.group(1)), _latency(output, "50"), _latency(output, "99")


def _latency(output: str, percentile: str) -> float:
    found = re.search(rf"{percentile}%\s+([\d.]+)(us|ms|s)", output)
    assert found is not None, output
    return float(found.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)]


# Run by manage.py shell in the benchmark's database: the queries of a repeated request.
COUNT_QUERIES = """
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
client = Client()
client.cookies["sessionid"] = {session!r}
counts = []
for path in {paths!r}:
    client.get(path)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    counts.append(len(queries))
print(*counts)
"""


def main() -> int:
    if shutil.which("wrk") is None:
        print("wrk is missing: apt-get install wrk", file=sys.stderr)
        return 1
    var = Path(tempfile.mkdtemp(prefix="dikkat-pagebench-"))
    env = {
        **os.environ,
        "DIKKAT_VAR_DIR": str(var),
        "GRADER_DATA_DIR": str(ROOT / "var" / "grader"),
        "STATIC_MANIFEST": "1",
    }
    env.pop("DATABASE_URL", None)
    for command in (
        ["migrate", "-v", "0"],
        ["import_course", "courses/content/attention"],
        ["collectstatic", "--noinput", "-v", "0"],
    ):
        subprocess.run(
            [PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
        )
    session = subprocess.run(
        [
            PYTHON,
            "manage.py",
            "shell",
            "-v",
            "0",
            "-c",
            "from django.contrib.auth.models import User; from django.contrib.sessions.backends.db import SessionStore; "
            "from courses.models import Course; u = User.objects.create_user('bench', password='x-Bench-2026'); "
            "c = Course.objects.get(slug='attention'); c.enroll(u); "
            # Two wrong answers on the benchmarked lesson: its page shows the student's own work.
            "from django.http import QueryDict; from courses.selftest import submit_answer; "
            "[submit_answer(u, c.questions.get(slug=slug), QueryDict(answer)) for slug, answer in "
            "(('qkv-who-attends', 'option=qv'), ('qkv-output-size', 'value=40'))]; "
            "s = SessionStore(); s['_auth_user_id'] = str(u.pk); "
            "s['_auth_user_backend'] = 'django.contrib.auth.backends.ModelBackend'; "
            "s['_auth_user_hash'] = u.get_session_auth_hash(); s.create(); print(s.session_key)",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    cookie = f"sessionid={session}"
    workers = os.environ.get("PAGEBENCH_WORKERS", str(max(2, (os.cpu_count() or 1))))
    threads = os.environ.get("PAGEBENCH_THREADS", "4")
    server = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--workers",
            workers,
            "--threads",
            threads,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{PORT}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        found = re.search(
            r'href="(/static/css/site\.[0-9a-f]+\.css)"', urllib.request.urlopen(base + "/").read().decode()
        )
        assert found is not None, "the home page names no site.css"
        static = found.group(1)
        print(
            f"gunicorn: {workers} workers × {threads} threads; wrk: {CONNECTIONS} connections, {SECONDS} s each"
        )
        rows = [
            ("static file", static, None),
            ("lesson page", "/kurs/attention/qkv/", cookie),
            ("dashboard", "/panom/", cookie),
        ]
        pages = [path for _name, path, cookie_value in rows if cookie_value]
        counted = subprocess.run(
            [
                PYTHON,
                "manage.py",
                "shell",
                "-v",
                "0",
                "-c",
                COUNT_QUERIES.format(session=session, paths=pages),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        queries = dict(zip(pages, counted, strict=True))
        measured = {}
        for name, path, cookie_value in rows:
            measured[name] = (*wrk(base + path, cookie_value), queries.get(path, "–"))
        static_rps = measured["static file"][0]
        print(f"{'':<12} {'req/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'vs static':>10} {'queries':>8}")
        for name, (rps, p50, p99, count) in measured.items():
            print(f"{name:<12} {rps:>9.1f} {p50:>9.1f} {p99:>9.1f} {rps / static_rps:>9.2f}× {count:>8}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
        shutil.rmtree(var, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
