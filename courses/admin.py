from django.contrib import admin, messages
from django.db.models import Q
from django.tasks import TaskResultStatus
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .kinds import REGISTRY
from .models import (
    Attempt,
    Course,
    Enrollment,
    Exercise,
    HintOpening,
    Lesson,
    LessonProgress,
    Question,
    QuestionVariant,
)
from .reimport import latest_reimport, queue_reimport


class InstructorScopedAdmin(admin.ModelAdmin):
    """Instructors (staff, not superusers) see and edit only the courses they teach."""

    course_field = "course"

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**{f"{self.course_field}__instructors": request.user})

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        # Nothing can be moved into a course the instructor does not teach.
        if db_field.related_model is Course and not request.user.is_superuser:
            kwargs["queryset"] = Course.objects.taught_by(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


def _preview(html: str):
    return format_html('<div class="admin-preview">{}</div>', mark_safe(html))


class LessonInline(admin.TabularInline):
    model = Lesson
    fields = ("order", "slug", "title", "retired")
    readonly_fields = ("slug",)
    extra = 0
    show_change_link = True


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = (
        "title",
        "slug",
        "enrollment",
        "score_policy",
        "lesson_count",
        "student_count",
        "retired",
        "imported_at",
    )
    list_filter = ("retired", "enrollment", "score_policy")
    search_fields = ("title", "slug", "summary")
    readonly_fields = (
        "slug",
        "source_path",
        "imported_at",
        "last_reimport",
        "created_at",
        "description_preview",
    )
    # The description is rendered from course.toml at import; raw HTML is never edited here.
    fields = (
        "slug",
        "title",
        "summary",
        "description_preview",
        "enrollment",
        "enrollment_code",
        "score_policy",
        "instructors",
        "retired",
        "source_path",
        "imported_at",
        "last_reimport",
        "created_at",
    )
    filter_horizontal = ("instructors",)
    inlines = [LessonInline]
    actions = ["reimport"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(instructors=request.user)

    def get_readonly_fields(self, request, obj=None):
        readonly = super().get_readonly_fields(request, obj)
        # Who teaches a course is for superusers to decide: an instructor cannot add others.
        return readonly if request.user.is_superuser else (*readonly, "instructors")

    @admin.display(description=_("lessons"))
    def lesson_count(self, obj):
        return obj.lessons.active().count()

    @admin.display(description=_("students"))
    def student_count(self, obj):
        return obj.enrollments.count()

    @admin.display(description=_("description preview"))
    def description_preview(self, obj):
        return _preview(obj.description_html)

    @admin.action(description=_("Re-import selected courses from their folders"))
    def reimport(self, request, queryset):
        # Reference solutions run in the sandbox: a grading worker imports, never this request.
        for course in queryset:
            if not queue_reimport(course):
                self.message_user(
                    request,
                    _(
                        "%(course)s already has a re-import waiting or running, so no second one was queued. "
                        "Its outcome shows under “last re-import” on the course's page."
                    )
                    % {"course": course},
                    messages.WARNING,
                )
                continue
            self.message_user(
                request,
                _(
                    "%(course)s is queued for re-import. A grading worker imports its folder and runs the "
                    "reference solutions; the outcome shows under “last re-import” on the course's page."
                )
                % {"course": course},
            )

    @admin.display(description=_("last re-import"))
    def last_reimport(self, obj):
        job = latest_reimport(obj) if obj.pk else None
        if job is None:
            return None
        when = date_format(localtime(job.finished_at or job.started_at or job.enqueued_at), "DATETIME_FORMAT")
        outcome, items = job.return_value or {}, []
        if job.status == TaskResultStatus.READY:
            text = gettext("Queued at %(time)s: waiting for a grading worker.") % {"time": when}
        elif job.status == TaskResultStatus.RUNNING:
            text = gettext("A grading worker has been importing the folder since %(time)s.") % {"time": when}
        elif job.status == TaskResultStatus.FAILED:
            text = gettext(
                "Failed at %(time)s on the worker's side; the worker's log has the reason. "
                "Run the re-import again."
            ) % {"time": when}
        elif outcome.get("imported"):
            items = outcome["changes"]
            text = gettext("Imported at %(time)s: %(count)d change(s).") % {"time": when, "count": len(items)}
        else:
            items = outcome.get("problems", [])
            text = gettext(
                "Not imported at %(time)s: the files have %(count)d problem(s) and nothing was "
                "changed. Fix them, then run the re-import again."
            ) % {"time": when, "count": len(items)}
        listed = format_html_join("", "<li>{}</li>", ((item,) for item in items[:20]))
        return format_html("<p>{}</p><ul>{}</ul>", text, listed) if items else format_html("<p>{}</p>", text)


class KindFilter(admin.SimpleListFilter):
    """Question kinds by their names for people ("single choice"), not their identifiers."""

    title = _("kind")
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [(kind.name, kind.label) for kind in REGISTRY.values()]

    def queryset(self, request, queryset):
        return queryset.filter(kind=self.value()) if self.value() else queryset


@admin.display(description=_("kind"), ordering="kind")
def kind_label(question):
    return question.kind_label


@admin.display(description=_("question"))
def question_text(question):
    return question.short_text


class QuestionInline(admin.TabularInline):
    model = Question
    # Django accepts display functions here; django-stubs types these options as names only.
    fields = ("order", "slug", question_text, kind_label, "max_attempts", "retired")  # type: ignore[assignment]
    readonly_fields = ("slug", question_text, kind_label)  # type: ignore[assignment]
    extra = 0
    show_change_link = True


class ExerciseInline(admin.TabularInline):
    model = Exercise
    fields = ("order", "slug", "title", "retired")
    readonly_fields = ("slug",)
    extra = 0
    show_change_link = True


@admin.register(Lesson)
class LessonAdmin(InstructorScopedAdmin):
    list_display = ("title", "slug", "course", "order", "retired", "updated_at")
    list_filter = ("course", "retired")
    search_fields = ("title", "slug", "summary", "body_source")
    # The body is rendered at import with its lesson folder (figures read their data there);
    # it is changed in lesson.md, not here.
    readonly_fields = ("course", "slug", "source_file", "body_source", "body_preview", "updated_at")
    fields = (
        "course",
        "slug",
        "title",
        "order",
        "summary",
        "retired",
        "source_file",
        "body_source",
        "body_preview",
    )
    inlines = [QuestionInline, ExerciseInline]

    @admin.display(description=_("rendered lesson"))
    def body_preview(self, obj):
        return _preview(obj.body_html)


class QuestionVariantInline(admin.TabularInline):
    """A question's current variants, as its generator made them at the last import: read-only
    (the next import would undo an edit; old variants stay for the attempts graded on them)."""

    model = QuestionVariant
    fields = ("index_shown", "seed", "params", "prompt_preview")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def get_queryset(self, request):
        return super().get_queryset(request).filter(current=True).order_by("index")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=_("variant"))
    def index_shown(self, obj):
        return obj.index + 1

    @admin.display(description=_("prompt preview"))
    def prompt_preview(self, obj):
        return _preview(obj.prompt_html)


@admin.register(Question)
class QuestionAdmin(InstructorScopedAdmin):
    list_display = (question_text, "slug", kind_label, "lesson", "order", "max_attempts", "retired")
    list_filter = (KindFilter, "retired", "course")
    search_fields = ("slug", "prompt_html")
    readonly_fields = (  # type: ignore[assignment]  # display functions, as in QuestionInline
        "course",
        "lesson",
        "slug",
        kind_label,
        "source_file",
        "prompt_preview",
        "spec",
        "reveal",
        "hints",  # rendered HTML shown to students, from the file: as an exercise's hints
        "variant_count",  # from the question's file (and its generator): an import sets them
        "generated",
    )
    exclude = ("prompt_html", "explanation_html", "kind")
    inlines = [QuestionVariantInline]

    @admin.display(description=_("prompt preview"))
    def prompt_preview(self, obj):
        return _preview(obj.prompt_html)


@admin.register(Exercise)
class ExerciseAdmin(InstructorScopedAdmin):
    list_display = ("title", "slug", "lesson", "order", "content_hash_short", "retired")
    list_filter = ("retired", "course")
    search_fields = ("slug", "title")
    # Code and hints come from the exercise folder (an edit here would be undone by the next
    # import, and hints are HTML shown to students): read-only for everyone.
    readonly_fields = (
        "course",
        "lesson",
        "slug",
        "source_dir",
        "content_hash",
        "variant_count",
        "prompt_preview",
        "spec",
        "reveal",
        "starter_code",
        "solution_code",
        "misconceptions",
        "hints",
    )
    exclude = ("prompt_html",)

    @admin.display(description=_("content hash"))
    def content_hash_short(self, obj):
        return obj.content_hash[:12]

    @admin.display(description=_("prompt preview"))
    def prompt_preview(self, obj):
        return _preview(obj.prompt_html)


@admin.register(Enrollment)
class EnrollmentAdmin(InstructorScopedAdmin):
    list_display = ("user", "course", "created_at")
    list_filter = ("course",)
    search_fields = ("user__username", "user__email")
    date_hierarchy = "created_at"
    autocomplete_fields = ("user",)


@admin.register(LessonProgress)
class LessonProgressAdmin(admin.ModelAdmin):
    list_display = ("user", "lesson", "first_visited_at", "last_visited_at", "completed_at")
    list_filter = ("lesson__course",)
    search_fields = ("user__username", "lesson__slug")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return (
            queryset
            if request.user.is_superuser
            else queryset.filter(lesson__course__instructors=request.user)
        )


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ("user", "question", "kind", "status", "score", "correct", "after_reveal", "created_at")
    list_filter = ("kind", "status", "correct", "question__course", ("created_at", admin.DateFieldListFilter))
    search_fields = ("user__username", "question__slug")
    date_hierarchy = "created_at"
    list_select_related = ("user", "question")
    readonly_fields = (
        "user",
        "question",
        "kind",
        "status",
        "answer",
        "score",
        "correct",
        "after_reveal",
        "feedback",
        "misconceptions",
        "created_at",
        "tries",
        "last_error",
    )
    exclude = ("enqueued_at", "lease_token", "lease_expires_at")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return (
            queryset
            if request.user.is_superuser
            else queryset.filter(question__course__instructors=request.user)
        )

    def has_add_permission(self, request):
        return False


@admin.register(HintOpening)
class HintOpeningAdmin(admin.ModelAdmin):
    """Which student opened which step of an item's hints, and when: a record, never edited."""

    list_display = ("user", "question", "exercise", "step", "opened_at")
    list_filter = ("step", ("opened_at", admin.DateFieldListFilter))
    search_fields = ("user__username", "question__slug", "exercise__slug")
    list_select_related = ("user", "question", "exercise")
    readonly_fields = ("user", "question", "exercise", "step", "opened_at")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(
            Q(question__course__instructors=request.user) | Q(exercise__course__instructors=request.user)
        ).distinct()

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
