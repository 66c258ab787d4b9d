from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GraderConfig(AppConfig):
    name = "grader"
    verbose_name = _("Grading")

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the sandbox system check)
