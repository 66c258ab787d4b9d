"""Students' assessment pages: an assessment's items, the exam's start page and clock, and the
hand-in of answers and code posted from an assessment's page (to its own URLs below)."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.ratelimit import ANSWERS, SUBMISSIONS
from courses.kinds import AnswerError, GraderFailed, NotGradable, get_kind
from courses.models import Exercise, Question, QuestionVariant, spec_answered
from courses.selftest import AnsweringTooFast, AnswerPending, AnswerRefused, question_changed
from grader.grading import SubmissionRefused
from grader.models import Submission

from .feedback import submission_payload
from .handin import log_refusal, record_answer, record_submission
from .models import Assessment, HandIn, Refused, TooManyPasswords
from .scoring import student_scores

# Answers that could not be graded (an empty cell), kept in the session until the assessment's
# page shows them again in their form: {"<assessment pk>:<item slug>": the posted answer}.
DRAFTS = "assessment_drafts"


def _keep_draft(request: HttpRequest, assessment: Assessment, slug: str, raw: dict) -> None:
    drafts = request.session.get(DRAFTS, {})
    drafts[f"{assessment.pk}:{slug}"] = raw
    request.session[DRAFTS] = drafts


def _take_drafts(request: HttpRequest, assessment: Assessment) -> dict[str, dict]:
    """This assessment's kept answers by item slug, forgotten once taken (shown once)."""
    drafts = request.session.get(DRAFTS)
    if not drafts:
        return {}
    prefix = f"{assessment.pk}:"
    mine = {key.removeprefix(prefix): raw for key, raw in drafts.items() if key.startswith(prefix)}
    if mine:
        request.session[DRAFTS] = {k: v for k, v in drafts.items() if not k.startswith(prefix)}
    return mine


def _get_assessment(course_slug: str, slug: str) -> Assessment:
    return get_object_or_404(
        Assessment.objects.active().select_related("course"),
        course__slug=course_slug,
        course__retired=False,
        slug=slug,
    )


def assessment_url(assessment: Assessment) -> str:
    return reverse("assessment", args=[assessment.course.slug, assessment.slug])


@login_required
def assessment_detail(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    assessment = _get_assessment(course_slug, slug)
    course, user = assessment.course, request.user
    if not course.can_view(user):
        messages.info(request, _("Enrol in the course to see its assessments."))
        return redirect(course.get_absolute_url())
    now = timezone.now()
    override = assessment.override_for(user)
    windows = assessment.windows_for(override)
    state = windows.state_at(now)
    session = assessment.session_for(user)
    needs_start = (assessment.is_exam or bool(assessment.password)) and session is None
    show_items = state != "upcoming" and not needs_start
    exam_running = (
        assessment.is_exam
        and session is not None
        and session.submitted_at is None
        and session.seconds_left(now) > 0
    )
    may_hand_in = state in ("open", "late") and (not assessment.is_exam or exam_running)
    context = {
        "assessment": assessment,
        "course": course,
        "windows": windows,
        "state": state,
        "session": session,
        "override": override,
        "needs_start": needs_start,
        "may_hand_in": may_hand_in,
        "exam_running": exam_running,
        "seconds_left": session.seconds_left(now) if exam_running and session is not None else None,
        # What a start now would give: the time limit (× the student's factor), or less near the close.
        "minutes_if_started": int(
            (assessment.deadline_for(now, windows, override) - now).total_seconds() // 60
        )
        if assessment.is_exam and session is None
        else None,
        "credit_now": round(100 * (windows.credit_at(now) or 0)),
    }
    drafts = _take_drafts(request, assessment)
    rows = _item_rows(assessment, user, may_hand_in, drafts) if show_items else []
    context.update(
        items=rows,
        # Code items get the lesson pages' editor and live status (js/exercise.js, build/editor.js).
        has_exercises=any(isinstance(row["item"], Exercise) for row in rows),
        pending=any(row["score"].pending for row in rows),  # without JavaScript: the page refreshes
    )
    return render(request, "assessments/assessment.html", context)


def _item_rows(assessment: Assessment, user, may_hand_in: bool, drafts: dict[str, dict]) -> list[dict]:
    objects = assessment.item_objects()
    # Each question as this student is asked it: their own variant (one query for the page).
    questions = [item for item in objects.values() if isinstance(item, Question)]
    variants = QuestionVariant.objects.current_for(questions, user)
    for question in questions:
        question.ask(variants.get(question.pk))
    shown = assessment.feedback_shown(user)
    [scores] = student_scores(assessment, [user])
    hand_ins: dict[str, list[HandIn]] = {}
    for h in HandIn.objects.filter(assessment=assessment, user=user).select_related(
        "attempt__variant", "attempt__question", "submission"
    ):
        hand_ins.setdefault(h.item, []).append(h)
    allowed = assessment.attempts_allowed(assessment.override_for(user))
    rows = []
    for score in scores.items:
        item = objects.get(score.item)
        if item is None:
            continue
        mine = hand_ins.get(score.item, [])
        last = mine[-1] if mine else None
        used = HandIn.objects.filter(pk__in=[h.pk for h in mine]).counting().count() if mine else 0
        row: dict[str, Any] = {
            "item": item,
            "score": score,
            "last": last,
            "shown": shown,
            "used": used,
            "attempts_left": None if allowed is None else max(0, allowed - used),
            "may_hand_in": may_hand_in and (allowed is None or used < allowed),
        }
        if isinstance(item, Exercise):
            submission = last.submission if last else None
            row.update(
                submission=submission,
                code=submission.code if submission else item.starter_code,
                hints=item.misconception_hints,
                # score_only: how many cases fail, never which (assessments/_held_back.html).
                failing=sum(1 for test in (submission.tests or []) if not test.get("passed"))
                if submission
                else 0,
            )
        else:
            kind = get_kind(item.kind)
            if kind is None:  # a kind this site no longer has: nothing to show
                continue
            attempt = last.attempt if last else None
            row.update(
                attempt=attempt,
                kind_context=kind.context(item.spec, (user.pk, item.course_id, item.slug)),
                # What the student typed in an answer that could not be graded: shown again to correct.
                draft=drafts.get(item.slug),
            )
            shown_items: list[dict] = []
            wrong_parts = 0  # score_only: how many parts are wrong, never which
            if attempt is not None and attempt.status == attempt.Status.DONE:
                answer, graded = attempt.answer or {}, attempt.feedback or []
                spec = spec_answered(attempt)  # the variant it was graded on, even if it changed since
                try:
                    feedback = kind.feedback_items(spec, answer, graded)
                    wrong_parts = kind.wrong_parts(spec, answer, graded)
                    # Marks per option only once the student can answer no more, as in lessons.
                    final = not row["may_hand_in"]
                    withheld = None if final else kind.withheld_feedback(spec, answer, graded)
                    shown_items = feedback if withheld is None else withheld
                except (KeyError, IndexError, TypeError, StopIteration):
                    shown_items, wrong_parts = [], 0
            row["wrong_parts"] = wrong_parts
            row["feedback_items"] = shown_items if shown == "full" else []
        rows.append(row)
    return rows


@login_required
@require_POST
def start(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    """Start an exam (or open a homework with its password); starting again resumes."""
    assessment = _get_assessment(course_slug, slug)
    if not assessment.course.is_enrolled(request.user):
        messages.info(request, _("Enrol in the course to see its assessments."))
        return redirect(assessment.course.get_absolute_url())
    try:
        assessment.start(request.user, request.POST.get("password", ""))
    except TooManyPasswords as refused:
        # Passwords are not compared for a while: the start page says so, with Retry-After.
        messages.error(request, str(refused))
        response = assessment_detail(request, course_slug, slug)
        response.status_code = 429
        response["Retry-After"] = str(refused.retry_after)
        return response
    except Refused as refused:
        messages.error(request, str(refused))
    return redirect(assessment_url(assessment))


@login_required
@require_POST
def finish(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    """Hand in an exam: later answers are refused."""
    assessment = _get_assessment(course_slug, slug)
    session = assessment.session_for(request.user)
    if session is None or not assessment.is_exam:
        return redirect(assessment_url(assessment))
    time_up = timezone.now() >= session.deadline
    if session.hand_in() or time_up:  # the page's clock posts this at zero; the server may have been first
        if time_up:
            messages.info(request, _("Time is up: your exam was handed in with the answers you saved."))
        else:
            messages.success(request, _("Your exam was handed in. Your answers are saved."))
    return redirect(assessment_url(assessment))


# -- hand-ins posted from an assessment's page ---------------------------------------------------


def _assessment_for_item(item, slug: str) -> Assessment:
    return get_object_or_404(
        Assessment.objects.active().select_related("course"), course_id=item.course_id, slug=slug
    )


def _item(model: type[Question] | type[Exercise], course_slug: str, item_slug: str) -> Any:
    return get_object_or_404(
        model.objects.active().select_related("course", "lesson"),
        course__retired=False,
        course__slug=course_slug,
        lesson__retired=False,
        slug=item_slug,
    )


@login_required
@require_POST
def answer(request: HttpRequest, course_slug: str, slug: str, item_slug: str) -> HttpResponse:
    """An answer to one of the assessment's questions: the assessment's rules, then stored and
    linked; back to the assessment's page with what happened."""
    question = _item(Question, course_slug, item_slug)
    ANSWERS.check(request)  # per address and site-wide, before the per-student limits
    return _answer_in_assessment(request, question, slug)


@login_required
@require_POST
def submit(request: HttpRequest, course_slug: str, slug: str, item_slug: str) -> HttpResponse:
    """Code for one of the assessment's exercises (run on the examples, or handed in). The
    page's script (static/js/exercise.js, as on lesson pages) gets JSON and polls the status."""
    exercise = _item(Exercise, course_slug, item_slug)
    code = request.POST.get("code")
    mode = request.POST.get("mode", Submission.Mode.SUBMIT)
    if code is None or mode not in Submission.Mode.values:  # too large code: the hand-in says so
        message = _("The code could not be read. Reload the page and try again.")
        if _wants_json(request):
            return JsonResponse({"error": message}, status=400)
        return render(request, "400.html", {"message": message}, status=400)
    SUBMISSIONS.check(request, count=False)  # per address and site-wide; only accepted code counts
    return _submit_in_assessment(request, exercise, slug, code, mode)


def _wants_json(request: HttpRequest) -> bool:
    return request.headers.get("X-Requested-With") == "dikkat"


def _answer_in_assessment(request: HttpRequest, question: Question, slug: str) -> HttpResponse:
    assessment = _assessment_for_item(question, slug)
    back = assessment_url(assessment) + f"#item-{question.slug}"
    if not question.course.is_enrolled(request.user):
        messages.error(request, _("Enrol in the course to see its assessments."))
        return redirect(back)
    kind = get_kind(question.kind)
    if kind is None:
        raise Http404
    question.ask_for(request.user)  # read and graded as the student's own variant
    if question_changed(question, request.POST.get("asked", "")):
        # A re-import gave the student new numbers since the page was loaded: graded on today's,
        # the answer to the page's would count as wrong (and use an attempt). Nothing is stored.
        messages.warning(
            request,
            _(
                "This question has changed since the page was loaded: it has new numbers now. "
                "Read it again, then answer."
            ),
        )
        return redirect(back)
    raw = None
    try:
        raw = kind.answer_from_post(question.spec, request.POST)
        attempt = record_answer(assessment, request.user, question, raw)
    except Refused as refused:
        log_refusal(assessment, request.user, question.slug, str(refused))
        return _refused(request, back, str(refused))
    except AnswerError as exc:
        message = _("This answer could not be read: %(reason)s. Reload the page and try again.") % {
            "reason": exc
        }
        return render(request, "400.html", {"message": message}, status=400)
    except NotGradable as exc:
        if raw is not None:  # one empty cell must not wipe the whole grid
            _keep_draft(request, assessment, question.slug, raw)
        messages.warning(request, str(exc))
    except GraderFailed:
        messages.warning(
            request, _("The checker failed on our side, so this answer does not count. Please try again.")
        )
    except AnswerRefused:
        messages.warning(request, _("You have used all your attempts for this question."))
    except AnswerPending:
        messages.warning(
            request, _("Your previous answer is still being checked. Wait for its result, then try again.")
        )
    except AnsweringTooFast as slow:
        messages.warning(
            request,
            _("You are answering very fast. Please wait %(seconds)d seconds and try again.")
            % {"seconds": slow.retry_after},
        )
    else:
        messages.success(
            request,
            _("Your answer was received at %(time)s.")
            % {"time": timezone.localtime(attempt.created_at).strftime("%H:%M:%S")},
        )
    return redirect(back)


def _submit_in_assessment(
    request: HttpRequest, exercise: Exercise, slug: str, code: str, mode: str
) -> HttpResponse:
    assessment = _assessment_for_item(exercise, slug)
    back = assessment_url(assessment) + f"#item-{exercise.slug}"
    try:
        accepted = record_submission(assessment, request.user, exercise, code, mode)
    except Refused as refused:
        log_refusal(assessment, request.user, exercise.slug, str(refused))
        return _refused(request, back, str(refused))
    except SubmissionRefused as refused:
        return refused.response(request, back, as_json=_wants_json(request))
    if not accepted.reused:
        SUBMISSIONS.count(request)
    submission = accepted.submission
    if _wants_json(request):
        return JsonResponse(
            submission_payload(request, submission, reused=accepted.reused),
            status=202 if submission.is_pending else 200,
        )
    messages.success(
        request,
        _("Your code was received at %(time)s.") % {"time": timezone.localtime().strftime("%H:%M:%S")},
    )
    return redirect(back)


def _refused(request: HttpRequest, back: str, message: str) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"error": message}, status=409)
    messages.error(request, message)
    return redirect(back)
