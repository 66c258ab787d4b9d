"""Who a verified launch is in Dikkat, and where it lands.

- (platform, sub) is the only key to an account (a second registration with the same issuer
  does not reach the first one's accounts). The e-mail in a launch never links it to an
  existing Dikkat account; a new `sub` that brings the e-mail of another `sub` of the same
  platform is refused (a re-created or hijacked LMS account is for the administrator to link).
- Roles count only as the context's membership roles: Instructor (also TeachingAssistant,
  ContentDeveloper, Administrator of the context) makes a course instructor, Learner a student.
  Institution and system roles say nothing about this course.
- An LMS course (context) is linked to one Dikkat course by an instructor at the first launch,
  chosen from the courses they may link (`linkable_courses`). Until then learners are refused.
"""

import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from courses.models import Course, Enrollment

from .launch import Launch, LaunchRefused
from .models import LtiContext, LtiUser, Membership, Platform, ResourceLink

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
INSTRUCTOR_ROLES = {
    MEMBERSHIP + "Instructor",
    MEMBERSHIP + "Administrator",
    MEMBERSHIP + "ContentDeveloper",
    "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
    # LTI 1.3 still allows the short context role names.
    "Instructor",
    "Administrator",
    "ContentDeveloper",
}
LEARNER_ROLES = {MEMBERSHIP + "Learner", "Learner"}
INSTRUCTOR, LEARNER = "instructor", "learner"

ACCOUNT_TAKEN = _(
    "Another account of your LMS with the same e-mail address already uses Dikkat. Please ask the "
    "site administrator to link your accounts."
)
NOT_LINKED_YET = _(
    "This LMS course is not linked to a Dikkat course yet. Once your instructor has opened the link "
    "from the LMS and chosen the course, you can enter too."
)
NOT_INSTRUCTOR = _("Only an instructor of the LMS course can choose what a new Dikkat link opens.")
NO_ROLE = _("Your LMS did not say whether you take or teach this course. Please tell your instructor.")


@dataclass
class Landing:
    """Where a verified launch goes: the user to log in, their LMS course and link, and whether
    an instructor still has to choose the Dikkat course."""

    user: User
    role: str
    context: LtiContext
    link: ResourceLink | None

    @property
    def needs_course(self) -> bool:
        return self.context.course_id is None


def context_role(roles: object) -> str | None:
    if not isinstance(roles, list):
        return None
    if INSTRUCTOR_ROLES.intersection(roles):
        return INSTRUCTOR
    if LEARNER_ROLES.intersection(roles):
        return LEARNER
    return None


def _new_username() -> str:
    while True:
        username = "lms-" + secrets.token_hex(5)
        if not User.objects.filter(username=username).exists():
            return username


def link_user(platform: Platform, claims: dict) -> User:
    """The Dikkat user of (platform, sub): the linked one, or a new account without a password."""
    sub = claims["sub"]
    email, name = (claims.get(key) for key in ("email", "name"))
    email = email[:254] if isinstance(email, str) else ""
    name = name[:255] if isinstance(name, str) else ""
    known = LtiUser.objects.select_related("user").filter(platform=platform, sub=sub).first()
    if known is None:
        if email and LtiUser.objects.filter(platform=platform, email__iexact=email).exists():
            raise LaunchRefused(
                f"new sub {sub!r} brings the e-mail of another sub of {platform}", ACCOUNT_TAKEN
            )
        try:
            with transaction.atomic():
                user = User(
                    username=_new_username(),
                    email=email,
                    first_name=str(claims.get("given_name", ""))[:150],
                    last_name=str(claims.get("family_name", ""))[:150],
                )
                user.set_unusable_password()
                user.save()
                known = LtiUser.objects.create(
                    platform=platform, issuer=platform.issuer, sub=sub, user=user, email=email, name=name
                )
        except IntegrityError:  # the same person's launch in another tab made the link first
            known = LtiUser.objects.select_related("user").get(platform=platform, sub=sub)
    LtiUser.objects.filter(pk=known.pk).update(last_launch_at=timezone.now(), email=email, name=name)
    return known.user


def linkable_courses(platform: Platform, user: User) -> QuerySet[Course]:
    """The Dikkat courses an LMS instructor may link their LMS course to: the one the
    administrator registered the platform for and those the user already teaches here."""
    taught = Course.objects.active().filter(instructors=user)
    if platform.course_id is None:
        return taught
    return (Course.objects.active().filter(pk=platform.course_id) | taught).distinct()


def link_context(context: LtiContext, course: Course, user: User) -> bool:
    """Link an LMS course to `course` (once: False when another instructor linked it first)."""
    linked = LtiContext.objects.filter(pk=context.pk, course__isnull=True).update(
        course=course, linked_by=user, linked_at=timezone.now()
    )
    if linked:
        course.instructors.add(user)
        context.refresh_from_db()
    return bool(linked)


def land(launch: Launch) -> Landing:
    """Map a verified launch to a Dikkat user, role, LMS course and link (refused, with nothing
    stored, when the role or the course link does not allow it)."""
    role = context_role(launch.claim("roles"))
    if role is None:
        raise LaunchRefused(f"no context membership role in {launch.claim('roles')!r}", NO_ROLE)
    context_claim = launch.claim("context")
    if not isinstance(context_claim, dict) or not context_claim.get("id"):
        raise LaunchRefused("no context claim (a launch from outside a course)", NO_ROLE)
    context = LtiContext.objects.filter(platform=launch.platform, context_id=str(context_claim["id"])).first()
    if (context is None or context.course_id is None) and role != INSTRUCTOR:
        raise LaunchRefused(
            f"a learner's launch into LMS course {context_claim['id']!r}, not linked by an instructor",
            NOT_LINKED_YET,
        )
    with transaction.atomic():
        user = link_user(launch.platform, launch.claims)
        context, _created = LtiContext.objects.get_or_create(
            platform=launch.platform,
            context_id=str(context_claim["id"]),
            defaults={"title": str(context_claim.get("title", ""))[:255]},
        )
        nrps = launch.claims.get(NRPS_CLAIM)
        url = nrps.get("context_memberships_url") if isinstance(nrps, dict) else None
        if (
            isinstance(url, str)
            and url.startswith(("https://", "http://"))
            and url != context.memberships_url
        ):
            LtiContext.objects.filter(pk=context.pk).update(memberships_url=url[:1000])
            context.memberships_url = url[:1000]
        Membership.objects.filter(context=context, sub=launch.claims["sub"], user__isnull=True).update(
            user=user
        )
        course = context.course
        if course is not None:
            if role == INSTRUCTOR:
                course.instructors.add(user)
            else:
                Enrollment.objects.get_or_create(user=user, course=course)
        link = None
        link_claim = launch.claim("resource_link")
        if isinstance(link_claim, dict) and link_claim.get("id"):
            link, _created = ResourceLink.objects.get_or_create(
                context=context,
                resource_link_id=str(link_claim["id"]),
                defaults={"title": str(link_claim.get("title", ""))[:255]},
            )
            ags = launch.claims.get(AGS_CLAIM)
            if isinstance(ags, dict):
                found = {
                    "lineitems_url": ags.get("lineitems"),
                    "lineitem_url": ags.get("lineitem"),
                }
                found = {k: v[:1000] for k, v in found.items() if isinstance(v, str) and v.startswith("http")}
                scopes = (
                    [x for x in ags.get("scope", []) if isinstance(x, str)]
                    if isinstance(ags.get("scope"), list)
                    else []
                )
                ResourceLink.objects.filter(pk=link.pk).update(ags_scopes=scopes, **found)
    return Landing(user=user, role=role, context=context, link=link)
