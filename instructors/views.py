"""Instructor tools: roster, gradebook (+CSV), item statistics, error clusters, submission
browser, regrade with preview, preview as a student. Only a course's instructors and admins
get in; everyone else gets a 404, never data."""

import csv
import difflib
from collections.abc import Iterator
from itertools import batched
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, OuterRef, Subquery, Window
from django.db.models.functions import Lower
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

from accounts.templatetags.site_header import TAUGHT_COURSE_ATTRIBUTE
from assessments.scoring import manual_scores_over
from courses.kinds import AnswerError, NotGradable, get_kind
from courses.lessonpage import render_lesson
from courses.models import (
    BEFORE_VARIANTS,
    AnswerPreview,
    Attempt,
    Course,
    Enrollment,
    Question,
    QuestionVariant,
    spec_answered,
)
from courses.preview import preview_answer
from courses.selftest import AnsweringTooFast, AnswerPending
from grader import itemcheck
from grader import regrade as regrades
from grader.models import Regrade, Submission, Verdict

from . import stats
from .gradebook import SORTS, Order, Students, csv_figures, roster
from .spreadsheet import csv_cell
from .variantview import hidden_inputs, params_summary, params_view, variant_label


def _get_course_for_instructor(request: HttpRequest, slug: str) -> Course:
    """The course, if the user teaches it (Course.is_instructor) or is an admin; else a 404.
    One query reads the course, whether the user teaches it and the first course they teach,
    which the site header links to (it then makes no query of its own)."""
    user = request.user
    if not user.is_authenticated:
        raise Http404
    taught = Course.objects.filter(instructors=user)
    course = get_object_or_404(
        Course.objects.active().annotate(
            teaches=Exists(taught.filter(pk=OuterRef("pk"))),
            # By title, as the header's user.taught_courses.first() would pick it.
            first_taught=Subquery(taught.order_by("title", "pk").values("slug")[:1]),
        ),
        slug=slug,
    )
    if not (user.is_superuser or course.teaches):
        raise Http404  # do not even confirm the course has an instructor area
    setattr(request, TAUGHT_COURSE_ATTRIBUTE, course.first_taught or "")
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
    """The course's items and a page of its roster. A constant number of queries whatever the
    course's size (tests/test_dashboard_queries.py): the course, its lessons, questions and
    exercises, a page of enrolments with their users and their count, and the page's totals
    and last activity."""
    course = _get_course_for_instructor(request, course_slug)
    items = stats.course_items(course)
    page = _roster_page(course, request.GET.get("page"))
    return render(
        request,
        "instructors/dashboard.html",
        {
            "course": course,
            "items": items,
            "rows": roster(course, items, list(page.object_list)),
            "page": page,
        },
    )


# A page number beyond any roster, whose offset still fits the database's 64-bit integers.
LAST_PAGE_ASKED = 2**62 // STUDENTS_PER_PAGE


def _roster_page(course: Course, number: str | None) -> Page:
    """A page of the course's enrolments by username, as Paginator.get_page() picks it (the
    first for a page that is no number, the last for one past the end), with their users;
    the number of enrolments comes with the page's rows (one query)."""
    enrolments = (
        Enrollment.objects.filter(course=course)
        .select_related("user")
        .annotate(enrolled=Window(Count("pk")))
        .order_by(Lower("user__username"), "user_id")
    )
    wanted = int(number) if number and _whole_number(number) and int(number) > 0 else 1
    wanted = min(wanted, LAST_PAGE_ASKED)  # an offset the database can hold; past the end anyway
    start = (wanted - 1) * STUDENTS_PER_PAGE
    shown = list(enrolments[start : start + STUDENTS_PER_PAGE])
    count = shown[0].enrolled if shown else Enrollment.objects.filter(course=course).count()
    paginator = Paginator(enrolments, STUDENTS_PER_PAGE)
    paginator.__dict__["count"] = count  # its cached_property, filled: no COUNT query of its own
    if not shown and wanted > paginator.num_pages:
        wanted = paginator.num_pages  # past the end: the last page
        start = (wanted - 1) * STUDENTS_PER_PAGE
        shown = list(enrolments[start : start + STUDENTS_PER_PAGE])
    return Page(shown, wanted, paginator)


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
        # The student's code of an exercise; their answers to a question (and its variant).
        view = "instructors:submissions" if item.is_exercise else "instructors:attempts"
        href = reverse(view, args=[course.slug, item.slug, row.user.pk])
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
    students at a time, by username, however many the course has: one query reads the sorted
    students, and one more per chunk computes their scores and last activity."""
    course = _get_course_for_instructor(request, course_slug)
    items = stats.course_items(course)
    by_name = (
        Enrollment.objects.filter(course=course)
        .order_by("user__username")
        .values_list("user_id", "user__username", "user__email", "created_at")
    )
    number = (lambda value: f"{value:.2f}".replace(".", ",")) if excel else (lambda value: f"{value:.2f}")
    writer = csv.writer(_Line(), delimiter=";" if excel else ",")
    nothing: tuple[list[float | None], None] = ([None] * len(items), None)

    def lines() -> Iterator[str]:
        yield "\ufeff" + writer.writerow(
            [_("username"), _("e-mail"), _("enrolled"), _("last activity"), _("total")]
            + [item.slug for item in items]
        )
        # One query sorts the students; its rows are read a chunk at a time.
        for chunk in batched(by_name.iterator(chunk_size=CSV_CHUNK), CSV_CHUNK):
            first, last = chunk[0][1], chunk[-1][1]
            # Found by the usernames' index; anyone in the range not enrolled is not asked for.
            students = User.objects.filter(username__gte=first, username__lte=last).values("pk")
            figures = csv_figures(course, items, students)
            for user_id, username, email, enrolled_at in chunk:
                kept, active = figures.get(user_id, nothing)
                yield writer.writerow(
                    [
                        csv_cell(username),
                        csv_cell(email),
                        timezone.localtime(enrolled_at).date().isoformat(),
                        timezone.localtime(active).isoformat(timespec="minutes") if active else "",
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
    # ?varyant=3: the page's numbers and charts for one variant (the table by variant stays whole).
    chosen = (
        _chosen_variant(request.GET.get("varyant"), item.variant_count) if item.variant_count > 1 else None
    )
    context = {
        "course": course,
        "item": item,
        "chosen_label": variant_label(chosen, item.variant_count) if chosen is not None else "",
        "chosen_number": chosen + 1 if chosen is not None else None,
    }
    if kind == "e":
        summary, detail = stats.exercise_stats(item, chosen)
        labels = dict(Verdict.choices)
        context["verdict_rows"] = [(labels.get(v, v), n) for v, n in sorted(detail["verdicts"].items())]
        context["hidden_failures"] = detail["hidden_failures"]
        context["clusters"] = stats.error_clusters(item, chosen)[:10]
        context["regrades"] = item.regrades.all()[:10]
        context["stale"] = stats_stale_count(item)
    else:
        # The question's kind aggregates what students answered and names the template that draws it.
        summary, context["kind_stats"] = stats.question_stats(item, chosen)
        question_kind = get_kind(item.kind)
        context["kind_stats_template"] = question_kind.stats_template if question_kind else ""
    context["summary"] = summary
    context["hint_rows"] = stats.hint_stats(item, chosen)
    context["variant_rows"] = rows = stats.variant_stats(item)
    context["harder_rows"] = [row for row in rows if row.harder]
    context["harder_rule"] = {
        "students": stats.HARDER_MIN_STUDENTS,
        "gap": round(100 * stats.HARDER_GAP),
        "chance": round(1 / stats.HARDER_P),
    }
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
    for entry in entries:
        submission = entry["submission"]
        entry["variant_label"] = (
            variant_label(submission.variant, exercise.variant_count) if exercise.variant_count > 1 else ""
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
            "variant": _exercise_variant(exercise, exercise.variant_index(student), submissions),
        },
    )


def _exercise_variant(exercise, index: int, submissions=None) -> dict | None:
    """What the instructor reads about an exercise's variant ``index``: its label, its seed
    (as its submissions were graded with it) and its hidden inputs; None without variants."""
    if exercise.variant_count <= 1:
        return None
    seed = None
    if submissions is not None:
        seed = (
            submissions.filter(variant=index, variant_seed__isnull=False)
            .values_list("variant_seed", flat=True)
            .first()
        )
    return {
        "index": index,
        "number": index + 1,
        "label": variant_label(index, exercise.variant_count),
        "seed": seed,
        "hidden": hidden_inputs(exercise, index),
    }


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
    ids = [int(s) for s in selected if _whole_number(s)] if selected else None
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
            "manual_kept": manual_scores_over(regrade.items.values("submission_id")),
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
        if _whole_number(shown_id)
        else None
    )
    return render_lesson(request, lesson, preview=True, shown=shown)


@login_required
def test_item(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    """The latest check of the reference solution and every catalogued variant; a POST asks a
    grading worker for a new one (nothing runs in this request). An exercise with per-student
    variants is checked on the variant chosen (``varyant``: its number, or "hepsi" for all)."""
    course = _get_course_for_instructor(request, course_slug)
    exercise = _get_item(course, "e", slug)
    count = exercise.variant_count
    choice = request.POST.get("varyant") or request.GET.get("varyant") or ""
    chosen = _chosen_variant(choice, count)
    everything = count > 1 and choice == ALL_VARIANTS
    if request.method == "POST":
        if count > 1:
            itemcheck.start(
                exercise, request.user, variant=itemcheck.ALL_VARIANTS if everything else chosen or 0
            )
        else:
            itemcheck.start(exercise, request.user)
        url = reverse("instructors:test_item", args=[course.slug, exercise.slug])
        if count > 1:
            url += "?" + urlencode({"varyant": ALL_VARIANTS if everything else (chosen or 0) + 1})
        return redirect(url)
    check = exercise.checks.first()
    context: dict = {
        "course": course,
        "exercise": exercise,
        "check": check,
        "misconception_labels": stats.misconception_labels(exercise),
    }
    if count > 1:
        checked = sorted({program.get("variant", 0) for program in check.programs}) if check else []
        if not choice and len(checked) == 1:
            chosen = checked[0]  # the page opens on the variant checked last
        elif not choice and len(checked) > 1:
            everything = True
        context |= {
            "all_value": ALL_VARIANTS,
            "everything": everything,
            "chosen_number": None if everything else (chosen or 0) + 1,
            "choices": [{"number": n, "label": variant_label(n - 1, count)} for n in range(1, count + 1)],
            "checked_label": (
                _("every variant (%(count)s)") % {"count": count}
                if len(checked) > 1
                else variant_label(checked[0], count)
                if checked
                else ""
            ),
            "runs": [
                {**run, "variant_label": variant_label(run.get("variant", 0), count)}
                for run in (check.runs if check else [])
            ],
            "variant": None if everything else _exercise_variant(exercise, chosen or 0),
        }
    return render(request, "instructors/test_item.html", context)


ATTEMPTS_PER_PAGE = 20
ALL_VARIANTS = "hepsi"  # ?varyant=hepsi: every variant of the item


def _whole_number(value: str) -> bool:
    """ASCII digits only: str.isdigit() also takes "²", which int() refuses."""
    return value.isascii() and value.isdigit()


def _chosen_variant(value: str | None, count: int) -> int | None:
    """The variant an instructor picked, from ``?varyant=3`` (numbered from 1 as pages show
    it): its index, or None for all of them (or a number the item does not have)."""
    if value and _whole_number(value) and 1 <= int(value) <= count:
        return int(value) - 1
    return None


def _answer_items(kind, spec: dict, answered) -> list[dict]:
    """An answer's parts as the student's feedback reads them (what they answered, right or
    wrong); none when the question changed too much since (as on the lesson page)."""
    if kind is None or answered.answer is None or answered.is_pending:
        return []
    try:
        return kind.feedback_items(spec, answered.answer, answered.feedback)
    except (KeyError, IndexError, TypeError, StopIteration):
        return []


def _question_variant(question: Question, variant: QuestionVariant | None) -> dict | None:
    """What the instructor reads about one variant of a question: its label, seed, parameters,
    the prompt as asked and the right answer; None for a question without variants."""
    if variant is None:
        return None
    kind = get_kind(question.kind)
    return {
        "variant": variant,
        "number": variant.index + 1,
        "label": variant_label(variant.index, question.variant_count),
        "params": params_view(variant.params),
        "solution": kind.solution_items(variant.spec) if kind else [],
    }


@login_required
def question_attempts(request: HttpRequest, course_slug: str, slug: str, user_id: int) -> HttpResponse:
    """One student's answers to a question, newest first: the variant they were asked (its
    parameters and prompt) and, for each answer, the variant it was graded on."""
    course = _get_course_for_instructor(request, course_slug)
    question = _get_item(course, "q", slug)
    student = get_object_or_404(User, pk=user_id, enrollments__course=course)
    kind = get_kind(question.kind)
    current = question.variant_for(student)
    attempts = (
        Attempt.objects.filter(question=question, user=student)
        .select_related("variant")
        .order_by("-created_at", "-pk")
    )
    page = Paginator(attempts, ATTEMPTS_PER_PAGE).get_page(request.GET.get("page"))
    entries = []
    for attempt in page.object_list:
        entry: dict = {"attempt": attempt, "items": _answer_items(kind, spec_answered(attempt), attempt)}
        if attempt.variant_id is not None:
            assert attempt.variant is not None
            entry["variant_label"] = (
                _("before variants")
                if attempt.variant.digest == BEFORE_VARIANTS
                else variant_label(attempt.variant.index, question.variant_count)
            )
            # Graded on a variant the student is no longer asked (a later import changed it).
            if current is None or attempt.variant_id != current.pk:
                entry["other_variant"] = _question_variant(question, attempt.variant)
        entries.append(entry)
    return render(
        request,
        "instructors/attempts.html",
        {
            "course": course,
            "question": question,
            "student": student,
            "current": _question_variant(question, current),
            "prompt_html": current.prompt_html if current else question.prompt_html,
            "entries": entries,
            "page": page,
            "misconception_labels": stats.misconception_labels(question),
        },
    )


@login_required
def test_question(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    """ "Test this item" for a question: every variant with its parameters and answer, or one
    (``?varyant=3``) as a student is asked it, to answer like a student (graded, never
    recorded: an instructor's preview answer)."""
    course = _get_course_for_instructor(request, course_slug)
    question = _get_item(course, "q", slug)
    chosen = _chosen_variant(
        request.POST.get("varyant") or request.GET.get("varyant"), question.variant_count
    )
    variant = None
    if question.variant_count > 1 and chosen is not None:
        variant = get_object_or_404(QuestionVariant, question=question, index=chosen, current=True)
    elif question.variant_count > 1:
        chosen = None
    kind = get_kind(question.kind)
    if kind is None:
        raise Http404
    here = reverse("instructors:test_question", args=[course.slug, question.slug])
    assert isinstance(request.user, User)  # login_required
    if request.method == "POST":
        if question.variant_count > 1 and variant is None:
            return redirect(here)
        question.ask(variant)
        query = {"varyant": variant.index + 1} if variant else {}
        try:
            answered = preview_answer(
                request.user, question, kind.answer_from_post(question.spec, request.POST)
            )
        except (AnswerError, NotGradable) as exc:
            messages.warning(request, _("This answer could not be graded: %(reason)s") % {"reason": exc})
        except AnswerPending:
            messages.warning(
                request,
                _("Your previous answer is still being checked. Wait for its result, then try again."),
            )
        except AnsweringTooFast as slow:
            messages.warning(
                request,
                _("You are answering very fast. Please wait %(seconds)d seconds and try again.")
                % {"seconds": slow.retry_after},
            )
        else:
            query["onizleme"] = answered.pk
        return redirect(f"{here}?{urlencode(query)}" if query else here)
    context: dict = {"course": course, "question": question, "all_value": ALL_VARIANTS}
    if question.variant_count > 1:
        context["choices"] = [
            {"number": n, "label": variant_label(n - 1, question.variant_count)}
            for n in range(1, question.variant_count + 1)
        ]
    if question.variant_count > 1 and variant is None:
        # Every variant at once: its parameters and its answer, to compare them.
        context["variants"] = [
            {
                "number": v.index + 1,
                "label": variant_label(v.index, question.variant_count),
                "params": params_summary(v.params),
                "solution": kind.solution_items(v.spec),
            }
            for v in QuestionVariant.objects.filter(question=question, current=True).order_by("index")
        ]
        return render(request, "instructors/test_question.html", context)
    question.ask(variant)
    shown_id = request.GET.get("onizleme", "")
    shown = (
        AnswerPreview.objects.filter(pk=shown_id, user=request.user, question=question)
        .select_related("variant")
        .first()
        if _whole_number(shown_id)
        else None
    )
    if (
        shown is not None
        and shown.variant_id is not None
        and variant is not None
        and shown.variant_id != variant.pk
    ):
        shown = None  # an answer to another variant
    context |= {
        "chosen": _question_variant(question, variant),
        "kind_context": kind.context(question.spec, (request.user.pk, course.pk, question.slug)),
        "shown": shown,
        "shown_items": _answer_items(kind, spec_answered(shown), shown) if shown else [],
        "solution": kind.solution_items(question.spec),
    }
    return render(request, "instructors/test_question.html", context)
