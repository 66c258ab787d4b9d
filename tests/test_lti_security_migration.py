"""LMS accounts and keys stored before migration 0004 keep working after it: each account goes
to the platform of its issuer, and our private keys are encrypted (and still sign)."""

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from lti.models import ToolKey

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("lti", "0003_grade_service_addresses")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_accounts_go_to_their_issuers_platform_and_keys_get_encrypted():
    old = migrate(BEFORE)
    try:
        user_model = old.get_model("auth", "User")
        platform = old.get_model("lti", "Platform")
        fields = {"auth_url": "https://lms.example/auth", "token_url": "https://lms.example/token"}
        first = platform.objects.create(
            issuer="https://lms.example", client_id="one", jwks_url="https://lms.example/jwks", **fields
        )
        platform.objects.create(
            issuer="https://lms.example", client_id="two", jwks_url="https://lms.example/jwks", **fields
        )
        account = old.get_model("lti", "LtiUser")
        account.objects.create(
            issuer="https://lms.example", sub="s-1", user=user_model.objects.create(username="a")
        )
        account.objects.create(
            issuer="https://gone.example", sub="s-2", user=user_model.objects.create(username="b")
        )
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        plain = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode("ascii")
        old.get_model("lti", "ToolKey").objects.create(kid="old-key", private_pem=plain, public_jwk={})
    finally:
        new = migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    accounts = new.get_model("lti", "LtiUser").objects
    assert list(accounts.values_list("sub", "platform_id")) == [("s-1", first.pk)]
    # The account of an issuer no platform has is gone; its Dikkat user stays.
    assert new.get_model("auth", "User").objects.filter(username="b").exists()
    key = ToolKey.objects.get(kid="old-key")
    assert key.private_pem.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert "PRIVATE KEY" in plain and plain not in key.private_pem
    assert key.private_key().private_numbers() == private.private_numbers()


def _course_and_platform(apps):
    """A course and an LMS registration as the models of ``apps`` (an earlier state) store them."""
    course = apps.get_model("courses", "Course").objects.create(slug="eski", title="Eski kurs")
    platform = apps.get_model("lti", "Platform").objects.create(
        issuer="https://lms.example",
        client_id="one",
        jwks_url="https://lms.example/jwks",
        auth_url="https://lms.example/auth",
        token_url="https://lms.example/token",
    )
    return course, platform


def test_links_made_before_approvals_are_judged_by_todays_rules():
    old = migrate([("lti", "0006_lineitem_claim")])
    try:
        users = old.get_model("auth", "User").objects
        course, platform = _course_and_platform(old)
        accounts = old.get_model("lti", "LtiUser").objects
        contexts = old.get_model("lti", "LtiContext").objects

        def lms_account(sub):  # made by a launch: no usable password
            user = users.create(username=f"lms-{sub}", password="!unusable")
            accounts.create(platform=platform, issuer=platform.issuer, sub=sub, user=user)
            return user

        # An LMS instructor linked their own LMS course and so became an instructor here.
        stranger = lms_account("stranger")
        course.instructors.add(stranger)
        contexts.create(platform=platform, context_id="own", course=course, linked_by=stranger)
        # A superuser linked another LMS course; its LMS teacher became an instructor through it.
        staff = users.create(username="staff", is_staff=True, is_superuser=True, password="pbkdf2_sha256$x")
        teacher = lms_account("teacher")
        course.instructors.add(teacher)
        kept = contexts.create(platform=platform, context_id="section-a", course=course, linked_by=staff)
        # A Dikkat instructor with a password (rights given in Dikkat) stays one.
        hoca = users.create(username="hoca", password="pbkdf2_sha256$x")
        course.instructors.add(hoca)
    finally:
        new = migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    contexts = new.get_model("lti", "LtiContext").objects
    grants = new.get_model("lti", "InstructorGrant").objects
    course = new.get_model("courses", "Course").objects.get(slug="eski")
    own = contexts.get(context_id="own")
    assert own.course_id is None and own.requested_course_id == course.pk  # waits for approval
    assert contexts.get(pk=kept.pk).approved_by_id == staff.pk and contexts.get(pk=kept.pk).course_id
    # Which LMS course made an account an instructor was not recorded: while an old link of the
    # course waits, launch-made instructors lose their rights (their next launch through the link
    # that holds gives them back); rights given in Dikkat stay.
    assert set(course.instructors.values_list("username", flat=True)) == {"hoca"}
    assert grants.get(context=own, user_id=stranger.pk).revoked_at is not None


def test_old_links_that_hold_grant_what_launches_gave_so_the_roster_can_take_it_back():
    old = migrate([("lti", "0006_lineitem_claim")])
    try:
        users = old.get_model("auth", "User").objects
        course, platform = _course_and_platform(old)
        teacher = users.create(username="lms-teacher", password="!unusable")
        old.get_model("lti", "LtiUser").objects.create(
            platform=platform, issuer=platform.issuer, sub="teacher", user=teacher
        )
        course.instructors.add(teacher)
        hoca = users.create(username="hoca", password="pbkdf2_sha256$x")
        course.instructors.add(hoca)
        kept = old.get_model("lti", "LtiContext").objects.create(
            platform=platform, context_id="section-a", course=course, linked_by=hoca
        )
        # An administrator set this one's course in the admin: nobody launched to link it.
        old.get_model("lti", "LtiContext").objects.create(
            platform=platform, context_id="by-admin", course=course
        )
    finally:
        new = migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    context = new.get_model("lti", "LtiContext").objects.get(pk=kept.pk)
    course = new.get_model("courses", "Course").objects.get(slug="eski")
    assert (context.course_id, context.approved_by_id) == (course.pk, hoca.pk)  # linked by its teacher
    assert set(course.instructors.values_list("username", flat=True)) == {"hoca", "lms-teacher"}
    assert new.get_model("lti", "LtiContext").objects.get(context_id="by-admin").course_id == course.pk
    grants = new.get_model("lti", "InstructorGrant").objects
    assert set(grants.values_list("context__context_id", "user_id", "revoked_at")) == {
        ("section-a", teacher.pk, None),
        ("by-admin", teacher.pk, None),
    }
