"""A student's progress in a course, item by item: what "İlerlemem" (/panom/) shows.

Scores follow the course's policy exactly as the gradebook does: a question's best (or last)
graded answer, a reveal counting as 0; an exercise's best (or last) counted submission, code
sent after seeing the sample solution scoring 0.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.utils.translation import gettext as _

from grader.models import Submission, Verdict

from .models import Course, LessonProgress
from .selftest import states_for


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
        opened = [row for row in self.lessons if row.last_visited_at]
        return max(opened, key=lambda row: row.last_visited_at) if opened else None

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


def course_progress(user, course: Course) -> CourseProgress:
    lessons = list(course.active_lessons())
    visits = {p.lesson_id: p for p in LessonProgress.objects.filter(user=user, lesson__in=lessons)}
    items_by_lesson = {lesson.pk: lesson.items() for lesson in lessons}
    questions = [item for items in items_by_lesson.values() for item in items if not item.is_exercise]
    states = states_for(user, questions)
    exercise_scores = _exercise_scores(user, course)
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


def _exercise_scores(user, course: Course) -> dict[int, tuple[float | None, bool, bool]]:
    """exercise id -> (score under the course's policy, solved, tried)."""
    counted = defaultdict(list)
    rows = (
        Submission.objects.counted().filter(user=user, exercise__course=course).order_by("created_at", "pk")
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
