from django.db import IntegrityError, models, transaction
from django.db.models import F
from django.utils import timezone


class RateCounter(models.Model):
    """Requests counted in one fixed time window, for one address or the whole site.

    Rows live in the database every web process shares, and counting is one conditional
    UPDATE, so the limits hold across gunicorn workers and machines (see accounts/ratelimit.py).
    """

    key = models.CharField(max_length=120)  # "<limit>:<address>" or "<limit>:*" for the whole site
    window_end = models.DateTimeField(db_index=True)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window_end"], name="one_rate_counter_per_window")]

    def __str__(self) -> str:
        return f"{self.key} until {self.window_end:%H:%M:%S}: {self.count}"

    @classmethod
    def add_one(cls, key: str, window_end) -> int:
        """Count one more request in this window; return the window's count including it."""
        rows = cls.objects.filter(key=key, window_end=window_end)
        with transaction.atomic():
            if not rows.update(count=F("count") + 1):
                # First request of this key's window: a good moment to drop ended windows.
                cls.objects.filter(window_end__lt=timezone.now()).delete()
                try:
                    with transaction.atomic():
                        cls.objects.create(key=key, window_end=window_end, count=1)
                        return 1
                except IntegrityError:  # another request created it meanwhile
                    rows.update(count=F("count") + 1)
            return rows.values_list("count", flat=True).get()

    @classmethod
    def current(cls, key: str, window_end) -> int:
        return cls.objects.filter(key=key, window_end=window_end).values_list("count", flat=True).first() or 0
