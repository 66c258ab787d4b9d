"""Labels for the admin pages of the apps Dikkat uses but does not own.

django-axes (the log-in pauses) and django-tasks-db (the background import jobs) name their apps
in English only; their models and fields are translatable, and locale/tr has the Turkish. The
msgids are listed here so that makemessages keeps them in our catalogue.
"""

from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.apps import apps
from django.contrib import admin
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop
from django_tasks_db.admin import DBTaskResultAdmin
from django_tasks_db.models import DBTaskResult

apps.get_app_config("axes").verbose_name = _("Log-in pauses")
apps.get_app_config("django_tasks_database").verbose_name = _("Background jobs")

THIRD_PARTY_LABELS = (
    # django-axes
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
    gettext_noop("User Agent"),
    gettext_noop("HTTP Accept"),
    gettext_noop("Access lock out"),
    gettext_noop("Access Attempt"),
    gettext_noop("Expires At"),
    gettext_noop("Session key hash (sha256)"),
    gettext_noop("Attempt Remaining"),
    gettext_noop("Locked Out"),
    gettext_noop("Not set"),
    # django-tasks-db
    gettext_noop("Task Result"),
    gettext_noop("Task Results"),
    gettext_noop("enqueued at"),
    gettext_noop("started at"),
    gettext_noop("finished at"),
    gettext_noop("args kwargs"),
    gettext_noop("priority"),
    gettext_noop("task path"),
    gettext_noop("worker id"),
    gettext_noop("queue name"),
    gettext_noop("backend name"),
    gettext_noop("run after"),
    gettext_noop("return value"),
    gettext_noop("exception class path"),
    gettext_noop("traceback"),
)


class TaskResultAdmin(DBTaskResultAdmin):
    """django-tasks-db's list of background jobs, with columns named in the site's language."""

    list_display = (
        "id",
        "task",
        "status",
        "enqueued_at",
        "started_at",
        "finished_at",
        "priority",
        "queue_name",
    )

    @admin.display(description=_("task"))
    def task(self, obj):
        return obj.task_name

    @admin.display(description=_("traceback"))
    def formatted_traceback(self, obj):
        return super().formatted_traceback(obj)

    @admin.display(description=_("run after"))
    def display_run_after(self, obj):
        return super().display_run_after(obj)


admin.site.unregister(DBTaskResult)
admin.site.register(DBTaskResult, TaskResultAdmin)


class LogInAttemptAdmin(AccessAttemptAdmin):
    """django-axes' list of log-in attempts, with its status column named."""

    @admin.display(description=_("status"))
    def status(self, obj):
        return super().status(obj)


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, LogInAttemptAdmin)
