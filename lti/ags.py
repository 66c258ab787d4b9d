"""Assignment and Grade Services (AGS 2.0), the calls themselves: the link's line item (the
grade column in the LMS, found or made through the link's ``lineitems`` address) and one score
POST. The score outbox that queues, retries and orders these calls is the next step of issue
17 (docs/lti.md, "What is left")."""

from datetime import datetime

from .http import PlatformUnreachable, get_json_page, post_json
from .models import ResourceLink
from .services import ServiceFailed, access_token, forget_token

LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


def lineitem(link: ResourceLink, label: str, maximum: float) -> str:
    """The URL of the link's line item: the one the launch named, else the platform's line item
    for this resource link, else a new one (stored on the link either way)."""
    if link.lineitem_url:
        return link.lineitem_url
    if not link.lineitems_url:
        raise ServiceFailed(f"{link}: no grade service address yet (a launch brings it)")
    platform = link.context.platform
    token = access_token(platform, [LINEITEM_SCOPE])
    query = "&" if "?" in link.lineitems_url else "?"
    url = f"{link.lineitems_url}{query}resource_link_id={link.resource_link_id}"
    try:
        found, _next = get_json_page(url, token, LINEITEMS_TYPE)
        items = [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []
        mine = [i for i in items if i.get("resourceLinkId") == link.resource_link_id and i.get("id")]
        if mine:
            item_url = str(mine[0]["id"])
        else:
            made = post_json(
                link.lineitems_url,
                {"label": label[:255], "scoreMaximum": maximum, "resourceLinkId": link.resource_link_id},
                token,
                LINEITEM_TYPE,
            )
            if not isinstance(made, dict) or not isinstance(made.get("id"), str):
                raise ServiceFailed(f"{link}: the platform made a line item without an id")
            item_url = made["id"]
    except PlatformUnreachable as error:
        if error.status == 401:
            forget_token(platform, [LINEITEM_SCOPE])
        raise ServiceFailed(f"line item of {link}: {error}") from error
    ResourceLink.objects.filter(pk=link.pk).update(lineitem_url=item_url[:1000])
    link.lineitem_url = item_url[:1000]
    return link.lineitem_url


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
