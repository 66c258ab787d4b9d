"""Names and Roles (NRPS) against the test platform: the tool gets an access token with a signed
client assertion, reads the roster page by page, enrols the members it knows and marks the
ones the LMS dropped — never deleting anyone."""

import json
import logging
from io import StringIO

import pytest
import test_lti_launch
from django.core.cache import cache
from django.core.management import call_command
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from lti_platform import INSTRUCTOR, LEARNER, Launch
from test_lti_launch import run_launch

from courses.models import Enrollment
from lti.models import InstructorGrant, LtiContext, LtiUser, Membership, ToolKey
from lti.roster import sync_roster, sync_roster_task
from lti.services import ServiceFailed

platform = test_lti_launch.platform
linked = test_lti_launch.linked


@pytest.fixture
def roster(platform, linked, client):
    cache.clear()  # no access token kept from another test's platform
    keys = ToolKey.jwks()  # read here: the platform thread has no view of the test transaction
    platform.tool_jwks = lambda: keys
    platform.members["lms-course-1"] = [
        platform.member("teacher-1", [INSTRUCTOR]),
        platform.member("student-1", [LEARNER], email="selin@lms.example", name="Selin"),
        platform.member("student-2", [LEARNER]),
        platform.member("student-3", [LEARNER]),
        platform.member("student-4", [LEARNER], status="Inactive"),
    ]
    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    client.logout()
    return platform


def launch_then_run_the_queued_sync(client, lms, launch, capture) -> None:
    """An instructor's launch queues the roster sync (it is not read in the launch request);
    then the queued task runs, as a worker would run it."""
    asked = len([r for r in lms.received if r["path"].startswith("/nrps/")])
    with capture(execute=True):
        run_launch(client, lms, launch)
    assert len([r for r in lms.received if r["path"].startswith("/nrps/")]) == asked
    queued = DBTaskResult.objects.filter(
        task_path=sync_roster_task.module_path, status=TaskResultStatus.READY
    )
    assert queued.count() == 1
    sync_roster_task.call(*queued.get().args_kwargs["args"])


def test_an_instructor_launch_reads_the_whole_roster(
    roster, client, linked, django_capture_on_commit_callbacks
):
    launch_then_run_the_queued_sync(
        client, roster, Launch(sub="teacher-1", roles=[INSTRUCTOR]), django_capture_on_commit_callbacks
    )
    members = {m.sub: m for m in Membership.objects.all()}
    assert set(members) == {"teacher-1", "student-1", "student-2", "student-3"}  # three pages read
    assert members["student-1"].user == LtiUser.objects.get(sub="student-1").user
    assert members["student-1"].name == "Selin" and members["student-2"].user is None
    assert members["teacher-1"].role == "instructor" and members["student-2"].role == "learner"
    assert LtiContext.objects.get().roster_synced_at is not None
    assert len([r for r in roster.received if r["path"] == "/token"]) == 1


def test_dropped_members_are_marked_and_keep_their_work(roster, linked):
    context = LtiContext.objects.get()
    sync_roster(context)
    roster.members["lms-course-1"] = [
        m for m in roster.members["lms-course-1"] if m["user_id"] not in ("student-1", "student-2")
    ]
    result = sync_roster(context)
    assert (result.dropped, result.added) == (2, 0)
    dropped = Membership.objects.filter(dropped_at__isnull=False)
    assert set(dropped.values_list("sub", flat=True)) == {"student-1", "student-2"}
    student = LtiUser.objects.get(sub="student-1").user
    assert Enrollment.objects.filter(user=student, course=linked).exists()  # marked, never deleted
    roster.members["lms-course-1"].append(roster.member("student-1", [LEARNER]))
    assert sync_roster(context).returned == 1


def test_a_roster_the_platform_refuses_changes_nothing(roster, linked, caplog):
    context = LtiContext.objects.get()
    sync_roster(context)
    roster.tokens.clear()
    roster.tool_jwks = lambda: {"keys": []}  # the platform no longer knows our key
    with pytest.raises(ServiceFailed, match="no access token"):
        sync_roster(context)
    assert Membership.objects.filter(dropped_at__isnull=True).count() == 4


def test_the_roster_email_links_nobody(roster, linked, make_user):
    make_user("someone")  # someone@example.com
    roster.members["lms-course-1"][2]["email"] = "someone@example.com"
    sync_roster(LtiContext.objects.get())
    assert Membership.objects.get(sub="student-2").user is None


def test_lti_roster_command(roster, linked, caplog):
    out = StringIO()
    with caplog.at_level(logging.INFO, logger="lti"):
        call_command("lti_roster", "--json", stdout=out)
    (entry,) = json.loads(out.getvalue())["contexts"]
    # The teacher and the student who launched are members already (their launches said so).
    assert entry["members"] == 4 and entry["added"] == 2 and entry["dropped"] == 0


def test_instructors_see_the_roster_and_read_it_again(
    roster, linked, client, make_user, django_capture_on_commit_callbacks
):
    import html

    context = LtiContext.objects.get()
    sync_roster(context)
    roster.members["lms-course-1"].pop(2)  # student-2 leaves the LMS course
    launch_then_run_the_queued_sync(  # the launch has it read again
        client, roster, Launch(sub="teacher-1", roles=[INSTRUCTOR]), django_capture_on_commit_callbacks
    )
    page = html.unescape(client.get(f"/lti/uyeler/{context.pk}/").content.decode())
    assert "“Dikkat 101 (LMS)” üyeleri" in page and "Selin" in page
    assert Membership.objects.get(sub="student-2").dropped_at is not None
    response = client.post(f"/lti/uyeler/{context.pk}/", follow=True)
    assert "Üye listesi okundu: 3 üye, 0 yeni, 0 ayrılan." in html.unescape(response.content.decode())

    client.logout()
    client.force_login(make_user("stranger"))
    assert client.get(f"/lti/uyeler/{context.pk}/").status_code == 404
    assert client.post(f"/lti/uyeler/{context.pk}/").status_code == 404


def test_the_roster_takes_back_instructor_rights_the_lms_gave_and_only_those(
    roster, linked, client, make_user
):
    context = LtiContext.objects.get()
    teacher = LtiUser.objects.get(sub="teacher-1").user  # teaches through the approved link
    assert linked.is_instructor(teacher)
    # hoca teaches the course in Dikkat; the administrator linked her LMS account to her account.
    hoca = make_user("hoca")
    linked.instructors.add(hoca)
    LtiUser.objects.create(platform=context.platform, issuer=roster.issuer, sub="teacher-2", user=hoca)
    run_launch(client, roster, Launch(sub="teacher-2", roles=[INSTRUCTOR]))
    client.logout()
    assert not InstructorGrant.objects.filter(user=hoca).exists()  # rights from Dikkat: no grant
    roster.members["lms-course-1"].append(roster.member("teacher-2", [INSTRUCTOR]))
    sync_roster(context)
    assert linked.is_instructor(teacher) and linked.is_instructor(hoca)

    # The LMS now lists teacher-1 as a learner, and teacher-2 no more.
    members = roster.members["lms-course-1"]
    members[0] = roster.member("teacher-1", [LEARNER])
    members.pop()
    result = sync_roster(context)
    assert result.revoked == 1
    assert not linked.is_instructor(teacher)
    grant = InstructorGrant.objects.get(user=teacher, context=context)
    assert grant.revoked_at is not None  # kept, with the time
    assert Enrollment.objects.filter(user=teacher, course=linked).exists()  # a learner now
    assert linked.is_instructor(hoca)  # given in Dikkat: the LMS does not take it back
    assert Membership.objects.get(sub="teacher-2").dropped_at is not None

    # Listed as instructor again: an enrolled student is not made an instructor by the LMS.
    members[0] = roster.member("teacher-1", [INSTRUCTOR])
    sync_roster(context)
    assert not linked.is_instructor(teacher)
