from django.contrib import admin, messages
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy as _

from .models import Attempt, Course, Enrollment, Exercise, Lesson, LessonProgress, Question


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
    list_display = ("title", "slug", "enrollment", "score_policy", "lesson_count", "student_count", "retired", "imported_at")
    list_filter = ("retired", "enrollment", "score_policy")
    search_fields = ("title", "slug", "summary")
    readonly_fields = ("slug", "source_path", "imported_at", "created_at", "description_preview")
    # The description is rendered from course.toml at import; raw HTML is never edited here.
    fields = ("slug", "title", "summary", "description_preview", "enrollment", "enrollment_code",
              "score_policy", "instructors", "retired", "source_path", "imported_at", "created_at")
    filter_horizontal = ("instructors",)
    inlines = [LessonInline]
    actions = ["reimport"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(instructors=request.user)

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
        from .exercises import check_exercises
        from .importer import ImportRefused, import_course

        for course in queryset:
            try:
                report = import_course(course.source_path, prepare_exercises=lambda s: check_exercises(s, build=True))
            except ImportRefused as refused:
                self.message_user(
                    request,
                    _("%(course)s was not imported: %(problems)s")
                    % {"course": course, "problems": "; ".join(map(str, refused.problems[:5]))},
                    messages.ERROR,
                )
            else:
                self.message_user(
                    request,
                    _("%(course)s imported: %(count)d change(s).") % {"course": course, "count": len(report.changes)},
                )


class QuestionInline(admin.TabularInline):
    model = Question
    fields = ("order", "slug", "kind", "max_attempts", "retired")
    readonly_fields = ("slug", "kind")
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
    readonly_fields = ("course", "slug", "source_file", "body_preview", "updated_at")
    fields = ("course", "slug", "title", "order", "summary", "retired", "source_file", "body_source", "body_preview")
    inlines = [QuestionInline, ExerciseInline]

    @admin.display(description=_("rendered lesson"))
    def body_preview(self, obj):
        return _preview(obj.body_html)

    def save_model(self, request, obj, form, change):
        # Lessons edited here are rendered like imported ones, so pages never render per request.
        from .rendering import render_markdown

        rendered = render_markdown(obj.body_source)
        obj.body_html = rendered.html
        for issue in rendered.issues:
            self.message_user(request, _("Line %(line)d: %(message)s") % {"line": issue.line, "message": issue.message}, messages.WARNING)
        super().save_model(request, obj, form, change)


@admin.register(Question)
class QuestionAdmin(InstructorScopedAdmin):
    list_display = ("slug", "kind", "lesson", "order", "max_attempts", "retired")
    list_filter = ("kind", "retired", "course")
    search_fields = ("slug", "prompt_html")
    readonly_fields = ("course", "lesson", "slug", "kind", "source_file", "prompt_preview", "spec", "reveal")
    exclude = ("prompt_html", "explanation_html")

    @admin.display(description=_("prompt preview"))
    def prompt_preview(self, obj):
        return _preview(obj.prompt_html)


@admin.register(Exercise)
class ExerciseAdmin(InstructorScopedAdmin):
    list_display = ("slug", "title", "lesson", "order", "content_hash_short", "retired")
    list_filter = ("retired", "course")
    search_fields = ("slug", "title")
    readonly_fields = ("course", "lesson", "slug", "source_dir", "content_hash", "prompt_preview", "spec", "reveal")
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
        return queryset if request.user.is_superuser else queryset.filter(lesson__course__instructors=request.user)


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ("user", "question", "kind", "status", "score", "correct", "after_reveal", "created_at")
    list_filter = ("kind", "status", "correct", "question__course", ("created_at", admin.DateFieldListFilter))
    search_fields = ("user__username", "question__slug")
    date_hierarchy = "created_at"
    list_select_related = ("user", "question")
    readonly_fields = ("user", "question", "kind", "status", "answer", "score", "correct", "after_reveal", "feedback",
                       "misconceptions", "created_at", "tries", "last_error")
    exclude = ("enqueued_at", "lease_token", "lease_expires_at")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(question__course__instructors=request.user)

    def has_add_permission(self, request):
        return False
