"""LTI Dynamic Registration (IMS LTI Dynamic Registration 1.0), the tool's side.

The LMS opens our one-time registration address (`RegistrationInvite`) with its
`openid_configuration` URL and a `registration_token`. Dikkat reads the platform's OpenID
configuration, sends it our client registration (our endpoints, the messages and services we
use), and stores the platform with the client id (and deployment id) the platform answers.

Whoever holds an open invite can register, so a registration only ever creates: it never
changes a registered platform (the same issuer and client id is refused), and a new client of
an issuer already registered is stored inactive until an administrator activates it (else a
second registration could stand in for the first platform's launches). The issuer must be the
origin of the OpenID configuration's address, and every endpoint must be https (http only under
LTI_ALLOW_PRIVATE_HOSTS, for development and the tests).
"""

import logging
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
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


ALREADY_REGISTERED = _(
    "This LMS is already registered with Dikkat under this client id. A registration does not "
    "change a registered LMS: please ask the Dikkat site administrator."
)


class RegistrationFailed(Exception):
    def __init__(self, reason: str, message: str | Promise):
        super().__init__(reason)
        self.reason = reason
        self.message = message


def _web_url(value: object, name: str) -> str:
    schemes = ("https", "http") if settings.LTI_ALLOW_PRIVATE_HOSTS else ("https",)
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in schemes or not parts.hostname or len(str(value)) > 500:
        raise _failed(f"the platform's {name} {str(value)[:200]!r} is not an https URL")
    return str(value)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


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
        # Hosted Canvas's issuer (https://canvas.instructure.com) is not the school's address
        # the configuration comes from; anyone holding an invite could also name any issuer.
        # Such a registration is stored, inactive, for the administrator to check.
        elsewhere = _origin(issuer) != _origin(openid_configuration)
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
        if not isinstance(client_id, str) or not client_id or len(client_id) > 255:
            raise _failed("its answer has no usable client_id")
        tool_config = answer.get(TOOL_CONFIGURATION) or {}
        deployment_id = tool_config.get("deployment_id") if isinstance(tool_config, dict) else None
        platform_config = config.get(PLATFORM_CONFIGURATION)
        product = platform_config.get("product_family_code") if isinstance(platform_config, dict) else ""
        product = product if isinstance(product, str) else ""
        if Platform.objects.filter(issuer=issuer, client_id=client_id).exists():
            raise RegistrationFailed(f"{issuer} client {client_id} is registered already", ALREADY_REGISTERED)
        known_issuer = Platform.objects.filter(issuer=issuer).exists()
        try:
            with transaction.atomic():
                platform = Platform.objects.create(
                    issuer=issuer,
                    client_id=client_id,
                    name=f"{product or urlsplit(issuer).netloc} ({client_id})"[:200],
                    auth_url=urls["authorization_endpoint"],
                    token_url=urls["token_endpoint"],
                    jwks_url=urls["jwks_uri"],
                    course=invite.course,
                    active=not known_issuer and not elsewhere,
                )
                if isinstance(deployment_id, str) and deployment_id:
                    Deployment.objects.create(platform=platform, deployment_id=deployment_id[:255])
                RegistrationInvite.objects.filter(pk=invite.pk).update(platform=platform)
        except IntegrityError as error:  # the same client registered at the same moment
            raise RegistrationFailed(
                f"{issuer} client {client_id} is registered already", ALREADY_REGISTERED
            ) from error
    except RegistrationFailed:
        invite.release(expires_at)
        raise
    why_inactive = (
        f"the issuer is not the origin of its OpenID configuration's address {openid_configuration}"
        if elsewhere
        else "the issuer was known"
    )
    logger.info(
        "LTI platform registered: %s client %s deployment %s%s",
        issuer,
        client_id,
        deployment_id,
        "" if platform.active else f" (inactive: {why_inactive}; an administrator activates it)",
    )
    return platform
