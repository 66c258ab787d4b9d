"""An assessment's feedback policy outside its own page: the status poll and the submission
history show work handed in to a ``score_only`` or ``after_close`` assessment as the policy
allows (the score and how many cases fail, or only that it was received), never more."""

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext

from grader.items import status_payload
from grader.models import Submission

from .models import Assessment, HandIn

_OPENNESS = {"received": 0, "score": 1, "full": 2}
ISTANBUL = ZoneInfo("Europe/Istanbul")  # the assessments' times are Istanbul time


def _held_back(user, **hand_ins_filter) -> Iterator[tuple[HandIn, str]]:
    """``user``'s hand-ins (narrowed by ``hand_ins_filter``) to assessments that keep feedback
    back right now, each with what its assessment shows: "score" or "received"."""
    hand_ins = (
        HandIn.objects.filter(user=user, **hand_ins_filter)
        .exclude(assessment__feedback=Assessment.Feedback.IMMEDIATE)
        .select_related("assessment")
    )
    shown: dict[int, str] = {}
    for hand_in in hand_ins:
        if hand_in.assessment_id not in shown:
            shown[hand_in.assessment_id] = hand_in.assessment.feedback_shown(user)
        if shown[hand_in.assessment_id] != "full":
            yield hand_in, shown[hand_in.assessment_id]


def shown_for_submissions(user, submissions: list[Submission]) -> dict[int, str]:
    """submission id → "score" or "received" for the submissions handed in to an assessment
    that keeps feedback back right now; the strictest one wins. Others are absent (full)."""
    shown: dict[int, str] = {}
    for hand_in, level in _held_back(user, submission_id__in=[s.pk for s in submissions]):
        assert hand_in.submission_id is not None
        if _OPENNESS[level] < _OPENNESS[shown.get(hand_in.submission_id, "full")]:
            shown[hand_in.submission_id] = level
    return shown


@dataclass(frozen=True)
class HeldBackNote:
    """What a lesson page says of a question or exercise whose work was handed in to an
    assessment that keeps its feedback back: answered there, and when the feedback comes."""

    title: str  # the assessment's
    url: str  # the assessment's page
    until: datetime | None  # after_close: the student's close; score_only: None (scores only)

    @property
    def text(self) -> str:
        if self.until is None:
            return gettext(
                "Answered in “%(title)s”, which shows the score only: see it on the assessment's page."
            ) % {"title": self.title}
        return gettext("Answered in “%(title)s”; its feedback is shown after %(time)s.") % {
            "title": self.title,
            "time": timezone.localtime(self.until, ISTANBUL).strftime("%d.%m.%Y %H:%M"),
        }


@dataclass
class HeldBack:
    """``user``'s work handed in to a course's assessments that keep feedback back right now."""

    answers: set[int] = field(default_factory=set)  # answer ids
    submissions: set[int] = field(default_factory=set)  # submission ids
    notes: dict[str, HeldBackNote] = field(default_factory=dict)  # item slug → the latest hand-in's


def held_back(user, course) -> HeldBack:
    """``user``'s work handed in to ``course``'s assessments that keep any feedback back right
    now: the answers and submissions a lesson page leaves out, and for each item a note that
    says where it was answered and when its feedback comes (the lesson shows that instead of
    "new": the attempts it used still count). One query when nothing is held back."""
    out = HeldBack()
    if not user.is_authenticated:
        return out
    closes: dict[int, datetime | None] = {}
    for hand_in, level in _held_back(user, assessment__course=course):
        assessment = hand_in.assessment
        if hand_in.attempt_id is not None:
            out.answers.add(hand_in.attempt_id)
        if hand_in.submission_id is not None:
            out.submissions.add(hand_in.submission_id)
        if assessment.pk not in closes:
            closes[assessment.pk] = (
                assessment.windows_for(assessment.override_for(user)).closes if level == "received" else None
            )
        out.notes[hand_in.item] = HeldBackNote(
            assessment.title,
            reverse("assessment", args=[course.slug, assessment.slug]),
            closes[assessment.pk],
        )
    return out


def held_back_work(user, course) -> tuple[set[int], set[int]]:
    """(answer ids, submission ids) of ``user``'s work handed in to ``course``'s assessments that
    keep any feedback back right now. The lesson pages, their status polls and İlerlemem leave
    them out: the answer to an exam question must not show on its lesson page before the
    assessment lets it. One query when nothing is held back."""
    work = held_back(user, course)
    return work.answers, work.submissions


def _held_back_html(request: HttpRequest, submission: Submission, shown: str) -> str:
    failing = sum(1 for test in submission.tests or [] if not test.get("passed"))
    return render_to_string(
        "assessments/_held_back.html",
        {"submission": submission, "shown": shown, "failing": failing},
        request=request,
    )


def submission_payload(request: HttpRequest, submission: Submission, reused: bool = False) -> dict:
    """What the exercise script reads of a submission (grader.items.status_payload), after code
    is posted from a lesson's or an assessment's page and in the status poll, with what its
    assessment's feedback policy keeps back removed."""
    return hold_back_status(request, submission, status_payload(request, submission, reused))


def hold_back_status(request: HttpRequest, submission: Submission, payload: dict) -> dict:
    """The status poll's JSON for ``submission``, with what its assessment keeps back removed."""
    if submission.is_pending:
        return payload
    shown = shown_for_submissions(request.user, [submission]).get(submission.pk)
    if shown is None:
        return payload
    payload["html"] = _held_back_html(request, submission, shown)
    if shown == "received":
        payload.update(verdict=None, score=None)
    return payload


def hold_back_history(request: HttpRequest, submissions: list[Submission]) -> None:
    """Give each submission of the history whose assessment keeps feedback back its
    ``held_back_html``; the history shows that instead of the full result."""
    shown = shown_for_submissions(request.user, submissions)
    for submission in submissions:
        if submission.pk in shown and not submission.is_pending:
            # An attribute for the history's template only, as its view numbers them.
            submission.held_back_html = _held_back_html(  # type: ignore[attr-defined]
                request, submission, shown[submission.pk]
            )
