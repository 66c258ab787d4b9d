"""Per-address and site-wide rate limits, on top of the per-student ones.

One mechanism for every place that needs it: sign-up, enrolment codes, code submissions,
self-test answers and failed log-ins. A ``RateLimit`` counts requests for the client's address
and, where nobody can use that up to lock everybody out, for the whole site, in windows that start at the first request, in ``RateCounter`` rows of
the database that every web process and machine shares (a per-process cache would let each gunicorn worker grant the whole
limit again; the database cache backend counts with a read and a write, which loses counts in
exactly the bursts these limits are for). Going over raises ``RateLimited``:
``RateLimitMiddleware`` turns it into a 429 page, or JSON for the page's scripts, with
Retry-After; a view that shows its own form catches it and shows the message there.

A classroom sits behind one NAT and so shares one address: the per-address limits in
settings leave room for a class of 200 students. The limits per student stay as they are.
"""

import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .models import RateCounter


def client_ip(request: HttpRequest) -> str:
    """The client's address, as the right number of our own proxies saw it.

    With ``TRUSTED_PROXIES = n``, the last n X-Forwarded-For entries were added by our proxies and
    the n-th from the right is the address the outermost one saw; anything left of it is what the
    client sent and is never believed. With 0 (no proxy) it is REMOTE_ADDR. A header with fewer
    entries than proxies, or one that is not an address, falls back to REMOTE_ADDR.
    """
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXIES
    if proxies > 0:
        forwarded = [entry.strip() for entry in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if len(forwarded) >= proxies:
            try:
                return str(ipaddress.ip_address(forwarded[-proxies]))
            except ValueError:
                pass
    return remote


def address_key(ip: str) -> str:
    """What one address is for a limit: an IPv6 client owns a whole /64, so it counts as one."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return ip or "unknown"
    if address.version == 6:
        if address.ipv4_mapped:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def client_address(request: HttpRequest) -> str:
    """AXES_CLIENT_IP_CALLABLE: the client as the rate limits count it, so that a log-in pause
    cannot be dodged by moving to another address of the same IPv6 /64. The /64 is given as its
    first address ("2001:db8::"): axes keeps an IP address, which PostgreSQL checks."""
    ip = client_ip(request)
    return address_key(ip).removesuffix("/64") if ip else ip


def human_duration(seconds: int) -> str:
    """'45 seconds', '15 minutes', translated: never an ISO 8601 'PT15M'."""
    if seconds < 60:
        return ngettext("%(count)d second", "%(count)d seconds", seconds) % {"count": seconds}
    minutes = math.ceil(seconds / 60)
    return ngettext("%(count)d minute", "%(count)d minutes", minutes) % {"count": minutes}


class RateLimited(Exception):
    """Over a per-address or site-wide limit: why, and how many seconds until it is lifted."""

    def __init__(self, reason: str | Promise, retry_after: int):
        self.reason = str(reason)
        self.retry_after = max(1, retry_after)
        super().__init__(
            _("%(reason)s Please try again in %(duration)s.")
            % {"reason": self.reason, "duration": human_duration(self.retry_after)}
        )

    def response(self, request: HttpRequest) -> HttpResponse:
        """429 with Retry-After: JSON for the page's scripts, else a page that says what to do."""
        response: HttpResponse
        if request.headers.get("X-Requested-With") == "dikkat":
            response = JsonResponse({"error": str(self), "retry_after": self.retry_after}, status=429)
        else:
            response = render(
                request,
                "429.html",
                {"reason": self.reason, "duration": human_duration(self.retry_after)},
                status=429,
            )
        response["Retry-After"] = str(self.retry_after)
        return response


@dataclass(frozen=True)
class RateLimit:
    """At most ``<NAME>_LIMIT_PER_IP`` requests per address and, for a limit with a
    ``site_reason``, ``<NAME>_LIMIT_GLOBAL`` on the whole site in a window of ``window`` seconds
    from the first (settings; 0 or unset: no limit). A limit that anybody could use up to lock
    everybody out (log-ins, enrolment codes) has no ``site_reason`` and so no site-wide counter."""

    name: str
    window: int
    address_reason: Promise
    site_reason: Promise | None = None

    def check(self, request: HttpRequest, *, count: bool = True) -> None:
        """Raise RateLimited if this request goes over a limit; with count=False only look.

        The address is counted first: a request refused for its address does not use up the
        whole site's allowance, so one busy address cannot lock everybody else out.
        """
        counters = [
            (
                f"{self.name.lower()}:{address_key(client_ip(request))}",
                self._setting("PER_IP"),
                self.address_reason,
            )
        ]
        if self.site_reason is not None:
            counters.append((f"{self.name.lower()}:*", self._setting("GLOBAL"), self.site_reason))
        window_end: datetime | None
        for key, limit, reason in counters:
            if not limit:
                continue
            if count:
                seen, window_end = RateCounter.add_one(key, timedelta(seconds=self.window))
            else:
                seen, window_end = RateCounter.current(key)
                seen += 1
            if seen > limit:
                left = (window_end - timezone.now()).total_seconds() if window_end else self.window
                raise RateLimited(reason, math.ceil(left))

    def count(self, request: HttpRequest) -> None:
        """Count a request after the fact (a wrong code, a failed log-in); the next check refuses."""
        try:
            self.check(request)
        except RateLimited:
            pass

    def refusal(self, request: HttpRequest) -> RateLimited | None:
        """What this request would be refused with, without counting it."""
        try:
            self.check(request, count=False)
        except RateLimited as refused:
            return refused
        return None

    def _setting(self, scope: str) -> int:
        return getattr(settings, f"{self.name}_LIMIT_{scope}", 0)


SIGNUPS = RateLimit(
    "SIGNUP",
    3600,
    gettext_lazy("Too many accounts have been created from your network in the last hour."),
    gettext_lazy("Too many accounts are being created on the site right now."),
)
# Wrong codes only, per address, and only for courses that ask for a code. No site-wide limit:
# anybody could use it up and shut every course's enrolment for the hour.
WRONG_ENROLMENT_CODES = RateLimit(
    "ENROL_CODE", 3600, gettext_lazy("Too many wrong enrolment codes have been tried from your network.")
)
SUBMISSIONS = RateLimit(
    "SUBMISSION",
    60,
    gettext_lazy("Too much code is being sent from your network right now."),
    gettext_lazy("The grader is receiving more code than it can take right now."),
)
ANSWERS = RateLimit(
    "ANSWER",
    60,
    gettext_lazy("Too many answers are being sent from your network right now."),
    gettext_lazy("Too many answers are being sent on the site right now."),
)
# Password spraying: many usernames tried from one address. No site-wide limit: it would let
# anybody lock everybody out.
LOGIN_FAILURES = RateLimit(
    "LOGIN_FAILURE", 3600, gettext_lazy("Too many failed logins have come from your network.")
)


class RateLimitMiddleware:
    """Turns a RateLimited raised in a view into its 429 response, as Django does PermissionDenied."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RateLimited):
            return exception.response(request)
        return None
