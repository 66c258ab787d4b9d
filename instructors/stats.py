"""Numbers for instructors: the gradebook's rows and per-item statistics, computed from
attempts and submissions in Python for the students on one page (instructors/gradebook.py
decides in the database which students a page shows, in what order)."""

import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from django.contrib.auth.models import User
from django.db.models import Max, QuerySet
from django.utils.text import Truncator
from django.utils.translation import gettext as _

from courses.kinds import get_kind
from courses.models import (
    Attempt,
    Course,
    Enrollment,
    Exercise,
    HintOpening,
    LessonProgress,
    Question,
    QuestionVariant,
)
from courses.templatetags_text import html_to_text
from courses.variants import index_for, item_key
from grader.models import Submission, Verdict

from .variantview import params_summary


@dataclass
class Cell:
    score: float | None = None
    attempts: int = 0
    best_at: datetime | None = None


@dataclass
class Row:
    user: User
    enrolled_at: datetime
    last_activity: datetime | None
    cells: dict = field(default_factory=dict)  # item key -> Cell

    @property
    def total(self) -> float:
        return sum(c.score or 0.0 for c in self.cells.values())


def course_items(course: Course, lesson_slug: str | None = None) -> list:
    """Active questions and exercises in lesson order; each gets a ``key`` for the gradebook
    and a ``name`` people read: the exercise's title, or the question's number in its lesson
    as on the lesson page ("Soru 3"), with the prompt's first words as its ``description``.
    Two queries for the whole course, without the large fields no list shows."""
    lessons = list(course.active_lessons())
    questions = Question.objects.active().filter(course=course).defer("spec", "explanation_html")
    exercises = (
        Exercise.objects.active()
        .filter(course=course)
        .defer("prompt_html", "starter_code", "solution_code", "spec", "misconceptions")
    )
    by_lesson: dict[int, list] = defaultdict(list)
    for item in [*questions, *exercises]:
        by_lesson[item.lesson_id].append(item)
    items = []
    for lesson_number, lesson in enumerate(lessons, start=1):
        if lesson_slug and lesson.slug != lesson_slug:
            continue
        lesson.number = lesson_number
        # Authored order, questions numbered within their lesson: as Lesson.items() and its page.
        question_number = 0
        for item in sorted(by_lesson[lesson.pk], key=lambda item: (item.order, item.slug)):
            item.lesson, item.course = lesson, course
            if not item.is_exercise:
                question_number += 1
                item.number = question_number
            item.key = f"{'e' if item.is_exercise else 'q'}:{item.slug}"
            item.lesson_slug = lesson.slug
            name_item(item)
            items.append(item)
    return items


def name_item(item) -> None:
    """Give a question or exercise the ``name`` and ``description`` instructors read."""
    if item.is_exercise:
        item.name, item.description = item.title, item.title
    else:
        item.name = _("Question %(number)s") % {"number": item.number} if item.number else item.slug
        item.description = _short_text(item.prompt_html, item.slug)


@lru_cache(maxsize=4096)
def _short_text(prompt_html: str, slug: str) -> str:
    # Parsing every prompt's HTML on every gradebook page costs more than the page's queries.
    return Question(prompt_html=prompt_html, slug=slug).short_text


def misconception_labels(item) -> dict[str, str]:
    """A readable label for each misconception tag of a question or exercise: the hint its
    author wrote for it, as one short line of text (tags without a hint keep the tag)."""
    if item.is_exercise:
        hints = item.misconception_hints
    else:
        kind = get_kind(item.kind)
        hints = kind.misconception_hints(item.spec) if kind else {}
    return {tag: Truncator(html_to_text(hint)).chars(90) for tag, hint in hints.items() if html_to_text(hint)}


def _score(scores: list[tuple[datetime, float]], policy: str) -> tuple[float | None, datetime | None]:
    if not scores:
        return None, None
    if policy == Course.ScorePolicy.LAST:
        return scores[-1][1], scores[-1][0]
    best = max(scores, key=lambda pair: (pair[1], -pair[0].timestamp()))
    return best[1], best[0]


def gradebook(course: Course, items: list, user_ids: list[int] | None = None) -> list[Row]:
    """The gradebook's rows for the students ``user_ids`` in that order (a page of them; every
    enrolled student by username when None): each item's score under the course's policy,
    the number of attempts, and the student's last activity in the course."""
    enrollments = Enrollment.objects.filter(course=course).select_related("user")
    if user_ids is None:
        rows = {e.user_id: Row(e.user, e.created_at, None) for e in enrollments.order_by("user__username")}
    else:
        found = {e.user_id: e for e in enrollments.filter(user_id__in=user_ids)}
        rows = {i: Row(found[i].user, found[i].created_at, None) for i in user_ids if i in found}
    question_ids = {item.pk: item.key for item in items if not item.is_exercise}
    exercise_ids = {item.pk: item.key for item in items if item.is_exercise}
    scores: dict[tuple[int, str], list] = defaultdict(list)
    counts: Counter = Counter()
    # Both queries are led by the students (an index on user): without the database's row
    # statistics SQLite would rather walk the index on status, that is every graded row.
    attempts = Attempt.objects.filter(question_id__in=question_ids, user_id__in=rows).order_by(
        "created_at", "pk"
    )
    for user_id, question_id, kind, status, score, created in attempts.values_list(
        "user_id", "question_id", "kind", "status", "score", "created_at"
    ):
        if status != Attempt.Status.DONE:
            continue
        key = (user_id, question_ids[question_id])
        scores[key].append((created, score))
        counts[key] += kind == Attempt.Kind.ANSWER
    sent = Submission.objects.filter(exercise_id__in=exercise_ids, user_id__in=rows).values_list(
        "pk", flat=True
    )
    submissions = Submission.objects.counted().filter(pk__in=list(sent)).order_by("created_at", "pk")
    for user_id, exercise_id, score, after_reveal, created in submissions.values_list(
        "user_id", "exercise_id", "score", "after_reveal", "created_at"
    ):
        key = (user_id, exercise_ids[exercise_id])
        scores[key].append((created, 0.0 if after_reveal else score or 0.0))
        counts[key] += 1
    activity = last_activity(course, list(rows))
    for user_id, row in rows.items():
        row.last_activity = activity.get(user_id)
        for item in items:
            kept, best_at = _score(scores.get((user_id, item.key), []), course.score_policy)
            row.cells[item.key] = Cell(kept, counts.get((user_id, item.key), 0), best_at)
    return list(rows.values())


def activity_sources(course: Course) -> list[tuple[QuerySet, str]]:
    """Everything a student does in a course, with the field saying when: answers (graded or
    not yet), code sent (example runs too) and lesson visits. The latest of them is the student's last activity."""
    return [
        (Attempt.objects.filter(question__course=course), "created_at"),
        (Submission.objects.filter(exercise__course=course, preview=False), "created_at"),
        (LessonProgress.objects.filter(lesson__course=course), "last_visited_at"),
    ]


def last_activity(course: Course, user_ids: list[int]) -> dict[int, datetime]:
    activity: dict[int, datetime] = {}
    for done, when in activity_sources(course):
        for user_id, last in (
            done.filter(user_id__in=user_ids).values_list("user_id").annotate(last=Max(when)).order_by()
        ):
            activity[user_id] = max(activity.get(user_id, last), last)
    return activity


@dataclass
class ItemStats:
    students: int = 0
    attempts: int = 0
    first_try: float | None = None
    final: float | None = None
    median_attempts: float | None = None
    median_minutes: float | None = None
    misconceptions: list = field(default_factory=list)  # [(tag, count)]


def _success_stats(per_student: dict[int, list[tuple[datetime, bool]]]) -> ItemStats:
    stats = ItemStats(students=len(per_student), attempts=sum(len(v) for v in per_student.values()))
    if not per_student:
        return stats
    stats.first_try = sum(1 for v in per_student.values() if v[0][1]) / len(per_student)
    solved = {u: v for u, v in per_student.items() if any(ok for _, ok in v)}
    stats.final = len(solved) / len(per_student)
    if solved:
        tries = [next(i for i, (_, ok) in enumerate(v) if ok) + 1 for v in solved.values()]
        minutes = [(next(t for t, ok in v if ok) - v[0][0]).total_seconds() / 60 for v in solved.values()]
        stats.median_attempts = statistics.median(tries)
        stats.median_minutes = statistics.median(minutes)
    return stats


def question_stats(question, variant: int | None = None) -> tuple[ItemStats, dict]:
    """How students fared on a question, and its kind's statistics of what they answered (the
    context of the kind's ``stats_template``); with ``variant`` (an index) only the answers
    graded on that variant, read with its spec."""
    answered = Attempt.objects.answers().filter(question=question)
    spec = question.spec
    if variant is not None:
        # Answers graded on the variant as it is now (one a re-import replaced is another question).
        answered = answered.filter(variant__index=variant, variant__current=True)
        current = QuestionVariant.objects.filter(question=question, index=variant, current=True).first()
        spec = current.spec if current else spec
    answers = list(
        answered.order_by("created_at", "pk").only(
            "user_id", "created_at", "correct", "after_reveal", "misconceptions", "answer", "feedback"
        )
    )
    per_student: dict[int, list] = defaultdict(list)
    tags: Counter = Counter()
    for attempt in answers:
        per_student[attempt.user_id].append(
            (attempt.created_at, attempt.correct and not attempt.after_reveal)
        )
        tags.update(attempt.misconceptions)
    stats = _success_stats(per_student)
    stats.misconceptions = tags.most_common()
    kind = get_kind(question.kind)
    return stats, kind.answer_stats(spec, answers) if kind else {}


def _counted(exercise, variant: int | None = None) -> QuerySet:
    submissions = Submission.objects.counted().filter(exercise=exercise)
    return submissions if variant is None else submissions.filter(variant=variant)


def exercise_stats(exercise, variant: int | None = None) -> tuple[ItemStats, dict]:
    """How students fared on an exercise (with ``variant``, on that variant only)."""
    submissions = list(_counted(exercise, variant).order_by("created_at", "pk"))
    per_student: dict[int, list] = defaultdict(list)
    verdicts: Counter = Counter()
    hidden_failures: Counter = Counter()
    tags: Counter = Counter()
    for submission in submissions:
        per_student[submission.user_id].append(
            (submission.created_at, submission.verdict == Verdict.PASSED and not submission.after_reveal)
        )
        verdicts[submission.verdict] += 1
        if submission.misconception:
            tags[submission.misconception] += 1
        for test in submission.tests:
            if test.get("hidden") and not test.get("passed"):
                hidden_failures[test["name"]] += 1
    stats = _success_stats(per_student)
    stats.misconceptions = tags.most_common()
    return stats, {"verdicts": verdicts, "hidden_failures": hidden_failures.most_common(5)}


@dataclass
class HintRow:
    """One step of an item's hint ladder on the item page."""

    step: int  # 1-based
    text: str  # the hint's first words; "" for a step the item no longer has
    opened: int = 0  # students who opened it
    then_right: int = 0  # of them, students who answered correctly after opening it

    @property
    def then_right_share(self) -> float | None:
        return self.then_right / self.opened if self.opened else None


def hint_stats(item, variant: int | None = None) -> list[HintRow]:
    """Per step of an item's hint ladder: how many students opened it, and how many of them
    then got the item right (a correct answer, or a passing submission, after opening it;
    not after seeing the answer). With ``variant``, only the students who get that variant.
    Empty for an item without hints and without openings."""
    of = {"exercise": item} if item.is_exercise else {"question": item}
    openings = list(HintOpening.objects.filter(**of).values_list("user_id", "step", "opened_at"))
    rows = {
        step: HintRow(step, Truncator(html_to_text(html)).chars(90))
        for step, html in enumerate(item.hints or [], start=1)
    }
    if not openings and not rows:
        return []
    if variant is not None:
        salt, key, count = item.course.variant_salt, item_key(item), item.variant_count
        openings = [o for o in openings if index_for(salt, o[0], key, count) == variant]
    if item.is_exercise:
        right = Submission.objects.counted().filter(exercise=item, verdict=Verdict.PASSED, after_reveal=False)
    else:
        right = Attempt.objects.answers().filter(question=item, correct=True, after_reveal=False)
    right_at: dict[int, list[datetime]] = defaultdict(list)
    for user_id, created in right.filter(user_id__in={o[0] for o in openings}).values_list(
        "user_id", "created_at"
    ):
        right_at[user_id].append(created)
    for user_id, step, opened_at in openings:
        row = rows.setdefault(step, HintRow(step, ""))
        row.opened += 1
        row.then_right += any(at > opened_at for at in right_at[user_id])
    return [rows[step] for step in sorted(rows)]


# A variant is marked "much harder" than the item's others when all of these hold: enough
# students answered it and the other variants, its first-try success is at least HARDER_GAP
# below theirs taken together, and a gap that large between groups of those sizes would come
# by chance less than once in 1/HARDER_P (Fisher's exact test, one-sided): a single unlucky
# student never marks a variant.
HARDER_MIN_STUDENTS = 5
HARDER_GAP = 0.20
HARDER_P = 0.05


@dataclass
class VariantRow:
    index: int | None  # None: answers graded before the item had variants
    params: list[str] = field(default_factory=list)  # in short parts ("d_k = 16")
    seed: int | None = None
    students: int = 0
    attempts: int = 0
    first_right: int = 0  # students right on their first try
    mean_score: float | None = None
    harder: bool = False
    others_first_try: float | None = None  # the other variants' first-try success together
    p_value: float | None = None

    @property
    def number(self) -> int | None:
        return None if self.index is None else self.index + 1

    @property
    def label(self) -> str:
        return _("Variant %(number)s") % {"number": self.number} if self.index is not None else ""

    @property
    def first_try(self) -> float | None:
        return self.first_right / self.students if self.students else None

    @property
    def first_try_percent(self) -> int | None:
        return None if self.first_try is None else round(100 * self.first_try)


def fisher_lower_tail(right: int, students: int, others_right: int, others: int) -> float:
    """P(at most ``right`` of ``students`` right on the first try) if the variant were as easy
    as the others: the one-sided p-value of Fisher's exact test on the 2×2 table."""
    total, successes = students + others, right + others_right
    denominator = math.comb(total, students)
    low = max(0, students - (total - successes))
    return (
        sum(
            math.comb(successes, k) * math.comb(total - successes, students - k)
            for k in range(low, right + 1)
        )
        / denominator
    )


def _mark_harder(rows: list[VariantRow]) -> None:
    counted = [row for row in rows if row.index is not None]
    all_students = sum(row.students for row in counted)
    all_right = sum(row.first_right for row in counted)
    for row in counted:
        others, others_right = all_students - row.students, all_right - row.first_right
        if not others:
            continue
        row.others_first_try = others_right / others
        if row.students < HARDER_MIN_STUDENTS or others < HARDER_MIN_STUDENTS:
            continue
        assert row.first_try is not None  # students > 0
        if row.first_try > row.others_first_try - HARDER_GAP:
            continue
        row.p_value = fisher_lower_tail(row.first_right, row.students, others_right, others)
        row.harder = row.p_value < HARDER_P


def _variant_rows(
    per_variant: dict[int | None, dict[int, list[tuple[datetime, bool, float]]]],
    count: int,
    policy: str,
) -> list[VariantRow]:
    rows = []
    for index in [*range(count), *sorted(k for k in per_variant if k is not None and k >= count)]:
        rows.append(VariantRow(index))
    if None in per_variant:
        rows.append(VariantRow(None))
    for row in rows:
        per_student = per_variant.get(row.index, {})
        row.students = len(per_student)
        row.attempts = sum(len(tries) for tries in per_student.values())
        row.first_right = sum(1 for tries in per_student.values() if tries[0][1])
        kept = [_score([(t, s) for t, _ok, s in tries], policy)[0] or 0.0 for tries in per_student.values()]
        row.mean_score = sum(kept) / len(kept) if kept else None
    _mark_harder(rows)
    return rows


def variant_stats(item) -> list[VariantRow]:
    """How students fared on each variant of an item with variants (empty without): one row
    per variant in order, each with its parameters on one line; answers graded before the item
    had variants, or on a variant a re-import has replaced, in a last row of their own. A
    question's answers count on the variant they were graded on, an exercise's submissions on
    the variant they were graded against."""
    if item.variant_count <= 1:
        return []
    per_variant: dict[int | None, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    seeds: dict[int, int] = {}
    params: dict[int, list[str]] = {}
    if item.is_exercise:
        submissions = Submission.objects.counted().filter(exercise=item).order_by("created_at", "pk")
        for user_id, index, seed, created, verdict, after_reveal, score in submissions.values_list(
            "user_id", "variant", "variant_seed", "created_at", "verdict", "after_reveal", "score"
        ):
            ok = verdict == Verdict.PASSED and not after_reveal
            per_variant[index][user_id].append((created, ok, 0.0 if after_reveal else score or 0.0))
            if seed is not None:
                seeds[index] = seed
    else:
        answers = Attempt.objects.answers().filter(question=item).order_by("created_at", "pk")
        for user_id, index, current, created, correct, after_reveal, score in answers.values_list(
            "user_id", "variant__index", "variant__current", "created_at", "correct", "after_reveal", "score"
        ):
            asked = index if current else None  # not a variant students get now
            per_variant[asked][user_id].append((created, correct and not after_reveal, score))
        for variant in QuestionVariant.objects.filter(question=item, current=True):
            params[variant.index], seeds[variant.index] = params_summary(variant.params), variant.seed
    rows = _variant_rows(per_variant, item.variant_count, item.course.score_policy)
    for row in rows:
        if row.index is not None:
            row.params, row.seed = params.get(row.index, []), seeds.get(row.index)
    return rows


@dataclass
class Cluster:
    verdict: str
    error: str
    failing: tuple
    misconception: str
    submissions: list = field(default_factory=list)

    @property
    def students(self) -> int:
        return len({s.user_id for s in self.submissions})


def error_clusters(exercise, variant: int | None = None) -> list[Cluster]:
    """Failing submissions grouped by what went wrong, largest group first (with ``variant``,
    of that variant only)."""
    clusters: dict[tuple, Cluster] = {}
    failing = _counted(exercise, variant).exclude(verdict=Verdict.PASSED).select_related("user")
    for submission in failing.order_by("-created_at"):
        error = ""
        for test in submission.tests:
            params = (test.get("message") or {}).get("params") or {}
            if not test.get("passed") and "exc_type" in params:
                error = f"{params['exc_type']}" + (f" @ {params['line']}" if params.get("line") else "")
                break
        names = tuple(sorted(t["name"] for t in submission.tests if not t.get("passed")))
        key = (submission.verdict, error, names, submission.misconception)
        cluster = clusters.setdefault(key, Cluster(*key))
        cluster.submissions.append(submission)
    return sorted(clusters.values(), key=lambda c: (-c.students, -len(c.submissions)))
