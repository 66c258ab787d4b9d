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
