"""Instructor tools: roster, gradebook (+CSV), item statistics, error clusters, submission
browser, regrade with preview, preview as a student. Only a course's instructors and admins
get in; everyone else gets a 404, never data."""

import csv
import difflib
from collections.abc import Iterator
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import get_format
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from courses.kinds import get_kind
from courses.lessonpage import render_lesson
from courses.models import AnswerPreview, Course, Enrollment
from grader import itemcheck
from grader import regrade as regrades
from grader.models import Regrade, Submission, Verdict

from . import stats
from .gradebook import SORTS, Order, Students, kept_scores
from .spreadsheet import csv_cell


def _get_course_for_instructor(request: HttpRequest, slug: str) -> Course:
    course = get_object_or_404(Course.objects.active(), slug=slug)
    if not course.is_instructor(request.user):
        raise Http404  # do not even confirm the course has an instructor area
    return course


def _get_item(course: Course, kind: str, slug: str):
    if kind not in ("q", "e"):
        raise Http404
    manager = course.exercises if kind == "e" else course.questions
    item = get_object_or_404(manager.active().select_related("lesson"), slug=slug)
    stats.name_item(item)
    return item


STUDENTS_PER_PAGE = 50


@login_required
def dashboard(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course_for_instructor(request, course_slug)
    items = stats.course_items(course)
    students = Paginator(Students(course, items, Order()), STUDENTS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "instructors/dashboard.html",
        {
            "course": course,
            "items": items,
            "rows": stats.gradebook(course, items, list(students.object_list)),
            "page": students,
        },
    )


def _order(request: HttpRequest, items: list) -> Order:
    """The gradebook's sort and filters from its URL (?sort=total&desc=1&q=…&only=incomplete);
    an unknown sort is by name."""
    sort = request.GET.get("sort", "name")
    if sort not in SORTS and sort not in {item.key for item in items}:
        sort = "name"
    return Order(
        sort=sort,
        descending=request.GET.get("desc") == "1",
        query=request.GET.get("q", "").strip(),
        incomplete=request.GET.get("only") == "incomplete",
    )


@login_required
def gradebook(request: HttpRequest, course_slug: str) -> HttpResponse:
    """A page of students with their scores, sorted and filtered over the whole course."""
    course = _get_course_for_instructor(request, course_slug)
    lesson = request.GET.get("lesson") or None
    items = stats.course_items(course, lesson)
    order = _order(request, items)
    page = Paginator(Students(course, items, order), STUDENTS_PER_PAGE).get_page(request.GET.get("page"))
    rows = stats.gradebook(course, items, list(page.object_list))
    table = [{"row": row, "cells": _cells_shown(course, items, row)} for row in rows]
    # The page's links keep the sort and the filters.
    kept = {"sort": order.sort, "desc": "1" if order.descending else "", "lesson": lesson or ""}
    kept |= {"q": order.query, "only": "incomplete" if order.incomplete else ""}
    return render(
        request,
        "instructors/gradebook.html",
        {
            "course": course,
            "items": items,
            "table": table,
            "page": page,
            "page_query": urlencode({key: value for key, value in kept.items() if value}),
            "sort": order.sort,
            "desc": order.descending,
            "lessons": course.active_lessons(),
            "lesson": lesson,
            "query": order.query,
            "only": "incomplete" if order.incomplete else "",
        },
    )


def _cells_shown(course: Course, items: list, row: stats.Row) -> list[dict]:
    """What each of a row's cells shows, ready for the template (a page has thousands): the
    score as the page writes numbers, attempts, when the best was, a link to the code."""
    decimal = get_format("DECIMAL_SEPARATOR")
    cells = []
    for item in items:
        cell = row.cells[item.key]
        if cell.score is None:
            cells.append({"css": "cell-none", "score": None})
            continue
        href = ""
        if item.is_exercise:
            href = reverse("instructors:submissions", args=[course.slug, item.slug, row.user.pk])
        cells.append(
            {
                "css": "cell-full" if cell.score == 1 else "cell-part",
                "score": f"{cell.score:.2f}".replace(".", decimal),
                "attempts": cell.attempts,
                "best_at": timezone.localtime(cell.best_at).strftime("%d.%m %H:%M") if cell.best_at else "",
                "href": href,
            }
        )
    return cells


class _Line:
    """A file-like object for csv.writer that hands back the line just written."""

    def write(self, line: str) -> str:
        return line


CSV_CHUNK = 500  # students whose scores are computed at a time: memory stays flat


@login_required
def gradebook_csv(request: HttpRequest, course_slug: str, excel: bool = False) -> StreamingHttpResponse:
    """The gradebook as CSV: the standard one (commas, decimal points), or with ``excel`` the one
    Excel in Turkish opens as columns (semicolons, decimal commas). Both start with a BOM so
    spreadsheet programs read Turkish letters right. Streamed: the rows of a few hundred
    students at a time, however many the course has."""
    course = _get_course_for_instructor(request, course_slug)
    items = stats.course_items(course)
    user_ids = list(
        Enrollment.objects.filter(course=course).order_by("user__username").values_list("user_id", flat=True)
    )
    number = (lambda value: f"{value:.2f}".replace(".", ",")) if excel else (lambda value: f"{value:.2f}")
    writer = csv.writer(_Line(), delimiter=";" if excel else ",")
    keys = [item.key for item in items]

    def lines() -> Iterator[str]:
        yield "\ufeff" + writer.writerow(
            [_("username"), _("e-mail"), _("enrolled"), _("last activity"), _("total")]
            + [item.slug for item in items]
        )
        for start in range(0, len(user_ids), CSV_CHUNK):
            chunk = user_ids[start : start + CSV_CHUNK]
            scores = kept_scores(course, items, chunk)
            activity = stats.last_activity(course, chunk)
            place = {user_id: index for index, user_id in enumerate(chunk)}
            enrolments = Enrollment.objects.filter(course=course, user_id__in=chunk).select_related("user")
            for enrolment in sorted(enrolments, key=lambda e: place[e.user_id]):
                user, user_id = enrolment.user, enrolment.user_id
                kept = [scores.get((user_id, key)) for key in keys]
                last = activity.get(user_id)
                yield writer.writerow(
                    [
                        csv_cell(user.username),
                        csv_cell(user.email),
                        timezone.localtime(enrolment.created_at).date().isoformat(),
                        timezone.localtime(last).isoformat(timespec="minutes") if last else "",
                        number(sum(score or 0.0 for score in kept)),
                    ]
                    + ["" if score is None else number(score) for score in kept]
                )

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    name = f"{course.slug}-notlar-excel.csv" if excel else f"{course.slug}-notlar.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
def item_stats(request: HttpRequest, course_slug: str, kind: str, slug: str) -> HttpResponse:
    course = _get_course_for_instructor(request, course_slug)
    item = _get_item(course, kind, slug)
    context = {"course": course, "item": item}
    if kind == "e":
        summary, detail = stats.exercise_stats(item)
        labels = dict(Verdict.choices)
        context["verdict_rows"] = [(labels.get(v, v), n) for v, n in sorted(detail["verdicts"].items())]
        context["hidden_failures"] = detail["hidden_failures"]
        context["clusters"] = stats.error_clusters(item)[:10]
        context["regrades"] = item.regrades.all()[:10]
        context["stale"] = stats_stale_count(item)
    else:
        # The question's kind aggregates what students answered and names the template that draws it.
        summary, context["kind_stats"] = stats.question_stats(item)
        question_kind = get_kind(item.kind)
        context["kind_stats_template"] = question_kind.stats_template if question_kind else ""
    context["summary"] = summary
    labels = context["misconception_labels"] = stats.misconception_labels(item)
    context["misconception_rows"] = [
        (_misconception_row(tag, labels), n) for tag, n in summary.misconceptions
    ]
    return render(request, "instructors/item.html", context)


def _misconception_row(tag: str, labels: dict[str, str]) -> str:
    return f"{labels[tag]} ({tag})" if tag in labels else tag


def stats_stale_count(exercise) -> int:
    """Graded submissions whose grade was computed against an older version of the exercise."""
    return regrades.regradable(exercise).exclude(graded_hash=exercise.content_hash).count()


SUBMISSIONS_PER_PAGE = 20


@login_required
def student_submissions(request: HttpRequest, course_slug: str, slug: str, user_id: int) -> HttpResponse:
    """One student's submissions of an exercise, newest first, a page at a time: each with its
    code, its grade and earlier grades, and its changes since the submission before it."""
    course = _get_course_for_instructor(request, course_slug)
    exercise = _get_item(course, "e", slug)
    student = get_object_or_404(User, pk=user_id, enrollments__course=course)
    submissions = Submission.objects.filter(exercise=exercise, user=student, preview=False).order_by(
        "-created_at", "-pk"
    )
    page = Paginator(submissions, SUBMISSIONS_PER_PAGE).get_page(request.GET.get("page"))
    # One older than the page's last, for its diff; highlighting and diffs only for this page.
    start = max(page.start_index() - 1, 0)
    shown = list(submissions.prefetch_related("grade_history")[start : page.end_index() + 1])
    formatter = HtmlFormatter(nowrap=True)
    entries = []
    for index, submission in enumerate(shown[: page.end_index() - start]):
        previous = shown[index + 1] if index + 1 < len(shown) else None
        diff = []
        if previous is not None:
            diff = _diff_lines(previous.code, submission.code, f"#{previous.pk}", f"#{submission.pk}")
        entries.append(
            {
                "submission": submission,
                "code_html": highlight(submission.code, PythonLexer(), formatter),
                "diff": diff,
                # The grades it had before its current one (the newest history entry is the current one).
                "earlier_grades": list(submission.grade_history.all())[:-1],
            }
        )
    hints = exercise.misconception_hints
    return render(
        request,
        "instructors/submissions.html",
        {
            "course": course,
            "exercise": exercise,
            "student": student,
            "entries": entries,
            "hints": hints,
            "page": page,
            "misconception_labels": stats.misconception_labels(exercise),
        },
    )


def _diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line) pairs, kind being "add", "del", "hunk", "file" or "": the
    page colours added lines green and removed lines red and says which is which in words too."""
    lines = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""):
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "")
        lines.append((kind, line))
    return lines


@login_required
@require_POST
def regrade_start(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    course = _get_course_for_instructor(request, course_slug)
    exercise = _get_item(course, "e", slug)
    selected = request.POST.getlist("submission")
    ids = [int(s) for s in selected if s.isdigit()] if selected else None
    regrade = regrades.start(exercise, request.user, ids)
    return redirect("instructors:regrade", course.slug, regrade.pk)


@login_required
def regrade_detail(request: HttpRequest, course_slug: str, pk: int) -> HttpResponse:
    course = _get_course_for_instructor(request, course_slug)
    regrade = get_object_or_404(Regrade.objects.select_related("exercise"), pk=pk, exercise__course=course)
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "apply":
            try:
                count = regrades.apply(regrade)
            except regrades.NotReady as exc:
                messages.error(request, _("Not applied: %(reason)s.") % {"reason": exc})
            else:
                messages.success(
                    request,
                    _("%(count)d grade(s) updated; the old ones stay in each submission's history.")
                    % {"count": count},
                )
        elif action == "resume":
            count = regrades.resume(regrade)
            messages.info(request, _("%(count)d submission(s) queued again.") % {"count": count})
        elif action == "cancel" and regrade.status == Regrade.Status.PREVIEW:
            Regrade.objects.filter(pk=regrade.pk).update(status=Regrade.Status.CANCELLED)
        return redirect("instructors:regrade", course.slug, regrade.pk)
    return render(
        request,
        "instructors/regrade.html",
        {
            "course": course,
            "regrade": regrade,
            **regrades.summary(regrade),
            "misconception_labels": stats.misconception_labels(regrade.exercise),
        },
    )


@login_required
def lesson_preview(request: HttpRequest, course_slug: str, lesson_slug: str) -> HttpResponse:
    course = _get_course_for_instructor(request, course_slug)
    lesson = get_object_or_404(course.lessons.active(), slug=lesson_slug)
    # ?onizleme=<id>: the instructor's preview answer to one question, checking or checked.
    shown_id = request.GET.get("onizleme", "")
    assert isinstance(request.user, User)  # login_required
    shown = (
        AnswerPreview.objects.filter(pk=shown_id, user=request.user, question__lesson=lesson).first()
        if shown_id.isdigit()
        else None
    )
    return render_lesson(request, lesson, preview=True, shown=shown)


@login_required
def test_item(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    """The latest check of the reference solution and every catalogued variant; a POST asks a
    grading worker for a new one (nothing runs in this request)."""
    course = _get_course_for_instructor(request, course_slug)
    exercise = _get_item(course, "e", slug)
    if request.method == "POST":
        itemcheck.start(exercise, request.user)
        return redirect("instructors:test_item", course.slug, exercise.slug)
    check = exercise.checks.first()
    return render(
        request,
        "instructors/test_item.html",
        {
            "course": course,
            "exercise": exercise,
            "check": check,
            "misconception_labels": stats.misconception_labels(exercise),
        },
    )
