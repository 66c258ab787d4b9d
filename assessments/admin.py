"""The admin of assessments. An assessment comes from its course's files (an edit here would be
undone by the next import), so only its feedback release is changed here; overrides can be set
(who and when are recorded); hand-ins, the exam log and manual score history are records to
read, never to rewrite (manual scores change on the instructor's student page, with a comment)."""

from django.contrib import admin
from django.http import HttpRequest
from django.utils import timezone

from .models import (
    Assessment,
    AssessmentSession,
    ExamLogEntry,
    HandIn,
    ManualScore,
    ManualScoreChange,
    StudentOverride,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Assessment)
class AssessmentAdmin(admin.ModelAdmin):
    list_display = (
        "title",
        "course",
        "kind",
        "opens",
        "due",
        "closes",
        "feedback",
        "feedback_released",
        "retired",
    )
    list_filter = ("course", "kind", "feedback", "retired")
    search_fields = ("slug", "title")
    list_select_related = ("course",)
    readonly_fields = [
        f.name for f in Assessment._meta.fields if f.name not in ("id", "feedback_released", "password")
    ]
    exclude = ("password",)  # the file holds it; the admin's pages should not show it

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(StudentOverride)
class StudentOverrideAdmin(admin.ModelAdmin):
    list_display = (
        "assessment",
        "user",
        "due",
        "closes",
        "time_factor",
        "extra_attempts",
        "set_by",
        "set_at",
    )
    list_filter = ("assessment__course", "assessment")
    search_fields = ("user__username", "assessment__slug", "note")
    list_select_related = ("assessment", "user", "set_by")
    raw_id_fields = ("user",)
    readonly_fields = ("set_by", "set_at")

    def save_model(self, request, obj, form, change) -> None:
        obj.set_by, obj.set_at = request.user, timezone.now()
        super().save_model(request, obj, form, change)
        obj.apply_to_session()  # a started exam's deadline follows, as on the instructor's page


@admin.register(AssessmentSession)
class AssessmentSessionAdmin(ReadOnlyAdmin):
    list_display = ("assessment", "user", "started_at", "deadline", "submitted_at")
    list_filter = ("assessment__course", "assessment")
    search_fields = ("user__username",)
    list_select_related = ("assessment", "user")


@admin.register(HandIn)
class HandInAdmin(ReadOnlyAdmin):
    list_display = ("assessment", "user", "item", "received_at", "attempt", "submission")
    list_filter = ("assessment__course", "assessment")
    search_fields = ("user__username", "item")
    list_select_related = ("assessment", "user", "attempt", "submission")
    date_hierarchy = "received_at"


@admin.register(ExamLogEntry)
class ExamLogEntryAdmin(ReadOnlyAdmin):
    list_display = ("at", "assessment", "user", "event", "item", "detail")
    list_filter = ("event", "assessment__course", "assessment")
    search_fields = ("user__username", "item")
    list_select_related = ("assessment", "user")
    date_hierarchy = "at"


@admin.register(ManualScore)
class ManualScoreAdmin(ReadOnlyAdmin):
    list_display = ("assessment", "user", "item", "points", "comment", "set_by", "set_at")
    list_filter = ("assessment__course", "assessment")
    search_fields = ("user__username", "item", "comment")
    list_select_related = ("assessment", "user", "set_by")


@admin.register(ManualScoreChange)
class ManualScoreChangeAdmin(ReadOnlyAdmin):
    list_display = ("changed_at", "assessment", "user", "item", "before", "after", "comment", "changed_by")
    list_filter = ("assessment__course", "assessment")
    search_fields = ("user__username", "item", "comment")
    list_select_related = ("assessment", "user", "changed_by")
