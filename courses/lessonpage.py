"""The lesson page as a student (or an instructor's preview) sees it, built from the page cache:
used by the lesson view and by the instructors' preview."""

import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import cast

from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.db.models import BooleanField, CharField, DateTimeField, Field, QuerySet
from django.db.models.expressions import RawSQL
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from accounts.templatetags.site_header import TAUGHT_COURSE_ATTRIBUTE
from assessments.feedback import HeldBack, HeldBackNote, held_back
from assessments.models import Assessment, HandIn, lesson_use_refused
from grader.items import exercise_item_context
from grader.models import SolutionReveal, Submission

from . import pagecache
from .hints import HintLadder, exercise_ladder, opened_steps, question_ladder
from .models import (
    AnswerPreview,
    Attempt,
    Course,
    Enrollment,
    Exercise,
    HintOpening,
    Lesson,
    LessonProgress,
    Question,
    QuestionVariant,
)
from .progress import ExerciseState, exercise_states
from .selftest import QuestionState, item_context, states_for

# The lesson page asks to confirm showing this question's answer (the step without JavaScript).
CONFIRM_REVEAL_PARAMETER = "cevabi-goster"


@dataclass(frozen=True)
class StudentState:
    """What a student has of a lesson, read with the lesson itself (``with_student_state``): a
    state query the page would make is left out when it would find nothing."""

    last_visit: datetime | None  # their LessonProgress's last_visited_at (None: never visited)
    done: bool  # they marked the lesson done
    answers: bool  # they answered one of its questions
    work: bool  # they submitted code to one of its exercises or saw a sample solution
    hints: bool  # they opened a hint step of one of its items
    held: bool  # they handed work in to one of the course's assessments that may keep feedback back
    assessments: bool  # the course has assessments (one might hold an item: lesson_use_refused)


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


@functools.cache
def _state_sql() -> dict[str, tuple[str, Field]]:
    """The columns ``with_student_state`` adds: SQL (each with one parameter, the user's id)
    and its type. Raw SQL, not querysets: building and compiling seven subqueries through the
    ORM took longer than the queries they save (about 5 ms a request)."""
    lesson = f"{_table(Lesson)}.{connection.ops.quote_name('id')}"
    course = f"{_table(Lesson)}.{connection.ops.quote_name('course_id')}"
    questions = f"SELECT id FROM {_table(Question)} WHERE lesson_id = {lesson}"
    exercises = f"SELECT id FROM {_table(Exercise)} WHERE lesson_id = {lesson}"
    visit = f"FROM {_table(LessonProgress)} WHERE user_id = %s AND lesson_id = {lesson}"
    immediate = Assessment.Feedback.IMMEDIATE.value
    return {
        "taught_slug": (
            f"SELECT c.slug FROM {_table(Course)} c JOIN {_table(Course.instructors.through)} i"
            " ON i.course_id = c.id WHERE i.user_id = %s ORDER BY c.title, c.id LIMIT 1",
            CharField(),
        ),
        "visit_last": (f"SELECT last_visited_at {visit}", DateTimeField()),
        "visit_done": (f"SELECT completed_at {visit}", DateTimeField()),
        "any_answers": (
            f"EXISTS (SELECT 1 FROM {_table(Attempt)} WHERE user_id = %s AND question_id IN ({questions}))",
            BooleanField(),
        ),
        "any_work": (
            f"EXISTS (SELECT 1 FROM {_table(Submission)} WHERE user_id = %s AND exercise_id IN ({exercises}))"
            f" OR EXISTS (SELECT 1 FROM {_table(SolutionReveal)} WHERE user_id = %s AND exercise_id IN ({exercises}))",
            BooleanField(),
        ),
        "any_hints": (
            f"EXISTS (SELECT 1 FROM {_table(HintOpening)} WHERE user_id = %s"
            f" AND (question_id IN ({questions}) OR exercise_id IN ({exercises})))",
            BooleanField(),
        ),
        "any_held": (
            f"EXISTS (SELECT 1 FROM {_table(HandIn)} h JOIN {_table(Assessment)} a ON h.assessment_id = a.id"
            f" WHERE h.user_id = %s AND a.course_id = {course} AND a.feedback <> '{immediate}')",
            BooleanField(),
        ),
        "any_assessments": (
            f"EXISTS (SELECT 1 FROM {_table(Assessment)} WHERE course_id = {course} AND NOT retired)",
            BooleanField(),
        ),
    }


def enrolled_sql(user_id: int) -> RawSQL:
    """Whether the user is enrolled in a lesson's course, as a column of a lesson query (raw
    SQL: an Exists() subquery costs a third of a millisecond to build and compile)."""
    enrollments, course = _table(Enrollment), f"{_table(Lesson)}.{connection.ops.quote_name('course_id')}"
    sql = f"EXISTS (SELECT 1 FROM {enrollments} WHERE course_id = {course} AND user_id = %s)"
    return RawSQL(sql, (user_id,), output_field=BooleanField())


def with_student_state(lessons: QuerySet[Lesson], user) -> QuerySet[Lesson]:
    """``lessons`` with the student's state of each (``student_state``) and the slug of the
    first course the user teaches (the header's "Instructor" link), in the same query. A state
    flag may be set when the page's own query then finds nothing (a preview's submissions, a
    retired question's answers), never the other way round."""
    user_id = user.pk or 0  # no row has user 0: an anonymous user has nothing
    return lessons.annotate(
        **{
            name: RawSQL(sql, (user_id,) * sql.count("%s"), output_field=field)
            for name, (sql, field) in _state_sql().items()
        }
    )


def student_state(request: HttpRequest, lesson: Lesson) -> StudentState | None:
    """The state read by ``with_student_state``, if it was; the header's "Instructor" link
    then needs no query of its own."""
    read = lesson.__dict__  # the annotations, if the lesson was read with them
    if "any_answers" not in read:
        return None
    setattr(request, TAUGHT_COURSE_ATTRIBUTE, read["taught_slug"] or "")
    return StudentState(
        read["visit_last"],
        read["visit_done"] is not None,
        read["any_answers"],
        read["any_work"],
        read["any_hints"],
        read["any_held"],
        read["any_assessments"],
    )


def record_visit(user, lesson: Lesson, known: StudentState | None) -> bool:
    """Records the visit as LessonProgress.record_visit does (no write within its
    VISIT_RESOLUTION of the last one); whether the lesson is marked done."""
    if known is None or known.last_visit is None:
        return bool(LessonProgress.record_visit(user, lesson).completed_at)
    now = timezone.now()
    if now - known.last_visit > LessonProgress.VISIT_RESOLUTION:
        LessonProgress.objects.filter(user=user, lesson=lesson).update(last_visited_at=now)
    return known.done


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
    known = None if preview else student_state(request, lesson)
    done = False if preview else record_visit(user, lesson, known)
    language = get_language()
    version = pagecache.lesson_version(lesson)
    frame = pagecache.lesson_frame(lesson, language)
    items = frame.items
    student = AnonymousUser() if preview else user
    question_items = [item for item in items if not item.is_exercise]
    exercise_items = [item for item in items if item.is_exercise]
    # Each question as this user is asked it (their own variant; an instructor's preview shows
    # theirs): one query for the lesson's questions that have variants.
    asked = QuestionVariant.objects.current_for(question_items, user)
    for item in question_items:
        item.ask(asked.get(item.pk))
    # Work handed in to an assessment that keeps its feedback back is not the lesson's to show.
    # A state query that ``known`` says would find nothing is not made.
    work = None if preview else held_back(user, course) if known is None or known.held else HeldBack()
    hidden = ((), ()) if work is None else (work.answers, work.submissions)
    if known is None or known.answers:
        questions = states_for(student, question_items, hidden[0])
    else:
        questions = states_for(AnonymousUser(), question_items)
    if known is None or known.work:
        exercises = exercise_states(student, exercise_items, hidden[1])
    else:
        exercises = {item.pk: ExerciseState() for item in exercise_items}
    if preview and shown is not None and shown.question_id in questions:
        questions[shown.question_id].attempts = [cast(Attempt, shown)]  # it reads like an attempt
    # The hint ladders' open steps: one query.
    opened = opened_steps(student, items) if known is None or known.hints else {}

    def ladder(item, build) -> HintLadder:
        """The item's hint ladder for this student; an assessment holding the item is asked
        only when a step could be opened (one query)."""
        if preview:
            return HintLadder(item)
        found = build(opened.get(("exercise" if item.is_exercise else "question", item.pk), 0), False)
        if (
            found.can_open
            and (known is None or known.assessments)
            and lesson_use_refused(user, course, item.slug)
        ):
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
