"""Deep linking (LTI Deep Linking 2.0): an instructor in the LMS picks a lesson, an exercise or
an assessment of the linked course; Dikkat answers the platform with a signed
LtiDeepLinkingResponse holding one LTI resource link whose custom parameter names it. A
student's launch of that link carries the parameter back (signed by the platform) and lands on
it. An exercise or an assessment is a graded target: its resource link also asks the platform
for a grade column (``lineItem``) scored out of what Dikkat will send.
"""

import secrets
import time
from typing import Any

import jwt

from assessments.models import Assessment
from courses.models import Course, Exercise, Lesson

from .endpoints import absolute
from .launch import CLAIM, DEEP_LINKING_CLAIM, Launch, LaunchRefused
from .models import ResourceLink, ToolKey

# Custom parameters of a deep-linked resource link: "<course>/<slug>". "dikkat_lesson" is also
# what links made before exercises and assessments could be chosen carry.
CUSTOM_LESSON = "dikkat_lesson"
CUSTOM_EXERCISE = "dikkat_exercise"
CUSTOM_ASSESSMENT = "dikkat_assessment"
RESPONSE_LIFETIME = 300  # seconds

Target = Lesson | Exercise | Assessment


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


def assessment_points(assessment: Assessment) -> float:
    """What an assessment is worth to each student: its items' points (a pool's per drawn item)."""
    return float(
        sum(
            float(entry["points"]) * (1 if "item" in entry else int(entry["pick"]))
            for entry in assessment.items
        )
    )


def content_item(course: Course, target: Target) -> dict[str, Any]:
    """The ltiResourceLink content item that opens ``target`` of ``course``."""
    item: dict[str, Any] = {"type": "ltiResourceLink", "title": target.title, "url": absolute("launch")}
    if isinstance(target, Lesson):
        item["custom"] = {CUSTOM_LESSON: f"{course.slug}/{target.slug}"}
        return item
    if isinstance(target, Exercise):
        item["custom"] = {CUSTOM_EXERCISE: f"{course.slug}/{target.slug}"}
        maximum, resource = 1.0, f"{course.slug}/exercise:{target.slug}"
    else:
        item["custom"] = {CUSTOM_ASSESSMENT: f"{course.slug}/{target.slug}"}
        maximum, resource = assessment_points(target), f"{course.slug}/assessment:{target.slug}"
    if maximum > 0:
        item["lineItem"] = {
            "label": f"Dikkat: {target.title}"[:255],
            "scoreMaximum": maximum,
            "resourceId": resource,
        }
    return item


def response_jwt(request_settings: dict[str, Any], course: Course, target: Target) -> str:
    """The signed LtiDeepLinkingResponse for ``target`` (iss: our client id, aud: the platform)."""
    key = ToolKey.current()
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": request_settings["client_id"],
        "aud": [request_settings["issuer"]],
        "iat": now,
        "exp": now + RESPONSE_LIFETIME,
        "nonce": secrets.token_urlsafe(16),
        CLAIM + "message_type": "LtiDeepLinkingResponse",
        CLAIM + "version": "1.3.0",
        CLAIM + "deployment_id": request_settings["deployment_id"],
        DEEP_LINKING_CLAIM + "content_items": [content_item(course, target)],
    }
    if request_settings.get("data") is not None:
        claims[DEEP_LINKING_CLAIM + "data"] = request_settings["data"]
    return jwt.encode(claims, key.private_key(), algorithm="RS256", headers={"kid": key.kid})


def _named(custom: dict, name: str, course: Course) -> str:
    """The slug the custom parameter ``name`` names in ``course`` ("" when it names another)."""
    course_slug, _, slug = str(custom.get(name, "")).partition("/")
    return slug if course_slug == course.slug else ""


def remember_target(link: ResourceLink | None, launch: Launch) -> None:
    """A link made by deep linking: store what its custom parameter names (once; only an active
    lesson, exercise or assessment of the LMS course's own Dikkat course)."""
    custom = launch.claim("custom")
    if link is None or not isinstance(custom, dict):
        return
    if link.lesson_id or link.exercise_id or link.assessment_id:
        return
    course = link.context.course
    if course is None:
        return
    if slug := _named(custom, CUSTOM_EXERCISE, course):
        exercise = Exercise.objects.active().filter(course=course, slug=slug).first()
        if exercise is not None:
            ResourceLink.objects.filter(pk=link.pk).update(exercise=exercise)
            link.exercise = exercise
    elif slug := _named(custom, CUSTOM_ASSESSMENT, course):
        assessment = Assessment.objects.active().filter(course=course, slug=slug).first()
        if assessment is not None:
            ResourceLink.objects.filter(pk=link.pk).update(assessment=assessment)
            link.assessment = assessment
    elif slug := _named(custom, CUSTOM_LESSON, course):
        lesson = Lesson.objects.active().filter(course=course, slug=slug).first()
        if lesson is not None:
            ResourceLink.objects.filter(pk=link.pk).update(lesson=lesson)
            link.lesson = lesson
