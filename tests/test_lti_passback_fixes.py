"""Grade passback under the conditions a review found wrong, against the test platform over real
HTTP: two students' scores sent at once on a link without a grade column make one column, not
two; a student of one section (one LMS course) gets scores only in that section's columns; a
send ends within its time budget, below its lease, however long the LMS takes; "tries" counts
only sends that called the LMS, and "send again" gives all the tries back."""

import threading
import time
from datetime import timedelta

import pytest
import test_lti_launch
import test_lti_outbox
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from lti_platform import LEARNER, Launch
from test_lti_launch import run_launch
from test_lti_outbox import answer, row, score_posts, scores

from courses.models import Lesson
from lti import passback
from lti.models import LtiContext, Platform, ResourceLink
from lti.outbox import ScoreOutbox
from lti.roster import sync_roster

pytestmark = pytest.mark.django_db(transaction=True)

platform = test_lti_launch.platform
linked = test_lti_launch.linked
lms = test_lti_outbox.lms
first_lesson = test_lti_outbox.first_lesson
student = test_lti_outbox.student

AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
]


def launch(lms, sub: str, context: str = "lms-course-1", link: str = "link-7", column: bool = True) -> Client:
    """A student's launch from ``context``'s ``link`` (opening the first lesson); ``column``:
    the launch names the link's grade column, else only where to make one (``lineitems``)."""
    client = Client()
    claim = {"scope": SCOPES, "lineitems": f"{lms.url}/ags/{context}/lineitems"}
    if column:
        claim["lineitem"] = f"{lms.url}/ags/{context}/lineitems/{link}"
    response = run_launch(
        client,
        lms,
        Launch(sub=sub, roles=[LEARNER], context_id=context, resource_link_id=link, claims={AGS: claim}),
    )
    assert response.status_code == 302, response.content.decode()
    ResourceLink.objects.filter(resource_link_id=link).update(lesson=Lesson.objects.get(slug="first"))
    return client


def lineitem_posts(lms, context: str = "lms-course-1") -> int:
    return sum(1 for r in lms.received if r["method"] == "POST" and r["path"] == f"/ags/{context}/lineitems")


def slow_lineitems(lms, seconds: float) -> None:
    """The LMS takes ``seconds`` to list or make line items (as a busy Moodle does)."""
    answer_ags = lms._ags

    def slow(authorization, method, path, body):
        if path.rstrip("/").endswith("/lineitems"):
            time.sleep(seconds)
        return answer_ags(authorization, method, path, body)

    lms._ags = slow


# --- one grade column per link ---------------------------------------------------------------


@pytest.mark.queue
def test_two_students_scores_sent_at_once_on_a_link_without_a_column_make_one_column(lms, linked):
    ayse, mehmet = launch(lms, "ayse", column=False), launch(lms, "mehmet", column=False)
    answer(ayse, "a")
    answer(mehmet, "b")
    rows = list(ScoreOutbox.objects.order_by("pk").values_list("pk", flat=True))
    assert len(rows) == 2
    slow_lineitems(lms, 0.5)  # both sends would look for the column before either made it
    outcomes: list[str] = []

    def send(pk: int) -> None:
        try:
            outcomes.append(passback.send_claimed(pk).outcome)
        finally:
            connection.close()

    workers = [threading.Thread(target=send, args=(pk,)) for pk in rows]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert outcomes == ["sent", "sent"]
    (column,) = lms.lineitems["lms-course-1"]  # one grade column in the LMS
    assert lineitem_posts(lms) == 1
    assert sorted((s["userId"], s["scoreGiven"], s["lineitem"]) for s in lms.scores) == [
        ("ayse", 1.0, "item-1"),
        ("mehmet", 0.0, "item-1"),
    ]
    link = ResourceLink.objects.get(resource_link_id="link-7")
    assert (link.lineitem_url, link.lineitem_claimed_until) == (column["id"], None)
    assert [(r.delivery, r.attempts) for r in ScoreOutbox.objects.order_by("pk")] == [
        ("sent", 1),
        ("sent", 1),
    ]


def test_a_send_finding_another_making_the_column_waits_without_a_try_and_comes_back(
    lms, linked, monkeypatch, run_queue
):
    ayse = launch(lms, "ayse", column=False)
    # Another worker's send claimed the making of the column and is not done.
    ResourceLink.objects.filter(resource_link_id="link-7").update(
        lineitem_claimed_until=timezone.now() + timedelta(minutes=1)
    )
    answer(ayse, "a")
    monkeypatch.setattr(passback, "SEND_SECONDS", 1)
    started = time.monotonic()
    assert passback.send_claimed(row().pk).outcome == "later"
    assert time.monotonic() - started < 3
    waiting = row()
    assert (waiting.delivery, waiting.attempts, waiting.last_try_at) == ("pending", 0, None)
    assert waiting.next_try_at < timezone.now() + timedelta(seconds=5)  # soon, not after a back-off
    assert not [r for r in lms.received if r["path"].startswith("/ags/")]  # the LMS was not called
    # The other send ended without a column (its worker died): the claim runs out, this one makes it.
    ResourceLink.objects.update(lineitem_claimed_until=timezone.now() - timedelta(seconds=1))
    time.sleep(1.1)
    run_queue()
    assert (row().delivery, row().attempts) == ("sent", 1)
    assert len(lms.lineitems["lms-course-1"]) == 1 and scores(lms) == [(1.0, 1.0)]


# --- scores go to the student's own LMS course ------------------------------------------------


@pytest.fixture
def sections(lms, linked):
    """A second LMS course of the platform (section B) opens the same Dikkat course."""
    LtiContext.objects.create(
        platform=Platform.objects.get(), context_id="lms-course-2", title="Şube B", course=linked
    )
    return lms


def test_a_student_of_one_section_gets_scores_only_in_that_sections_columns(sections, run_queue):
    lms = sections
    ayse = launch(lms, "ayse", context="lms-course-1", link="link-a")
    launch(lms, "burak", context="lms-course-2", link="link-b")
    lms.members["lms-course-1"] = [lms.member("ayse", [LEARNER])]
    lms.members["lms-course-2"] = [lms.member("burak", [LEARNER])]
    for context in LtiContext.objects.filter(context_id__in=["lms-course-1", "lms-course-2"]):
        sync_roster(context)
    answer(ayse, "a")
    run_queue()
    assert [(r.link.resource_link_id, r.lms_user_id, r.delivery) for r in ScoreOutbox.objects.all()] == [
        ("link-a", "ayse", "sent")
    ]
    assert [(s["userId"], s["lineitem"]) for s in lms.scores] == [("ayse", "link-a")]
    assert not [r for r in lms.received if r["path"].startswith("/ags/lms-course-2/")]


def test_a_student_the_roster_no_longer_lists_in_a_section_gets_no_score_there(sections, run_queue):
    lms = sections
    ayse = launch(lms, "ayse", context="lms-course-1", link="link-a")
    launch(lms, "burak", context="lms-course-2", link="link-b")
    section_b = LtiContext.objects.get(context_id="lms-course-2")
    lms.members["lms-course-2"] = [lms.member("ayse", [LEARNER]), lms.member("burak", [LEARNER])]
    sync_roster(section_b)
    lms.members["lms-course-2"] = [lms.member("burak", [LEARNER])]  # Ayşe moved to section A
    sync_roster(section_b)
    # Section A's roster was never read: no roster lists Ayşe, so her LMS courses are those
    # that do not list her as gone.
    answer(ayse, "b")
    run_queue()
    assert [(s["userId"], s["lineitem"], s["scoreGiven"]) for s in lms.scores] == [("ayse", "link-a", 0.0)]


def test_before_any_roster_is_read_a_students_launch_says_which_section_is_theirs(sections, run_queue):
    lms = sections
    ayse = launch(lms, "ayse", context="lms-course-1", link="link-a")
    launch(lms, "burak", context="lms-course-2", link="link-b")
    answer(ayse, "a")
    run_queue()
    assert [(s["userId"], s["lineitem"]) for s in lms.scores] == [("ayse", "link-a")]
    assert not [r for r in lms.received if r["path"].startswith("/ags/lms-course-2/")]


def test_a_student_of_a_section_without_grade_columns_gets_no_score_in_another_section(sections, run_queue):
    lms = sections
    launch(lms, "ayse", context="lms-course-1", link="link-a")
    burak = launch(lms, "burak", context="lms-course-2", link="link-b")
    # Section B's link sends no grades (its LMS gave no grade service claim).
    ResourceLink.objects.filter(resource_link_id="link-b").update(
        ags_scopes=[], lineitem_url="", lineitems_url=""
    )
    answer(burak, "a")
    run_queue()
    assert not ScoreOutbox.objects.exists() and not lms.scores


# --- one time budget for a send, below its lease -----------------------------------------------


def test_a_send_ends_within_its_time_budget_while_the_lms_holds_the_score(student, lms, monkeypatch):
    monkeypatch.setattr(passback, "SEND_SECONDS", 3)
    answer(student, "a")
    lms.hold_scores.clear()  # the LMS takes the score request and does not answer (15 s per call)
    try:
        started = time.monotonic()
        sent = passback.send_claimed(row().pk)
        took = time.monotonic() - started
    finally:
        lms.hold_scores.set()
    assert lms.score_held.is_set()  # the score call was made and waited on
    assert sent.outcome == "later"
    assert 2.5 < took < 5  # the send's budget (and storing the result), far below one call's 15 s
    waiting = row()
    assert (waiting.delivery, waiting.attempts) == ("pending", 1)
    assert "took longer than" in waiting.last_error


# --- what "tries" counts -----------------------------------------------------------------------


def test_send_again_after_the_tries_ran_out_gives_all_the_tries_back(
    student, lms, linked, run_queue, settings, make_user
):
    settings.LTI_OUTBOX_MAX_TRIES = 2
    settings.LTI_OUTBOX_RETRY_SECONDS = 0
    lms.fail_scores = 10
    answer(student, "a")
    run_queue()
    assert (row().delivery, row().attempts) == ("failing", 2)
    assert score_posts(lms) == 2
    teacher = Client()
    hoca = make_user("hoca")
    linked.instructors.add(hoca)
    teacher.force_login(hoca)
    lms.fail_scores = 1  # the LMS fails once more, then takes it: within the two tries given back
    response = teacher.post(reverse("lti:outbox_retry", args=["mini"]), {"row": row().pk})
    assert response.status_code == 302
    assert row().attempts == 0
    run_queue()
    assert (row().delivery, row().attempts) == ("sent", 2)
    assert score_posts(lms) == 4 and scores(lms) == [(1.0, 1.0)]
    page = teacher.get(reverse("lti:outbox", args=["mini"])).content.decode()
    assert "2 deneme" in page


def test_the_page_shows_a_long_lms_answer_shortened(student, lms, linked, run_queue, make_user):
    answer(student, "a")
    run_queue()
    ScoreOutbox.objects.update(status="failed", last_error="The LMS says: " + "x" * 3000)
    hoca = make_user("hoca")
    linked.instructors.add(hoca)
    teacher = Client()
    teacher.force_login(hoca)
    page = teacher.get(reverse("lti:outbox", args=["mini"])).content.decode()
    assert "The LMS says: xxx" in page and "x" * 400 not in page and "…" in page


def test_scores_queued_before_an_unlink_are_not_sent(lms, linked, make_user, run_queue):
    from lti.linking import unlink

    student = launch(lms, "ayse")
    answer(student, "a")  # queued, not sent yet
    assert unlink(
        LtiContext.objects.get(context_id="lms-course-1"),
        make_user("admin", is_staff=True, is_superuser=True),
    )
    run_queue()
    assert not lms.scores
    assert row().delivery == "failing" and "no longer linked" in row().last_error
