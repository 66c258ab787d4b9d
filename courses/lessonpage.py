"""The lesson page as a student (or an instructor's preview) sees it, built from the page cache:
used by the lesson view and by the instructors' preview."""

from collections.abc import Callable, Collection
from functools import partial
from typing import cast

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from assessments.feedback import HeldBackNote, held_back
from assessments.models import lesson_use_refused
from grader.items import exercise_item_context

from . import pagecache
from .hints import HintLadder, exercise_ladder, opened_steps, question_ladder
from .models import AnswerPreview, Attempt, Exercise, Lesson, LessonProgress, Question, QuestionVariant
from .progress import exercise_states
from .selftest import QuestionState, item_context, states_for

# The lesson page asks to confirm showing this question's answer (the step without JavaScript).
CONFIRM_REVEAL_PARAMETER = "cevabi-goster"


def render_lesson(
    request: HttpRequest,
    lesson: Lesson,
    *,
    preview: bool = False,
    shown: AnswerPreview | None = None,
    enrolled: bool | None = None,
) -> HttpResponse:
    """The lesson page; ``preview`` shows it as a student sees it, recording nothing (with the
    preview answer ``shown`` as its question's only answer: the page without JavaScript).

    Its markup comes from the page cache (courses/pagecache.py): the lesson's frame, and each
    item's fragment for the student's state, which costs two queries (answers; submissions and
    reveals). Only a fragment not cached yet is rendered; a preview's items never are cached."""
    course, user = lesson.course, request.user
    if enrolled is None:
        enrolled = course.is_enrolled(user)
    recording = not preview and enrolled
    progress = None if preview else LessonProgress.record_visit(user, lesson)
    language = get_language()
    version = pagecache.lesson_version(lesson)
    frame = pagecache.lesson_frame(lesson, language)
    items = frame.items
    student = AnonymousUser() if preview else user
    # Each question as this user is asked it (their own variant; an instructor's preview shows
    # theirs): one query for the lesson's questions that have variants.
    asked = QuestionVariant.objects.current_for([item for item in items if not item.is_exercise], user)
    for item in items:
        if not item.is_exercise:
            item.ask(asked.get(item.pk))
    # Work handed in to an assessment that keeps its feedback back is not the lesson's to show.
    work = None if preview else held_back(user, course)
    hidden = ((), ()) if work is None else (work.answers, work.submissions)
    questions = states_for(student, [item for item in items if not item.is_exercise], hidden[0])
    exercises = exercise_states(student, [item for item in items if item.is_exercise], hidden[1])
    if preview and shown is not None and shown.question_id in questions:
        questions[shown.question_id].attempts = [cast(Attempt, shown)]  # it reads like an attempt
    opened = opened_steps(student, items)  # the hint ladders' open steps: one query

    def ladder(item, build) -> HintLadder:
        """The item's hint ladder for this student; an assessment holding the item is asked
        only when a step could be opened (one query)."""
        if preview:
            return HintLadder(item)
        found = build(opened.get(("exercise" if item.is_exercise else "question", item.pk), 0), False)
        if found.can_open and lesson_use_refused(user, course, item.slug):
            found = build(found.opened, True)
        return found

    confirming = request.GET.get(CONFIRM_REVEAL_PARAMETER, "") if recording else ""
    statuses: list[str] = []
    keys: list[str | None] = []
    draws: list[Callable[[], str]] = []
    pending = False
    for item in items:
        key = None
        draw: Callable[[], str]
        if item.is_exercise and preview:
            # The instructor's own unrecorded tries: never cached.
            ctx = exercise_item_context(item, user, preview=True)
            status = "solved" if ctx["solved"] else "tried" if ctx["attempts"] else "new"
            pending |= bool(ctx["latest"] and ctx["latest"].is_pending)
            draw = partial(exercise_html, item, ctx, recording=False, preview=True, hints=HintLadder(item))
        elif item.is_exercise:
            exercise = exercises[item.pk]
            status, can_reveal = exercise.status, exercise.can_reveal(item)
            hints = ladder(item, partial(_exercise_ladder, item, exercise))
            pending |= exercise.latest_pending
            if not exercise.pending:  # a pending result says its place in the queue and the time
                key = pagecache.item_key(
                    item,
                    version,
                    language,
                    [recording, exercise.revealed, can_reveal, exercise.submissions, hints.state_key()],
                )
            draw = partial(
                student_exercise_html, item, user, recording=recording, hidden=hidden[1], hints=hints
            )
        else:
            state = questions[item.pk]
            status, last = state.status, state.last_answer
            hints = ladder(item, partial(_question_ladder, item, state))
            # Answered in an assessment that keeps the feedback back: where, and until when.
            held_note = work.notes.get(item.slug) if work is not None and state.held else None
            pending |= bool(last and last.is_pending)
            confirm = confirming == item.slug
            note = (
                preview_note(shown) if preview and shown is not None and shown.question_id == item.pk else ""
            )
            if not preview and not state.pending and not (last and last.is_pending):
                seed = (user.pk, item.course_id, item.slug)  # as selftest.item_context seeds the kind
                answers = [(attempt.pk, attempt.status) for attempt in state.attempts + state.held]
                key = pagecache.item_key(
                    item,
                    version,
                    language,
                    [
                        recording,
                        confirm,
                        state.can_answer,
                        state.can_reveal,
                        answers,
                        item.asked_variant.digest if item.asked_variant else "",
                        pagecache.kind_context_digest(item, version, seed),
                        held_note.text if held_note else "",
                        hints.state_key(),
                    ],
                )
            draw = partial(
                question_html,
                item,
                state,
                user,
                recording=recording,
                preview=preview,
                confirm=confirm,
                note=note,
                held_note=held_note,
                hints=hints,
            )
        statuses.append(status)
        keys.append(key)
        draws.append(draw)
    cached = pagecache.get_items([key for key in keys if key])
    fragments, fresh = [], {}
    for key, draw in zip(keys, draws, strict=True):
        fragment = cached.get(key) if key else None
        if fragment is None:
            fragment = draw()
            if key:
                fresh[key] = fragment
        fragments.append(fragment)
    pagecache.set_items(fresh)
    done = bool(progress and progress.completed_at)
    content = frame.assemble(fragments, statuses, done, footer=not preview)
    return render(
        request,
        "courses/lesson.html",
        {
            "course": course,
            "lesson": lesson,
            "content": mark_safe(content.replace(pagecache.CSRF_SLOT, get_token(request))),
            "pending": pending,
            "preview": preview,
        },
    )


def question_html(
    question: Question,
    state: QuestionState,
    user,
    *,
    recording: bool,
    preview: bool,
    confirm: bool,
    note: str,
    held_note: HeldBackNote | None = None,
    hints: HintLadder | None = None,
) -> str:
    """A question's markup on the lesson page (its forms hold pagecache.CSRF_SLOT)."""
    ctx = {
        **item_context(question, state, user, confirm_reveal=confirm),
        "hints": hints or HintLadder(question),
        "recording": recording,
        "preview_mode": preview,
        "preview": note,
        "held_note": held_note,
    }
    return render_to_string(
        "courses/question_item.html", {"question": question, "ctx": ctx, "csrf_token": pagecache.CSRF_SLOT}
    )


def exercise_html(
    exercise: Exercise, ctx: dict, *, recording: bool, preview: bool, hints: HintLadder | None = None
) -> str:
    """An exercise's markup on the lesson page (its forms hold pagecache.CSRF_SLOT)."""
    return render_to_string(
        "courses/exercise_item.html",
        {
            "exercise": exercise,
            "ctx": ctx,
            "ladder": hints or HintLadder(exercise),
            "recording": recording,
            "preview": preview,
            "csrf_token": pagecache.CSRF_SLOT,
        },
    )


def student_exercise_html(
    exercise: Exercise,
    user,
    *,
    recording: bool,
    hidden: Collection[int] = (),
    hints: HintLadder | None = None,
) -> str:
    ctx = exercise_item_context(exercise, user, hidden=hidden)
    return exercise_html(exercise, ctx, recording=recording, preview=False, hints=hints)


def _question_ladder(question: Question, state: QuestionState, opened: int, refused: bool) -> HintLadder:
    return question_ladder(question, state, opened, refused=refused)


def _exercise_ladder(exercise: Exercise, state, opened: int, refused: bool) -> HintLadder:
    return exercise_ladder(exercise, state, opened, refused=refused)


def hints_html(
    item: Question | Exercise,
    ladder: HintLadder,
    *,
    anchor: str,
    recording: bool,
    error: str = "",
    request: HttpRequest | None = None,
) -> str:
    """An item's hints block alone (the page's script puts it in place after opening a step)."""
    return render_to_string(
        "courses/_hints.html",
        {"item": item, "ladder": ladder, "anchor": anchor, "recording": recording, "error": error},
        request=request,
    )


def preview_note(shown: AnswerPreview | None) -> str:
    if shown is None or shown.status != AnswerPreview.Status.DONE:
        return ""
    verdict = (
        _("Correct.")
        if shown.correct
        else _("Not quite: score %(score)d%%.") % {"score": round(shown.score * 100)}
    )
    return _("Preview (not recorded): %(verdict)s") % {"verdict": verdict}
