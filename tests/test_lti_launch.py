"""LTI 1.3 launches end to end against a test platform that speaks real HTTP (tests/lti_platform.py):
login initiation → the platform's authorisation endpoint → the id_token form posted back → the
launch. A good launch logs the LMS user in to the linked course; each hostile launch is refused
with its reason in the log, a page that says what to do, and no session and no account made."""

import html
import json
import logging
import time
from datetime import timedelta
from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.utils import timezone
from lti_platform import (
    INSTITUTION_INSTRUCTOR,
    INSTRUCTOR,
    LEARNER,
    REMOVE,
    Launch,
    SigningKey,
    TestPlatform,
    fetch_form,
)

from courses.models import Enrollment
from lti.endpoints import tool_endpoints
from lti.linking import approve_link
from lti.models import LoginState, LtiContext, LtiUser, Platform


@pytest.fixture
def platform(db, settings):
    settings.SITE_URL = "http://testserver"
    settings.LTI_ALLOW_PRIVATE_HOSTS = True  # the test platform is http on 127.0.0.1
    with TestPlatform() as lms:
        call_command(*(["lti_platform", *lms.registration_args()]), stdout=StringIO())
        lms.tool = tool_endpoints()
        yield lms


@pytest.fixture
def linked(platform, mini_course, client, make_user):
    """The LMS course is linked to the mini course: its instructor asks for it at the first
    launch, an administrator approves (teacher-1 then teaches the mini course)."""
    Platform.objects.update(course=mini_course)
    response = run_launch(
        client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR], email="t@lms.example")
    )
    assert response["Location"] == "/lti/kurs-sec/"
    response = client.post("/lti/kurs-sec/", {"course": "mini"})
    assert response.status_code == 302
    client.logout()
    assert approve_link(LtiContext.objects.get(), make_user("lti-admin", is_staff=True, is_superuser=True))
    return mini_course


def start(client, platform: TestPlatform, launch: Launch) -> tuple[str, dict[str, str]]:
    """Login initiation, then the platform's authorisation endpoint over HTTP: the form the
    platform posts back to the tool (its action and fields)."""
    response = client.post("/lti/login/", platform.login_params(launch))
    assert response.status_code == 302, response.content.decode()
    assert response["Location"].startswith(platform.url + "/auth?")
    return fetch_form(response["Location"])


def post_back(client, action: str, fields: dict[str, str]):
    return client.post(urlsplit(action).path, fields)


def run_launch(client, platform: TestPlatform, launch: Launch):
    return post_back(client, *start(client, platform, launch))


def assert_refused(response, caplog, reason: str, shown: str):
    assert response.status_code == 403
    text = html.unescape(response.content.decode())
    assert shown in text  # the Turkish page says what happened and what to do
    assert "sessionid" not in response.cookies
    assert Session.objects.count() == 0
    refusals = [r.getMessage() for r in caplog.records if r.name == "lti.views"]
    assert any(reason in message for message in refusals), refusals


# --- good launches -------------------------------------------------------------------------


def test_instructor_first_launch_asks_for_the_link_and_once_approved_a_student_lands_enrolled(
    platform, mini_course, client, make_user
):
    Platform.objects.update(course=mini_course)
    response = run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR], name="Ayşe Hoca"))
    assert response.status_code == 302 and response["Location"] == "/lti/kurs-sec/"
    page = client.get("/lti/kurs-sec/").content.decode()
    assert "Mini kurs" in page and "Dikkat 101 (LMS)" in page
    response = client.post("/lti/kurs-sec/", {"course": "mini"}, follow=True)
    assert response.redirect_chain[-1][0] == "/lti/kurs-sec/"
    # teacher-1 teaches nothing in Dikkat: the link waits for an instructor of the mini course.
    assert "onaylanmasını bekliyor" in html.unescape(response.content.decode())
    teacher = LtiUser.objects.get(sub="teacher-1").user
    assert not mini_course.is_instructor(teacher)
    context = LtiContext.objects.get(context_id="lms-course-1")
    assert context.course is None and context.requested_course == mini_course
    assert context.linked_by == teacher

    hoca = make_user("hoca")
    mini_course.instructors.add(hoca)
    assert approve_link(context, hoca)
    context.refresh_from_db()
    assert context.course == mini_course and context.approved_by == hoca
    assert mini_course.is_instructor(teacher)

    student_browser = client.__class__()
    response = run_launch(
        student_browser, platform, Launch(sub="student-1", roles=[LEARNER], email="s@lms.example")
    )
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/"
    student = LtiUser.objects.get(sub="student-1").user
    assert Enrollment.objects.filter(user=student, course=mini_course).exists()
    assert not mini_course.is_instructor(student)
    assert not student.has_usable_password()
    page = student_browser.get("/kurs/mini/").content.decode()
    assert "Mini kurs" in page and student.username in page  # logged in (the log-out button names them)


def test_second_launch_of_the_same_lms_user_is_the_same_account(platform, linked, client):
    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], email="s@lms.example"))
    client.logout()
    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], email="s@lms.example"))
    assert LtiUser.objects.filter(sub="student-1").count() == 1
    assert User.objects.filter(lti_links__sub="student-1").count() == 1


def test_an_email_of_an_existing_dikkat_account_does_not_log_into_it(platform, linked, client, make_user):
    alice = make_user("alice")  # alice@example.com, a Dikkat account with a password
    response = run_launch(
        client, platform, Launch(sub="lms-alice", roles=[LEARNER], email="alice@example.com")
    )
    assert response.status_code == 302
    linked_user = LtiUser.objects.get(sub="lms-alice").user
    assert linked_user != alice
    assert int(client.session["_auth_user_id"]) == linked_user.pk
    assert not Enrollment.objects.filter(user=alice).exists()


def test_a_platform_that_rotated_its_key_is_fetched_again_once(platform, linked, client, settings):
    # The key set was fetched at the first launch; a minute later a new kid fetches it again.
    a_while_ago = timezone.now() - timedelta(seconds=settings.LTI_JWKS_REFETCH_INTERVAL)
    Platform.objects.update(jwks_fetched_at=a_while_ago, jwks_tried_at=a_while_ago)
    requests_before = platform.jwks_requests
    platform.rotate_key(keep_old=False)
    response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/"
    assert platform.jwks_requests == requests_before + 1
    client.logout()
    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    assert platform.jwks_requests == requests_before + 1  # the new key is kept


def test_a_launch_keeps_the_grade_service_addresses_of_its_link(platform, linked, client):
    from lti.models import ResourceLink

    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], resource_link_id="link-7"))
    link = ResourceLink.objects.get(resource_link_id="link-7")
    assert link.lineitem_url == f"{platform.url}/ags/lms-course-1/lineitems/link-7"
    assert link.lineitems_url == f"{platform.url}/ags/lms-course-1/lineitems"
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in link.ags_scopes


def test_a_clock_a_little_ahead_is_accepted(platform, linked, client):
    response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], issued_ago=-20))
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/"


def test_a_teacher_of_the_course_launching_as_a_learner_is_not_made_its_student(
    platform, linked, client, make_user
):
    # hoca teaches the course in Dikkat; the administrator linked her LMS account to her account.
    # Viewing the LMS course as a student (Moodle's "switch role"), she launches as a learner.
    hoca = make_user("hoca")
    linked.instructors.add(hoca)
    LtiUser.objects.create(
        platform=Platform.objects.get(), issuer=platform.issuer, sub="teacher-2", user=hoca
    )
    response = run_launch(client, platform, Launch(sub="teacher-2", roles=[LEARNER]))
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/"
    assert linked.is_instructor(hoca)
    assert not Enrollment.objects.filter(user=hoca, course=linked).exists()
    client.logout()
    # Her next launch as the LMS course's instructor still makes her its instructor here.
    response = run_launch(client, platform, Launch(sub="teacher-2", roles=[INSTRUCTOR]))
    assert client.session["lti"]["role"] == "instructor"


def test_a_teacher_whose_rights_come_from_the_lms_switching_role_is_a_teacher_again_afterwards(
    platform, linked, client
):
    # teacher-1 teaches the course only because the LMS says so (the linked fixture approved her
    # link). Moodle's "switch role to student" sends her launch as a learner's.
    teacher = LtiUser.objects.get(sub="teacher-1").user
    assert linked.is_instructor(teacher)
    assert run_launch(client, platform, Launch(sub="teacher-1", roles=[LEARNER])).status_code == 302
    assert not Enrollment.objects.filter(user=teacher, course=linked).exists()
    client.logout()
    run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR]))
    assert client.session["lti"]["role"] == "instructor"
    assert linked.is_instructor(teacher)


# --- hostile launches ----------------------------------------------------------------------


def test_replayed_launch_is_refused(platform, linked, client, caplog):
    action, fields = start(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    assert post_back(client, action, fields).status_code == 302
    client.logout()
    Session.objects.all().delete()
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = post_back(client, action, fields)
    assert_refused(
        response, caplog, "state unknown or already used", "süresi dolmuş ya da giriş zaten kullanılmış"
    )


def test_id_token_with_a_replayed_nonce_is_refused(platform, linked, client, caplog):
    _action, first = start(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    stale_nonce = LoginState.objects.get(state=first["state"]).nonce
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], nonce=stale_nonce))
    assert_refused(response, caplog, "nonce differs", "süresi dolmuş ya da giriş zaten kullanılmış")


def test_wrong_audience_is_refused(platform, linked, client, caplog):
    launch = Launch(sub="student-1", roles=[LEARNER], claims={"aud": "another-tool"})
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, launch)
    assert_refused(response, caplog, "wrong aud", "Dikkat'e kayıtlı değil")
    assert not LtiUser.objects.filter(sub="student-1").exists()


def test_several_audiences_without_our_azp_are_refused(platform, linked, client, caplog):
    launch = Launch(
        sub="student-1", roles=[LEARNER], claims={"aud": ["dikkat-tool", "other"], "azp": "other"}
    )
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, launch)
    assert_refused(response, caplog, "azp 'other' is not our client id", "Dikkat'e kayıtlı değil")


def test_unknown_deployment_is_refused(platform, linked, client, caplog):
    launch = Launch(
        sub="student-1",
        roles=[LEARNER],
        claims={"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "elsewhere"},
    )
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, launch)
    assert_refused(response, caplog, "unknown deployment_id 'elsewhere'", "Dikkat'e kayıtlı değil")


def test_expired_token_is_refused(platform, linked, client, caplog):
    launch = Launch(sub="student-1", roles=[LEARNER], issued_ago=600, lifetime=300)
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, launch)
    assert_refused(response, caplog, "id_token expired", "süresi dolmuş ya da giriş zaten kullanılmış")


def test_token_signed_by_a_key_the_platform_does_not_publish_is_refused(
    platform, linked, client, caplog, settings
):
    a_while_ago = timezone.now() - timedelta(seconds=settings.LTI_JWKS_REFETCH_INTERVAL)
    Platform.objects.update(jwks_fetched_at=a_while_ago, jwks_tried_at=a_while_ago)
    requests_before = platform.jwks_requests
    launch = Launch(sub="student-1", roles=[LEARNER], key=SigningKey())
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, launch)
    assert_refused(response, caplog, "signed by a key the platform does not publish", "doğrulayamadı")
    assert platform.jwks_requests == requests_before + 1  # refetched once, not more


def test_unknown_kids_within_the_refetch_interval_do_not_fetch_the_key_set_again(
    platform, linked, client, caplog, settings
):
    # The key set was fetched a moment ago (the linked fixture's launches): a stream of tokens
    # with made-up kids must not make Dikkat fetch it once per token.
    settings.LTI_JWKS_REFETCH_INTERVAL = 60
    requests_before = platform.jwks_requests
    with caplog.at_level(logging.WARNING, logger="lti"):
        for _ in range(3):
            response = run_launch(
                client, platform, Launch(sub="student-1", roles=[LEARNER], key=SigningKey())
            )
            assert_refused(response, caplog, "fetched less than 60 s ago, not again", "doğrulayamadı")
    assert platform.jwks_requests == requests_before
    # Once the interval has passed, the platform's real new key is fetched, once.
    a_minute_ago = timezone.now() - timedelta(seconds=60)
    Platform.objects.update(jwks_fetched_at=a_minute_ago, jwks_tried_at=a_minute_ago)
    platform.rotate_key(keep_old=False)
    response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/"
    assert platform.jwks_requests == requests_before + 1


def test_a_failed_key_set_fetch_does_not_make_the_old_keys_look_fresh(
    platform, linked, client, caplog, settings
):
    long_ago = timezone.now() - timedelta(seconds=settings.LTI_JWKS_MAX_AGE + 60)
    Platform.objects.update(jwks_fetched_at=long_ago, jwks_tried_at=long_ago)
    Platform.objects.update(jwks_url=platform.url + "/no-such-key-set")
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    assert_refused(response, caplog, "key set could not be fetched", "doğrulayamadı")
    stored = Platform.objects.get()
    assert stored.jwks_fetched_at == long_ago  # still stale: the next launch a minute on tries again
    assert stored.jwks_tried_at > long_ago  # but not before then


def test_token_signed_by_another_key_under_a_published_kid_is_refused(platform, linked, client, caplog):
    forged = SigningKey()
    forged.kid = platform.active_key.kid
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], key=forged))
    assert_refused(response, caplog, "bad signature", "doğrulayamadı")


def test_changed_sub_for_a_known_email_is_refused(platform, linked, client, caplog):
    run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], email="Selin@lms.example"))
    client.logout()
    Session.objects.all().delete()
    users = User.objects.count()
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(
            client, platform, Launch(sub="student-1b", roles=[LEARNER], email="selin@lms.example")
        )
    assert_refused(
        response, caplog, "new sub 'student-1b' brings the e-mail of another sub", "aynı e-posta adresine"
    )
    assert User.objects.count() == users


def test_learner_claiming_an_instructor_role_in_an_unlinked_lms_course_is_refused(
    platform, mini_course, client, caplog
):
    Platform.objects.update(course=mini_course)
    launch = Launch(sub="student-9", roles=[LEARNER, INSTITUTION_INSTRUCTOR], context_id="lms-course-new")
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, launch)
    assert_refused(
        response,
        caplog,
        "a learner's launch into LMS course 'lms-course-new'",
        "henüz bir Dikkat kursuna bağlanmadı",
    )
    assert not LtiUser.objects.exists() and not LtiContext.objects.exists()
    assert not mini_course.instructors.exists()


def test_instructor_may_only_link_a_course_offered_to_them(platform, mini_course, client, make_user):
    other = make_user("someone-else")
    from courses.models import Course

    secret = Course.objects.create(slug="secret", title="Gizli kurs")
    secret.instructors.add(other)
    Platform.objects.update(course=mini_course)
    run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR]))
    response = client.post("/lti/kurs-sec/", {"course": "secret"})
    assert response.status_code == 400
    assert "Gizli kurs" not in response.content.decode()
    assert LtiContext.objects.get().course is None
    assert not secret.instructors.filter(lti_links__sub="teacher-1").exists()


def test_launch_without_the_state_cookie_of_this_browser_is_refused(platform, linked, client, caplog):
    action, fields = start(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    other_browser = client.__class__()
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = post_back(other_browser, action, fields)
    assert_refused(response, caplog, "state cookie missing", "süresi dolmuş ya da giriş zaten kullanılmış")


def test_token_without_a_nonce_is_refused(platform, linked, client, caplog):
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(
            client, platform, Launch(sub="student-1", roles=[LEARNER], claims={"nonce": REMOVE})
        )
    assert_refused(response, caplog, 'Token is missing the "nonce" claim', "doğrulayamadı")


def test_login_from_an_unregistered_platform_is_refused(platform, client, caplog):
    params = platform.login_params(Launch(sub="x", roles=[LEARNER]))
    params["iss"] = "https://unknown.example"
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = client.post("/lti/login/", params)
    assert response.status_code == 400
    assert "Dikkat'e kayıtlı değil" in html.unescape(response.content.decode())
    assert LoginState.objects.count() == 0


def test_login_state_expires(platform, linked, client, caplog, settings):
    action, fields = start(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    LoginState.objects.update(created_at=LoginState.objects.get().created_at.replace(year=2000))
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = post_back(client, action, fields)
    assert_refused(response, caplog, "state expired", "süresi dolmuş ya da giriş zaten kullanılmış")


# --- the tool's keys and the registration command -----------------------------------------


def test_jwks_publishes_the_new_key_and_the_rotated_out_one(platform, client):
    first = client.get("/lti/jwks/").json()["keys"]
    assert len(first) == 1 and first[0]["kty"] == "RSA" and "d" not in first[0]
    out = StringIO()
    call_command("lti_keys", "rotate", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert [k["active"] for k in report["keys"]] == [True, False]
    kids = {k["kid"] for k in client.get("/lti/jwks/").json()["keys"]}
    assert kids == {k["kid"] for k in report["keys"]} and first[0]["kid"] in kids


def test_rotated_out_keys_leave_the_jwks_after_the_overlap(platform, client, settings):
    call_command("lti_keys", "rotate", stdout=StringIO())
    settings.LTI_KEY_OVERLAP = 0
    time.sleep(0.01)
    call_command("lti_keys", "rotate", stdout=StringIO())
    assert len(client.get("/lti/jwks/").json()["keys"]) == 1


def test_lti_platform_add_and_list_print_the_contract(db, settings, mini_course):
    settings.SITE_URL = "https://dikkat.example.edu"
    out = StringIO()
    call_command(
        "lti_platform", "add", "--issuer", "https://moodle.example.edu", "--client-id", "abc",
        "--deployment", "1", "--auth-url", "https://moodle.example.edu/mod/lti/auth.php",
        "--token-url", "https://moodle.example.edu/mod/lti/token.php",
        "--jwks-url", "https://moodle.example.edu/mod/lti/certs.php", "--course", "mini", "--json",
        stdout=out,
    )  # fmt: skip
    added = json.loads(out.getvalue())
    assert set(added) == {"platform", "login_url", "launch_url", "jwks_url", "deep_link_url"}
    assert added["login_url"] == "https://dikkat.example.edu/lti/login/"
    assert added["launch_url"] == "https://dikkat.example.edu/lti/launch/"
    assert added["jwks_url"] == "https://dikkat.example.edu/lti/jwks/"
    assert added["deep_link_url"] == "https://dikkat.example.edu/lti/deep-link/"
    assert added["platform"]["deployment_ids"] == ["1"] and added["platform"]["course"] == "mini"
    out = StringIO()
    call_command("lti_platform", "list", "--json", stdout=out)
    assert json.loads(out.getvalue()) == [added]


def test_lti_platform_add_refuses_a_bad_url_and_an_unknown_course(db):
    from django.core.management.base import CommandError

    args = ["lti_platform", "add", "--issuer", "https://lms.example", "--client-id", "c", "--deployment", "d",
            "--auth-url", "https://lms.example/auth", "--token-url", "https://lms.example/token"]  # fmt: skip
    with pytest.raises(CommandError, match="--jwks-url: 'certs' is not an http"):
        call_command(*args, "--jwks-url", "certs")
    with pytest.raises(CommandError, match="--course: no active course 'nope'"):
        call_command(*args, "--jwks-url", "https://lms.example/certs", "--course", "nope")
    assert not Platform.objects.exists()
