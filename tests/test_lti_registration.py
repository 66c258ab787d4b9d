"""LTI Dynamic Registration against the test platform over real HTTP: the administrator's
one-time address, the platform's OpenID configuration, our client registration, the stored
platform — and a launch through what was registered."""

import html
import json
import logging
from io import StringIO
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from lti_platform import LEARNER, Launch, TestPlatform
from test_lti_launch import run_launch

from lti.models import LtiContext, Platform, RegistrationInvite


@pytest.fixture
def lms(db, settings):
    settings.SITE_URL = "http://testserver"
    settings.LTI_ALLOW_PRIVATE_HOSTS = True  # the test platform is http on 127.0.0.1
    with TestPlatform(client_id="dyn-client", deployment_id="dyn-deployment") as platform:
        yield platform


def invite(course: str | None = None) -> str:
    out = StringIO()
    call_command("lti_platform", "invite", *(["--course", course] if course else []), "--json", stdout=out)
    answer = json.loads(out.getvalue())
    assert answer["registration_url"].startswith("http://testserver/lti/register/")
    return urlsplit(answer["registration_url"]).path


def test_the_lms_registers_itself_and_its_students_can_launch(lms, client, mini_course):
    path = invite("mini")
    response = client.get(path, lms.registration_params())
    assert response.status_code == 200
    text = html.unescape(response.content.decode())
    assert "Dikkat kaydedildi" in text and lms.issuer in text
    platform = Platform.objects.get()
    assert (platform.issuer, platform.client_id, platform.course) == (lms.issuer, "dyn-client", mini_course)
    assert (platform.auth_url, platform.token_url, platform.jwks_url) == (
        lms.url + "/auth",
        lms.url + "/token",
        lms.url + "/jwks",
    )
    assert platform.deployment_ids() == ["dyn-deployment"]
    sent = json.loads(next(r["body"] for r in lms.received if r["path"] == "/register"))
    assert sent["initiate_login_uri"] == "http://testserver/lti/login/"
    assert sent["redirect_uris"] == ["http://testserver/lti/launch/", "http://testserver/lti/deep-link/"]
    assert sent["jwks_uri"] == "http://testserver/lti/jwks/"
    assert "frame-ancestors 'self' " + lms.url in response.headers["Content-Security-Policy"]

    LtiContext.objects.create(platform=platform, context_id="lms-course-1", course=mini_course)
    launched = run_launch(client, lms, Launch(sub="student-1", roles=[LEARNER]))
    assert launched.status_code == 302 and launched["Location"] == "/kurs/mini/"


def test_a_registration_address_works_once(lms, client, caplog):
    path = invite()
    assert client.get(path, lms.registration_params()).status_code == 200
    with caplog.at_level(logging.WARNING, logger="lti"):
        again = client.get(path, lms.registration_params())
    assert again.status_code == 403
    assert "Bu kayıt adresi bilinmiyor" in html.unescape(again.content.decode())
    assert "registration address unknown, used or expired" in caplog.text
    assert Platform.objects.count() == 1


def test_an_unknown_address_registers_nothing(lms, client):
    response = client.get("/lti/register/made-up/", lms.registration_params())
    assert response.status_code == 403
    assert not Platform.objects.exists()
    assert not any(r["path"] == "/register" for r in lms.received)


def test_a_refused_registration_leaves_the_address_open(lms, client, caplog):
    path = invite()
    params = {**lms.registration_params(), "registration_token": "wrong"}
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = client.get(path, params)
    assert response.status_code == 403
    assert "answered 401" in caplog.text
    assert "kaydı tamamlayamadı" in html.unescape(response.content.decode())
    assert not Platform.objects.exists()
    assert client.get(path, lms.registration_params()).status_code == 200  # the LMS tries again
    assert RegistrationInvite.objects.get().platform == Platform.objects.get()


def test_an_unreachable_configuration_is_refused_with_its_reason(lms, client, caplog):
    path = invite()
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = client.get(
            path, {"openid_configuration": "http://127.0.0.1:9/nothing", "registration_token": "x"}
        )
    assert response.status_code == 403
    assert "could not be reached" in caplog.text
    assert not Platform.objects.exists()


# --- a registration only creates ------------------------------------------------------------


def test_registering_a_registered_lms_again_changes_nothing(lms, client, caplog):
    assert client.get(invite(), lms.registration_params()).status_code == 200
    before = Platform.objects.values().get()
    # The same issuer and client id, now with other endpoints (whoever holds an open address).
    real = lms.openid_configuration
    lms.openid_configuration = lambda: {**real(), "authorization_endpoint": lms.url + "/elsewhere"}
    second = invite()
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = client.get(second, lms.registration_params())
    assert response.status_code == 403
    assert "Dikkat'e bu istemci kimliğiyle zaten kayıtlı" in html.unescape(response.content.decode())
    assert "is registered already" in caplog.text
    assert Platform.objects.values().get() == before
    assert RegistrationInvite.objects.filter(platform__isnull=True).count() == 1  # left open


def test_a_new_client_of_a_known_issuer_waits_inactive_and_cannot_launch(lms, client, mini_course):
    assert client.get(invite(), lms.registration_params()).status_code == 200
    lms.client_id = "dyn-client-2"
    assert client.get(invite(), lms.registration_params()).status_code == 200
    first, second = Platform.objects.order_by("pk")
    assert (first.client_id, first.active) == ("dyn-client", True)
    assert (second.client_id, second.active) == ("dyn-client-2", False)
    LtiContext.objects.create(platform=second, context_id="lms-course-1", course=mini_course)
    response = client.post("/lti/login/", lms.login_params(Launch(sub="student-1", roles=[LEARNER])))
    assert response.status_code == 400
    assert "Dikkat'e kayıtlı değil" in html.unescape(response.content.decode())


def test_an_issuer_that_is_not_the_configurations_origin_waits_inactive_for_the_administrator(
    lms, client, caplog, mini_course
):
    # Hosted Canvas: the issuer is https://canvas.instructure.com, the configuration comes from
    # the school's own address. Anyone holding an invite could name any issuer, so it waits.
    real = lms.openid_configuration
    lms.openid_configuration = lambda: {**real(), "issuer": "https://lms.example.edu"}
    with caplog.at_level(logging.INFO, logger="lti"):
        response = client.get(invite(), lms.registration_params())
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    assert "LMS'iniz kendini https://lms.example.edu olarak tanıtıyor" in page
    assert "denetleyip etkinleştirdikten sonra" in page
    platform = Platform.objects.get()
    assert (platform.issuer, platform.active) == ("https://lms.example.edu", False)
    assert "is not the origin of its OpenID configuration's address" in caplog.text


def test_an_http_configuration_address_is_refused_in_production_before_any_request(
    lms, client, caplog, settings
):
    settings.LTI_ALLOW_PRIVATE_HOSTS = False
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = client.get(invite(), lms.registration_params())
    assert response.status_code == 403
    assert "is not an https URL" in caplog.text
    assert not lms.received and not Platform.objects.exists()


def test_an_endpoint_that_is_not_a_web_address_is_refused(lms, client, caplog):
    real = lms.openid_configuration
    lms.openid_configuration = lambda: {**real(), "token_endpoint": "file:///etc/passwd"}
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = client.get(invite(), lms.registration_params())
    assert response.status_code == 403
    assert "token_endpoint 'file:///etc/passwd' is not an https URL" in caplog.text
    assert not Platform.objects.exists()
