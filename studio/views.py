"""The authoring area's pages: the course outline with each file's draft state, a file
editor with a live lesson preview, publishing and the revisions. Only the course's
instructors (and staff) get in; everyone else gets a 404, as on the course files page."""

import difflib
import hashlib
import tempfile
from datetime import datetime
from pathlib import Path, PurePosixPath

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from courses.exporter import export_course, write_folder
from courses.models import Course, Exercise, Question

from . import answer_regrade, checks, structure
from .drafts import (
    PUBLISHED,
    DraftRefused,
    delete_file,
    discard_draft,
    exercise_folder_of,
    file_states,
    may_author,
    publish,
    publish_files,
    read_text,
    revert,
    save_draft,
    working_copy,
)
from .models import AnswerRegrade, AnswerRegradeItem, ExerciseCheck, folder_digest
from .preview import LessonPreview, preview_lesson

_PROBLEMS = "studio-problems-%s"  # the session key of a course's last refused publish


def _get_course(request: HttpRequest, slug: str) -> Course:
    course = get_object_or_404(Course, slug=slug)
    if not may_author(request.user, course):
        raise Http404
    return course


@login_required
def outline(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    return _outline(request, course)


def _check_state(course: Course, files: dict[str, bytes], published: dict[str, bytes], folder: str) -> str:
    """ "published" (no draft changed it), "passed" (its files as they are passed a check),
    "unchecked" or "failed" (the latest check of these files)."""
    digest = folder_digest(files, folder)
    if digest == folder_digest(published, folder):
        return "published"
    latest = course.exercise_checks.filter(folder=folder, digest=digest).first()
    if latest is None or latest.is_pending:
        return "unchecked"
    return "passed" if latest.passed else "failed"


def _outline(request: HttpRequest, course: Course, problems=None, status: int = 200) -> HttpResponse:
    """The lessons and their items as the working copy has them (drafts included), in order."""
    files = working_copy(course)
    published = export_course(course)
    states = file_states(course)
    outline = structure.read_outline(files)
    lessons = []
    in_lessons: set[str] = set()
    kinds = {"exercise": Exercise._meta.verbose_name}
    for at, lesson in enumerate(outline):
        lesson_files = [
            (path, state) for path, state in states.items() if path.startswith(f"{lesson.folder}/")
        ]
        in_lessons.update(path for path, _state in lesson_files)
        rows = [
            {
                "item": item,
                "what": kinds.get(item.kind, Question._meta.verbose_name),
                "first": index == 0,
                "last": index == len(lesson.items) - 1,
                "check": _check_state(course, files, published, item.folder) if item.is_exercise else "",
            }
            for index, item in enumerate(lesson.items)
        ]
        lessons.append(
            {
                "lesson": lesson,
                "folder": lesson.folder,
                "number": at + 1,
                "first": at == 0,
                "last": at == len(outline) - 1,
                "new": lesson.file not in published,
                "files": lesson_files,
                "drafts": any(state != PUBLISHED for _path, state in lesson_files),
                "items": [
                    (item.slug, kinds.get(item.kind, Question._meta.verbose_name)) for item in lesson.items
                ],
                "rows": rows,
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
    """The preview of a lesson.md; its figures read the lesson folder's files as the working
    copy has them (a draft toy.toml, a lesson not published yet), written out for the render."""
    if PurePosixPath(path).name != "lesson.md":
        return None
    folder = str(PurePosixPath(path).parent)
    files = {
        name.removeprefix(f"{folder}/"): data
        for name, data in working_copy(course).items()
        if name.startswith(f"{folder}/")
    }
    with tempfile.TemporaryDirectory(prefix="dikkat-preview-") as place:
        write_folder(files, Path(place))
        return preview_lesson(text, Path(place))


def _version(text: str) -> str:
    """What the editor was opened on, to tell a save over someone else's newer one."""
    return hashlib.sha256(text.replace("\r\n", "\n").encode()).hexdigest()


def _editor_mode(path: str) -> str:
    return {".py": "python", ".md": "markdown"}.get(PurePosixPath(path).suffix, "text")


@login_required
def edit_file(request: HttpRequest, course_slug: str, path: str) -> HttpResponse:
    """Any text file of the course: "Save draft", "Preview" (without JavaScript), "Delete"
    (a draft too: publishing it retires what the file held) and "Discard draft"; a lesson.md
    shows its preview beside the text. A save over a version newer than the one the editor
    was opened on (another instructor's) is refused with the difference shown."""
    course = _get_course(request, course_slug)
    draft = course.draft_files.filter(path=path).first()
    deleting = draft is not None and draft.deleted
    text = read_text(course, path, published=deleting)
    if text is None:
        raise Http404
    current = _version(text)
    error = ""
    conflict: list[tuple[str, str]] = []
    status = 200
    if request.method == "POST":
        mine = request.POST.get("text", "")
        action = request.POST.get("action")
        if action == "save" and request.POST.get("version", current) != current:
            error, status = _("This file changed after you opened it."), 409
            conflict = _diff(text, mine, path)
            text = mine
        elif action == "save":
            text = mine
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
        else:
            text = mine
    problems = [p for p in request.session.get(_PROBLEMS % course.slug, []) if p["file"] == path]
    files = working_copy(course)
    exercise = exercise_folder_of(files, path)
    context = {
        "course": course,
        "here": path,
        "path": path,
        "text": text,
        "version": current,
        "editor_mode": _editor_mode(path),
        "is_draft": draft is not None,
        "deleting": deleting,
        "saved": request.GET.get("kaydedildi") == "1",
        "error": error,
        "conflict": conflict,
        "problems": problems,
        "preview": _preview(course, path, text.replace("\r\n", "\n")),
        "exercise": exercise,
        "check": (
            course.exercise_checks.filter(folder=exercise, digest=folder_digest(files, exercise)).first()
            if exercise
            else None
        ),
    }
    return render(request, "studio/edit.html", context, status=status)


def _diff(theirs: str, mine: str, path: str) -> list[tuple[str, str]]:
    """The lines of a unified diff from the stored text to the one being saved, with their kind."""
    lines = difflib.unified_diff(
        theirs.replace("\r\n", "\n").splitlines(keepends=True),
        mine.replace("\r\n", "\n").splitlines(keepends=True),
        fromfile=_("%(path)s (now)") % {"path": path},
        tofile=_("%(path)s (yours)") % {"path": path},
    )
    kinds = {"+": "add", "-": "remove", "@": "hunk"}
    return [
        ("file" if line.startswith(("+++", "---")) else kinds.get(line[:1], "same"), line.rstrip("\n"))
        for line in lines
    ]


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


def _publish_result(course: Course, result_id):
    try:
        result = publish_files.get_result(str(result_id))
    except (TaskResultDoesNotExist, TaskResultMismatch):
        raise Http404 from None
    if result.args[3] != course.pk:
        raise Http404
    return result


@login_required
def publish_status(request: HttpRequest, course_slug: str, result_id) -> HttpResponse:
    course = _get_course(request, course_slug)
    return _publish_page(request, course, _publish_result(course, result_id))


def _publish_page(request: HttpRequest, course: Course, result, error: str = "") -> HttpResponse:
    outcome = result.return_value if result.status == TaskResultStatus.SUCCESSFUL else None
    offers = (outcome or {}).get("regrade") or []
    regrades = course.answer_regrades.filter(publish_id=result.id)
    question_offers = [
        {**offer, **_regrade_state(regrades, offer["slug"])}
        for offer in offers
        if offer["kind"] == "question"
    ]
    context = {
        "course": course,
        "here": _("Publish"),
        "result_id": result.id,
        "waiting": result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING),
        "failed": result.status == TaskResultStatus.FAILED,
        "outcome": outcome,
        "exercise_offers": [offer for offer in offers if offer["kind"] == "exercise"],
        "question_offers": question_offers,
        "to_regrade": any(offer["regraded"] is None for offer in question_offers),
        "answer_regrades": regrades,
        "error": error,
    }
    return render(request, "studio/publish_status.html", context, status=400 if error else 200)


def _regrade_state(regrades, slug: str) -> dict:
    """Where the regrade of a question's answers taken on a publish's page is: "regraded" is
    None (not taken), "waiting" (a grading worker still has some), "failed" (the grader failed
    on some, the others are done) or "done"; "regrade" is the last regrade that has it."""
    items = AnswerRegradeItem.objects.filter(regrade__in=regrades, attempt__question__slug=slug)
    statuses = set(items.values_list("status", flat=True))
    last, last_finished = (
        items.order_by("-regrade__created_at", "-regrade__pk")
        .values_list("regrade", "regrade__finished_at")
        .first()
    ) or (None, None)
    if not statuses:
        state = None
    elif statuses & {AnswerRegradeItem.Status.QUEUED, AnswerRegradeItem.Status.RUNNING}:
        state = "waiting"
    elif last_finished is None:
        state = None  # cut off midway (its request died): offered again for the rest
    elif AnswerRegradeItem.Status.FAILED in statuses:
        state = "failed"
    else:
        state = "done"
    return {"regraded": state, "regrade": last}


@login_required
@require_POST
def regrade_answers(request: HttpRequest, course_slug: str, result_id) -> HttpResponse:
    """The publish page's offer taken: the answers of the chosen questions (among those whose
    answers this publish changed) graded again on what they ask now."""
    course = _get_course(request, course_slug)
    result = _publish_result(course, result_id)
    outcome = result.return_value if result.status == TaskResultStatus.SUCCESSFUL else None
    offered = {offer["slug"] for offer in (outcome or {}).get("regrade") or [] if offer["kind"] == "question"}
    chosen = [slug for slug in request.POST.getlist("question") if slug in offered]
    if not chosen:
        return _publish_page(request, course, result, _("Choose at least one question to regrade."))
    questions = list(
        course.questions.filter(slug__in=chosen, retired=False).order_by("lesson__order", "order")
    )
    # A publish recorded before its outcome held its time: the end of its task, a little later.
    recorded = (outcome or {}).get("published_at")
    published_at = datetime.fromisoformat(recorded) if recorded else result.finished_at or timezone.now()
    regrade = answer_regrade.start(course, questions, request.user, published_at, publish_id=result.id)
    return redirect("studio:answer_regrade", course.slug, regrade.pk)


@login_required
def answer_regrade_status(request: HttpRequest, course_slug: str, pk: int) -> HttpResponse:
    """What a regrade of answers did, per question: how many went up, down or stayed, how
    many a grading worker still has to grade; "Try again" queues those the grader failed on."""
    course = _get_course(request, course_slug)
    regrade = get_object_or_404(AnswerRegrade, pk=pk, course=course)
    items = regrade.items.select_related("attempt__question")
    if request.method == "POST":
        failed = items.filter(status=AnswerRegradeItem.Status.FAILED).values_list("pk", flat=True)
        AnswerRegradeItem.objects.requeue(failed)
        return redirect("studio:answer_regrade", course.slug, regrade.pk)
    rows: dict[int, dict] = {}
    for item in items:
        question = item.attempt.question
        row = rows.setdefault(
            question.pk,
            {"question": question, "total": 0, "up": 0, "down": 0, "same": 0, "waiting": 0, "failed": 0},
        )
        row["total"] += 1
        if item.is_pending:
            row["waiting"] += 1
        elif item.status == AnswerRegradeItem.Status.FAILED:
            row["failed"] += 1
        elif (item.delta or 0) > 1e-9:
            row["up"] += 1
        elif (item.delta or 0) < -1e-9:
            row["down"] += 1
        else:
            row["same"] += 1
    context = {
        "course": course,
        "here": _("Regrade"),
        "regrade": regrade,
        "rows": list(rows.values()),
        "waiting": any(row["waiting"] for row in rows.values()),
        "failed": any(row["failed"] for row in rows.values()),
        "graded": any(row["total"] > row["waiting"] + row["failed"] for row in rows.values()),
    }
    return render(request, "studio/answer_regrade.html", context)


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


# -- the outline's structure: new lessons and exercises, retiring, order ------------------------


class NewItemForm(forms.Form):
    """A new lesson's or exercise's slug and title; a slug the course uses is refused here."""

    slug = forms.CharField(
        label=gettext_lazy("Slug"),
        max_length=80,
        help_text=gettext_lazy(
            "Its name for life: lowercase letters and digits joined by hyphens, such as query-projection."
        ),
        widget=forms.TextInput(attrs={"autocapitalize": "off", "autocomplete": "off", "spellcheck": "false"}),
    )
    title = forms.CharField(label=gettext_lazy("Title"), max_length=200)

    def __init__(self, *args, taken: set[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.taken = taken

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"].strip()
        problem = structure.slug_problem(slug, self.taken)
        if problem:
            raise forms.ValidationError(problem)
        return slug

    def clean_title(self) -> str:
        title = self.cleaned_data["title"].strip()
        if not title:
            raise forms.ValidationError(_("Write a title."))
        return title


def _outline_url(course: Course, anchor: str = "") -> str:
    return reverse("studio:outline", args=[course.slug]) + (f"#{anchor}" if anchor else "")


@login_required
def new_lesson(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    lessons = structure.read_outline(working_copy(course))
    form = NewItemForm(request.POST or None, taken={lesson.slug for lesson in lessons})
    if request.method == "POST" and form.is_valid():
        try:
            folder = structure.create_lesson(
                course, form.cleaned_data["slug"], form.cleaned_data["title"], request.user
            )
        except DraftRefused as refused:
            form.add_error("slug", str(refused))
        else:
            return redirect("studio:edit", course.slug, f"{folder}/{structure.LESSON_FILE}")
    context = {
        "course": course,
        "here": _("New lesson"),
        "heading": _("New lesson"),
        "form": form,
        "intro": _(
            "The lesson gets a folder with lesson.md and an empty questions.toml, as drafts: "
            "students see it once you publish it."
        ),
    }
    return render(request, "studio/new_item.html", context, status=400 if form.errors else 200)


@login_required
def new_exercise(request: HttpRequest, course_slug: str, folder: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    lessons = structure.read_outline(working_copy(course))
    try:
        lesson = structure.find_lesson(lessons, folder)
    except DraftRefused:
        raise Http404 from None
    form = NewItemForm(request.POST or None, taken=structure.item_slugs(lessons))
    if request.method == "POST" and form.is_valid():
        try:
            where = structure.create_exercise(
                course, folder, form.cleaned_data["slug"], form.cleaned_data["title"], request.user
            )
        except DraftRefused as refused:
            form.add_error("slug", str(refused))
        else:
            return redirect("studio:edit", course.slug, f"{where}/exercise.toml")
    context = {
        "course": course,
        "here": _("New exercise"),
        "heading": _("New exercise in %(lesson)s") % {"lesson": lesson.title or lesson.folder},
        "form": form,
        "intro": _(
            "The exercise gets its folder from a small example that passes the checks: exercise.toml "
            "(prompt, cases, limits), starter.py, solution.py and cases.py, as drafts. Rewrite them, "
            "press “Check”, then publish."
        ),
    }
    return render(request, "studio/new_item.html", context, status=400 if form.errors else 200)


class NewFileForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("File name"),
        max_length=200,
        help_text=gettext_lazy("Inside the folder, such as variants/no-scaling.py or toy.toml."),
        widget=forms.TextInput(attrs={"autocapitalize": "off", "autocomplete": "off", "spellcheck": "false"}),
    )


@login_required
def new_file(request: HttpRequest, course_slug: str, folder: str) -> HttpResponse:
    """A new file in a lesson's or an exercise's folder (a misconception variant, a figure's
    data), as an empty draft opened in the editor."""
    course = _get_course(request, course_slug)
    files = working_copy(course)
    if not any(path.startswith(f"{folder}/") for path in files):
        raise Http404
    form = NewFileForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        path = f"{folder}/{form.cleaned_data['name'].strip().strip('/')}"
        try:
            if path in files:
                raise DraftRefused(_("%(path)s exists already: open it from the outline.") % {"path": path})
            save_draft(course, path, "", request.user)
        except DraftRefused as refused:
            form.add_error("name", str(refused))
        else:
            return redirect("studio:edit", course.slug, path)
    context = {
        "course": course,
        "here": _("New file"),
        "heading": _("New file in %(folder)s") % {"folder": folder},
        "form": form,
        "intro": _("The file is an empty draft until you write it and publish."),
    }
    return render(request, "studio/new_item.html", context, status=400 if form.errors else 200)


@login_required
def retire(request: HttpRequest, course_slug: str, folder: str, slug: str = "") -> HttpResponse:
    """Confirm, then draft the removal of a lesson (``slug`` empty) or one of its items."""
    course = _get_course(request, course_slug)
    lessons = structure.read_outline(working_copy(course))
    try:
        lesson = structure.find_lesson(lessons, folder)
        item = structure.find_item(lesson, slug) if slug else None
    except DraftRefused:
        raise Http404 from None
    if request.method == "POST":
        if item is None:
            structure.retire_lesson(course, folder, request.user)
        else:
            try:
                structure.retire_item(course, folder, slug, request.user)
            except DraftRefused as refused:
                return _outline(
                    request, course, [{"file": item.file, "line": 1, "message": str(refused)}], 400
                )
        return redirect(_outline_url(course))
    if item is None:
        what = _("the lesson %(title)s (%(folder)s)") % {"title": lesson.title, "folder": folder}
    elif item.is_exercise:
        what = _("the exercise %(slug)s") % {"slug": item.slug}
    else:
        what = _("the question %(slug)s") % {"slug": item.slug}
    context = {"course": course, "here": _("Retire"), "what": what, "lesson": lesson, "item": item}
    return render(request, "studio/retire.html", context)


@login_required
@require_POST
def move(request: HttpRequest, course_slug: str) -> HttpResponse:
    """One place up or down (the buttons), or a whole new order (drag and drop)."""
    course = _get_course(request, course_slug)
    folder = request.POST.get("folder", "")
    slug = request.POST.get("slug", "")
    step = {"up": -1, "down": 1}.get(request.POST.get("direction", ""), 0)
    order = [name for name in request.POST.get("order", "").split(",") if name]
    try:
        if order and folder:
            structure.order_items(course, folder, order, request.user)
        elif order:
            structure.order_lessons(course, order, request.user)
        elif slug and step:
            structure.move_item(course, folder, slug, step, request.user)
        elif step:
            structure.move_lesson(course, folder, step, request.user)
        else:
            return HttpResponse(_("Say what to move and where."), status=400)
    except DraftRefused as refused:
        if request.headers.get("X-Requested-With") == "dikkat":
            return JsonResponse({"error": str(refused)}, status=400)
        return _outline(request, course, [{"file": "", "line": 0, "message": str(refused)}], 400)
    if request.headers.get("X-Requested-With") == "dikkat":
        return JsonResponse({"moved": True})
    anchor = f"item-{slug}" if slug else f"lesson-{folder}"
    return redirect(_outline_url(course, anchor))


# -- "Check" of an exercise's drafts -------------------------------------------------------------


@login_required
@require_POST
def start_check(request: HttpRequest, course_slug: str, folder: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    try:
        check = checks.start(course, folder, request.user)
    except ValueError:
        raise Http404 from None
    return redirect("studio:check", course.slug, check.pk)


@login_required
def check_status(request: HttpRequest, course_slug: str, pk: int) -> HttpResponse:
    course = _get_course(request, course_slug)
    check = get_object_or_404(ExerciseCheck, pk=pk, course=course)
    files = working_copy(course)
    context = {
        "course": course,
        "here": _("Check"),
        "check": check,
        "current": folder_digest(files, check.folder) == check.digest,
        "report": check.report,
        "first_file": f"{check.folder}/exercise.toml",
    }
    return render(request, "studio/check.html", context)
