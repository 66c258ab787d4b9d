from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from accounts.ratelimit import ANSWERS, WRONG_ENROLMENT_CODES, RateLimited
from accounts.requests import AuthenticatedRequest
from assessments.feedback import held_back_work
from assessments.models import lesson_use_refused
from assessments.overview import assessment_rows, student_overview
from grader.waiting import hold_until_done, waited

from .hints import HintLadder, HintRefused, exercise_ladder, open_hint, opened_steps, question_ladder
from .kinds import AnswerError, GraderFailed, NotGradable, get_kind
from .lessonpage import (
    CONFIRM_REVEAL_PARAMETER,
    enrolled_sql,
    hints_html,
    preview_note,
    render_lesson,
    with_student_state,
)
from .models import AnswerPreview, Attempt, Course, Enrollment, Exercise, Lesson, LessonProgress, Question
from .preview import preview_answer
from .progress import course_progress, exercise_states
from .selftest import (
    AnsweringTooFast,
    AnswerPending,
    AnswerRefused,
    QuestionState,
    item_context,
    question_changed,
    reveal_answer,
    reveal_warning,
    states_for,
    submit_answer,
)


def _get_course(slug: str) -> Course:
    return get_object_or_404(Course.objects.active(), slug=slug)


def _get_lesson_for_user(
    request: HttpRequest, course_slug: str, lesson_slug: str, *, with_state: bool = False
) -> Lesson:
    """The lesson with its course and ``enrolled`` (whether the user is enrolled in the course),
    in one query; 404 for unknown or retired lessons and courses. The bodies are not loaded: a
    page from the page cache does not need them. ``with_state``: with the student's state of
    the lesson too (courses.lessonpage.with_student_state), still one query."""
    lessons = (
        Lesson.objects.active()
        .filter(course__slug=course_slug, course__retired=False)
        .select_related("course")
        .defer("body_source", "body_html", "course__description_html")
        # No enrolment has user 0: an anonymous user is never enrolled.
        .annotate(enrolled=enrolled_sql(request.user.pk or 0))
    )
    if with_state:
        lessons = with_student_state(lessons, request.user)
    return get_object_or_404(lessons, slug=lesson_slug)


def home(request: HttpRequest) -> HttpResponse:
    courses = list(Course.objects.active())
    enrolled = set()
    if request.user.is_authenticated:
        enrolled = set(request.user.enrollments.values_list("course_id", flat=True))
    for course in courses:
        course.user_enrolled = course.pk in enrolled
    return render(request, "courses/home.html", {"courses": courses})


def course_detail(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(course_slug)
    lessons = list(course.active_lessons())
    progress = {}
    if request.user.is_authenticated:
        progress = {
            p.lesson_id: p for p in LessonProgress.objects.filter(user=request.user, lesson__in=lessons)
        }
    for lesson in lessons:
        lesson.user_progress = progress.get(lesson.pk)
    done = sum(1 for p in progress.values() if p.completed_at)
    return render(
        request,
        "courses/course.html",
        {
            "course": course,
            "lessons": lessons,
            "enrolled": course.is_enrolled(request.user),
            "can_view": course.can_view(request.user),
            "done": done,
            "assessments": assessment_rows(course, request.user),
        },
    )


@login_required
@require_POST
def enroll(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(course_slug)
    if course.enrollment == Course.EnrollmentMode.CODE:
        WRONG_ENROLMENT_CODES.check(request, count=False)  # codes can be guessed: wrong ones are limited
    if course.enroll(request.user, request.POST.get("code", "")):
        messages.success(request, _("You are enrolled in %(course)s.") % {"course": course.title})
        first = course.active_lessons().first()
        return redirect(first.get_absolute_url() if first else course.get_absolute_url())
    WRONG_ENROLMENT_CODES.count(request)
    messages.error(request, _("That enrolment code is not right. Ask your instructor for the code."))
    return redirect(course.get_absolute_url())


@login_required
def lesson_detail(request: HttpRequest, course_slug: str, lesson_slug: str) -> HttpResponse:
    lesson = _get_lesson_for_user(request, course_slug, lesson_slug, with_state=True)
    enrolled = bool(getattr(lesson, "enrolled", False))
    if not enrolled and not lesson.course.is_instructor(request.user):
        messages.info(request, _("Enrol in the course to read its lessons."))
        return redirect(lesson.course.get_absolute_url())
    return render_lesson(request, lesson, enrolled=enrolled)


@login_required
@require_POST
def lesson_complete(request: HttpRequest, course_slug: str, lesson_slug: str) -> HttpResponse:
    lesson = _get_lesson_for_user(request, course_slug, lesson_slug)
    if not lesson.course.can_view(request.user):
        raise Http404
    progress = LessonProgress.record_visit(request.user, lesson)
    if not progress.completed_at:
        LessonProgress.objects.filter(pk=progress.pk).update(completed_at=timezone.now())
    _, following = lesson.neighbours()
    return redirect(following.get_absolute_url() if following else lesson.course.get_absolute_url())


@login_required
def dashboard(request: AuthenticatedRequest) -> HttpResponse:
    """İlerlemem: per course, where to continue, what to do next, and every lesson's and item's score."""
    enrollments = Enrollment.objects.filter(user=request.user, course__retired=False).select_related("course")
    courses = [
        course_progress(request.user, enrollment.course, held_back_work(request.user, enrollment.course))
        for enrollment in enrollments
    ]
    assessments = student_overview(request.user, [p.course for p in courses])
    return render(request, "courses/dashboard.html", {"courses": courses, "assessments": assessments})


def _get_question_for_user(request, course_slug: str, lesson_slug: str, slug: str) -> Question:
    lesson = _get_lesson_for_user(request, course_slug, lesson_slug)
    question = get_object_or_404(lesson.questions.active(), slug=slug)
    if not lesson.course.can_view(request.user):
        raise PermissionDenied(_("Enrol in this course to answer its questions."))
    if get_kind(question.kind) is None:
        raise Http404
    return question.ask_for(request.user)  # their own variant, when it has variants


def _previewing(request, question: Question) -> bool:
    """An instructor answering in the student preview, or without being enrolled: nothing is recorded."""
    return (
        request.POST.get("preview") == "1" and question.course.is_instructor(request.user)
    ) or not question.course.is_enrolled(request.user)


def _item_fragment(
    request,
    question: Question,
    *,
    error: str = "",
    previewing: bool = False,
    shown: AnswerPreview | None = None,
    confirm_reveal: bool = False,
    draft: dict | None = None,
) -> str:
    """The question's HTML fragment as the lesson page shows it, for the page's script. In the
    student preview the state is a fresh student's, with the preview answer ``shown`` if any."""
    if previewing:
        # An AnswerPreview has the fields of an Attempt that the state reads.
        state = QuestionState(question, [shown] if shown is not None else [])  # type: ignore[list-item]
    else:
        hidden, _submissions = held_back_work(request.user, question.course)
        state = states_for(request.user, [question], hidden)[question.pk]
    context = {
        **item_context(question, state, request.user, confirm_reveal=confirm_reveal),
        "hints": _question_ladder(request, question, state) if not previewing else HintLadder(question),
        "error": error,
        "preview": preview_note(shown),
        "draft": draft,
        "recording": not previewing,
        "preview_mode": previewing,
    }
    return render_to_string(
        "courses/question_item.html", {"question": question, "ctx": context}, request=request
    )


def _item_response(
    request,
    question: Question,
    *,
    status: int = 200,
    error: str = "",
    previewing: bool = False,
    shown: AnswerPreview | None = None,
    confirm_reveal: bool = False,
    draft: dict | None = None,
):
    """After answering: the item's fragment for the page's script, else back to the lesson (to
    the student preview for an instructor's preview answer). ``draft``: an answer that was not
    taken, shown again so the student can correct it."""
    if request.headers.get("X-Requested-With") == "dikkat":
        html = _item_fragment(
            request,
            question,
            error=error,
            previewing=previewing,
            shown=shown,
            confirm_reveal=confirm_reveal,
            draft=draft,
        )
        return HttpResponse(html, status=status)
    if confirm_reveal:
        return redirect(
            question.lesson.get_absolute_url()
            + f"?{CONFIRM_REVEAL_PARAMETER}={question.slug}#q-{question.slug}"
        )
    if status >= 400:
        return render(request, "400.html", {"message": error}, status=status)
    if error:
        messages.warning(request, error)
    if previewing:
        url = reverse("instructors:preview", args=[question.course.slug, question.lesson.slug])
        return redirect(url + (f"?onizleme={shown.pk}" if shown is not None else "") + f"#q-{question.slug}")
    return redirect(question.lesson.get_absolute_url() + f"#q-{question.slug}")


@login_required
@require_POST
def answer_question(request: HttpRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    if request.POST.get("assessment"):  # a page from before assessments had their own address
        try:
            url = reverse("assessment_answer", args=[course_slug, request.POST["assessment"], slug])
        except NoReverseMatch:
            raise Http404 from None  # not an assessment's slug: a tampered form
        return HttpResponseRedirect(url, status=307)  # the browser posts the same form there
    question = _get_question_for_user(request, course_slug, lesson_slug, slug)
    try:
        ANSWERS.check(request)  # per address and site-wide, before the per-student limits
    except RateLimited as refused:
        if request.POST.get("assessment") or request.headers.get("X-Requested-With") != "dikkat":
            raise  # RateLimitMiddleware's 429 page
        # The lesson's script places the question with the message; anything else it would post again.
        response = _item_response(
            request, question, status=429, error=str(refused), previewing=_previewing(request, question)
        )
        response["Retry-After"] = str(refused.retry_after)
        return response
    kind = get_kind(question.kind)
    assert kind is not None  # _get_question_for_user: a 404 for a kind the site does not have
    previewing = _previewing(request, question)
    respond = partial(_item_response, request, question, previewing=previewing)
    if not previewing and (held := lesson_use_refused(request.user, question.course, question.slug)):
        return respond(status=403, error=held)
    if question_changed(question, request.POST.get("asked", "")):
        # Graded on today's numbers, the answer to the page's would count as wrong.
        return respond(
            error=_(
                "This question has changed since the page was loaded: it has new numbers now. "
                "Read it again, then answer."
            )
        )
    raw = None
    try:
        raw = kind.answer_from_post(question.spec, request.POST)
        if previewing:
            # Graded like a student's answer (code blanks by a worker, through the queue), never recorded.
            return respond(shown=preview_answer(request.user, question, raw))
        submit_answer(request.user, question, raw)
    except AnswerError as exc:
        return respond(
            status=400,
            error=_("This answer could not be read: %(reason)s. Reload the page and try again.")
            % {"reason": exc},
        )
    except NotGradable as exc:
        return respond(error=str(exc), draft=raw)
    except GraderFailed:
        return respond(
            error=_("The checker failed on our side, so this answer does not count. Please try again.")
        )
    except AnswerRefused:
        return respond(error=_("You have used all your attempts for this question."))
    except AnswerPending:
        return respond(
            error=_("Your previous answer is still being checked. Wait for its result, then try again.")
        )
    except AnsweringTooFast as slow:
        return respond(
            error=_("You are answering very fast. Please wait %(seconds)d seconds and try again.")
            % {"seconds": slow.retry_after}
        )
    return respond()


@login_required
@require_POST
def reveal_question(request: HttpRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    question = _get_question_for_user(request, course_slug, lesson_slug, slug)
    if not question.course.is_enrolled(request.user):
        return _item_response(request, question, error=_("Enrol in the course to reveal answers."))
    if request.POST.get("cancel"):
        return _item_response(request, question)
    if held := lesson_use_refused(request.user, question.course, question.slug):
        return _item_response(request, question, status=403, error=held)
    state = states_for(request.user, [question])[question.pk]
    if request.POST.get("confirm") != "1" and state.can_reveal and reveal_warning(question, state):
        # It costs something: say what, and show the answer only after a second press.
        return _item_response(request, question, confirm_reveal=True)
    if reveal_answer(request.user, question) is None:
        return _item_response(request, question, error=_("The answer cannot be shown yet."))
    return _item_response(request, question)


@login_required
@require_GET
def attempt_status(request: HttpRequest, pk: int) -> JsonResponse:
    """A queued answer's state and its question's fragment (``?onizleme=1``: an instructor's
    preview answer); another user's answer is a 404."""
    previewing = request.GET.get("onizleme") == "1"
    answer: Attempt | AnswerPreview
    if previewing:
        previews = AnswerPreview.objects.select_related("question__lesson__course")
        answer = get_object_or_404(previews, pk=pk, user=request.user)
    else:
        answers = Attempt.objects.filter(kind=Attempt.Kind.ANSWER).select_related("question__lesson__course")
        answer = get_object_or_404(answers, pk=pk, user=request.user)
    held = hold_until_done(request, answer)  # ?wait=1: until the result is in, briefly
    if held:
        answer.refresh_from_db()
    if answer.is_pending:  # the page keeps its "checking" box: nothing to render yet
        return waited(JsonResponse({"status": answer.status}), held)
    if not previewing and answer.pk in held_back_work(request.user, answer.question.course)[0]:
        return JsonResponse({"status": answer.status})  # its assessment keeps the feedback back
    shown = answer if isinstance(answer, AnswerPreview) else None
    html = _item_fragment(request, answer.question.ask_for(request.user), previewing=previewing, shown=shown)
    return JsonResponse({"status": answer.status, "html": html})


# -- the hint ladder (courses.hints) -------------------------------------------------------------


def _question_ladder(request, question: Question, state: QuestionState | None = None) -> HintLadder:
    """The student's hint ladder of ``question`` as it is now (``state``: theirs, if read already)."""
    if state is None:
        hidden, _submissions = held_back_work(request.user, question.course)
        state = states_for(request.user, [question], hidden)[question.pk]
    opened = opened_steps(request.user, [question]).get(("question", question.pk), 0)
    refused = bool(question.hints) and bool(lesson_use_refused(request.user, question.course, question.slug))
    return question_ladder(question, state, opened, refused=refused)


def _exercise_ladder(request, exercise: Exercise) -> HintLadder:
    _answers, hidden = held_back_work(request.user, exercise.course)
    state = exercise_states(request.user, [exercise], hidden)[exercise.pk]
    opened = opened_steps(request.user, [exercise]).get(("exercise", exercise.pk), 0)
    refused = bool(exercise.hints) and bool(lesson_use_refused(request.user, exercise.course, exercise.slug))
    return exercise_ladder(exercise, state, opened, refused=refused)


def _get_exercise_for_user(request, course_slug: str, lesson_slug: str, slug: str) -> Exercise:
    lesson = _get_lesson_for_user(request, course_slug, lesson_slug)
    exercise = get_object_or_404(lesson.exercises.active(), slug=slug)
    exercise.lesson, exercise.course = lesson, lesson.course
    return exercise


def _open_hint(request, item: Question | Exercise, ladder_for) -> HttpResponse:
    """Open the step the form names, then show the item's hints: the block for the page's
    script, else back to the item on the lesson page. A step that may not be opened is refused
    with the reason and records nothing."""
    scripted = request.headers.get("X-Requested-With") == "dikkat"
    anchor = f"{'ex' if item.is_exercise else 'q'}-{item.slug}"
    if not item.course.is_enrolled(request.user):
        raise PermissionDenied(_("Enrol in the course to open its hints."))
    step_text = request.POST.get("step", "")
    step = int(step_text) if step_text.isascii() and step_text.isdigit() and len(step_text) <= 2 else 0
    error, status = "", 200
    if not 1 <= step <= len(item.hints):
        error, status = _("This item has no such hint. Reload the page and try again."), 400
    elif held := lesson_use_refused(request.user, item.course, item.slug):
        error, status = held, 403
    else:
        try:
            open_hint(request.user, item, step, ladder_for)
        except HintRefused as refused:
            error, status = str(refused), 403
    if scripted:
        html = hints_html(item, ladder_for(), anchor=anchor, recording=True, error=error, request=request)
        return HttpResponse(html, status=status)
    if status == 400:
        return render(request, "400.html", {"message": error}, status=400)
    if status == 403:
        raise PermissionDenied(error)
    return redirect(item.lesson.get_absolute_url() + f"#{anchor}-hint-{step}")


@login_required
@require_POST
def open_question_hint(request: HttpRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    question = _get_question_for_user(request, course_slug, lesson_slug, slug)
    return _open_hint(request, question, lambda: _question_ladder(request, question))


@login_required
@require_POST
def open_exercise_hint(request: HttpRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    exercise = _get_exercise_for_user(request, course_slug, lesson_slug, slug)
    return _open_hint(request, exercise, lambda: _exercise_ladder(request, exercise))


@login_required
@require_GET
def exercise_hints(request: HttpRequest, course_slug: str, lesson_slug: str, slug: str) -> HttpResponse:
    """An exercise's hints block as it is now: the page's script asks for it after a verdict
    (a failed submission may open the next step)."""
    exercise = _get_exercise_for_user(request, course_slug, lesson_slug, slug)
    if not exercise.course.is_enrolled(request.user):
        raise PermissionDenied(_("Enrol in the course to open its hints."))
    ladder = _exercise_ladder(request, exercise)
    return HttpResponse(
        hints_html(exercise, ladder, anchor=f"ex-{exercise.slug}", recording=True, request=request)
    )
