"""Grade passback of links that open one exercise or one assessment, end to end: the student
launched from the LMS hands in work, a real queue worker sends the link's score over real HTTP
to the test platform. An exercise link scores that exercise only; an assessment link scores
the assessment's total, and only once the assessment shows scores to the student."""

import json
import shutil
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import test_lti_launch
import test_lti_outbox
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from test_lti_outbox import launch_student, row, scores

from assessments.models import Assessment
from courses.models import Exercise
from lti.models import LtiContext, ResourceLink

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent
platform = test_lti_launch.platform
linked = test_lti_launch.linked
lms = test_lti_outbox.lms


@pytest.fixture
def mini_course_dir(tmp_path) -> Path:
    """The mini course with a homework whose scores are shown only after its close."""
    root = tmp_path / "mini"
    shutil.copytree(ROOT / "tests" / "fixtures" / "mini", root)
    now = timezone.now()
    (root / "assessments").mkdir()
    (root / "assessments" / "odev.toml").write_text(
        f"""slug = "odev"
title = "Birinci ödev"
kind = "homework"
opens = {(now - timedelta(days=1)).isoformat(timespec="seconds")}
due = {(now + timedelta(days=2)).isoformat(timespec="seconds")}
feedback = "after_close"
items = [{{ item = "first-choice", points = 4 }}]
""",
        encoding="utf-8",
    )
    return root


def outbox_items() -> list[dict]:
    out = StringIO()
    call_command("lti_outbox", "--json", stdout=out)
    return json.loads(out.getvalue())["items"]


@pytest.mark.sandbox
def test_an_exercise_link_sends_that_exercise_score_out_of_one_to_a_column_it_makes(
    lms, linked, lab, client, run_queue
):
    LtiContext.objects.update(course=lab)  # the LMS course opens the lab course
    link = launch_student(lms, client)
    # The launch named no grade column: Dikkat makes one through the link's lineitems address.
    ResourceLink.objects.filter(pk=link.pk).update(exercise=Exercise.objects.get(course=lab, slug="attn"))
    ResourceLink.objects.filter(pk=link.pk).update(lineitem_url="")
    solution = (ROOT / "tests/fixtures/lab/01-lab/attn/solution.py").read_text()
    response = client.post(
        reverse("submit_code", args=["lab", "lab", "attn"]), {"code": solution, "mode": "submit"}
    )
    assert response.status_code == 302
    run_queue()  # grades the submission, then sends the score its grading queued
    sent = row()
    # The lab lesson has a second exercise: an exercise link counts only its own (1 of 1, not 1 of 2).
    assert (sent.delivery, sent.score, sent.maximum) == ("sent", 1.0, 1.0)
    assert scores(lms) == [(1.0, 1.0)]
    (column,) = lms.lineitems["lms-course-1"]
    assert (column["label"], column["scoreMaximum"], column["resourceLinkId"]) == (
        "Dikkat: Attention",
        1.0,
        "link-7",
    )
    assert lms.scores[0]["lineitem"] == "item-1"
    assert [(i["item"], i["status"]) for i in outbox_items()] == [("lab/exercise:attn", "sent")]


def test_an_assessment_link_waits_until_its_scores_are_shown_then_sends_the_total(
    lms, linked, client, run_queue, make_user
):
    homework = Assessment.objects.get(course=linked, slug="odev")
    link = launch_student(lms, client)
    ResourceLink.objects.filter(pk=link.pk).update(assessment=homework)
    response = client.post(
        reverse("assessment_answer", args=["mini", "odev", "first-choice"]), {"option": "a"}
    )
    assert response.status_code == 302
    run_queue()
    held = row()
    # Feedback after the close: the student sees only that the answer arrived, so does the LMS.
    assert (held.delivery, held.score, held.attempts) == ("pending", None, 0)
    assert held.next_try_at >= homework.closes - timedelta(seconds=1)
    assert not lms.scores
    # Each further answer while held is no try against the LMS: the count of tries stays 0.
    client.post(reverse("assessment_answer", args=["mini", "odev", "first-choice"]), {"option": "b"})
    client.post(reverse("assessment_answer", args=["mini", "odev", "first-choice"]), {"option": "a"})
    run_queue()
    assert (row().delivery, row().attempts, row().last_try_at) == ("pending", 0, None)
    page = Client()
    teacher = make_user("hoca")
    linked.instructors.add(teacher)
    page.force_login(teacher)
    outbox = page.get(reverse("lti:outbox", args=["mini"])).content.decode()
    assert "Birinci ödev" in outbox and "bekliyor" in outbox

    # The instructor releases the feedback: the score is shown, and sent.
    released = page.post(reverse("assessment_release", args=["mini", "odev"]), {"release": "1"})
    assert released.status_code == 302
    run_queue()
    sent = row()
    assert (sent.delivery, sent.score, sent.maximum, sent.attempts) == ("sent", 4.0, 4.0, 1)
    assert scores(lms) == [(4.0, 4.0)]
    assert [(i["item"], i["score"]) for i in outbox_items()] == [("mini/assessment:odev", 4.0)]


def test_an_assessment_with_immediate_feedback_sends_its_total_at_once(lms, linked, client, run_queue):
    Assessment.objects.filter(slug="odev").update(feedback="immediate")
    link = launch_student(lms, client)
    ResourceLink.objects.filter(pk=link.pk).update(assessment=Assessment.objects.get(slug="odev"))
    client.post(reverse("assessment_answer", args=["mini", "odev", "first-choice"]), {"option": "b"})
    run_queue()
    assert (row().delivery, row().score, row().maximum) == ("sent", 0.0, 4.0)  # a wrong answer: 0 of 4
    assert scores(lms) == [(0.0, 4.0)]
