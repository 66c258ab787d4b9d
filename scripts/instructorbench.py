#!/usr/bin/env python
"""Instructor pages at course scale (part of `make bench`): the gradebook's first page, the
instructor dashboard and the CSV of every student, timed through Django's test client on
generated data, with the memory of this process while the CSV streams.

The data: the attention course imported into a throw-away SQLite database under
$DIKKAT_VAR_DIR/instructorbench (never the development database), 10,000 enrolled students,
each with graded tries (1-3) at 16 of the course's items (12 questions, 4 exercises) and a few
lesson visits, written with bulk_create.

Targets (issue 13) at 10,000 students: gradebook first page and dashboard ≤ 300 ms each, CSV
of everyone ≤ 5 s, memory flat while it streams.

    .venv/bin/python scripts/instructorbench.py [--students N] [--keep]
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from courses.models import Course

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "courses" / "content" / "attention"
ITEMS_PER_STUDENT, QUESTIONS_PER_STUDENT = 16, 12
TARGET_PAGE_MS, TARGET_CSV_S = 300, 5.0


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class PeakMemory:
    """The largest resident memory seen while the block runs (sampled every 5 ms)."""

    def __enter__(self) -> "PeakMemory":
        self.peak, self._done = rss_mb(), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.peak = max(self.peak, rss_mb())

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def setup_django(var: Path) -> None:
    os.environ["DIKKAT_VAR_DIR"] = str(var)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("DIKKAT_SQLITE", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # The throw-away site has no collected static files and serves none.
    warnings.filterwarnings("ignore", message="No directory at")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.test.utils import setup_test_environment

    setup_test_environment()  # the test client's host is allowed


def generate(students: int, seed: int = 13) -> tuple["Course", "User"]:
    """The course, its instructor and ``students`` students with their tries; returns
    (course, instructor)."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.utils import timezone

    from courses.importer import import_course
    from courses.models import Attempt, Course, Enrollment, LessonProgress
    from grader.models import Submission

    call_command("migrate", verbosity=0)
    import_course(COURSE)
    course = Course.objects.get(slug="attention")
    instructor = User.objects.create(username="hoca", is_staff=True)
    course.instructors.add(instructor)
    questions = list(course.questions.active())
    exercises = list(course.exercises.active())
    lessons = list(course.lessons.active())
    rng = random.Random(seed)
    now = timezone.now()
    started = time.perf_counter()
    User.objects.bulk_create(
        [
            User(username=f"ogrenci{n:05d}", email=f"ogrenci{n:05d}@example.com", password="!")
            for n in range(students)
        ],
        batch_size=2000,
    )
    users = list(User.objects.filter(username__startswith="ogrenci").values_list("pk", flat=True))
    Enrollment.objects.bulk_create(
        [Enrollment(user_id=u, course=course, created_at=now - timedelta(days=60)) for u in users],
        batch_size=5000,
    )
    attempts, submissions, visits = [], [], []
    for user_id in users:
        start = now - timedelta(days=rng.uniform(1, 50))
        for question in rng.sample(questions, QUESTIONS_PER_STUDENT):
            for _ in range(rng.randint(1, 3)):
                score = rng.choice((0.0, 0.5, 1.0))
                start += timedelta(minutes=rng.uniform(1, 30))
                attempts.append(
                    Attempt(
                        user_id=user_id,
                        question=question,
                        answer={},
                        score=score,
                        correct=score == 1.0,
                        created_at=start,
                    )
                )
        for exercise in rng.sample(exercises, ITEMS_PER_STUDENT - QUESTIONS_PER_STUDENT):
            for _ in range(rng.randint(1, 3)):
                score = rng.choice((0.0, 0.4, 1.0))
                start += timedelta(minutes=rng.uniform(1, 30))
                submissions.append(
                    Submission(
                        user_id=user_id,
                        exercise=exercise,
                        code="x = 1\n",
                        code_hash="0" * 64,
                        mode=Submission.Mode.SUBMIT,
                        status=Submission.Status.DONE,
                        verdict="passed" if score == 1.0 else "failed",
                        score=score,
                        graded_hash=exercise.content_hash,
                        created_at=start,
                    )
                )
        for lesson in rng.sample(lessons, 3):
            visits.append(
                LessonProgress(user_id=user_id, lesson=lesson, first_visited_at=start, last_visited_at=start)
            )
        if len(attempts) > 20000:
            Attempt.objects.bulk_create(attempts, batch_size=5000)
            Submission.objects.bulk_create(submissions, batch_size=5000)
            attempts, submissions = [], []
    Attempt.objects.bulk_create(attempts, batch_size=5000)
    Submission.objects.bulk_create(submissions, batch_size=5000)
    LessonProgress.objects.bulk_create(visits, batch_size=5000)
    print(
        f"generated {students:,} students, {Attempt.objects.count():,} answers, "
        f"{Submission.objects.count():,} submissions, {len(questions)} questions and "
        f"{len(exercises)} exercises in the course, in {time.perf_counter() - started:.1f} s"
    )
    return course, instructor


def time_page(client, url: str, params: dict | None = None, runs: int = 5) -> tuple[float, int, int]:
    """Median milliseconds of ``runs`` requests (after one to warm up, whose queries are
    counted), the page's size and its number of queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    count = len(queries)  # now: its list is read from the connection's log, reset by each request
    assert response.status_code == 200, (url, response.status_code)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        response = client.get(url, params or {})
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(response.content), count


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--students", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated database")
    args = parser.parse_args()
    var = Path(os.environ.get("DIKKAT_VAR_DIR", ROOT / "var")) / "instructorbench"
    shutil.rmtree(var, ignore_errors=True)
    var.mkdir(parents=True)
    try:
        setup_django(var)
        course, instructor = generate(args.students)
        from django.test import Client
        from django.urls import reverse

        client = Client()
        client.force_login(instructor)
        gradebook = reverse("instructors:gradebook", args=[course.slug])
        rows = [
            ("dashboard", reverse("instructors:dashboard", args=[course.slug]), None, TARGET_PAGE_MS),
            ("gradebook, first page", gradebook, None, TARGET_PAGE_MS),
            ("gradebook, page 100", gradebook, {"page": 100}, None),
            ("gradebook by total ↓", gradebook, {"sort": "total", "desc": "1"}, None),
            ("gradebook by an item", gradebook, {"sort": "e:attention-function", "desc": "1"}, None),
            ("gradebook by activity", gradebook, {"sort": "activity", "desc": "1"}, None),
            ("gradebook, unfinished", gradebook, {"only": "incomplete"}, None),
            ("gradebook, search", gradebook, {"q": "ogrenci0999"}, None),
        ]
        print(f"{'':<24} {'ms (median of 5)':>17} {'KB':>7} {'queries':>7}  target")
        for name, url, params, target in rows:
            ms, size, count = time_page(client, url, params)
            verdict = "" if target is None else f"≤ {target} ms {'ok' if ms <= target else 'OVER'}"
            print(f"{name:<24} {ms:>17.0f} {size / 1024:>7.0f} {count:>7}  {verdict}")

        before = rss_mb()
        started = time.perf_counter()
        with PeakMemory() as memory:
            response = client.get(reverse("instructors:gradebook_csv", args=[course.slug]))
            size = lines = 0
            from django.http import StreamingHttpResponse

            for chunk in cast(Iterator[bytes], cast(StreamingHttpResponse, response).streaming_content):
                size += len(chunk)
                lines += chunk.count(b"\n")
        seconds = time.perf_counter() - started
        print(
            f"{'CSV of everyone':<24} {seconds * 1000:>17.0f} {size / 1024:>7.0f}  "
            f"≤ {TARGET_CSV_S:.0f} s {'ok' if seconds <= TARGET_CSV_S else 'OVER'}"
        )
        print(
            f"CSV: {lines - 1:,} students streamed; memory of this process {before:.0f} MB before, "
            f"{memory.peak:.0f} MB at most while streaming (+{memory.peak - before:.0f} MB)"
        )
        if lines - 1 != args.students:
            print(f"the CSV has {lines - 1} rows for {args.students} students", file=sys.stderr)
            return 1
    finally:
        if not args.keep:
            shutil.rmtree(var, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
