"""Scores of an assessment, computed from the hand-ins, the students' windows and manual scores.

An item's score is in points: the counted answer's score (0–1) × its credit × the item's
points. Homework follows the course's score policy (best or last); an exam counts the last
answer saved (students change answers without feedback, so "best" would reward guessing all
options). A manual score replaces the computed one.
"""

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef

from courses.models import Attempt, Course
from grader.models import NOT_COUNTED, Submission

from .models import Assessment, HandIn, ManualScore, PoolDraw, StudentOverride


@dataclass
class ItemScore:
    item: str
    points: float  # what the item is worth
    score: float = 0.0  # points earned
    credit: float | None = None  # of the counted hand-in; None when nothing counted
    late: bool = False
    manual: bool = False
    computed: float = 0.0  # what the answers earn: shown next to a manual score, which wins
    comment: str = ""
    pending: bool = False  # a hand-in is still being graded
    received_at: datetime | None = None
    hand_ins: int = 0

    def as_json(self) -> dict:
        return {
            "item": self.item,
            "score": round(self.score, 4),
            "credit": self.credit,
            "late": self.late,
            "manual": self.manual,
        }


@dataclass
class StudentScores:
    user: User
    items: list[ItemScore] = field(default_factory=list)
    override: "StudentOverride | None" = None  # for the gradebook's "who set it, when"

    @property
    def total(self) -> float:
        return round(sum(i.score for i in self.items), 4)

    @property
    def possible(self) -> float:
        return sum(i.points for i in self.items)

    def as_json(self) -> dict:
        return {
            "username": self.user.username,
            "total": self.total,
            "items": [i.as_json() for i in self.items],
        }


def _graded_score(hand_in: HandIn) -> float | None:
    """The 0–1 score of a graded hand-in; None when it does not count (pending, failed, rejected)."""
    if hand_in.attempt is not None:
        a = hand_in.attempt
        if a.kind != Attempt.Kind.ANSWER or a.status != Attempt.Status.DONE:
            return None
        return a.score
    s = hand_in.submission
    if (
        s is None
        or s.mode != Submission.Mode.SUBMIT
        or s.status != Submission.Status.DONE
        or s.verdict in NOT_COUNTED
    ):
        return None
    return 0.0 if s.after_reveal else (s.score or 0.0)


def _is_pending(hand_in: HandIn) -> bool:
    row = hand_in.attempt or hand_in.submission
    return row is not None and row.is_pending


def student_scores(assessment: Assessment, users) -> list[StudentScores]:
    """Every student's item scores, in a fixed number of queries whatever the number of
    students; reads only (pool draws not kept yet are computed, not stored)."""
    users = list(users)
    draws = PoolDraw.drawn(assessment, users)
    hand_ins: dict[tuple[int, str], list[HandIn]] = {}
    for h in (
        HandIn.objects.filter(assessment=assessment, user__in=users)
        .select_related("attempt", "submission")
        .defer("submission__code", "submission__stdout", "submission__tests", "attempt__feedback")
        .order_by("received_at", "pk")
    ):
        hand_ins.setdefault((h.user_id, h.item), []).append(h)
    overrides = {o.user_id: o for o in assessment.overrides.filter(user__in=users)}
    manual = {
        (m.user_id, m.item): m for m in ManualScore.objects.filter(assessment=assessment, user__in=users)
    }
    last_counts = assessment.is_exam or assessment.course.score_policy == Course.ScorePolicy.LAST
    out = []
    for user in users:
        windows = assessment.windows_for(overrides.get(user.pk))
        row = StudentScores(user)
        for entry in assessment.items_for(user, draws[user.pk]):
            item = ItemScore(entry["item"], entry["points"])
            mine = hand_ins.get((user.pk, item.item), [])
            item.hand_ins = len(mine)
            item.pending = any(_is_pending(h) for h in mine)
            counted = []
            for h in mine:
                raw = _graded_score(h)
                if raw is not None:
                    credit = windows.credit_at(h.received_at) or 0.0
                    counted.append((raw * credit, credit, h))
            if counted:
                value, credit, h = (
                    counted[-1] if last_counts else max(counted, key=lambda c: (c[0], -c[2].pk))
                )
                item.score, item.credit, item.received_at = value * item.points, credit, h.received_at
                item.late = h.received_at > windows.due
            item.computed = item.score
            if (m := manual.get((user.pk, item.item))) is not None:
                item.score, item.manual, item.comment = m.points, True, m.comment
            row.items.append(item)
        out.append(row)
    return out


def manual_scores_over(submission_ids) -> int:
    """How many manual scores stand over assessment items whose hand-ins include any of
    ``submission_ids`` (ids, or a values("submission_id") query such as a regrade's items).

    A regrade changes the submissions' scores, so the score the answers earn (``computed``);
    a manual score replaces that and is never changed by it: these manual scores stay as they
    are. The regrade page warns with this count before the regrade is applied
    (templates/assessments/_regrade_manual_scores.html)."""
    covered = HandIn.objects.filter(
        assessment=OuterRef("assessment"),
        user=OuterRef("user"),
        item=OuterRef("item"),
        submission_id__in=submission_ids,
    )
    return ManualScore.objects.filter(Exists(covered)).count()


def enrolled_students(assessment: Assessment):
    """The course's students (its instructors are not), by username."""
    course = assessment.course
    return User.objects.filter(enrollments__course=course).exclude(taught_courses=course).order_by("username")
