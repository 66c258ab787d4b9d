"""LTI 1.3 endpoints: the OIDC login a platform starts, the launch it posts back, our JWKS, and
the page where an instructor links their LMS course to a Dikkat course at the first launch."""

import logging
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.csp import CSP
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.requests import AuthenticatedRequest
from assessments.models import Assessment
from courses.models import Course, Exercise

from . import deeplinking
from .endpoints import absolute
from .launch import (
    DEEP_LINKING_REQUEST,
    NOT_REGISTERED,
    LaunchRefused,
    start_login,
    state_cookie_name,
    validate_launch,
)
from .linking import (
    INSTRUCTOR,
    NOT_INSTRUCTOR,
    Landing,
    approve_link,
    context_role,
    decline_link,
    land,
    linkable_courses,
    may_link_at_once,
    may_unlink,
    request_link,
    unlink,
)
from .middleware import SESSION_KEY, cross_site_cookie
from .models import LtiContext, LtiUser, Platform, RegistrationInvite, ToolKey
from .registration import INVITE_CLOSED, RegistrationFailed
from .registration import register as register_platform
from .roster import queue_roster_sync, sync_roster
from .services import ServiceFailed

logger = logging.getLogger(__name__)

CHOOSE_KEY = "lti_choose_course"  # the LMS course an instructor is linking
DEEP_LINK_KEY = "lti_deep_link"  # a deep linking request waiting for the instructor's choice
STATE_COOKIE_PATH = "/lti/"  # both launch addresses (lti/urls.py)


def _refused(request: HttpRequest, refusal: LaunchRefused, status: int = 403) -> HttpResponse:
    """The page for a refused login or launch. The reason goes to the log; nothing goes into a
    session (none is created)."""
    logger.warning(
        "LTI %s refused: %s", "login" if request.path == reverse("lti:login") else "launch", refusal.reason
    )
    response = render(request, "lti/refused.html", {"message": refusal.message}, status=status)
    # Shown where the LMS put Dikkat: in its frame too (lti/middleware.py).
    response.lti_frame_ancestors = [  # type: ignore[attr-defined]
        origin for platform in Platform.objects.filter(active=True) for origin in platform.frame_ancestors()
    ]
    return response


def _message(text: str | Promise) -> LaunchRefused:
    return LaunchRefused(str(text), text)


@csrf_exempt  # the platform's form, from another site
@require_http_methods(["GET", "POST"])
@never_cache
def login_initiation(request: HttpRequest) -> HttpResponse:
    """Third-party initiated login: remember a new state and nonce, send the browser to the
    platform's authorisation endpoint; it posts the id_token back to the launch URL."""
    params = request.POST if request.method == "POST" else request.GET
    issuer, login_hint = params.get("iss", ""), params.get("login_hint", "")
    target_link_uri, client_id = params.get("target_link_uri", ""), params.get("client_id", "")
    platforms = Platform.objects.filter(issuer=issuer, active=True)
    if client_id:
        platforms = platforms.filter(client_id=client_id)
    found = list(platforms[:2])
    if len(found) != 1:
        why = "unknown issuer or client id" if not found else "several registrations: client_id needed"
        return _refused(request, LaunchRefused(f"{why} ({issuer!r}, {client_id!r})", NOT_REGISTERED), 400)
    platform = found[0]
    if not login_hint or not target_link_uri.startswith(settings.SITE_URL + "/"):
        reason = "no login_hint" if not login_hint else f"target_link_uri {target_link_uri!r} is not ours"
        return _refused(request, LaunchRefused(reason, NOT_REGISTERED), 400)
    state = start_login(platform, target_link_uri)
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        # The platform posts the id_token here: the deep-linking address when it asked for that one.
        "redirect_uri": target_link_uri
        if target_link_uri in (absolute("launch"), absolute("deep_link"))
        else absolute("launch"),
        "login_hint": login_hint,
        "state": state.state,
        "nonce": state.nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    separator = "&" if "?" in platform.auth_url else "?"
    response = HttpResponseRedirect(platform.auth_url + separator + urlencode(query))
    # Binds the launch to this browser (login CSRF). The launch is a cross-site POST from the
    # platform, often inside its frame: the cookie is SameSite=None; Secure; Partitioned. LTI
    # needs HTTPS (browsers also keep Secure cookies of http://localhost, for development).
    cookie = state_cookie_name(state.state)
    response.set_cookie(
        cookie, state.state, max_age=settings.LTI_STATE_TTL, path=STATE_COOKIE_PATH, httponly=True
    )
    cross_site_cookie(response, cookie)
    return response


def _destination(landing: Landing) -> str:
    """Where a launch lands: what deep linking chose for its link (a lesson, an exercise on its
    lesson's page, an assessment) while it is still in the course, else the course page."""
    course = landing.context.course
    if course is None:
        return reverse("lti:choose_course")
    link = landing.link
    if link is None:
        return course.get_absolute_url()
    if link.exercise_id is not None:
        exercise = link.exercise
        assert exercise is not None
        if exercise.course_id == course.pk and not exercise.retired and not exercise.lesson.retired:
            return reverse("lesson", args=[course.slug, exercise.lesson.slug]) + f"#ex-{exercise.slug}"
    elif link.assessment_id is not None:
        assessment = link.assessment
        assert assessment is not None
        if assessment.course_id == course.pk and not assessment.retired:
            return reverse("assessment", args=[course.slug, assessment.slug])
    elif link.lesson_id is not None:
        lesson = link.lesson
        assert lesson is not None
        if lesson.course_id == course.pk and not lesson.retired:
            return reverse("lesson", args=[course.slug, lesson.slug])
    return course.get_absolute_url()


@csrf_exempt  # the platform's auto-submitted form; the state and its cookie stand in for CSRF
@require_POST
@never_cache
def launch(request: HttpRequest) -> HttpResponse:
    state = request.POST.get("state", "")
    try:
        if request.POST.get("error"):
            raise LaunchRefused(
                f"the platform answered {request.POST['error']!r}: {request.POST.get('error_description', '')}"
            )
        verified = validate_launch(
            state, request.POST.get("id_token", ""), request.COOKIES.get(state_cookie_name(state))
        )
        deep_link = None
        if verified.message_type == DEEP_LINKING_REQUEST:
            if context_role(verified.claim("roles")) != INSTRUCTOR:
                raise LaunchRefused(
                    "a deep linking request from someone who is not an instructor", NOT_INSTRUCTOR
                )
            deep_link = deeplinking.settings_of(verified)
        landing = land(verified)
        deeplinking.remember_target(landing.link, verified)
    except LaunchRefused as refusal:
        return _refused(request, refusal)
    login(request, landing.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SESSION_KEY] = {
        "platform": verified.platform.pk,
        "context": landing.context.pk,
        "role": landing.role,
    }
    if landing.role == INSTRUCTOR and landing.context.memberships_url and not landing.needs_course:
        # An instructor's launch brings the roster up to date, in a worker: never in this request.
        queue_roster_sync(landing.context)
    if landing.needs_course:
        request.session[CHOOSE_KEY] = landing.context.pk
    if deep_link is not None:
        request.session[DEEP_LINK_KEY] = {**deep_link, "context": landing.context.pk}
    logger.info(
        "LTI launch: %s as %s of %s (%s)",
        landing.user.username,
        landing.role,
        landing.context,
        verified.message_type,
    )
    if deep_link is not None and not landing.needs_course:
        response = redirect("lti:choose_item")
    else:
        response = redirect(_destination(landing))
    response.delete_cookie(state_cookie_name(state), path=STATE_COOKIE_PATH)
    cross_site_cookie(response, state_cookie_name(state))  # the partitioned one is the one to remove
    return response


@require_GET
@never_cache
def register(request: HttpRequest, token: str) -> HttpResponse:
    """LTI Dynamic Registration: the LMS opens this one-time address (in a frame or a window)
    with its openid_configuration and registration_token."""
    config_url = request.GET.get("openid_configuration", "")
    parts = urlsplit(config_url)
    lms_origin = [f"{parts.scheme}://{parts.netloc}"] if parts.scheme in ("http", "https") else []
    invite = RegistrationInvite.claim(token)
    try:
        if invite is None:
            raise RegistrationFailed("registration address unknown, used or expired", INVITE_CLOSED)
        platform = register_platform(invite, config_url, request.GET.get("registration_token", ""))
    except RegistrationFailed as failure:
        logger.warning("LTI dynamic registration refused: %s", failure.reason)
        response = render(request, "lti/registered.html", {"message": failure.message}, status=403)
    else:
        known = Platform.objects.filter(issuer=platform.issuer).exclude(pk=platform.pk).exists()
        response = render(request, "lti/registered.html", {"platform": platform, "issuer_known": known})
    response.lti_frame_ancestors = lms_origin  # type: ignore[attr-defined]
    return response


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    """Our public keys: the platform checks our signed messages (deep linking answers, the
    client assertions of the grade and roster services) against them."""
    response = JsonResponse(ToolKey.jwks())
    response["Cache-Control"] = "public, max-age=300"
    return response


@login_required
@require_http_methods(["GET", "POST"])
def choose_course(request: AuthenticatedRequest) -> HttpResponse:
    """An LMS instructor's first launch from an LMS course: which Dikkat course it opens. The
    link holds at once when they teach that course here already; else it waits for the
    approval of one of its instructors (this page says so)."""
    pending = request.session.get(CHOOSE_KEY, 0)
    context = (
        LtiContext.objects.select_related("platform", "course", "requested_course").filter(pk=pending).first()
    )
    launched = request.session.get(SESSION_KEY, {})
    if context is None or launched.get("context") != context.pk or launched.get("role") != INSTRUCTOR:
        return _refused(request, _message(_("Please open this link from your LMS course as its instructor.")))
    if context.course is not None:  # linked meanwhile (approved, or by another instructor)
        request.session.pop(CHOOSE_KEY, None)
        return redirect(context.course)
    courses = list(linkable_courses(context.platform, request.user))
    error = ""
    if request.method == "POST":
        chosen = next((c for c in courses if c.slug == request.POST.get("course")), None)
        if chosen is None:
            error = _("Please choose one of the courses in the list.")
        elif request_link(context, chosen, request.user):
            request.session.pop(CHOOSE_KEY, None)
            messages.success(
                request,
                _("Your LMS course “%(lms)s” now opens the Dikkat course “%(course)s”.")
                % {"lms": context, "course": context.course},
            )
            if request.session.get(DEEP_LINK_KEY, {}).get("context") == context.pk:
                return redirect("lti:choose_item")
            return redirect(chosen)
        else:
            return redirect("lti:choose_course")
    status = 400 if error else 200
    return render(
        request,
        "lti/choose_course.html",
        {
            "context": context,
            "courses": courses,
            "error": error,
            "waiting": context.requested_course if context.awaits_approval else None,
        },
        status=status,
    )


def _choices(course: Course) -> dict[str, deeplinking.Target]:
    """What a new LMS link may open, by the value of its radio button: the course's active
    lessons, the exercises of those lessons and its active assessments."""
    lessons = list(course.active_lessons())
    exercises = (
        Exercise.objects.active()
        .filter(course=course, lesson__in=lessons)
        .select_related("lesson")
        .order_by("lesson__order", "lesson__slug", "order", "slug")
    )
    choices: dict[str, deeplinking.Target] = {f"lesson:{lesson.slug}": lesson for lesson in lessons}
    choices.update({f"exercise:{exercise.slug}": exercise for exercise in exercises})
    choices.update(
        {
            f"assessment:{a.slug}": a
            for a in Assessment.objects.active().filter(course=course).order_by("opens", "slug")
        }
    )
    return choices


@login_required
@require_http_methods(["GET", "POST"])
def choose_item(request: AuthenticatedRequest) -> HttpResponse:
    """Deep linking: the instructor picks what a new LMS link opens (a lesson, an exercise or an
    assessment); the answer goes back to the LMS as a signed form post (auto-submitted by a
    small script, or by the button)."""
    pending = request.session.get(DEEP_LINK_KEY) or {}
    launched = request.session.get(SESSION_KEY, {})
    context = LtiContext.objects.select_related("course").filter(pk=pending.get("context", 0)).first()
    if (
        context is None
        or context.course is None
        or launched.get("context") != context.pk
        or launched.get("role") != INSTRUCTOR
        or not context.course.is_instructor(request.user)
    ):
        return _refused(
            request, _message(_("Please choose what to add from your LMS course, as its instructor."))
        )
    course = context.course
    choices = _choices(course)
    error = ""
    if request.method == "POST":
        target = choices.get(request.POST.get("item", ""))
        if target is None:
            error = _("Please choose one of the lessons, exercises or assessments in the list.")
        else:
            request.session.pop(DEEP_LINK_KEY, None)
            response = render(
                request,
                "lti/deep_link_return.html",
                {
                    "return_url": pending["return_url"],
                    "jwt": deeplinking.response_jwt(pending, course, target),
                    "target": target,
                },
            )
            # The form goes to the LMS: this page's CSP lets it (the site's policy allows 'self' only).
            parts = urlsplit(pending["return_url"])
            response._csp_config = {  # type: ignore[attr-defined]
                **settings.SECURE_CSP,
                "form-action": [CSP.SELF, f"{parts.scheme}://{parts.netloc}"],
            }
            return response
    by_kind: dict[str, list[tuple[str, deeplinking.Target]]] = {
        "lesson": [],
        "exercise": [],
        "assessment": [],
    }
    for value, target in choices.items():
        by_kind[value.partition(":")[0]].append((value, target))
    return render(
        request,
        "lti/choose_item.html",
        {
            "context": context,
            "lessons": by_kind["lesson"],
            "exercises": by_kind["exercise"],
            "assessments": by_kind["assessment"],
            "error": error,
        },
        status=400 if error else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def roster(request: AuthenticatedRequest, context_pk: int) -> HttpResponse:
    """An LMS course's members as its roster last said (dropped ones marked), for the linked
    course's instructors; "read the roster now" asks the platform again."""
    context = LtiContext.objects.select_related("platform", "course").filter(pk=context_pk).first()
    if context is None or context.course is None or not context.course.is_instructor(request.user):
        raise Http404
    if request.method == "POST":
        try:
            result = sync_roster(context)
        except ServiceFailed as error:
            logger.warning("LTI roster sync asked by %s failed: %s", request.user.username, error)
            messages.error(
                request,
                _("The LMS did not give the roster: %(reason)s. Please try again later.") % {"reason": error},
            )
        else:
            messages.success(
                request,
                _("Roster read: %(members)s members, %(added)s new, %(dropped)s dropped.")
                % {"members": result.members, "added": result.added, "dropped": result.dropped},
            )
        return redirect("lti:roster", context_pk=context.pk)
    members = context.memberships.select_related("user").order_by(
        F("dropped_at").desc(nulls_first=True), "name"
    )
    return render(request, "lti/roster.html", {"context": context, "members": members})


@login_required
@require_http_methods(["GET", "POST"])
def course_links(request: AuthenticatedRequest, slug: str) -> HttpResponse:
    """The LMS courses of a Dikkat course, for its instructors: those that ask to be linked to
    it (approve or decline) and those linked (with their rosters; unlink)."""
    course = Course.objects.filter(slug=slug).first()
    if course is None or not may_link_at_once(request.user, course):
        raise Http404
    if request.method == "POST" and request.POST.get("action") == "unlink":
        linked = LtiContext.objects.filter(pk=request.POST.get("context") or 0, course=course).first()
        if linked is not None and unlink(linked, request.user):
            messages.success(
                request,
                _(
                    "“%(lms)s” no longer opens “%(course)s”: its students cannot enter through it, and the "
                    "instructor rights it gave were taken back. Their work stays."
                )
                % {"lms": linked, "course": course},
            )
        else:
            messages.error(request, _("This LMS course is no longer linked."))
        return redirect("lti:course_links", slug=course.slug)
    if request.method == "POST":
        context = LtiContext.objects.filter(
            pk=request.POST.get("context") or 0, requested_course=course, course__isnull=True
        ).first()
        if context is None:
            messages.error(request, _("This request is no longer open."))
        elif request.POST.get("action") == "approve" and approve_link(context, request.user):
            messages.success(
                request,
                _("“%(lms)s” now opens “%(course)s”; its instructors in the LMS teach it here too.")
                % {"lms": context, "course": course},
            )
        elif request.POST.get("action") == "decline" and decline_link(context, request.user):
            messages.success(request, _("The request of “%(lms)s” was declined.") % {"lms": context})
        else:
            messages.error(request, _("This request is no longer open."))
        return redirect("lti:course_links", slug=course.slug)
    contexts = LtiContext.objects.select_related("platform", "linked_by", "approved_by")
    requests = list(contexts.filter(requested_course=course, course__isnull=True).order_by("requested_at"))
    # Who asks, as their LMS knows them: the approver has to recognise a colleague, and an
    # account made by a launch has only a generated username.
    askers = {
        (account.platform_id, account.user_id): account
        for account in LtiUser.objects.filter(
            user_id__in=[context.linked_by_id for context in requests if context.linked_by_id]
        )
    }
    return render(
        request,
        "lti/course_links.html",
        {
            "course": course,
            "requests": [
                (context, askers.get((context.platform_id, context.linked_by_id or 0)))
                for context in requests
            ],
            "linked": [
                (context, may_unlink(request.user, context))
                for context in contexts.filter(course=course).order_by("title")
            ],
        },
    )
