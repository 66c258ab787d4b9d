from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GraderConfig(AppConfig):
    name = "grader"
    verbose_name = _("Grading")
