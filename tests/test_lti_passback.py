"""Assignment and Grade Services against the test platform: the link's line item is found or
made, and a score POST carries its timestamp so the platform keeps only the newest one.
(The score outbox that queues and retries these calls: test_lti_outbox.py.)"""

from datetime import timedelta

import pytest
import test_lti_launch
from django.core.cache import cache
from django.utils import timezone
from lti_platform import LEARNER, Launch
from test_lti_launch import run_launch

from lti.ags import lineitem, send_score
from lti.http import PlatformUnreachable
from lti.models import ResourceLink, ToolKey

platform = test_lti_launch.platform
linked = test_lti_launch.linked


@pytest.fixture
def link(platform, linked, client):
    cache.clear()  # no access token kept from another test's platform
    keys = ToolKey.jwks()  # read here: the platform thread has no view of the test transaction
    platform.tool_jwks = lambda: keys
    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], resource_link_id="link-7"))
    return ResourceLink.objects.select_related("context__platform").get(resource_link_id="link-7")


def test_a_link_without_a_line_item_gets_one_made_once(platform, link):
    ResourceLink.objects.filter(pk=link.pk).update(lineitem_url="")
    link.lineitem_url = ""
    url = lineitem(link, "Dikkat: ilk ders", 10)
    assert url == f"{platform.url}/ags/lms-course-1/lineitems/item-1"
    assert platform.lineitems["lms-course-1"] == [
        {"label": "Dikkat: ilk ders", "scoreMaximum": 10, "resourceLinkId": "link-7", "id": url}
    ]
    link.refresh_from_db()
    assert link.lineitem_url == url
    # Forgotten (a launch that named no line item): the platform's own one for the link is found.
    ResourceLink.objects.filter(pk=link.pk).update(lineitem_url="")
    link.lineitem_url = ""
    assert lineitem(link, "Dikkat: ilk ders", 10) == url
    assert len(platform.lineitems["lms-course-1"]) == 1
    assert [r["method"] for r in platform.received if r["path"] == "/ags/lms-course-1/lineitems"] == [
        "GET",
        "POST",
        "GET",
    ]
    link.refresh_from_db()
    assert (link.lineitem_url, link.lineitem_claimed_until) == (url, None)


def test_a_score_arrives_and_an_older_one_sent_late_does_not_replace_it(platform, link):
    now = timezone.now()
    send_score(link, "student-1", 7, 10, now)
    send_score(link, "student-1", 4, 10, now - timedelta(seconds=1))  # a late retry of an old score
    send_score(link, "student-1", 7, 10, now)  # the same score again: harmless
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in platform.scores] == [
        ("student-1", 7, 10)
    ]
    assert platform.scores[0]["gradingProgress"] == "FullyGraded"


def test_a_platform_error_is_raised_with_its_status_and_the_retry_arrives(platform, link):
    platform.fail_scores = 1
    with pytest.raises(PlatformUnreachable) as error:
        send_score(link, "student-1", 9, 10, timezone.now())
    assert error.value.status == 500
    assert "try again later" in str(error.value)
    send_score(link, "student-1", 9, 10, timezone.now())
    assert [s["scoreGiven"] for s in platform.scores] == [9]
