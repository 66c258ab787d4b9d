"""Which students a gradebook page shows, in what order: filtered, sorted and counted by the
database over every enrolled student, so a course of ten thousand costs a page, not a course.
The cells of the page's students come from ``stats.gradebook``."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import overload

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Case, F, FloatField, Q, QuerySet, Value, When
from django.db.models.functions import Coalesce, Lower
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from courses.models import Attempt, Course, Enrollment
from grader.models import Submission

from . import stats

# Sorts by a student's own columns; any other sort names an item ("q:slug", "e:slug").
SORTS = ("name", "total", "activity", "enrolled")


@dataclass(frozen=True)
class Order:
    """How the instructor asked to see the students: the sort column, its direction, a search
    in usernames and e-mail addresses, and whether only students with unfinished items show."""

    sort: str = "name"
    descending: bool = False
    query: str = ""
    incomplete: bool = False


class Students:
    """The enrolled students of a course as a gradebook shows them, for a Paginator: ``count()``
    and each slice (a page of user ids) are answered by the database.

    Sorting by name or enrolment date pages the enrolments directly. Sorting by a score, the
    last activity or showing only unfinished students needs every student's scores: one query
    computes them in the database (each item's kept score under the course's policy, summed),
    and only the ordered ids come back."""

    def __init__(self, course: Course, items: list, order: Order):
        self.course, self.items, self.order = course, items, order
        self._ordered: list[int] | None = None

    def _enrolled(self) -> QuerySet[Enrollment]:
        enrolled = Enrollment.objects.filter(course=self.course)
        if self.order.query:
            enrolled = enrolled.filter(
                Q(user__username__icontains=self.order.query) | Q(user__email__icontains=self.order.query)
            )
        return enrolled

    def _by_own_columns(self) -> bool:
        return self.order.sort in ("name", "enrolled") and not self.order.incomplete

    def _page_query(self) -> QuerySet:
        column = Lower("user__username") if self.order.sort == "name" else F("created_at")
        first = column.desc() if self.order.descending else column.asc()
        return (
            self._enrolled()
            .order_by(first, Lower("user__username"), "user_id")
            .values_list("user_id", flat=True)
        )

    def count(self) -> int:
        if self._by_own_columns():
            return self._enrolled().count()
        return len(self._all_ordered())

    def __len__(self) -> int:
        return self.count()

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        if self._by_own_columns():
            if isinstance(index, int):
                return self._page_query()[index]
            return list(self._page_query()[index])
        return self._all_ordered()[index]

    def __iter__(self) -> Iterator[int]:
        return iter(self[:])

    # -- sorting by what students did ------------------------------------------------------
    def _all_ordered(self) -> list[int]:
        if self._ordered is None:
            sql, params = self._scored_sql()
            with connection.cursor() as cursor:
                cursor.execute(sql, params)
                self._ordered = [user_id for (user_id,) in cursor.fetchall()]
        return self._ordered

    def _scored_sql(self) -> tuple[str, list]:
        """One statement: every counted try at the shown items, each item's kept score per
        student (best or last, as the course counts), their sum and how many are full marks;
        the enrolments joined to it, filtered and sorted."""
        enrolled = self._enrolled().order_by().values_list("user_id", Lower("user__username"), "created_at")
        ctes: list[tuple[str, QuerySet | tuple[str, list] | None]] = [
            ("enrolled (user_id, name, enrolled_at)", enrolled)
        ]
        bodies: dict[str, str] = {}
        joins: list[str] = []
        join_params: list = []
        direction = "DESC" if self.order.descending else "ASC"
        sort = self.order.sort
        item = next((i for i in self.items if i.key == sort), None)
        if item is not None or sort == "total" or self.order.incomplete:
            ctes += [("tries (user_id, item, score, created_at, pk)", _tries_sql(self.items)), ("kept", None)]
            ctes.append(("totals", None))
            bodies["kept"] = _kept_sql(self.course)
            bodies["totals"] = (
                "SELECT user_id, SUM(score) AS total, "
                "SUM(CASE WHEN score >= 1 THEN 1 ELSE 0 END) AS full_items FROM kept GROUP BY user_id"
            )
            joins.append("LEFT JOIN totals ON totals.user_id = s.user_id")
        if item is not None:
            # Students with no score for the item come first (last when descending).
            joins.append("LEFT JOIN kept AS one ON one.user_id = s.user_id AND one.item = %s")
            join_params.append(_item_id(item))
            order = [
                f"CASE WHEN one.score IS NULL THEN 0 ELSE 1 END {direction}",
                f"COALESCE(one.score, 0) {direction}",
            ]
        elif sort == "activity":
            sources = [
                done.values_list("user_id", when).order_by()
                for done, when in stats.activity_sources(self.course)
            ]
            ctes.append(("done (user_id, at)", sources[0].union(*sources[1:], all=True).order_by()))
            ctes.append(("activity", None))
            bodies["activity"] = "SELECT user_id, MAX(at) AS last FROM done GROUP BY user_id"
            joins.append("LEFT JOIN activity ON activity.user_id = s.user_id")
            order = [
                f"CASE WHEN activity.last IS NULL THEN 0 ELSE 1 END {direction}",
                f"activity.last {direction}",
            ]
        elif sort == "enrolled":
            order = [f"s.enrolled_at {direction}"]
        elif sort == "total":
            order = [f"COALESCE(totals.total, 0) {direction}"]
        else:
            order = [f"s.name {direction}"]
        parts: list[str] = []
        params: list = []
        for name, source in ctes:
            if source is None:
                parts.append(f"{name} AS ({bodies[name]})")
            else:
                sql, sql_params = source if isinstance(source, tuple) else source.query.sql_with_params()
                parts.append(f"{name} AS ({sql})")
                params.extend(sql_params)
        params.extend(join_params)
        where = ""
        if self.order.incomplete:
            where = "WHERE COALESCE(totals.full_items, 0) < %s"
            params.append(len(self.items))
        sql = (
            f"WITH {', '.join(parts)} SELECT s.user_id FROM enrolled AS s {' '.join(joins)} {where} "
            f"ORDER BY {', '.join(order)}, s.name ASC, s.user_id ASC"
        )
        return sql, params


def _kept_sql(course: Course) -> str:
    """Each student's kept score per item from ``tries``: the best, or the last when the course
    counts the last attempt (the rule stats.gradebook applies to the rows it shows)."""
    if course.score_policy == Course.ScorePolicy.LAST:
        return (
            "SELECT user_id, item, score FROM (SELECT user_id, item, score, ROW_NUMBER() OVER "
            "(PARTITION BY user_id, item ORDER BY created_at DESC, pk DESC) AS n FROM tries) AS ranked "
            "WHERE n = 1"
        )
    return "SELECT user_id, item, MAX(score) AS score FROM tries GROUP BY user_id, item"


def csv_figures(
    course: Course, items: list, students: QuerySet
) -> dict[int, tuple[list[float | None], datetime | None]]:
    """For each of ``students`` (a query of user ids: a few hundred of the CSV's rows) who did
    something: the kept score of each of ``items`` in their order (None without one) and
    their last activity. One statement, whose parameters do not grow with the students."""
    place = {_item_id(item): index for index, item in enumerate(items)}
    with_clause, params = _kept_and_done(course, items, students)
    sql = (
        with_clause + "SELECT user_id, item, score, NULL AS last FROM kept "
        "UNION ALL SELECT user_id, NULL, NULL, MAX(at) FROM done GROUP BY user_id"
    )
    figures: dict[int, tuple[list[float | None], datetime | None]] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for user_id, item, score, last in cursor.fetchall():
            kept, when = figures.get(user_id) or ([None] * len(items), None)
            if item is None:
                when = _datetime(last)
            else:
                kept[place[item]] = score
            figures[user_id] = (kept, when)
    return figures


def _kept_and_done(course: Course, items: list, students) -> tuple[str, list]:
    """The WITH clause (and its parameters) of the statements that read students' figures:
    ``kept``, the kept score of each student and item, and ``done``, every dated thing a
    student did; ``students``, user ids (a list or a query of them)."""
    tries, params = _tries_sql(items, students)
    sources = [
        done.filter(user_id__in=students).values_list("user_id", when).order_by()
        for done, when in stats.activity_sources(course)
    ]
    done, done_params = sources[0].union(*sources[1:], all=True).order_by().query.sql_with_params()
    return (
        f"WITH tries (user_id, item, score, created_at, pk) AS ({tries}), kept AS ({_kept_sql(course)}), "
        f"done (user_id, at) AS ({done}) ",
        [*params, *done_params],
    )


@dataclass
class RosterRow:
    """A student as the instructor dashboard's roster lists them."""

    user: User
    enrolled_at: datetime
    last_activity: datetime | None = None
    total: float = 0.0


def roster(course: Course, items: list, enrolments: list[Enrollment]) -> list[RosterRow]:
    """The roster's rows for a page of ``enrolments`` (their users read with them): each
    student's total (the kept scores of ``items`` summed) and last activity, both from one
    statement whatever the number of items or students."""
    rows = {e.user_id: RosterRow(e.user, e.created_at) for e in enrolments}
    if not rows:
        return []
    with_clause, params = _kept_and_done(course, items, list(rows))
    sql = with_clause + (
        "SELECT user_id, MAX(at), SUM(score) FROM ("
        "SELECT user_id, at, NULL AS score FROM done UNION ALL SELECT user_id, NULL, score FROM kept"
        ") AS figures GROUP BY user_id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for user_id, last, total in cursor.fetchall():
            rows[user_id].last_activity = _datetime(last)
            rows[user_id].total = total or 0.0
    return list(rows.values())


def _datetime(value: datetime | str | None) -> datetime | None:
    """A time read by raw SQL: SQLite hands back text in UTC, PostgreSQL a datetime."""
    if value is None or isinstance(value, datetime):
        return value
    parsed = parse_datetime(value)
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed


def _item_id(item) -> int:
    # Questions and exercises share one column: exercises by their negated primary key.
    return -item.pk if item.is_exercise else item.pk


def _tries_sql(items: list, user_ids: list[int] | QuerySet | None = None) -> tuple[str, list]:
    """Every counted try at the items as (user_id, item, score, created_at, pk): answers and
    reveals of questions, counted submissions of exercises (code sent after seeing the sample
    solution scores 0), as the gradebook counts them; only those of ``user_ids`` (a list, or a
    query of user ids) when given."""
    question_ids = [item.pk for item in items if not item.is_exercise]
    exercise_ids = [item.pk for item in items if item.is_exercise]
    answers = Attempt.objects.filter(question_id__in=question_ids)
    submissions = Submission.objects.counted().filter(exercise_id__in=exercise_ids)
    if user_ids is None:
        answers = answers.filter(status=Attempt.Status.DONE)
    else:
        # Led by the students' index: "not any other status" keeps SQLite, which has no row
        # statistics, from walking the status index (every graded row) instead; the students'
        # submissions are found first, by their index, in a subquery of the same statement.
        others = [status for status in Attempt.Status.values if status != Attempt.Status.DONE]
        answers = answers.filter(user_id__in=user_ids).exclude(status__in=others)
        sent = Submission.objects.filter(exercise_id__in=exercise_ids, user_id__in=user_ids)
        submissions = submissions.filter(pk__in=sent.values("pk"))
    parts: list[QuerySet] = []
    nobody = isinstance(user_ids, list) and not user_ids
    if question_ids and not nobody:
        parts.append(
            answers.order_by().values_list(
                "user_id", F("question_id"), Coalesce("score", Value(0.0)), "created_at", "pk"
            )
        )
    if exercise_ids and not nobody:
        parts.append(
            submissions.order_by().values_list(
                "user_id", -F("exercise_id"), _submission_score(), "created_at", "pk"
            )
        )
    if not parts:  # nothing to count (SQL has no empty IN list)
        return "SELECT 0, 0, 0.0, NULL, 0 WHERE 1 = 0", []
    # A union takes its first model's default ordering back: no ordering, it is only summed.
    tries = parts[0].union(*parts[1:], all=True).order_by() if len(parts) > 1 else parts[0]
    sql, params = tries.query.sql_with_params()
    return sql, list(params)


def _submission_score() -> Case:
    return Case(
        When(after_reveal=True, then=Value(0.0)),
        default=Coalesce("score", Value(0.0)),
        output_field=FloatField(),
    )
