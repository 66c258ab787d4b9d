"""A course's files for its instructors: a zip of exactly what the last import read, and a
zip upload that imports a course as ``import_course`` does (queued: a worker runs it).
Only the course's instructors and staff get in; everyone else gets a 404."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.tasks import TaskResultStatus
from django.tasks.exceptions import TaskResultDoesNotExist, TaskResultMismatch
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from assessments.models import Assessment
from courses.exporter import edited_since_import, export_course, folder_name, zip_bytes
from courses.models import Course, Exercise, Lesson, Question
from courses.uploads import MAX_ZIP_BYTES, UploadRefused, check, discard, import_upload, read_zip, unpack


def _may_manage(user, course: Course) -> bool:
    """The course's instructors (and superusers): staff status is for the admin, and an
    instructor who uses it does not get the files of courses they do not teach."""
    return user.is_superuser or course.is_instructor(user)


def _get_course(request: HttpRequest, slug: str) -> Course:
    course = get_object_or_404(Course, slug=slug)
    if not _may_manage(request.user, course):
        raise Http404
    return course


class UploadForm(forms.Form):
    archive = forms.FileField(
        label=gettext_lazy("Course folder as a zip"),
        help_text=gettext_lazy("One folder with course.toml in it, as the course download makes it."),
        widget=forms.ClearableFileInput(attrs={"accept": ".zip,application/zip"}),
    )
    force = forms.BooleanField(
        label=gettext_lazy("Overwrite what was changed in the database since the last import"),
        required=False,
    )

    def clean_archive(self):
        archive = self.cleaned_data["archive"]
        if archive.size > MAX_ZIP_BYTES:
            raise forms.ValidationError(
                _("The zip is %(size)s; the most a course may be is %(limit)s.")
                % {"size": filesizeformat(archive.size), "limit": filesizeformat(MAX_ZIP_BYTES)}
            )
        return archive


def _edited_rows(course: Course) -> list[tuple[str, str]]:
    """(what, slug) of the rows changed in the database since the last import."""
    labels = {
        "course": Course._meta.verbose_name,
        "lesson": Lesson._meta.verbose_name,
        "question": Question._meta.verbose_name,
        "exercise": Exercise._meta.verbose_name,
        "assessment": Assessment._meta.verbose_name,
    }
    rows = [key.partition(" ") for key in edited_since_import(course)]
    return [(str(labels[what]), slug) for what, _sep, slug in rows if what in labels]


@login_required
def course_files(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    context = {
        "course": course,
        "here": _("Course files"),
        "file_count": course.source_files.count(),
        "edited": _edited_rows(course),
        "form": UploadForm(),
    }
    return render(request, "instructors/course_files.html", context)


@login_required
def course_zip(request: HttpRequest, course_slug: str) -> HttpResponse:
    course = _get_course(request, course_slug)
    files = export_course(course)
    if not files:
        raise Http404
    folder = folder_name(course)
    return HttpResponse(
        zip_bytes(files, folder),
        content_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{folder}.zip"'},
    )


@login_required
def upload(request: HttpRequest) -> HttpResponse:
    """Staff upload a new course; an instructor, a new version of a course they teach
    (superusers, any)."""
    if not (request.user.is_staff or Course.objects.filter(instructors=request.user.pk).exists()):
        raise Http404
    form = UploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            folder, files = read_zip(form.cleaned_data["archive"])
        except UploadRefused as refused:
            form.add_error("archive", str(refused))
        else:
            root = unpack(folder, files)
            source = check(root)
            course = Course.objects.filter(slug=source.slug).first()
            if source.problems:
                problems = [str(problem) for problem in source.problems]
                discard(root)
            elif not (
                request.user.is_superuser
                or (course is None and request.user.is_staff)  # a new course: the site's staff
                or (course is not None and course.is_instructor(request.user))
            ):
                discard(root)
                form.add_error(
                    "archive",
                    _("You are not an instructor of the course %(slug)s: only its instructors may import it.")
                    % {"slug": source.slug},
                )
            else:
                result = import_upload.enqueue(str(root), form.cleaned_data["force"], request.user.pk)
                return redirect("instructors:upload_status", result.id)
    status = 400 if request.method == "POST" else 200
    return render(request, "instructors/upload.html", {"form": form, "problems": problems}, status=status)


@login_required
def upload_status(request: HttpRequest, result_id) -> HttpResponse:
    try:
        result = import_upload.get_result(str(result_id))
    except (TaskResultDoesNotExist, TaskResultMismatch):
        raise Http404 from None
    if result.args[2] != request.user.pk and not request.user.is_superuser:
        raise Http404
    outcome = result.return_value if result.status == TaskResultStatus.SUCCESSFUL else None
    course = (
        Course.objects.filter(slug=outcome["course"]).first() if outcome and outcome["imported"] else None
    )
    context = {
        "waiting": result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING),
        "failed": result.status == TaskResultStatus.FAILED,
        "outcome": outcome,
        "course": course,
    }
    return render(request, "instructors/upload_status.html", context)
