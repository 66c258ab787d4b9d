"""Who a verified launch is in Dikkat, and where it lands.

- (platform, sub) is the only key to an account (a second registration with the same issuer
  does not reach the first one's accounts). The e-mail in a launch never links it to an
  existing Dikkat account; a new `sub` that brings the e-mail of another `sub` of the same
  platform is refused (a re-created or hijacked LMS account is for the administrator to link).
- Roles count only as the context's membership roles: Instructor (also TeachingAssistant,
  ContentDeveloper, Administrator of the context) makes a course instructor, Learner a student.
  Institution and system roles say nothing about this course.
- An LMS course (context) is linked to one Dikkat course at an instructor's first launch, chosen
  from the courses they may ask for (`linkable_courses`). Being Instructor of some LMS course
  gives no rights in Dikkat by itself: the link holds at once only when the launching user
  already teaches that Dikkat course (or is a superuser); else it is a request that one of the
  course's instructors approves (`approve_link`). Until then learners are refused and nobody
  gets rights. Roles map only through an approved link.
- Instructor rights LTI gives are recorded (`InstructorGrant`) and taken back when the LMS no
  longer lists the user as an instructor; rights given in Dikkat itself are never touched. An
  enrolled student of the Dikkat course is never made its instructor.
"""

import logging
import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from courses.models import Course, Enrollment

from .launch import Launch, LaunchRefused
from .models import InstructorGrant, LtiContext, LtiUser, Membership, Platform, ResourceLink

logger = logging.getLogger(__name__)

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
NOT_APPROVED = _(
    "This LMS course waits for an instructor of its Dikkat course to approve the link. You can "
    "enter once they have approved it."
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
        """No approved link yet: the instructor chooses (or waits for approval)."""
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


def may_link_at_once(user: User, course: Course) -> bool:
    """Whether `user` may link an LMS course to `course` without anyone's approval: they teach
    it in Dikkat already, or they are a superuser (staff status is for the admin: an instructor
    who uses it gets no say in courses they do not teach)."""
    return user.is_superuser or course.is_instructor(user)


def request_link(context: LtiContext, course: Course, user: User) -> bool:
    """An LMS instructor's choice of the Dikkat course their LMS course opens: linked at once
    (True) when they may (`may_link_at_once`), else stored as a request for the course's
    instructors to approve (False). Nothing changes once the LMS course is linked."""
    now = timezone.now()
    unlinked = LtiContext.objects.filter(pk=context.pk, course__isnull=True)
    if may_link_at_once(user, course):
        linked = unlinked.update(
            course=course,
            linked_by=user,
            linked_at=now,
            approved_by=user,
            requested_course=course,
            requested_at=now,
        )
        context.refresh_from_db()
        if linked:
            grant_instructor(context, user)
            logger.info("LTI: %s linked LMS course %s to %s", user.username, context, course.slug)
        return bool(linked)
    unlinked.update(requested_course=course, requested_at=now, linked_by=user, approved_by=None)
    context.refresh_from_db()
    logger.info("LTI: %s asks to link LMS course %s to %s", user.username, context, course.slug)
    return False


def approve_link(context: LtiContext, approver: User) -> bool:
    """An instructor of the asked-for course (or a superuser) approves an LMS course's link: it holds
    from now on, and the LMS instructor who asked becomes an instructor of the course."""
    course = context.requested_course
    if course is None or context.course_id is not None or not may_link_at_once(approver, course):
        return False
    with transaction.atomic():
        linked = LtiContext.objects.filter(
            pk=context.pk, course__isnull=True, requested_course=course
        ).update(course=course, approved_by=approver, linked_at=timezone.now())
        context.refresh_from_db()
        if linked and context.linked_by is not None:
            grant_instructor(context, context.linked_by)
    if linked:
        logger.info(
            "LTI: %s approved the link of LMS course %s to %s", approver.username, context, course.slug
        )
    return bool(linked)


def decline_link(context: LtiContext, approver: User) -> bool:
    """An instructor of the asked-for course (or a superuser) declines the request; the LMS course
    stays unlinked (its instructor may ask again)."""
    course = context.requested_course
    if course is None or context.course_id is not None or not may_link_at_once(approver, course):
        return False
    declined = LtiContext.objects.filter(pk=context.pk, course__isnull=True, requested_course=course).update(
        requested_course=None, requested_at=None
    )
    context.refresh_from_db()
    if declined:
        logger.info(
            "LTI: %s declined the link of LMS course %s to %s", approver.username, context, course.slug
        )
    return bool(declined)


def may_unlink(user: User, context: LtiContext) -> bool:
    """Whether `user` may undo the link of `context`: a superuser, an instructor of the course whose
    rights were given in Dikkat, or one whose rights come from this very LMS course. Rights
    another LMS course gave do not reach this one's students."""
    course = context.course
    if course is None:
        return False
    if user.is_superuser:
        return True
    if not course.is_instructor(user):
        return False
    grants = InstructorGrant.objects.filter(user=user, context__course=course, revoked_at__isnull=True)
    return not grants.exists() or grants.filter(context=context).exists()


def unlink(context: LtiContext, user: User) -> bool:
    """An instructor of the linked course (or a superuser) undoes an LMS course's link: its students
    can no longer enter through it, and the instructor rights it gave are taken back (rights
    given in Dikkat itself stay; work and enrolments stay). The LMS course may ask again."""
    course = context.course
    if course is None or not may_unlink(user, context):
        return False
    with transaction.atomic():
        granted = list(
            InstructorGrant.objects.filter(context=context, revoked_at__isnull=True).values_list(
                "user_id", flat=True
            )
        )
        revoke_instructor(context, granted)
        unlinked = LtiContext.objects.filter(pk=context.pk, course=course).update(
            course=None, requested_course=None, requested_at=None, approved_by=None, linked_at=None
        )
        # Scores still queued for its links are not sent (passback.link_score: no course); a
        # link keeps its target, which counts only while it is an item of the linked course.
        context.refresh_from_db()
    if unlinked:
        logger.info("LTI: %s unlinked LMS course %s from %s", user.username, context, course.slug)
    return bool(unlinked)


def grant_instructor(context: LtiContext, user: User) -> bool:
    """The LMS says `user` teaches `context`: make them an instructor of its linked course, and
    record that LTI did (so that LTI can take it back). False, and nothing changes, when they
    are an enrolled student of the course: the LMS's word does not make a student a teacher."""
    course = context.course
    if course is None:
        return False
    if Enrollment.objects.filter(user=user, course=course).exists():
        logger.warning(
            "LTI: %s is an enrolled student of %s; their instructor role in %s is ignored",
            user.username,
            course.slug,
            context,
        )
        return False
    if (
        course.instructors.filter(pk=user.pk).exists()
        and not InstructorGrant.objects.filter(
            user=user, context__course=course, revoked_at__isnull=True
        ).exists()
    ):
        return True  # rights given in Dikkat itself: no grant, so LTI never takes them back
    InstructorGrant.objects.update_or_create(
        context=context, user=user, defaults={"revoked_at": None, "granted_at": timezone.now()}
    )
    course.instructors.add(user)
    return True


def revoke_instructor(context: LtiContext, user_ids: list[int]) -> int:
    """The LMS no longer lists these users as instructors of `context`: revoke the rights it
    gave them (kept in the grant with the time). Their instructorship of the course ends unless
    another LMS course of it still grants it; rights given in Dikkat itself have no grant and
    stay. How many grants were revoked."""
    course = context.course
    grants = InstructorGrant.objects.filter(context=context, user_id__in=user_ids, revoked_at__isnull=True)
    revoked_users = list(grants.values_list("user_id", flat=True))
    if not revoked_users:
        return 0
    grants.update(revoked_at=timezone.now())
    if course is not None:
        still = set(
            InstructorGrant.objects.filter(
                context__course=course, user_id__in=revoked_users, revoked_at__isnull=True
            ).values_list("user_id", flat=True)
        )
        course.instructors.remove(*[pk for pk in revoked_users if pk not in still])
    logger.info("LTI: instructor rights from %s revoked for user ids %s", context, revoked_users)
    return len(revoked_users)


def _web_url(value: object) -> str:
    return value[:1000] if isinstance(value, str) and value.startswith(("https://", "http://")) else ""


def grade_service(claim: object, link: ResourceLink) -> dict:
    """The link's grade service addresses and scopes as this launch gives them: each launch
    updates them, clearing what the platform no longer sends. A line item Dikkat made itself
    under the same line items address (the launch names none) is kept."""
    if not isinstance(claim, dict):
        return {"lineitems_url": "", "lineitem_url": "", "ags_scopes": []}
    lineitems, lineitem = _web_url(claim.get("lineitems")), _web_url(claim.get("lineitem"))
    if not lineitem and lineitems and lineitems == link.lineitems_url:
        lineitem = link.lineitem_url
    scope = claim.get("scope")
    scopes = [x for x in scope if isinstance(x, str)] if isinstance(scope, list) else []
    return {"lineitems_url": lineitems, "lineitem_url": lineitem, "ags_scopes": scopes}


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
            NOT_APPROVED if context is not None and context.awaits_approval else NOT_LINKED_YET,
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
        # The launch shows the user is a member of this LMS course now: grade passback goes to
        # the LMS courses a student is a member of (one section's scores stay in its columns),
        # also before any roster was read. The next roster sync may still drop them.
        sub = str(launch.claims["sub"])
        if not Membership.objects.filter(context=context, sub=sub).update(user=user, dropped_at=None):
            Membership.objects.get_or_create(
                context=context,
                sub=sub,
                defaults={
                    "user": user,
                    "role": role,
                    "name": str(launch.claims.get("name") or "")[:255],
                    "email": user.email,
                },
            )
        course = context.course
        if course is not None:
            if role == INSTRUCTOR:
                if not grant_instructor(context, user):
                    role = LEARNER  # an enrolled student stays one
            else:
                revoke_instructor(context, [user.pk])
                # Someone who still teaches the course (rights given in Dikkat, or by another
                # LMS course), or whom this LMS course ever made an instructor, is not made its
                # student: Moodle's "switch role to student" sends a teacher's launch as a
                # learner's, and an enrolment would stop the LMS from ever making them an
                # instructor again (grant_instructor). Their next instructor launch gives the
                # rights back.
                taught_here = InstructorGrant.objects.filter(context=context, user=user).exists()
                if not taught_here and not course.instructors.filter(pk=user.pk).exists():
                    Enrollment.objects.get_or_create(user=user, course=course)
        link = None
        link_claim = launch.claim("resource_link")
        if isinstance(link_claim, dict) and link_claim.get("id"):
            link, _created = ResourceLink.objects.get_or_create(
                context=context,
                resource_link_id=str(link_claim["id"]),
                defaults={"title": str(link_claim.get("title", ""))[:255]},
            )
            ResourceLink.objects.filter(pk=link.pk).update(
                **grade_service(launch.claims.get(AGS_CLAIM), link)
            )
    return Landing(user=user, role=role, context=context, link=link)
