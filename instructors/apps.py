from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class InstructorsConfig(AppConfig):
    name = "instructors"
    verbose_name = _("Instructor tools")
