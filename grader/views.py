from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.ratelimit import SUBMISSIONS
from accounts.requests import AuthenticatedRequest
from assessments.feedback import hold_back_history, submission_payload
from assessments.models import lesson_use_refused
from courses.models import Exercise

from .grading import SubmissionRefused, submit
from .items import exercise_item_context
from .models import SolutionReveal, Submission
from .waiting import hold_until_done, waited


def _get_exercise_for_user(
    request, course_slug: str, lesson_slug: str, slug: str, preview: bool = False
) -> Exercise:
    exercise = get_object_or_404(
        Exercise.objects.active()
        .select_related("course", "lesson__course")
        .defer("lesson__body_source", "lesson__body_html", "lesson__course__description_html"),
        course__retired=False,
        course__slug=course_slug,
        lesson__slug=lesson_slug,
        lesson__retired=False,
        slug=slug,
    )
    if preview and exercise.course.is_instructor(request.user):
        return exercise
    if not exercise.course.is_enrolled(request.user):
        raise PermissionDenied(_("Enrol in this course to send code."))
    return exercise


def _get_submission_for_user(request, pk: int) -> Submission:
    # Another student's submission is a 404, never a hint that it exists.
    rows = Submission.objects.select_related("exercise__lesson__course").defer(*STATUS_DEFERRED)
    return get_object_or_404(rows, pk=pk, user=request.user)


# What a status poll never shows: not loaded on every poll.
STATUS_DEFERRED = (
    "code",
    "last_error",
    "exercise__prompt_html",
    "exercise__starter_code",
    "exercise__solution_code",
    "exercise__spec",
    "exercise__reveal",
    "exercise__lesson__summary",
    "exercise__lesson__body_source",
    "exercise__lesson__body_html",
    "exercise__lesson__course__summary",
    "exercise__lesson__course__description_html",
)


@login_required
@require_POST
def submit_code(request: HttpRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    if request.POST.get("assessment"):  # a page from before assessments had their own address
        try:
            url = reverse("assessment_submit", args=[course_slug, request.POST["assessment"], slug])
        except NoReverseMatch:
            raise Http404 from None  # not an assessment's slug: a tampered form
        return HttpResponseRedirect(url, status=307)  # the browser posts the same form there
    preview = request.POST.get("preview") == "1"
    exercise = _get_exercise_for_user(request, course_slug, lesson_slug, slug, preview=preview)
    preview = preview and exercise.course.is_instructor(request.user)
    back = (
        reverse("instructors:preview", args=[course_slug, lesson_slug])
        if preview
        else exercise.lesson.get_absolute_url()
    ) + f"#ex-{exercise.slug}"
    code = request.POST.get("code")
    mode = request.POST.get("mode", Submission.Mode.SUBMIT)
    wants_json = request.headers.get("X-Requested-With") == "dikkat"
    if code is None or mode not in Submission.Mode.values:  # too large code: submit() says so
        message = _("The code could not be read. Reload the page and try again.")
        if wants_json:
            return JsonResponse({"error": message}, status=400)
        return render(request, "400.html", {"message": message}, status=400)
    SUBMISSIONS.check(request, count=False)  # per address and site-wide; only accepted code counts
    if not preview and (held := lesson_use_refused(request.user, exercise.course, exercise.slug)):
        if wants_json:
            return JsonResponse({"error": held}, status=403)
        messages.warning(request, held)
        return redirect(back)
    try:
        accepted = submit(request.user, exercise, code, mode, preview=preview)
    except SubmissionRefused as refused:
        return refused.response(request, back, as_json=wants_json)
    submission = accepted.submission
    if not accepted.reused:
        SUBMISSIONS.count(request)
    if accepted.reused and not wants_json:
        messages.info(request, _("You sent this exact code before; here is its result."))
    if wants_json:
        return JsonResponse(
            submission_payload(request, submission, reused=accepted.reused),
            status=202 if submission.is_pending else 200,
        )
    return redirect(back)


@login_required
@require_POST
def reveal_solution(
    request: AuthenticatedRequest, course_slug: str, lesson_slug: str, slug: str
) -> HttpResponse:
    exercise = _get_exercise_for_user(request, course_slug, lesson_slug, slug)
    context = exercise_item_context(exercise, request.user)
    if held := lesson_use_refused(request.user, exercise.course, exercise.slug):
        messages.warning(request, held)
    elif context["can_reveal"]:
        SolutionReveal.objects.get_or_create(user=request.user, exercise=exercise)
    elif not context["show_solution"]:
        messages.warning(request, _("The sample solution cannot be shown yet."))
    return redirect(exercise.lesson.get_absolute_url() + f"#ex-{exercise.slug}")


@login_required
@require_GET
def submission_status(request: HttpRequest, pk: int) -> JsonResponse:
    submission = _get_submission_for_user(request, pk)
    # ?wait=1: held until the verdict, briefly
    held = hold_until_done(request, submission, submission.poll_after_ms)
    if held:
        submission = _get_submission_for_user(request, pk)
    return waited(JsonResponse(submission_payload(request, submission)), held)


@login_required
def history(request: AuthenticatedRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    exercise = _get_exercise_for_user(request, course_slug, lesson_slug, slug)
    mine = Submission.objects.filter(user=request.user, exercise=exercise, preview=False)
    submissions = list(mine[:100])  # newest first
    # Numbered per kind, oldest = 1, so "3 graded submissions" on the lesson matches "Submission 3" here.
    totals = dict(mine.order_by().values_list("mode").annotate(n=Count("pk")))
    seen: dict[str, int] = {}
    for submission in submissions:
        number = totals.get(submission.mode, 0) - seen.get(submission.mode, 0)
        submission.number = number  # type: ignore[attr-defined]  # for the template
        seen[submission.mode] = seen.get(submission.mode, 0) + 1
    hold_back_history(request, submissions)  # an assessment's feedback policy
    hints = exercise.misconception_hints
    return render(
        request, "grader/history.html", {"exercise": exercise, "submissions": submissions, "hints": hints}
    )
