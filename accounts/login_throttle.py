"""Failed log-ins: a pause that grows for one (username, address) pair, and a cap per address.

django-axes records each failure (``AccessAttempt`` rows keyed by username and client address,
read through ``accounts.ratelimit.client_address``: behind our proxies, an IPv6 /64 as one) and asks this handler whether
a log-in may go ahead:

- after ``AXES_FAILURE_LIMIT`` wrong passwords for one username from one address, that pair
  waits ``LOGIN_PAUSE`` seconds; every further wrong password doubles the pause, up to
  ``LOGIN_PAUSE_MAX``. Tries during a pause are refused and not counted. A student behind the
  same address, or the same student elsewhere, is never held up by it;
- an address with more than ``LOGIN_FAILURE_LIMIT_PER_IP`` failures an hour, whatever the
  usernames (password spraying), waits for the hour to end.

Failures are forgotten ``AXES_COOLOFF_TIME`` after the last one, or at a successful log-in.
"""

from datetime import timedelta

from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.db.models import Max, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .ratelimit import LOGIN_FAILURES, human_duration


def pause_for(failures: int) -> timedelta:
    """How long a (username, address) pair waits after this many recent wrong passwords."""
    over = failures - settings.AXES_FAILURE_LIMIT
    if over < 0:
        return timedelta(0)
    seconds = settings.LOGIN_PAUSE * 2 ** min(over, 20)
    return timedelta(seconds=min(seconds, settings.LOGIN_PAUSE_MAX))


class LoginThrottle(AxesDatabaseHandler):
    """AXES_HANDLER: axes' database records, with a growing pause and the per-address cap."""

    def is_locked(self, request: HttpRequest, credentials: dict | None = None) -> bool:
        return self.pause_left(request, credentials) > 0 or LOGIN_FAILURES.refusal(request) is not None

    def pause_left(self, request: HttpRequest, credentials: dict | None = None) -> int:
        """Seconds until this username may try again from this address (0: it may now)."""
        left = 0
        for attempts in self.get_user_attempts(request, credentials):
            recent = attempts.aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
            if recent["failures"]:
                ends = recent["last"] + pause_for(recent["failures"])
                now = request.axes_attempt_time  # type: ignore[attr-defined]  # set by django-axes
                left = max(left, int((ends - now).total_seconds() + 0.999))
        return left

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        # A try that axes refused (during a pause, or over the address's cap) never reached the
        # password check: it is not a failure of the address. Read before axes records this one,
        # which sets the flag when this failure starts a pause.
        refused = request is not None and getattr(request, "axes_locked_out", False)
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is not None and not refused:
            LOGIN_FAILURES.count(request)


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: 429 with Retry-After and the wait in words ("15 dakika")."""
    handler = AxesProxyHandler.get_implementation()
    pause = handler.pause_left(request, credentials)
    spraying = LOGIN_FAILURES.refusal(request)
    if spraying is not None and spraying.retry_after >= pause:
        return spraying.response(request)
    pause = max(pause, 1)
    response = render(
        request, "registration/locked_out.html", {"duration": human_duration(pause)}, status=429
    )
    response["Retry-After"] = str(pause)
    return response
