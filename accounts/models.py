from datetime import datetime, timedelta

from django.db import IntegrityError, models, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class RateCounter(models.Model):
    """Requests counted for one address or the whole site, in a window that starts at the first.

    Rows live in the database every web process shares, and counting is one conditional
    UPDATE, so the limits hold across gunicorn workers and machines (see accounts/ratelimit.py).
    """

    key = models.CharField(
        _("limit and address"), max_length=120, unique=True
    )  # "<limit>:<address>", or "<limit>:*" for the site
    window_end = models.DateTimeField(_("window ends"), db_index=True)
    count = models.PositiveIntegerField(_("requests"), default=0)

    class Meta:
        verbose_name = _("request counter")
        verbose_name_plural = _("request counters")

    def __str__(self) -> str:
        return f"{self.key} until {self.window_end:%H:%M:%S}: {self.count}"

    @classmethod
    def add_one(cls, key: str, window: timedelta) -> tuple[int, datetime]:
        """Count one more request; return the count in the running window (this one included)
        and when that window ends. A window starts at the first request and lasts ``window``."""
        now = timezone.now()
        rows = cls.objects.filter(key=key)
        running = rows.filter(window_end__gt=now)
        with transaction.atomic():
            if not running.update(count=F("count") + 1):
                # No window running: the key's old row starts again, or a first row is made.
                if not rows.filter(window_end__lte=now).update(count=1, window_end=now + window):
                    try:
                        with transaction.atomic():
                            cls.objects.filter(window_end__lt=now).delete()  # other keys' ended windows
                            cls.objects.create(key=key, count=1, window_end=now + window)
                    except IntegrityError:  # another request started the window meanwhile
                        running.update(count=F("count") + 1)
            return rows.values_list("count", "window_end").get()

    @classmethod
    def current(cls, key: str) -> tuple[int, datetime | None]:
        """The count in the running window and its end; (0, None) when none is running."""
        row = (
            cls.objects.filter(key=key, window_end__gt=timezone.now())
            .values_list("count", "window_end")
            .first()
        )
        return row or (0, None)
