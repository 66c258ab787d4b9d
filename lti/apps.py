from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LtiConfig(AppConfig):
    name = "lti"
    verbose_name = _("LTI (learning management systems)")

    def ready(self) -> None:
        # Score changes are signalled by the layers below (they cannot import lti): each one
        # becomes a grade outbox row for the student's LMS links.
        from jobs.signals import score_changed

        from .passback import on_score_changed

        score_changed.connect(on_score_changed, dispatch_uid="lti.passback.on_score_changed")
