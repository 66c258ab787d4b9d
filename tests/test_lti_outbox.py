"""Grade passback through the score outbox, end to end: a student launched from the LMS answers
in Dikkat, the score change becomes an outbox row, a real queue worker sends it over real HTTP
to the test platform (tests/lti_platform.py), which keeps only the newest score per line item
and user, as an LMS does. Under faults (a 500, a worker SIGKILLed mid-send, the platform down)
every final score arrives exactly once, in order."""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import test_lti_launch
from dikkat_support import worker_env
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from lti_platform import LEARNER, Launch
from test_lti_launch import run_launch

from courses.models import Lesson
from jobs.sweeper import sweep
from lti.models import LtiContext, ResourceLink, ToolKey
from lti.outbox import ScoreOutbox

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent
platform = test_lti_launch.platform
linked = test_lti_launch.linked


def launch_student(platform, client, sub="student-1", link_id="link-7", lesson=None) -> ResourceLink:
    """The student opens the LMS link (a launch with the AGS claim); the link opens ``lesson``."""
    response = run_launch(client, platform, Launch(sub=sub, roles=[LEARNER], resource_link_id=link_id))
    assert response.status_code == 302, response.content.decode()
    link = ResourceLink.objects.get(resource_link_id=link_id)
    if lesson is not None:
        ResourceLink.objects.filter(pk=link.pk).update(lesson=lesson)
    return link


@pytest.fixture
def lms(platform, linked):
    cache.clear()  # no access token kept from another test's platform
    keys = ToolKey.jwks()  # read here: the platform's thread answers from it
    platform.tool_jwks = lambda: keys
    # The link the instructor launched to link the course has no grade column here.
    ResourceLink.objects.update(lineitems_url="", lineitem_url="", ags_scopes=[])
    return platform


@pytest.fixture
def first_lesson(linked):
    return Lesson.objects.get(course=linked, slug="first")


@pytest.fixture
def student(lms, first_lesson, client):
    launch_student(lms, client, lesson=first_lesson)
    return client


def answer(client, option: str):
    url = reverse("answer_question", args=["mini", "first", "first-choice"])
    response = client.post(url, {"option": option})
    assert response.status_code == 302
    return timezone.now()


def row() -> ScoreOutbox:
    return ScoreOutbox.objects.newest().get()


def scores(lms) -> list[tuple[float, float]]:
    return [(s["scoreGiven"], s["scoreMaximum"]) for s in lms.scores]


def score_posts(lms) -> int:
    return sum(1 for r in lms.received if r["method"] == "POST" and r["path"].endswith("/scores"))


# --- (a) a graded submission arrives as one score ----------------------------------------------


@pytest.mark.sandbox
def test_a_graded_submission_of_a_linked_lesson_arrives_once_with_its_score_and_time(
    lms, linked, lab, client, run_queue
):
    LtiContext.objects.update(course=lab)  # the LMS course opens the lab course
    lesson = Lesson.objects.get(course=lab, slug="lab")
    launch_student(lms, client, lesson=lesson)
    solution = (ROOT / "tests/fixtures/lab/01-lab/attn/solution.py").read_text()
    response = client.post(
        reverse("submit_code", args=["lab", "lab", "attn"]), {"code": solution, "mode": "submit"}
    )
    assert response.status_code == 302
    assert not lms.scores  # nothing is sent before the grade exists
    run_queue()  # grades the submission, then sends the score its grading queued
    sent = row()
    assert (sent.delivery, sent.attempts, sent.score, sent.maximum) == ("sent", 1, 1.0, 2.0)
    assert len(lms.scores) == 1
    arrived = lms.scores[0]
    # The lab lesson has two exercises: the solved one counts 1 of 2.
    assert (arrived["userId"], arrived["scoreGiven"], arrived["scoreMaximum"]) == ("student-1", 1.0, 2.0)
    assert arrived["timestamp"] == sent.changed_at.isoformat(timespec="microseconds")
    assert arrived["lineitem"] == "link-7"
    run_queue()
    assert len(lms.scores) == 1 and score_posts(lms) == 1  # sent once


def test_a_student_without_an_lms_account_costs_one_query_and_no_row(
    linked, first_lesson, make_user, django_assert_max_num_queries
):
    from jobs.signals import send_score_changed
    from lti.passback import note_changes

    plain = make_user("plain")
    with django_assert_max_num_queries(1):
        assert note_changes([plain.pk], linked.pk, first_lesson.pk) == 0
    send_score_changed(ScoreOutbox, [plain.pk], linked.pk, first_lesson.pk)
    assert not ScoreOutbox.objects.exists()


# --- (b) 500 then 200 ----------------------------------------------------------------------------


def test_a_500_then_200_sends_the_score_exactly_once_in_two_tries(student, lms, run_queue, settings):
    settings.LTI_OUTBOX_RETRY_SECONDS = 0  # tried again at once (the back-off itself: below)
    lms.fail_scores = 1
    answer(student, "a")
    run_queue()
    sent = row()
    assert (sent.delivery, sent.attempts, sent.score) == ("sent", 2, 1.0)
    assert score_posts(lms) == 2
    assert scores(lms) == [(1.0, 1.0)]
    assert sent.last_error == ""


# --- (c) a worker SIGKILLed mid-send -------------------------------------------------------------


def _start_worker(env):
    return subprocess.Popen(
        [sys.executable, "manage.py", "grading_worker", "--no-startup-delay", "--interval", "0.1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@pytest.mark.sandbox
@pytest.mark.queue
def test_a_worker_killed_mid_send_loses_nothing_and_only_the_newest_score_wins(student, lms, run_queue):
    lms.hold_scores.clear()  # the LMS holds the score request open
    answer(student, "b")  # wrong: 0 of 1
    worker = _start_worker(worker_env(LTI_ALLOW_PRIVATE_HOSTS="1"))  # the LMS is http on 127.0.0.1
    try:
        assert lms.score_held.wait(30), "the worker never sent the score"
        held = row()
        assert held.status == "running"
        second = answer(student, "a")  # right, while the first send hangs: a newer row
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    lms.hold_scores.set()  # the dead worker's request reaches the LMS after all
    assert ScoreOutbox.objects.get(pk=held.pk).status == "running"  # its lease still holds
    # The lease runs out (the send's 30 s and the margin): the sweeper gives the row back to the queue.
    assert sweep(now=timezone.now() + timedelta(minutes=2))["lti.ScoreOutbox"][0] >= 1
    run_queue()
    first = ScoreOutbox.objects.get(pk=held.pk)
    # The killed worker's send reached the LMS (one try); finding it superseded is none.
    assert (first.delivery, first.attempts) == ("superseded", 1)
    newest = row()
    assert (newest.delivery, newest.score) == ("sent", 1.0)
    assert newest.changed_at >= second - timedelta(seconds=1)
    # The platform took the held 0 (older) and then the 1 (newer): in order, the newest last.
    assert scores(lms) == [(0.0, 1.0), (1.0, 1.0)]
    stamps = [s["timestamp"] for s in lms.scores]
    assert stamps == sorted(stamps)
    assert score_posts(lms) == 2  # the superseded row was not sent again


# --- (d) the platform down for a while --------------------------------------------------------


def test_while_the_platform_is_down_the_score_waits_longer_each_time_then_arrives_in_order(
    student, lms, run_queue, settings
):
    settings.LTI_OUTBOX_RETRY_SECONDS = 1
    lms.go_down()
    try:
        first = answer(student, "b")
        run_queue()
        waiting = row()
        assert (waiting.delivery, waiting.attempts) == ("pending", 1)
        assert "could not be reached" in waiting.last_error  # connection refused
        assert timedelta(seconds=0.9) < waiting.next_try_at - waiting.last_try_at < timedelta(seconds=1.5)
        run_queue()  # not due yet: nothing is tried
        assert row().attempts == 1
        time.sleep(1.1)
        run_queue()
        waiting = row()
        assert waiting.attempts == 2  # and now it waits twice as long
        assert timedelta(seconds=1.9) < waiting.next_try_at - waiting.last_try_at < timedelta(seconds=2.5)
    finally:
        lms.come_back()
    time.sleep(2.1)
    run_queue()
    assert (row().delivery, row().attempts, row().score) == ("sent", 3, 0.0)
    second = answer(student, "a")
    run_queue()
    assert scores(lms) == [(0.0, 1.0), (1.0, 1.0)]  # each final score once, in order
    stamps = [timezone.datetime.fromisoformat(s["timestamp"]) for s in lms.scores]
    assert stamps[0] < stamps[1]
    assert abs(stamps[0] - first) < timedelta(seconds=1) and abs(stamps[1] - second) < timedelta(seconds=1)


def test_a_new_score_while_one_waits_for_the_platform_replaces_it_and_is_tried_at_once(
    student, lms, run_queue
):
    lms.go_down()
    try:
        answer(student, "b")
        run_queue()
        assert row().next_try_at > timezone.now() + timedelta(seconds=20)  # 30 s by default
    finally:
        lms.come_back()
    answer(student, "a")
    assert ScoreOutbox.objects.count() == 1  # the waiting row took the newer change
    run_queue()  # due at once: no 30 s wait for the new score
    assert (row().delivery, row().attempts) == ("sent", 2)
    assert scores(lms) == [(1.0, 1.0)]


def test_a_lasting_4xx_fails_at_once_and_a_newer_score_is_still_sent_after(student, lms, run_queue):
    lms.gone_lineitems.add("link-7")
    answer(student, "b")
    run_queue()
    failed = row()
    assert (failed.delivery, failed.attempts) == ("failing", 1)
    assert "404" in failed.last_error and "line item not found" in failed.last_error
    lms.gone_lineitems.clear()
    answer(student, "a")
    run_queue()
    assert (row().delivery, row().score) == ("sent", 1.0)
    assert scores(lms) == [(1.0, 1.0)]


# --- (e) manage.py lti_outbox --json -------------------------------------------------------


def test_lti_outbox_json_counts_and_items(student, lms, run_queue, client):
    answer(student, "a")
    run_queue()
    other = Client()
    lms.gone_lineitems.add("link-8")
    launch_student(lms, other, sub="student-2", link_id="link-8")  # a link opening the course
    answer(other, "b")
    run_queue()
    out = StringIO()
    call_command("lti_outbox", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert set(data) == {"pending", "failing", "sent", "items"}
    assert (data["pending"], data["failing"], data["sent"]) == (0, 1, 2)
    for item in data["items"]:
        assert set(item) == {"user", "item", "score", "status", "tries", "last_error"}
        assert item["status"] in ("pending", "failing", "sent") and isinstance(item["tries"], int)
    failing = [i for i in data["items"] if i["status"] == "failing"]
    assert (
        len(failing) == 1
        and failing[0]["item"] == "mini"
        and "line item not found" in failing[0]["last_error"]
    )
    sent = sorted((i["item"], i["score"]) for i in data["items"] if i["status"] == "sent")
    assert sent == [("mini/first", 0.0), ("mini/first", 1.0)]  # student-2 answered wrong
    # --retry sends the failing one again: once the LMS has its line item back, it arrives.
    lms.gone_lineitems.clear()
    call_command("lti_outbox", "--retry", stdout=StringIO())
    run_queue()
    out = StringIO()
    call_command("lti_outbox", "--json", stdout=out)
    assert (json.loads(out.getvalue())["failing"], json.loads(out.getvalue())["sent"]) == (0, 3)
    table = StringIO()
    call_command("lti_outbox", stdout=table)
    assert "3 sent, 0 pending, 0 failing" in table.getvalue()
