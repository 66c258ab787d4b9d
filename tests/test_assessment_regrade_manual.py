"""Regrading code that an assessment has a manual score over: the regrade page can say, before
the regrade is applied, how many manual scores stay as they are (a manual score replaces the
computed one and a regrade never changes it)."""

from datetime import timedelta

import pytest
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import override

from assessments.models import Assessment, HandIn, ManualScore
from assessments.scoring import manual_scores_over, student_scores
from grader import regrade as regrades
from grader.models import Submission

pytestmark = pytest.mark.django_db


def test_a_regrade_counts_the_manual_scores_it_leaves_as_they_are(lab, make_user):
    hoca = make_user("hoca")
    attn = lab.exercises.get(slug="attn")
    now = timezone.now()
    homework = Assessment.objects.create(
        course=lab,
        slug="odev",
        title="Ödev",
        kind="homework",
        opens=now - timedelta(days=1),
        due=now + timedelta(days=1),
        closes=now + timedelta(days=1),
        items=[{"item": "attn", "points": 1.0}],
    )
    students = [make_user(name) for name in ("ayse", "bora", "cem")]
    for student in students:
        lab.enroll(student)
        submission = Submission.objects.create(
            user=student, exercise=attn, code="x", mode="submit", status="done", verdict="failed", score=0.5
        )
        HandIn.objects.create(
            assessment=homework, user=student, item="attn", submission=submission, received_at=now
        )
    # Two of the three have a manual score; a manual score on another item does not count.
    for student in students[:2]:
        ManualScore.change(homework, student, "attn", 0.9, "Kodu okudum.", by=hoca)
    ManualScore.change(homework, students[2], "baska", 1.0, "Başka öğe.", by=hoca)

    regrade = regrades.start(attn, hoca)
    assert manual_scores_over(regrade.items.values("submission_id")) == 2
    # Only the regrade's own submissions: one student's regrade covers one manual score.
    mine = regrades.start(attn, hoca, [Submission.objects.get(user=students[0]).pk])
    assert manual_scores_over(mine.items.values("submission_id")) == 1

    with override("tr"):
        warning = render_to_string("assessments/_regrade_manual_scores.html", {"manual_kept": 2})
    assert "Değerlendirmelerdeki 2 elle verilen puan bu yeniden notlandırmadaki kodu kapsıyor" in warning
    assert render_to_string("assessments/_regrade_manual_scores.html", {"manual_kept": 0}).strip() == ""

    # What the warning says is what the model does: the manual score still counts afterwards.
    Submission.objects.filter(exercise=attn).update(score=1.0, verdict="passed")
    [row] = student_scores(homework, [students[0]])
    assert (row.items[0].score, row.items[0].computed, row.items[0].manual) == (0.9, 1.0, True)
