"""Instructor pages of misconception mining (instructors.mining): the candidates of a course's
exercises, one exercise's candidates with examples, and the export of one candidate as a
variant file and a TOML stanza. Reading only: nothing here writes to the database. Only the
course's instructors and admins get in; everyone else gets a 404."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from courses.models import Course, Exercise

from . import mining
from .stats import misconception_labels


def _get_course_for_instructor(request: HttpRequest, course_slug: str) -> Course:
    course = get_object_or_404(Course.objects.active(), slug=course_slug)
    if not course.is_instructor(request.user):
        raise Http404  # as every instructor page: not even whether the course has one
    return course


def _get_exercise_for_instructor(request: HttpRequest, course_slug: str, slug: str) -> Exercise:
    course = _get_course_for_instructor(request, course_slug)
    return get_object_or_404(course.exercises.active().select_related("course", "lesson"), slug=slug)


@login_required
@require_GET
def course_candidates(request: HttpRequest, course_slug: str) -> HttpResponse:
    """Every exercise of the course with how many candidates it has."""
    course = _get_course_for_instructor(request, course_slug)
    exercises = list(course.exercises.active().select_related("lesson").order_by("lesson__order", "order"))
    counts = mining.candidate_counts(exercises)
    rows = [{"exercise": e, "candidates": counts[e.pk][0], "students": counts[e.pk][1]} for e in exercises]
    return render(
        request,
        "instructors/mining_course.html",
        {"course": course, "rows": rows, "min_students": mining.MIN_STUDENTS},
    )


def _page(
    request: HttpRequest,
    exercise: Exercise,
    result: mining.Mining,
    refused: tuple[str, str, str] | None = None,
) -> HttpResponse:
    """The exercise's candidates; ``refused`` is (key, tag, why) when the tag typed in one
    candidate's form cannot be used: the form shows it again with the reason."""
    labels = misconception_labels(exercise)
    candidates = []
    for group in result.candidates:
        _, tag, why = refused if refused and refused[0] == group.key else (group.key, group.proposed_tag, "")
        candidates.append(
            {
                "group": group,
                "described": mining.describe(group),
                "resembles": [f"{labels.get(t, t)} ({t})" for t in group.resembles],
                "tag": tag,
                "error": why,
            }
        )
    catalogued = [{"group": group, "label": labels.get(group.tag, group.tag)} for group in result.catalogued]
    return render(
        request,
        "instructors/mining.html",
        {
            "course": exercise.course,
            "exercise": exercise,
            "mining": result,
            "candidates": candidates,
            "catalogued": catalogued,
        },
    )


@login_required
@require_GET
def exercise_candidates(request: HttpRequest, course_slug: str, slug: str) -> HttpResponse:
    exercise = _get_exercise_for_instructor(request, course_slug, slug)
    return _page(request, exercise, mining.mine(exercise))


@login_required
@require_GET
def export_candidate(request: HttpRequest, course_slug: str, slug: str, key: str) -> HttpResponse:
    """A candidate as ``variants/<tag>.py`` and a TOML stanza: shown to copy, or with
    ``?indir=py`` / ``?indir=toml`` downloaded. The tag comes from the page's small form."""
    exercise = _get_exercise_for_instructor(request, course_slug, slug)
    result = mining.mine(exercise)
    group = result.candidate(key)
    if group is None:
        messages.warning(
            request,
            _(
                "That candidate is no longer on the list: the students' submissions have changed since. Here is the list as it is now."
            ),
        )
        return redirect("instructors:mining", exercise.course.slug, exercise.slug)
    tag = request.GET.get("etiket", "").strip()
    problem = mining.tag_problem(tag, exercise)
    if problem is not None:
        return _page(request, exercise, result, (key, tag, problem))
    variant = mining.variant_file(exercise, group, tag)
    stanza = mining.toml_stanza(group, tag)
    download = request.GET.get("indir")
    if download in ("py", "toml"):
        text, name = (variant, f"{tag}.py") if download == "py" else (stanza, f"{tag}.toml")
        response = HttpResponse(text, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    return render(
        request,
        "instructors/mining_export.html",
        {
            "course": exercise.course,
            "exercise": exercise,
            "group": group,
            "described": mining.describe(group),
            "tag": tag,
            "variant": variant,
            "stanza": stanza,
            "names_author": mining.names_author(group, variant),
        },
    )
