"""Instructors' side of an assessment: gradebook (+CSV), one student's overrides, manual scores
with their history, and exam log; the release switch for after_close feedback. Only the
course's instructors and admins get in; everyone else gets a 404."""

import csv
from datetime import datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from instructors.spreadsheet import csv_cell
from jobs.signals import send_score_changed

from .models import Assessment, ExamLogEntry, ManualScore, ManualScoreChange, StudentOverride
from .scoring import enrolled_students, student_scores


def _get_assessment_for_instructor(request: HttpRequest, course_slug: str, slug: str) -> Assessment:
    assessment = get_object_or_404(
        Assessment.objects.select_related("course"), course__slug=course_slug, slug=slug
    )
    if not assessment.course.is_instructor(request.user):
        raise Http404
    return assessment


def _instructor(request: HttpRequest) -> User:
    """The logged-in instructor (the views above let no one else in)."""
    assert isinstance(request.user, User)
    return request.user


def _gradebook_url(assessment: Assessment) -> str:
    return reverse("assessment_gradebook", args=[assessment.course.slug, assessment.slug])


@login_required
def gradebook(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    assessment = _get_assessment_for_instructor(request, course_slug, slug)
    rows = student_scores(assessment, enrolled_students(assessment))
    overrides = {o.user_id: o for o in assessment.overrides.select_related("set_by")}
    for row in rows:
        row.override = overrides.get(row.user.pk)
    return render(
        request,
        "assessments/gradebook.html",
        {
            "assessment": assessment,
            "course": assessment.course,
            "rows": rows,
            "columns": assessment.item_slugs(),
        },
    )


@login_required
def gradebook_csv(request: HttpRequest, course_slug: str, slug: str, excel: bool = False) -> HttpResponse:
    """One row per student: total, then per item its points, credit, late and manual flags. With
    ``excel``, as the course gradebook's: semicolons and decimal commas, which Excel in Turkish
    opens as columns."""
    assessment = _get_assessment_for_instructor(request, course_slug, slug)
    rows = student_scores(assessment, enrolled_students(assessment))
    columns = assessment.item_slugs()
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"{assessment.course.slug}-{assessment.slug}{'-excel' if excel else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response.write("\ufeff")
    writer = csv.writer(response, delimiter=";" if excel else ",")

    def number(value: float) -> str:
        text = f"{value:.2f}"
        return text.replace(".", ",") if excel else text

    header = [_("username"), _("total")]
    for item in columns:
        header += [item, f"{item} {_('credit')}", f"{item} {_('late')}", f"{item} {_('manual')}"]
    writer.writerow(header)
    for row in rows:
        mine = {i.item: i for i in row.items}
        cells = [csv_cell(row.user.username), number(row.total)]
        for item in columns:
            score = mine.get(item)
            if score is None:  # not in this student's pool draw
                cells += ["", "", "", ""]
            else:
                cells += [
                    number(score.score),
                    "" if score.credit is None else number(score.credit),
                    "1" if score.late else "0",
                    "1" if score.manual else "0",
                ]
        writer.writerow(cells)
    return response


@login_required
def student_detail(request: HttpRequest, course_slug: str, slug: str, user_id: int) -> HttpResponse:
    assessment = _get_assessment_for_instructor(request, course_slug, slug)
    student = get_object_or_404(enrolled_students(assessment), pk=user_id)
    [scores] = student_scores(assessment, [student])
    override = assessment.override_for(student)
    return render(
        request,
        "assessments/student.html",
        {
            "assessment": assessment,
            "course": assessment.course,
            "student": student,
            "scores": scores,
            "override": override,
            "windows": assessment.windows_for(override),
            "session": assessment.session_for(student),
            "changes": ManualScoreChange.objects.filter(assessment=assessment, user=student).select_related(
                "changed_by"
            ),
            "log": ExamLogEntry.objects.filter(assessment=assessment, user=student),
        },
    )


def _moment(value: str) -> datetime | None:
    """A datetime-local field, read in the site's time zone (Istanbul)."""
    if not value:
        return None
    return timezone.make_aware(datetime.fromisoformat(value))


@login_required
@require_POST
def save_override(request: HttpRequest, course_slug: str, slug: str, user_id: int) -> HttpResponse:
    assessment = _get_assessment_for_instructor(request, course_slug, slug)
    student = get_object_or_404(enrolled_students(assessment), pk=user_id)
    back = reverse("assessment_student", args=[course_slug, slug, user_id])
    try:
        due, closes = _moment(request.POST.get("due", "")), _moment(request.POST.get("closes", ""))
        factor = float(request.POST.get("time_factor") or 1)
        extra = int(request.POST.get("extra_attempts") or 0)
    except ValueError:
        messages.error(request, _("Check the dates and numbers: one of them could not be read."))
        return redirect(back)
    if not 1 <= factor <= 10 or not 0 <= extra <= 100:
        messages.error(
            request, _("The time factor must be between 1 and 10, extra attempts between 0 and 100.")
        )
        return redirect(back)
    override, _created = StudentOverride.objects.update_or_create(
        assessment=assessment,
        user=student,
        defaults={
            "due": due,
            "closes": closes,
            "time_factor": factor,
            "extra_attempts": extra,
            "note": request.POST.get("note", "")[:500],
            "set_by": _instructor(request),
            "set_at": timezone.now(),
        },
    )
    override.apply_to_session()
    messages.success(request, _("The override was saved."))
    return redirect(back)


@login_required
@require_POST
def save_manual_score(request: HttpRequest, course_slug: str, slug: str, user_id: int) -> HttpResponse:
    assessment = _get_assessment_for_instructor(request, course_slug, slug)
    student = get_object_or_404(enrolled_students(assessment), pk=user_id)
    back = reverse("assessment_student", args=[course_slug, slug, user_id])
    item = request.POST.get("item", "")
    points_of = {entry["item"]: entry["points"] for entry in assessment.items_for(student)}
    comment = request.POST.get("comment", "").strip()
    try:
        points = float(request.POST.get("points", "").replace(",", "."))
    except ValueError:
        points = -1.0
    if item not in points_of or not 0 <= points <= points_of.get(item, 0):
        messages.error(request, _("Give a score between 0 and the item's points."))
    elif not comment:
        messages.error(request, _("A manual score needs a comment: the student sees it."))
    else:
        ManualScore.change(assessment, student, item, points, comment, by=request.user)
        messages.success(request, _("The score was changed."))
    return redirect(back)


@login_required
@require_POST
def release_feedback(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    assessment = _get_assessment_for_instructor(request, course_slug, slug)
    Assessment.objects.filter(pk=assessment.pk).update(feedback_released=request.POST.get("release") == "1")
    # Scores held back until now may be shown (or hidden again): the LMS is told.
    send_score_changed(
        Assessment, assessment.hand_ins.values_list("user_id", flat=True), assessment.course_id
    )
    return redirect(_gradebook_url(assessment))
