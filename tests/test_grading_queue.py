"""Submissions: stored first, queued on commit, graded by a worker, never lost or overwritten."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dikkat_support import worker_env
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from grader.core import GradeResult, Verdict
from grader.grading import _store_result, claim, submit
from grader.models import Submission
from jobs.sweeper import sweep

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sandbox, pytest.mark.queue]

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
SOLUTION = (FIXTURES / "lab" / "01-lab" / "attn" / "solution.py").read_text()
NO_SCALING = (FIXTURES / "lab" / "01-lab" / "attn" / "variants" / "no_scaling.py").read_text()


@pytest.fixture
def attn(lab):
    return lab.exercises.get(slug="attn")


@pytest.fixture
def student(client, alice, lab):
    lab.enroll(alice)
    client.force_login(alice)
    return client


def submit_url(slug="attn"):
    return reverse("submit_code", args=["lab", "lab", slug])


def test_submission_is_stored_then_graded_by_the_worker(student, alice, attn, run_queue):
    response = student.post(submit_url(), {"code": SOLUTION, "mode": "submit"})
    assert response.status_code == 302
    submission = Submission.objects.get(user=alice)
    assert submission.status == "queued"
    assert DBTaskResult.objects.count() == 1  # enqueued once the row was committed
    run_queue()
    submission.refresh_from_db()
    assert (submission.status, submission.verdict, submission.score) == ("done", "passed", 1.0)
    page = student.get(reverse("lesson", args=["lab", "lab"])).text
    assert "Bütün durumlar geçti" in page or "Tebrikler" in page


def test_nothing_is_enqueued_when_the_transaction_rolls_back(alice, attn):
    from django.db import transaction

    with pytest.raises(RuntimeError), transaction.atomic():
        submit(alice, attn, SOLUTION)
        raise RuntimeError("request failed after storing")
    assert not Submission.objects.exists()
    assert not DBTaskResult.objects.exists()


def test_wrong_code_names_the_misconception_with_its_hint(student, alice, attn, run_queue):
    student.post(submit_url(), {"code": NO_SCALING, "mode": "submit"})
    run_queue()
    submission = Submission.objects.get(user=alice)
    assert (submission.verdict, submission.misconception) == ("failed", "no-scaling")
    page = student.get(reverse("lesson", args=["lab", "lab"])).text
    assert "Ölçeklemeyi unutma." in page


def test_run_grades_only_the_visible_examples(student, alice, attn, run_queue):
    student.post(submit_url(), {"code": SOLUTION, "mode": "run"})
    run_queue()
    submission = Submission.objects.get(user=alice)
    assert submission.verdict == "passed"
    assert [t["hidden"] for t in submission.tests] == [False]


def test_status_endpoint_reports_queue_position_then_verdict(student, alice, bob, lab, attn, run_queue):
    lab.enroll(bob)
    submit(bob, attn, NO_SCALING)
    student.post(submit_url(), {"code": SOLUTION, "mode": "submit"})
    mine = Submission.objects.get(user=alice)
    data = student.get(reverse("submission_status", args=[mine.pk])).json()
    assert (data["status"], data["position"]) == ("queued", 2)
    assert "2" in data["html"]
    run_queue()
    data = student.get(reverse("submission_status", args=[mine.pk])).json()
    assert (data["status"], data["verdict"]) == ("done", "passed")


def test_another_students_submission_is_a_404(student, bob, lab, attn):
    lab.enroll(bob)
    theirs = submit(bob, attn, SOLUTION).submission
    assert student.get(reverse("submission_status", args=[theirs.pk])).status_code == 404


def test_identical_resubmission_returns_the_earlier_result(student, alice, attn, run_queue):
    student.post(submit_url(), {"code": SOLUTION, "mode": "submit"})
    run_queue()
    response = student.post(
        submit_url(), {"code": SOLUTION, "mode": "submit"}, HTTP_X_REQUESTED_WITH="dikkat"
    )
    assert response.json()["reused"] is True and response.json()["verdict"] == "passed"
    assert Submission.objects.filter(user=alice).count() == 1


def test_rate_limit_says_when_to_retry(student, alice, attn, settings):
    settings.GRADING_RATE_LIMIT = 2
    settings.GRADING_MAX_PENDING = 10
    for index in range(2):
        student.post(submit_url(), {"code": SOLUTION + f"\n# {index}", "mode": "submit"})
    response = student.post(
        submit_url(), {"code": SOLUTION + "\n# 3", "mode": "submit"}, HTTP_X_REQUESTED_WITH="dikkat"
    )
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "saniye" in response.json()["error"]
    assert Submission.objects.filter(user=alice).count() == 2


def test_one_student_cannot_flood_the_queue(student, alice, bob, lab, attn, settings):
    settings.GRADING_MAX_PENDING = 2
    for index in range(5):
        student.post(submit_url(), {"code": SOLUTION + f"\n# {index}", "mode": "submit"})
    assert Submission.objects.filter(user=alice).count() == 2
    lab.enroll(bob)
    assert submit(bob, attn, SOLUTION).submission.status == "queued"  # others still get in


def test_rejected_source_is_graded_at_once_and_not_counted(student, alice, attn):
    student.post(submit_url(), {"code": "x = 1\x00", "mode": "submit"})
    submission = Submission.objects.get(user=alice)
    assert (submission.status, submission.verdict) == ("done", "rejected")
    assert not Submission.objects.counted().exists()
    assert not DBTaskResult.objects.exists()


def test_a_stale_result_never_overwrites_a_newer_one(alice, attn):
    submission = submit(alice, attn, SOLUTION).submission
    first, first_token = claim(submission.pk)
    Submission.objects.filter(pk=submission.pk).update(lease_expires_at="2000-01-01T00:00:00Z")
    assert sweep() == {"grader.Submission": (1, 0)}
    second, second_token = claim(submission.pk)
    assert _store_result(
        second, GradeResult(verdict=Verdict.PASSED, score=1.0), attn.content_hash, second_token
    )
    late = _store_result(
        first, GradeResult(verdict=Verdict.FAILED, score=0.0), attn.content_hash, first_token
    )
    assert late is False
    submission.refresh_from_db()
    assert (submission.verdict, submission.score, submission.tries) == ("passed", 1.0, 2)


def test_submission_that_keeps_killing_workers_ends_as_internal_error(student, alice, attn, settings):
    settings.GRADING_MAX_TRIES = 2
    submission = submit(alice, attn, SOLUTION).submission
    for _ in range(2):
        claim(submission.pk)
        Submission.objects.filter(pk=submission.pk).update(lease_expires_at="2000-01-01T00:00:00Z")
        sweep()
    submission.refresh_from_db()
    assert (submission.status, submission.verdict) == ("failed", "internal_error")
    assert "2" in submission.last_error and submission.message["params"] == {"tries": 2}
    # The page's script stops polling at "done" and shows what happened.
    data = student.get(reverse("submission_status", args=[submission.pk])).json()
    assert (data["status"], data["verdict"]) == ("done", "internal_error")
    assert "Notlandırma 2 denemeden sonra durduruldu" in data["html"]


def _start_worker(env):
    return subprocess.Popen(
        [sys.executable, "manage.py", "grading_worker", "--no-startup-delay", "--interval", "0.2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def test_worker_killed_mid_grade_is_requeued_and_graded_by_another(alice, lab, settings):
    """A real worker process is SIGKILLed while grading; a second one picks the work up."""
    slow = lab.exercises.get(slug="slow")
    code = "import time\ntime.sleep(2.5)\ntotal = x.sum()\n"
    submission = submit(alice, slow, code).submission
    env = worker_env(GRADING_LEASE_MARGIN="0", GRADING_SWEEP_INTERVAL="1")
    first = _start_worker(env)
    try:
        deadline = time.monotonic() + 30
        while Submission.objects.get(pk=submission.pk).status != "running":
            assert time.monotonic() < deadline, "the first worker never claimed the submission"
            time.sleep(0.1)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        second = _start_worker(env)
        try:
            deadline = time.monotonic() + 60
            while Submission.objects.get(pk=submission.pk).status != "done":
                assert time.monotonic() < deadline, "the submission stayed stuck"
                time.sleep(0.2)
        finally:
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    submission.refresh_from_db()
    assert (submission.verdict, submission.tries) == ("passed", 2)


def test_a_worker_that_finds_work_takes_the_next_job_without_its_idle_pause(alice, lab, attn):
    """The idle pause (--interval) is only for an empty queue: a worker with a queue of work
    goes from one job straight to the next, so a deadline's backlog is graded at the sandbox's
    pace, not one job per pause."""
    lab.enroll(alice)
    submitted = [submit(alice, attn, SOLUTION + f"# try {n}\n").submission.pk for n in range(3)]
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "grading_worker", "--no-startup-delay", "--interval", "30"],
        cwd=ROOT,
        env=worker_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while Submission.objects.filter(pk__in=submitted, status="done").count() < 3:
            assert time.monotonic() < deadline, "the worker did not grade the queue"
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    graded = Submission.objects.filter(pk__in=submitted).order_by("started_at")
    assert [s.verdict for s in graded] == ["passed"] * 3
    # One idle pause between two of them would have taken 30 s.
    assert (graded.last().finished_at - graded.first().started_at).total_seconds() < 20
