"""The authoring area's pages: the course outline with each file's draft state, a file
editor with a live lesson preview, publishing and the revisions. Only the course's
instructors (and staff) get in; everyone else gets a 404, as on the course files page."""

from pathlib import Path, PurePosixPath

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from courses.exporter import folder_name
from courses.models import Course, Exercise, Question

from .drafts import (
    PUBLISHED,
    DraftRefused,
    delete_file,
    discard_draft,
    file_states,
    may_author,
    publish,
    publish_files,
    read_text,
    revert,
    save_draft,
)
from .preview import LessonPreview, preview_lesson

_PROBLEMS = "studio-problems-%s"  # the session key of a course's last refused publish


def _get_course(request: HttpRequest, slug: str) -> Course:
    course = get_object_or_404(Course, slug=slug)
    if not may_author(request.user, course):
        raise Http404
    return course


def _lesson_folder(source_file: str, folder: str) -> str:
    # Lesson.source_file is "<course folder>/<lesson folder>/lesson.md".
    return str(PurePosixPath(source_file.removeprefix(f"{folder}/")).parent)


@login_required
def outline(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    return _outline(request, course)


def _outline(request: HttpRequest, course: Course, problems=None, status: int = 200) -> HttpResponse:
    folder = folder_name(course)
    states = file_states(course)
    lessons = []
    in_lessons: set[str] = set()
    for lesson in course.lessons.active():
        where = _lesson_folder(lesson.source_file, folder)
        files = [(path, state) for path, state in states.items() if path.startswith(f"{where}/")]
        in_lessons.update(path for path, _state in files)
        lessons.append(
            {
                "lesson": lesson,
                "folder": where,
                "files": files,
                "drafts": any(state != PUBLISHED for _path, state in files),
                "items": [(q.slug, Question._meta.verbose_name) for q in lesson.questions.active()]
                + [(e.slug, Exercise._meta.verbose_name) for e in lesson.exercises.active()],
            }
        )
    context = {
        "course": course,
        "here": _("Authoring"),
        "lessons": lessons,
        "other_files": [(p, s) for p, s in states.items() if p not in in_lessons],
        "draft_count": sum(state != PUBLISHED for state in states.values()),
        "problems": problems if problems is not None else request.session.get(_PROBLEMS % course.slug, []),
    }
    return render(request, "studio/outline.html", context, status=status)


def _preview(course: Course, path: str, text: str) -> LessonPreview | None:
    if PurePosixPath(path).name != "lesson.md":
        return None
    lesson_dir = Path(course.source_path) / PurePosixPath(path).parent if course.source_path else None
    return preview_lesson(text, lesson_dir if lesson_dir and lesson_dir.is_dir() else None)


@login_required
def edit_file(request: HttpRequest, course_slug: str, path: str) -> HttpResponse:
    """Any text file of the course: "Save draft", "Preview" (without JavaScript), "Delete"
    (a draft too: publishing it retires what the file held) and "Discard draft"; a lesson.md
    shows its preview beside the text."""
    course = _get_course(request, course_slug)
    draft = course.draft_files.filter(path=path).first()
    deleting = draft is not None and draft.deleted
    text = read_text(course, path, published=deleting)
    if text is None:
        raise Http404
    error = ""
    status = 200
    if request.method == "POST":
        text = request.POST.get("text", "")
        action = request.POST.get("action")
        if action == "save":
            try:
                save_draft(course, path, text, request.user)
            except DraftRefused as refused:
                error, status = str(refused), 400
            else:
                return redirect(reverse("studio:edit", args=[course.slug, path]) + "?kaydedildi=1")
        elif action == "discard":
            discard_draft(course, path)
            return redirect("studio:edit", course.slug, path)
        elif action == "delete":
            delete_file(course, path, request.user)
            return redirect("studio:outline", course.slug)
    problems = [p for p in request.session.get(_PROBLEMS % course.slug, []) if p["file"] == path]
    context = {
        "course": course,
        "here": path,
        "path": path,
        "text": text,
        "editor_mode": "" if path.endswith(".py") else "text",
        "is_draft": draft is not None,
        "deleting": deleting,
        "saved": request.GET.get("kaydedildi") == "1",
        "error": error,
        "problems": problems,
        "preview": _preview(course, path, text.replace("\r\n", "\n")),
    }
    return render(request, "studio/edit.html", context, status=status)


@login_required
@require_POST
def preview(request: HttpRequest, course_slug: str) -> JsonResponse:
    """The live preview of a lesson.md being edited: its HTML and problems by line."""
    course = _get_course(request, course_slug)
    result = _preview(course, request.POST.get("path", ""), request.POST.get("text", "")) or LessonPreview()
    return JsonResponse(
        {
            "title": result.title,
            "html": result.html,
            "problems": [{"line": line, "message": message} for line, message in result.problems],
        }
    )


@login_required
@require_POST
def publish_view(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    only = request.POST.get("only") or None
    outcome = publish(
        course,
        request.user,
        only=only,
        force=request.POST.get("force") == "on",
        summary=request.POST.get("summary", "")[:300],
    )
    if outcome.problems:
        problems = [p.as_dict() for p in outcome.problems]
        request.session[_PROBLEMS % course.slug] = problems
        return _outline(request, course, problems, status=400)
    request.session.pop(_PROBLEMS % course.slug, None)
    return redirect("studio:publish_status", course.slug, outcome.result_id)


@login_required
def publish_status(request: HttpRequest, course_slug: str, result_id) -> HttpResponse:
    course = _get_course(request, course_slug)
    try:
        result = publish_files.get_result(str(result_id))
    except (TaskResultDoesNotExist, TaskResultMismatch):
        raise Http404 from None
    if result.args[3] != course.pk:
        raise Http404
    outcome = result.return_value if result.status == TaskResultStatus.SUCCESSFUL else None
    context = {
        "course": course,
        "here": _("Publish"),
        "waiting": result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING),
        "failed": result.status == TaskResultStatus.FAILED,
        "outcome": outcome,
    }
    return render(request, "studio/publish_status.html", context)


@login_required
def revisions(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    context = {
        "course": course,
        "here": _("Revisions"),
        "revisions": course.revisions.select_related("author"),
    }
    return render(request, "studio/revisions.html", context)


@login_required
@require_POST
def revert_view(request: HttpRequest, course_slug: str, number: int) -> HttpResponse:
    course = _get_course(request, course_slug)
    revision = get_object_or_404(course.revisions, number=number)
    outcome = revert(course, revision, request.user, force=request.POST.get("force") == "on")
    if outcome.problems:
        return _outline(request, course, [p.as_dict() for p in outcome.problems], status=400)
    return redirect("studio:publish_status", course.slug, outcome.result_id)
