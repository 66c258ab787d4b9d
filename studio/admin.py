"""Drafts, revisions, exercise checks and answer regrades in the admin: to look at, never to
edit (the authoring area writes them; an edit here would bypass its checks)."""

from django.contrib import admin
from django.http import HttpRequest

from .models import AnswerRegrade, AnswerRegradeItem, DraftFile, ExerciseCheck, GradingChange, Revision


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(DraftFile)
class DraftFileAdmin(ReadOnlyAdmin):
    list_display = ("path", "course", "deleted", "updated_by", "updated_at")
    list_filter = ("course", "deleted")
    search_fields = ("path",)


@admin.register(Revision)
class RevisionAdmin(ReadOnlyAdmin):
    list_display = ("number", "course", "author", "created_at", "summary")
    list_filter = ("course",)
    search_fields = ("summary",)


@admin.register(ExerciseCheck)
class ExerciseCheckAdmin(ReadOnlyAdmin):
    list_display = ("folder", "course", "status", "passed", "requested_by", "created_at")
    list_filter = ("course", "status", "passed")
    exclude = ("files",)


@admin.register(AnswerRegrade)
class AnswerRegradeAdmin(ReadOnlyAdmin):
    list_display = ("course", "created_by", "created_at")
    list_filter = ("course",)


@admin.register(AnswerRegradeItem)
class AnswerRegradeItemAdmin(ReadOnlyAdmin):
    list_display = ("regrade", "attempt", "status", "old_score", "new_score")
    list_filter = ("status",)
    raw_id_fields = ("attempt",)


@admin.register(GradingChange)
class GradingChangeAdmin(ReadOnlyAdmin):
    list_display = ("question", "changed_at")
    list_filter = ("question__course",)
    raw_id_fields = ("question",)
