from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GraderConfig(AppConfig):
    name = "grader"
    verbose_name = _("Grading")

    def ready(self) -> None:
        from django.conf import settings

        from . import checks  # noqa: F401  (registers the sandbox system check)
        from .core import sandbox

        # The sandbox mounts /usr and the interpreter's prefix: none of our data may live there.
        database = settings.DATABASES["default"]
        sqlite = [database["NAME"]] if "sqlite" in database["ENGINE"] else []
        sandbox.protect_paths([*map(str, sqlite), str(settings.VAR_DIR), str(settings.GRADER_DATA_DIR)])
