"""Pages of a session that began with an LTI launch may be shown inside the LMS.

The LMS shows Dikkat in an iframe: every request from it is cross-site, so the session, CSRF and
language cookies of a launched session are SameSite=None; Secure (else the browser keeps them
back and each click inside the frame would land logged out). Framing is allowed to the
registered platform of that session only (CSP frame-ancestors, no X-Frame-Options); every other
page keeps frame-ancestors 'none' and X-Frame-Options: DENY. A refused launch's page may be
framed by any active platform (it has no session and says what went wrong in the LMS's frame).

It is the first middleware: its response part runs last, after the session, CSRF, framing and
CSP middleware wrote their cookies and headers.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.csp import CSP, build_policy

from .models import Platform

SESSION_KEY = "lti"  # what the launch said (lti.views.launch): {"platform", "context", "role"}


def cross_site_cookie(response: HttpResponse, name: str) -> None:
    """Make a cookie of `response` one that comes back inside the LMS's frame: SameSite=None;
    Secure; Partitioned (CHIPS: browsers that block third-party cookies keep a partitioned one,
    in a jar of its own for each site that frames Dikkat; in a window of its own it is an
    ordinary first-party cookie). Python 3.13's cookies have no `partitioned` attribute, so it
    rides on the SameSite value."""
    response.cookies[name]["samesite"] = "None; Partitioned"
    response.cookies[name]["secure"] = True


class EmbeddedInLmsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        launched = session.get(SESSION_KEY) if session is not None else None
        origins: list[str] | None = getattr(response, "lti_frame_ancestors", None)
        if launched:
            platform = Platform.objects.filter(pk=launched.get("platform"), active=True).first()
            origins = platform.frame_ancestors() if platform else []
            for name in (
                settings.SESSION_COOKIE_NAME,
                settings.CSRF_COOKIE_NAME,
                settings.LANGUAGE_COOKIE_NAME,
            ):
                if name in response.cookies:
                    cross_site_cookie(response, name)
        if origins:
            self.allow_framing(request, response, origins)
        return response

    @staticmethod
    def allow_framing(request: HttpRequest, response: HttpResponse, origins: list[str]) -> None:
        header = str(CSP.HEADER_ENFORCE)
        if header in response.headers:
            config = dict(getattr(response, "_csp_config", None) or settings.SECURE_CSP)
            config["frame-ancestors"] = [CSP.SELF, *origins]
            response.headers[header] = build_policy(config, getattr(request, "_csp_nonce", None))
        if "X-Frame-Options" in response.headers:
            del response.headers["X-Frame-Options"]
