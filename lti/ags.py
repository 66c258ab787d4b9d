"""Assignment and Grade Services (AGS 2.0), the calls themselves: the link's line item (the
grade column in the LMS, found or made through the link's ``lineitems`` address) and one score
POST. The score outbox (lti.outbox, lti.passback) queues, retries and orders these calls."""

import time
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from .http import PlatformUnreachable, get_json_page, post_json
from .models import ResourceLink
from .services import ServiceFailed, access_token, forget_token

LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_CLAIM_SECONDS = 30.0  # how long a caller without a deadline may take to make a line item
CLAIM_POLL_SECONDS = 0.2  # how often a send waiting for another's line item looks again


class LineItemBusy(ServiceFailed):
    """Another send is making the link's line item and had not finished by this send's deadline:
    this send made no call and is tried again soon (it then finds the line item made)."""


def lineitem(link: ResourceLink, label: str, maximum: float, until: float | None = None) -> str:
    """The URL of the link's line item: the one the launch named, else the platform's line item
    for this resource link, else a new one (stored on the link either way).

    Only one send at a time looks for or makes a link's line item: it claims the link until
    ``until`` (time.monotonic(); its calls end by then) with a conditional UPDATE, which works
    alike on SQLite and PostgreSQL and holds no lock while the platform answers. Another send of
    the same link (another student's score) waits for the claim to end and takes the stored line
    item; were both to make one, the LMS would show two grade columns with the scores split."""
    if link.lineitem_url:
        return link.lineitem_url
    if not link.lineitems_url:
        raise ServiceFailed(f"{link}: no grade service address yet (a launch brings it)")
    until = until if until is not None else time.monotonic() + LINEITEM_CLAIM_SECONDS
    claim = _claim_lineitem(link, until)
    if claim is None:
        return link.lineitem_url  # another send made it meanwhile
    mine = ResourceLink.objects.filter(pk=link.pk, lineitem_claimed_until=claim)
    try:
        item_url = _find_or_make(link, label, maximum)[:1000]
    except BaseException:
        mine.update(lineitem_claimed_until=None)  # the next send tries at once
        raise
    # Stored and the claim ended in one UPDATE: a send waiting for it takes this line item.
    if not ResourceLink.objects.filter(pk=link.pk, lineitem_url="").update(
        lineitem_url=item_url, lineitem_claimed_until=None
    ):
        mine.update(lineitem_claimed_until=None)
        # A launch named the link's line item meanwhile: that one counts.
        item_url = ResourceLink.objects.values_list("lineitem_url", flat=True).get(pk=link.pk) or item_url
    link.lineitem_url = item_url
    return item_url


def _claim_lineitem(link: ResourceLink, until: float) -> datetime | None:
    """Claim the making of the link's line item until ``until``: the claim's end (its token),
    or None once another send has stored the line item (then on ``link``). Waits, polling,
    while another send holds the claim; LineItemBusy when that outlasts ``until``."""
    while True:
        now = timezone.now()
        claim = now + timedelta(seconds=max(0.0, until - time.monotonic()))
        free = Q(lineitem_claimed_until__isnull=True) | Q(lineitem_claimed_until__lt=now)
        if ResourceLink.objects.filter(free, pk=link.pk, lineitem_url="").update(
            lineitem_claimed_until=claim
        ):
            return claim
        stored = ResourceLink.objects.values_list("lineitem_url", flat=True).get(pk=link.pk)
        if stored:
            link.lineitem_url = stored
            return None
        if time.monotonic() + CLAIM_POLL_SECONDS >= until:
            raise LineItemBusy(f"{link}: another send is making its line item")
        time.sleep(CLAIM_POLL_SECONDS)


def _find_or_make(link: ResourceLink, label: str, maximum: float) -> str:
    """The platform's line item of the link (found by its resource link id) or a new one."""
    platform = link.context.platform
    token = access_token(platform, [LINEITEM_SCOPE])
    query = "&" if "?" in link.lineitems_url else "?"
    url = f"{link.lineitems_url}{query}resource_link_id={link.resource_link_id}"
    try:
        found, _next = get_json_page(url, token, LINEITEMS_TYPE)
        items = [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []
        mine = [i for i in items if i.get("resourceLinkId") == link.resource_link_id and i.get("id")]
        if mine:
            return str(mine[0]["id"])
        made = post_json(
            link.lineitems_url,
            {"label": label[:255], "scoreMaximum": maximum, "resourceLinkId": link.resource_link_id},
            token,
            LINEITEM_TYPE,
        )
        if not isinstance(made, dict) or not isinstance(made.get("id"), str):
            raise ServiceFailed(f"{link}: the platform made a line item without an id")
        return made["id"]
    except PlatformUnreachable as error:
        if error.status == 401:
            forget_token(platform, [LINEITEM_SCOPE])
        raise ServiceFailed(f"line item of {link}: {error}") from error


def send_score(link: ResourceLink, user_id: str, given: float, maximum: float, at: datetime) -> None:
    """POST one score to the link's line item; ``at`` is its ``timestamp`` (the platform keeps
    a score only when it is newer than the one it has, so a late retry never overwrites a newer
    score). Raises PlatformUnreachable with the platform's status (0: no answer)."""
    token = access_token(link.context.platform, [SCORE_SCOPE])
    path, _, query = link.lineitem_url.partition("?")
    url = f"{path.rstrip('/')}/scores" + (f"?{query}" if query else "")
    score = {
        "userId": user_id,
        "scoreGiven": given,
        "scoreMaximum": maximum,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": at.isoformat(timespec="microseconds"),
    }
    try:
        post_json(url, score, token, SCORE_TYPE)
    except PlatformUnreachable as error:
        if error.status == 401:
            forget_token(link.context.platform, [SCORE_SCOPE])
        raise
