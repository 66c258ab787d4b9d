"""A student's progress in a course, item by item: what "İlerlemem" (/panom/) shows.

Scores follow the course's policy exactly as the gradebook does: a question's best (or last)
graded answer, a reveal counting as 0; an exercise's best (or last) counted submission, code
sent after seeing the sample solution scoring 0.
"""

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, cast

from django.db.models import BooleanField, CharField, FloatField, Value
from django.utils.translation import gettext as _

from grader.models import NOT_COUNTED, SolutionReveal, Submission, Verdict

from .models import Course, Exercise, LessonProgress
from .reveal import may_reveal
from .selftest import states_for

# (answer ids, submission ids) of work a page must leave out: see assessments.feedback.held_back_work.
HiddenWork = tuple[Collection[int], Collection[int]]


@dataclass
class ItemProgress:
    title: str
    url: str
    status: str  # "solved", "tried", "revealed", "new"
    score: float | None

    @property
    def done(self) -> bool:
        return self.status in ("solved", "revealed")


@dataclass
class LessonProgressRow:
    lesson: object
    visited: bool
    completed: bool
    last_visited_at: datetime | None
    items: list[ItemProgress] = field(default_factory=list)

    @property
    def solved(self) -> int:
        return sum(item.status == "solved" for item in self.items)

    @property
    def score(self) -> float:
        return sum(item.score or 0.0 for item in self.items)

    @property
    def next_item(self) -> ItemProgress | None:
        return next((item for item in self.items if not item.done), None)


@dataclass
class CourseProgress:
    course: Course
    lessons: list[LessonProgressRow]

    @property
    def items(self) -> list[ItemProgress]:
        return [item for row in self.lessons for item in row.items]

    @property
    def solved(self) -> int:
        return sum(row.solved for row in self.lessons)

    @property
    def score(self) -> float:
        return sum(row.score for row in self.lessons)

    @property
    def lessons_done(self) -> int:
        return sum(row.completed for row in self.lessons)

    @property
    def percent(self) -> int:
        """Share of the items solved (or whose answer was seen), for the progress bar."""
        items = self.items
        return round(100 * sum(item.done for item in items) / len(items)) if items else 0

    @property
    def resume(self) -> LessonProgressRow | None:
        """The lesson opened most recently: "continue where you left off"."""
        opened = [row for row in self.lessons if row.last_visited_at is not None]
        return max(opened, key=lambda row: cast(datetime, row.last_visited_at)) if opened else None

    @property
    def next_step(self) -> tuple[LessonProgressRow, ItemProgress | None] | None:
        """What to do next: the first item not yet done, in course order; else the first
        lesson not yet read; None when everything is done."""
        for row in self.lessons:
            if row.next_item is not None:
                return row, row.next_item
        for row in self.lessons:
            if not row.completed:
                return row, None
        return None


def course_progress(user, course: Course, hidden: HiddenWork = ((), ())) -> CourseProgress:
    """``hidden``: (answer ids, submission ids) left out, as on the lesson pages."""
    lessons = list(course.active_lessons())
    visits = {p.lesson_id: p for p in LessonProgress.objects.filter(user=user, lesson__in=lessons)}
    items_by_lesson = {lesson.pk: lesson.items() for lesson in lessons}
    questions = [item for items in items_by_lesson.values() for item in items if not item.is_exercise]
    states = states_for(user, questions, hidden[0])
    exercise_scores = _exercise_scores(user, course, hidden[1])
    rows = []
    for lesson in lessons:
        visit = visits.get(lesson.pk)
        row = LessonProgressRow(
            lesson,
            visit is not None,
            bool(visit and visit.completed_at),
            visit.last_visited_at if visit else None,
        )
        for item in items_by_lesson[lesson.pk]:
            if item.is_exercise:
                score, solved, tried = exercise_scores.get(item.pk, (None, False, False))
                status = "solved" if solved else "tried" if tried else "new"
                title = _("Exercise: %(title)s") % {"title": item.title}
                url = f"{lesson.get_absolute_url()}#ex-{item.slug}"
            else:
                state = states[item.pk]
                score, status = state.score(course.score_policy), state.status
                title = _("Question %(number)s") % {"number": item.number}
                url = f"{lesson.get_absolute_url()}#q-{item.slug}"
            row.items.append(ItemProgress(title, url, status, score))
        rows.append(row)
    return CourseProgress(course, rows)


def _exercise_scores(
    user, course: Course, hidden: Collection[int] = ()
) -> dict[int, tuple[float | None, bool, bool]]:
    """exercise id -> (score under the course's policy, solved, tried)."""
    counted = defaultdict(list)
    rows = (
        Submission.objects.counted()
        .filter(user=user, exercise__course=course)
        .exclude(pk__in=hidden)
        .order_by("created_at", "pk")
    )
    for exercise_id, score, verdict, after_reveal in rows.values_list(
        "exercise_id", "score", "verdict", "after_reveal"
    ):
        counted[exercise_id].append(
            (0.0 if after_reveal else score or 0.0, verdict == Verdict.PASSED and not after_reveal)
        )
    result = {}
    for exercise_id, entries in counted.items():
        scores = [score for score, _passed in entries]
        score = scores[-1] if course.score_policy == Course.ScorePolicy.LAST else max(scores)
        result[exercise_id] = (score, any(passed for _score, passed in entries), True)
    return result


class SubmissionRow(NamedTuple):
    """What the lesson page needs to know of one submission without loading it."""

    created_at: datetime
    pk: int
    status: str
    verdict: str
    score: float | None
    after_reveal: bool
    mode: str
    graded_hash: str  # changes when a regrade is applied (the cached box must follow it)

    @property
    def counted(self) -> bool:
        """Counts as an attempt: the rule of Submission.objects.counted() (not a preview: those
        rows are never read here)."""
        return (
            self.mode == Submission.Mode.SUBMIT
            and self.status == Submission.Status.DONE
            and self.verdict not in NOT_COUNTED
        )


@dataclass
class ExerciseState:
    """A student's submissions to one exercise (oldest first) and whether they saw its sample solution."""

    submissions: list[SubmissionRow] = field(default_factory=list)
    revealed: bool = False

    @property
    def pending(self) -> bool:
        return any(row.status in PENDING for row in self.submissions)

    @property
    def latest_pending(self) -> bool:
        return bool(self.submissions) and self.submissions[-1].status in PENDING

    @property
    def status(self) -> str:
        """ "solved", "tried" or "new", as the exercise's own box says it (grader.items.exercise_item_context)."""
        counted = [row for row in self.submissions if row.counted]
        if any(row.verdict == Verdict.PASSED and not row.after_reveal for row in counted):
            return "solved"
        return "tried" if counted else "new"

    def can_reveal(self, exercise: Exercise) -> bool:
        """Whether "Show the sample solution" is offered now (a rule may open at a date)."""
        attempts = sum(row.counted for row in self.submissions)
        return (
            not self.revealed
            and bool(exercise.solution_code)
            and may_reveal(exercise.reveal, attempts=attempts, solved=self.status == "solved")
        )


PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)
# A reveal's row in the query below: a status no submission has.
_REVEALED = "revealed"


def exercise_states(user, exercises, hidden: Collection[int] = ()) -> dict[int, ExerciseState]:
    """Every exercise's state for ``user`` in one query: their submissions (not instructor
    previews, not those in ``hidden``) and sample-solution reveals, as one UNION of compact rows."""
    states = {exercise.pk: ExerciseState() for exercise in exercises}
    if not user.is_authenticated or not states:
        return states
    ids = list(states)
    submissions = (
        Submission.objects.filter(user=user, exercise__in=ids, preview=False)
        .exclude(pk__in=hidden)
        .values_list("exercise_id", *SubmissionRow._fields)
    )
    reveals = SolutionReveal.objects.filter(user=user, exercise__in=ids).values_list(
        "exercise_id",
        "created_at",
        "pk",
        Value(_REVEALED, output_field=CharField()),
        Value("", output_field=CharField()),
        Value(None, output_field=FloatField()),
        Value(False, output_field=BooleanField()),
        Value("", output_field=CharField()),
        Value("", output_field=CharField()),
    )
    rows = submissions.order_by().union(reveals.order_by(), all=True)
    for exercise_id, *values in sorted(rows, key=lambda row: (row[1], row[2])):
        row = SubmissionRow(*values)
        if row.status == _REVEALED:
            states[exercise_id].revealed = True
        else:
            states[exercise_id].submissions.append(row)
    return states
