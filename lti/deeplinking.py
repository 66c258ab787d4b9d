"""Deep linking (LTI Deep Linking 2.0): an instructor in the LMS picks a lesson of the linked
course; Dikkat answers the platform with a signed LtiDeepLinkingResponse holding one LTI
resource link whose custom parameter names the lesson. A student's launch of that link carries
the parameter back (signed by the platform) and lands on the lesson.
"""

import secrets
import time
from typing import Any

import jwt

from courses.models import Lesson

from .endpoints import absolute
from .launch import CLAIM, DEEP_LINKING_CLAIM, Launch, LaunchRefused
from .models import ResourceLink, ToolKey

CUSTOM_LESSON = "dikkat_lesson"  # custom parameter of a deep-linked resource link: "<course>/<lesson>"
RESPONSE_LIFETIME = 300  # seconds


def settings_of(launch: Launch) -> dict[str, Any]:
    """The deep-linking request's settings, to keep in the session until the instructor picks."""
    claim = launch.claims.get(DEEP_LINKING_CLAIM + "deep_linking_settings")
    if not isinstance(claim, dict) or not isinstance(claim.get("deep_link_return_url"), str):
        raise LaunchRefused("deep linking request without deep_link_return_url")
    if "ltiResourceLink" not in (claim.get("accept_types") or []):
        raise LaunchRefused(
            f"deep linking request accepts {claim.get('accept_types')!r}, not ltiResourceLink"
        )
    return {
        "return_url": claim["deep_link_return_url"],
        "data": claim.get("data"),
        "deployment_id": launch.claim("deployment_id"),
        "client_id": launch.platform.client_id,
        "issuer": launch.platform.issuer,
    }


def response_jwt(request_settings: dict[str, Any], lesson: Lesson) -> str:
    """The signed LtiDeepLinkingResponse for `lesson` (iss: our client id, aud: the platform)."""
    key = ToolKey.current()
    now = int(time.time())
    item = {
        "type": "ltiResourceLink",
        "title": lesson.title,
        "url": absolute("launch"),
        "custom": {CUSTOM_LESSON: f"{lesson.course.slug}/{lesson.slug}"},
    }
    claims: dict[str, Any] = {
        "iss": request_settings["client_id"],
        "aud": [request_settings["issuer"]],
        "iat": now,
        "exp": now + RESPONSE_LIFETIME,
        "nonce": secrets.token_urlsafe(16),
        CLAIM + "message_type": "LtiDeepLinkingResponse",
        CLAIM + "version": "1.3.0",
        CLAIM + "deployment_id": request_settings["deployment_id"],
        DEEP_LINKING_CLAIM + "content_items": [item],
    }
    if request_settings.get("data") is not None:
        claims[DEEP_LINKING_CLAIM + "data"] = request_settings["data"]
    return jwt.encode(claims, key.private_key(), algorithm="RS256", headers={"kid": key.kid})


def remember_lesson(link: ResourceLink | None, launch: Launch) -> None:
    """A link made by deep linking: store the lesson its custom parameter names (once; only a
    lesson of the LMS course's own Dikkat course)."""
    custom = launch.claim("custom")
    if link is None or link.lesson_id or not isinstance(custom, dict):
        return
    course_slug, _, lesson_slug = str(custom.get(CUSTOM_LESSON, "")).partition("/")
    course = link.context.course
    if course is None or course.slug != course_slug:
        return
    lesson = Lesson.objects.active().filter(course=course, slug=lesson_slug).first()
    if lesson is not None:
        ResourceLink.objects.filter(pk=link.pk).update(lesson=lesson)
        link.lesson = lesson
