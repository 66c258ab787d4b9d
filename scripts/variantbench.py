#!/usr/bin/env python
"""Variants benchmark (part of `make bench`), issue 14's two limits, measured in one run:

- the import of the shipped course with its variants, against the same course as it was before
  variants (its files at BASELINE, from git), each into a fresh database and an empty grading
  data folder (every reference, misconception and generator runs): target ≤ 3×;
- a lesson page with variants against the same page with its questions' variants switched off
  (variant_count = 1): database queries and the median time of a repeated request by an
  enrolled student (Django's test client, page cache warm): target "no more than without".
"""

import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
BASELINE = os.environ.get("VARIANTS_BASELINE", "c1110f5")  # the last commit before variants
COURSE = "courses/content/attention"


def manage(env: dict, *args: str, capture: bool = False) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout if capture else ""


def fresh_env(var: Path) -> dict:
    env = {**os.environ, "DIKKAT_VAR_DIR": str(var), "GRADER_DATA_DIR": str(var / "grader")}
    env.pop("DATABASE_URL", None)
    return env


def timed_import(var: Path, course: Path) -> float:
    env = fresh_env(var)
    manage(env, "migrate", "-v", "0")
    start = time.perf_counter()
    manage(env, "import_course", str(course))
    return time.perf_counter() - start


def baseline_course(into: Path) -> Path:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", BASELINE, COURSE], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / COURSE


# Run by manage.py shell: queries and median time of a repeated lesson page, with variants and without.
PAGE = """
import statistics, time
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from courses.models import Course, Lesson, Question
course = Course.objects.get(slug="attention")
lesson = max(course.active_lessons(), key=lambda l: l.questions.filter(variant_count__gt=1).count())
asking = lesson.questions.filter(generated=True).count()
user = User.objects.create_user("bench-variants", password="x-Bench-2026")
course.enroll(user)
client = Client()
client.force_login(user)
url = lesson.get_absolute_url()

def measure():
    for _ in range(3):
        assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    count = len(queries)  # now: the next request's start empties the connection's query log
    times = []
    for _ in range(40):
        start = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - start) * 1000)
    return count, statistics.median(times)

with_q, with_ms = measure()
counts = dict(lesson.questions.values_list("pk", "variant_count"))
Question.objects.filter(pk__in=counts).update(variant_count=1, generated=False)
Lesson.objects.filter(pk=lesson.pk).update(updated_at=timezone.now())  # a new page cache version
without_q, without_ms = measure()
print(lesson.slug, asking, with_q, with_ms, without_q, without_ms)
"""


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="dikkat-variantbench-") as tmp:
        root = Path(tmp)
        old_course = baseline_course(root / "baseline")
        before = timed_import(root / "var-before", old_course)
        after = timed_import(root / "var-after", ROOT / COURSE)
        env = fresh_env(root / "var-after")
        print(
            f"import of the course, empty grading data: before variants ({BASELINE}) {before:.1f} s, ", end=""
        )
        print(f"with variants {after:.1f} s: {after / before:.2f}× (target ≤ 3×)")
        out = manage(env, "shell", "-v", "0", "-c", PAGE, capture=True).split()
        slug, asking, with_q, with_ms, without_q, without_ms = out[-6:]
        print(
            f"lesson page '{slug}' ({asking} questions with variants), repeated request: "
            f"{with_q} queries, median {float(with_ms):.1f} ms with variants; "
            f"{without_q} queries, median {float(without_ms):.1f} ms without "
            f"({float(with_ms) / float(without_ms):.2f}×)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
