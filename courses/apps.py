from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CoursesConfig(AppConfig):
    name = "courses"
    verbose_name = _("Courses")

    def ready(self) -> None:
        from . import checks  # noqa: F401  registers the system checks
        from .pagecache import connect_signals

        connect_signals()  # content saved in the admin: its lessons' pages are rendered again
