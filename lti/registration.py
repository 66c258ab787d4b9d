"""LTI Dynamic Registration (IMS LTI Dynamic Registration 1.0), the tool's side.

The LMS opens our one-time registration address (`RegistrationInvite`) with its
`openid_configuration` URL and a `registration_token`. Dikkat reads the platform's OpenID
configuration, sends it our client registration (our endpoints, the messages and services we
use), and stores the platform with the client id (and deployment id) the platform answers.
"""

import logging
from urllib.parse import urlsplit

from django.db import transaction
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from .endpoints import tool_endpoints
from .http import PlatformUnreachable, get_json, post_json
from .models import Deployment, Platform, RegistrationInvite

logger = logging.getLogger(__name__)

TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
]

INVITE_CLOSED = _(
    "This registration address is unknown, was already used or has expired. Please ask the Dikkat "
    "site administrator for a new one (manage.py lti_platform invite)."
)
PLATFORM_ANSWER = _(
    "Dikkat could not complete the registration with your LMS: %(reason)s. Please try again; if it "
    "happens again, register Dikkat by hand (docs/lti.md)."
)


class RegistrationFailed(Exception):
    def __init__(self, reason: str, message: str | Promise):
        super().__init__(reason)
        self.reason = reason
        self.message = message


def _web_url(value: object, name: str) -> str:
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise _failed(f"the platform's {name} {value!r} is not an http(s) URL")
    return str(value)


def _failed(reason: str) -> RegistrationFailed:
    return RegistrationFailed(reason, PLATFORM_ANSWER % {"reason": reason})


def client_registration() -> dict:
    """What Dikkat asks the platform to register (OpenID Connect Dynamic Client Registration with
    the LTI tool configuration)."""
    endpoints = tool_endpoints()
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": endpoints["login_url"],
        "redirect_uris": [endpoints["launch_url"], endpoints["deep_link_url"]],
        "client_name": "Dikkat",
        "jwks_uri": endpoints["jwks_url"],
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(SCOPES),
        TOOL_CONFIGURATION: {
            "domain": urlsplit(endpoints["launch_url"]).netloc,
            "target_link_uri": endpoints["launch_url"],
            "claims": ["iss", "sub", "name", "given_name", "family_name", "email"],
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": endpoints["launch_url"]},
                {
                    "type": "LtiDeepLinkingRequest",
                    "target_link_uri": endpoints["deep_link_url"],
                    "label": "Dikkat",
                },
            ],
            "description": "Dikkat: lessons and autograded exercises on the attention mechanism.",
        },
    }


def register(invite: RegistrationInvite, openid_configuration: str, registration_token: str) -> Platform:
    """Register the platform whose OpenID configuration is at `openid_configuration`; the stored
    Platform, or RegistrationFailed (the invite is then open again)."""
    expires_at = invite.expires_at
    try:
        _web_url(openid_configuration, "openid_configuration")
        try:
            config = get_json(openid_configuration, bearer=registration_token)
        except PlatformUnreachable as error:
            raise _failed(f"its OpenID configuration could not be read ({error})") from error
        if not isinstance(config, dict):
            raise _failed("its OpenID configuration is not a JSON object")
        issuer = _web_url(config.get("issuer"), "issuer")
        urls = {
            name: _web_url(config.get(name), name)
            for name in ("authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint")
        }
        try:
            answer = post_json(
                urls["registration_endpoint"], client_registration(), bearer=registration_token
            )
        except PlatformUnreachable as error:
            raise _failed(f"the registration was not accepted ({error})") from error
        client_id = answer.get("client_id") if isinstance(answer, dict) else None
        if not isinstance(client_id, str) or not client_id:
            raise _failed("its answer has no client_id")
        tool_config = answer.get(TOOL_CONFIGURATION) or {}
        deployment_id = tool_config.get("deployment_id") if isinstance(tool_config, dict) else None
        product = (config.get(PLATFORM_CONFIGURATION) or {}).get("product_family_code", "")
        with transaction.atomic():
            platform, _created = Platform.objects.update_or_create(
                issuer=issuer,
                client_id=client_id,
                defaults={
                    "name": f"{product or urlsplit(issuer).netloc} ({client_id})"[:200],
                    "auth_url": urls["authorization_endpoint"],
                    "token_url": urls["token_endpoint"],
                    "jwks_url": urls["jwks_uri"],
                    **({"course": invite.course} if invite.course_id else {}),
                },
            )
            if isinstance(deployment_id, str) and deployment_id:
                Deployment.objects.get_or_create(platform=platform, deployment_id=deployment_id)
            RegistrationInvite.objects.filter(pk=invite.pk).update(platform=platform)
    except RegistrationFailed:
        invite.release(expires_at)
        raise
    logger.info("LTI platform registered: %s client %s deployment %s", issuer, client_id, deployment_id)
    return platform
