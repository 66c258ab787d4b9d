"""Names and Role Provisioning (NRPS 2.0): the LMS course's roster, on demand (the roster
page, `manage.py lti_roster`) and after an instructor's launch (queued: `queue_roster_sync`,
run by a worker, never inside the launch request). Members become `Membership` rows; a member
with a Dikkat account (they launched before) is enrolled in, or teaches, the linked course; one
the roster no longer lists (or lists as Inactive or Deleted) is marked dropped, never deleted.
Instructor rights the LMS gave (`InstructorGrant`) are revoked when the roster no longer lists
the user as an instructor. The e-mail in the roster links nobody to an account (see lti.linking)."""

import logging
from dataclasses import asdict, dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.tasks import TaskResultStatus, task
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from courses.models import Enrollment

from .http import PlatformUnreachable, get_json_page
from .linking import INSTRUCTOR, context_role, grant_instructor, revoke_instructor
from .models import InstructorGrant, LtiContext, LtiUser, Membership
from .services import ServiceFailed, access_token, forget_token

logger = logging.getLogger(__name__)

SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 200


@dataclass
class RosterSync:
    members: int = 0  # active members with a role the roster lists
    added: int = 0
    dropped: int = 0
    returned: int = 0  # dropped before, listed again
    revoked: int = 0  # instructor rights from the LMS taken back


def _members(context: LtiContext) -> list[dict]:
    token = access_token(context.platform, [SCOPE])
    members: list[dict] = []
    url = context.memberships_url
    retried = False
    for _page in range(MAX_PAGES):
        try:
            data, next_url = get_json_page(url, token, MEDIA_TYPE)
        except PlatformUnreachable as error:
            if error.status == 401 and not retried:  # a kept token the platform dropped: ask anew, once
                forget_token(context.platform, [SCOPE])
                token, retried = access_token(context.platform, [SCOPE]), True
                continue
            raise ServiceFailed(f"roster of {context}: {error}") from error
        url = next_url
        page = data.get("members") if isinstance(data, dict) else None
        if not isinstance(page, list):
            raise ServiceFailed(f"roster of {context}: the answer has no 'members' list")
        members.extend(m for m in page if isinstance(m, dict) and isinstance(m.get("user_id"), str))
        if not url:
            return members
    raise ServiceFailed(f"roster of {context}: more than {MAX_PAGES} pages")


def sync_roster(context: LtiContext) -> RosterSync:
    """Read the LMS course's whole roster and bring the memberships up to date (ServiceFailed
    when the platform does not give it: nothing is changed then)."""
    if not context.memberships_url:
        raise ServiceFailed(f"{context}: no roster URL yet (an instructor's launch brings it)")
    members = _members(context)
    now = timezone.now()
    result = RosterSync()
    users = dict(
        LtiUser.objects.filter(
            platform=context.platform, sub__in=[m["user_id"] for m in members]
        ).values_list("sub", "user_id")
    )
    with transaction.atomic():
        listed, teaching = set(), set()
        for member in members:
            sub = member["user_id"]
            active = member.get("status", "Active") == "Active"
            role = context_role(member.get("roles")) or ""
            if not active or not role:
                continue
            listed.add(sub)
            membership, created = Membership.objects.get_or_create(
                context=context, sub=sub, defaults={"role": role, "user_id": users.get(sub)}
            )
            result.added += created
            result.returned += membership.dropped_at is not None
            Membership.objects.filter(pk=membership.pk).update(
                role=role,
                name=str(member.get("name", ""))[:255],
                email=str(member.get("email", ""))[:254],
                user_id=users.get(sub) or membership.user_id,
                dropped_at=None,
                seen_at=now,
            )
            user_id = users.get(sub)
            if user_id and context.course is not None:
                if role == INSTRUCTOR:
                    user = User.objects.get(pk=user_id)
                    if grant_instructor(context, user):
                        teaching.add(user_id)
                else:
                    Enrollment.objects.get_or_create(user_id=user_id, course=context.course)
        granted = InstructorGrant.objects.filter(context=context, revoked_at__isnull=True)
        result.revoked = revoke_instructor(
            context, [pk for pk in granted.values_list("user_id", flat=True) if pk not in teaching]
        )
        result.dropped = (
            Membership.objects.filter(context=context, dropped_at__isnull=True)
            .exclude(sub__in=listed)
            .update(dropped_at=now)
        )
        result.members = len(listed)
        LtiContext.objects.filter(pk=context.pk).update(roster_synced_at=now)
    logger.info("LTI roster of %s: %s", context, result)
    return result


@task(queue_name="default", priority=-50)
def sync_roster_task(context_id: int) -> dict:
    """Read one LMS course's roster (queued by an instructor's launch); below students' grading."""
    context = LtiContext.objects.select_related("platform", "course").get(pk=context_id)
    try:
        return asdict(sync_roster(context))
    except ServiceFailed as error:
        logger.warning("LTI roster sync of %s failed: %s", context, error)
        return {"error": str(error)}


def queue_roster_sync(context: LtiContext) -> bool:
    """Queue a roster sync of `context` when its transaction commits; False (nothing queued)
    when one is already waiting or running."""
    waiting = DBTaskResult.objects.filter(
        task_path=sync_roster_task.module_path,
        args_kwargs__args=[context.pk],
        status__in=[TaskResultStatus.READY, TaskResultStatus.RUNNING],
    )
    if waiting.exists():
        return False
    transaction.on_commit(lambda: sync_roster_task.enqueue(context.pk))
    return True
