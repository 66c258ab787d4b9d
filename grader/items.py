"""What a lesson page shows for an exercise, shared by the lesson page (courses) and the
grader's own pages."""

from collections.abc import Collection

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse

from courses.models import Exercise
from courses.reveal import may_reveal

from .models import SolutionReveal, Submission, Verdict


def exercise_item_context(
    exercise: Exercise, user, preview: bool = False, hidden: Collection[int] = ()
) -> dict:
    """What the lesson page shows for an exercise: editor, latest result, sample solution.

    ``preview``: an instructor's own unrecorded tries in the student preview (no reveal there).
    ``hidden``: submissions left out (handed in to an assessment that keeps feedback back)."""
    submissions = (
        Submission.objects.filter(user=user, exercise=exercise, preview=preview).exclude(pk__in=hidden)
        if user.is_authenticated
        else Submission.objects.none()
    )
    latest = submissions.first()
    counted = list(submissions.counted().values_list("verdict", "after_reveal"))
    solved = (Verdict.PASSED, False) in counted
    revealed = (
        not preview
        and user.is_authenticated
        and SolutionReveal.objects.filter(user=user, exercise=exercise).exists()
    )
    return {
        "exercise": exercise,
        "latest": latest,
        "code": latest.code if latest else exercise.starter_code,
        "attempts": len(counted),
        "solved": solved,
        "show_solution": revealed,
        "can_reveal": not preview
        and not revealed
        and bool(exercise.solution_code)
        and may_reveal(exercise.reveal, attempts=len(counted), solved=solved),
        "hints": exercise.misconception_hints,
        "history_count": submissions.count(),
    }


def status_payload(request: HttpRequest, submission: Submission, reused: bool = False) -> dict:
    """What the exercise script (static/js/exercise.js) reads of a submission, on a lesson's page
    or an assessment's: its state, place in the queue, result box and where to poll it. An
    assessment's feedback policy is applied on top (assessments.feedback.submission_payload)."""
    payload = {
        "id": submission.pk,
        "status": submission.progress,
        "position": submission.queue_position(),
        "wait_seconds": submission.queue_wait_seconds(),
        "verdict": submission.verdict or None,
        "score": submission.score,
        "reused": reused,
        "status_url": reverse("submission_status", args=[submission.pk]),
        "html": render_to_string(
            "grader/result.html",
            {
                "submission": submission,
                "hints": submission.exercise.misconception_hints if not submission.is_pending else {},
            },
            request=request,
        ),
    }
    # A long queue is not asked every half second: the page polls again near the expected verdict.
    poll_after = submission.poll_after_ms()
    if poll_after is not None:
        payload["poll_after_ms"] = poll_after
    return payload
