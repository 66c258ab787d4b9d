from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from . import regrade as regrades
from .models import Submission


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "user",
        "exercise",
        "mode",
        "status",
        "verdict",
        "score",
        "tries",
        "created_at",
        "duration_ms",
    )
    list_filter = (
        "status",
        "verdict",
        "mode",
        "exercise__course",
        "exercise",
        ("created_at", admin.DateFieldListFilter),
    )
    search_fields = ("user__username", "exercise__slug", "code")
    date_hierarchy = "created_at"
    list_select_related = ("user", "exercise")
    readonly_fields = [f.name for f in Submission._meta.fields if f.name != "id"] + ["result_preview"]
    fields = (
        "user",
        "exercise",
        "mode",
        "status",
        "verdict",
        "score",
        "misconception",
        "result_preview",
        "code",
        "stdout",
        "created_at",
        "started_at",
        "finished_at",
        "duration_ms",
        "tries",
        "lease_expires_at",
        "graded_hash",
        "last_error",
    )

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return (
            queryset
            if request.user.is_superuser
            else queryset.filter(exercise__course__instructors=request.user)
        )

    def has_add_permission(self, request):
        return False

    actions = ["regrade_selected"]

    @admin.action(description=_("Regrade selected submissions (preview first)"))
    def regrade_selected(self, request, queryset):
        by_exercise = {}
        for submission in queryset.select_related("exercise__course"):
            by_exercise.setdefault(submission.exercise, []).append(submission.pk)
        for exercise, ids in by_exercise.items():
            run = regrades.start(exercise, request.user, ids)
            url = reverse("instructors:regrade", args=[exercise.course.slug, run.pk])
            self.message_user(
                request,
                format_html(
                    _(
                        '{count} submission(s) of {exercise}: <a href="{url}">review the preview, then apply</a>.'
                    ),
                    count=len(ids),
                    exercise=exercise.slug,
                    url=url,
                ),
            )

    @admin.display(description=_("result"))
    def result_preview(self, obj):
        items = format_html_join(
            "",
            "<li>{} {}{}: {}</li>",
            (
                (
                    "✓" if t["passed"] else "✗",
                    t["name"],
                    f" ({gettext('hidden')})" if t["hidden"] else "",
                    t["message"] or "",
                )
                for t in obj.rendered_tests()
            ),
        )
        return format_html("<p>{}</p><ul>{}</ul>", obj.rendered_message(), items)
