"""LTI 1.3 launch validation: the id_token a platform posts back must pass every check here.

Order: the state (ours, single use, short-lived, bound to the browser by a cookie), then the
token's signature against the platform's published keys (refetched for an unknown `kid`, at most
once a minute per platform),
then its claims (iss, aud, azp, exp/iat with LTI_LEEWAY, our nonce, a known deployment, an LTI
1.3 message). Each refusal raises `LaunchRefused` with a reason for the log and a message for the
person, and nothing is stored but the consumed state.
"""

import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import jwt
from django.conf import settings
from django.db import models, transaction
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from .http import PlatformUnreachable, get_json
from .models import LoginState, Platform

logger = logging.getLogger(__name__)

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DEEP_LINKING_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
MESSAGE_TYPES = {RESOURCE_LINK_REQUEST, DEEP_LINKING_REQUEST}

# What the person who launched reads, by kind of refusal (the log has the precise reason).
STALE = _(
    "This sign-in from your LMS has expired or was already used. Please open Dikkat again from the "
    "link in your LMS course."
)
NOT_REGISTERED = _(
    "Your LMS is not registered with Dikkat for this link. Please tell your instructor or the "
    "site administrator; they can check the LTI registration."
)
NOT_VERIFIED = _(
    "Dikkat could not verify the sign-in sent by your LMS. Please open the link again; if it "
    "happens again, tell the site administrator."
)


class LaunchRefused(Exception):
    """A launch (or a login initiation) that is refused: `reason` for the log, `message` for
    the person (translated)."""

    def __init__(self, reason: str, message: str | Promise = NOT_VERIFIED):
        super().__init__(reason)
        self.reason = reason
        self.message = message


@dataclass
class Launch:
    platform: Platform
    claims: dict[str, Any]
    target_link_uri: str

    @property
    def message_type(self) -> str:
        return self.claims[CLAIM + "message_type"]

    def claim(self, name: str, default: Any = None) -> Any:
        return self.claims.get(CLAIM + name, default)


def state_cookie_name(state: str) -> str:
    # One cookie per login in flight: two tabs launching at once do not overwrite each other.
    return "lti_state_" + "".join(c for c in state[:16] if c.isalnum())


def start_login(platform: Platform, target_link_uri: str) -> LoginState:
    """A new login: its state and nonce, stored until the launch answers it (or it expires)."""
    now = timezone.now()
    LoginState.objects.filter(created_at__lt=now - timedelta(seconds=settings.LTI_STATE_TTL)).delete()
    return LoginState.objects.create(platform=platform, target_link_uri=target_link_uri)


def consume_state(state: str) -> LoginState:
    """The login that `state` names, removed in the same transaction: a second launch with the
    same state (a replay) finds nothing."""
    if not state:
        raise LaunchRefused("no state in the launch", STALE)
    with transaction.atomic():
        login = LoginState.objects.select_related("platform").filter(state=state).first()
        if login is None or LoginState.objects.filter(pk=login.pk).delete()[0] != 1:
            raise LaunchRefused("state unknown or already used (replayed launch?)", STALE)
    if login.created_at < timezone.now() - timedelta(seconds=settings.LTI_STATE_TTL):
        raise LaunchRefused("state expired", STALE)
    return login


def _may_fetch_jwks(platform: Platform) -> bool:
    """Whether this launch may fetch the platform's key set now: at most once every
    LTI_JWKS_REFETCH_INTERVAL per platform, whatever the launches bring (a stream of tokens
    with made-up kids must not make Dikkat hammer the platform). Claimed with a conditional
    UPDATE, so two processes do not both fetch."""
    now = timezone.now()
    since = now - timedelta(seconds=settings.LTI_JWKS_REFETCH_INTERVAL)
    due = models.Q(jwks_tried_at__isnull=True) | models.Q(jwks_tried_at__lte=since)
    return bool(Platform.objects.filter(due, pk=platform.pk).update(jwks_tried_at=now))


def _fetch_jwks(platform: Platform) -> dict:
    try:
        data = get_json(platform.jwks_url)
    except PlatformUnreachable as error:
        raise LaunchRefused(f"the platform's key set could not be fetched: {error}") from error
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise LaunchRefused(f"the platform's key set at {platform.jwks_url} has no 'keys' list")
    platform.jwks, platform.jwks_fetched_at = data, timezone.now()
    Platform.objects.filter(pk=platform.pk).update(jwks=data, jwks_fetched_at=platform.jwks_fetched_at)
    return data


def _find_key(jwks: dict, kid: str) -> dict | None:
    for key in jwks.get("keys", []):
        if isinstance(key, dict) and key.get("kid") == kid and key.get("kty") == "RSA":
            return key
    return None


def platform_key(platform: Platform, kid: str) -> Any:
    """The platform's public key `kid`: from the stored key set while it is fresh, else (or when
    `kid` is not in it: the platform rotated its keys) from a new fetch of its JWKS, at most
    once every LTI_JWKS_REFETCH_INTERVAL per platform."""
    fresh = platform.jwks_fetched_at and platform.jwks_fetched_at > timezone.now() - timedelta(
        seconds=settings.LTI_JWKS_MAX_AGE
    )
    jwk = _find_key(platform.jwks, kid)
    if jwk is None or not fresh:
        if _may_fetch_jwks(platform):
            jwk = _find_key(_fetch_jwks(platform), kid)
        else:  # fetched a moment ago (perhaps by another launch): what it stored is the newest
            platform.refresh_from_db(fields=["jwks", "jwks_fetched_at"])
            jwk = _find_key(platform.jwks, kid)
            if jwk is None:
                raise LaunchRefused(
                    f"signed by a key the platform does not publish (kid {kid!r}); its key set was "
                    f"fetched less than {settings.LTI_JWKS_REFETCH_INTERVAL} s ago, not again"
                )
    if jwk is None:
        raise LaunchRefused(f"signed by a key the platform does not publish (kid {kid!r})")
    try:
        return jwt.PyJWK(jwk, "RS256").key
    except jwt.PyJWKError as error:
        raise LaunchRefused(f"the platform's key {kid!r} is not a usable RSA key: {error}") from error


def _decode(platform: Platform, id_token: str) -> dict[str, Any]:
    try:
        header = jwt.get_unverified_header(id_token)
    except jwt.DecodeError as error:
        raise LaunchRefused(f"id_token is not a JWT: {error}") from error
    if header.get("alg") != "RS256":
        raise LaunchRefused(f"id_token signed with {header.get('alg')!r}, not RS256")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise LaunchRefused("id_token has no kid")
    key = platform_key(platform, kid)
    try:
        return jwt.decode(
            id_token,
            key,
            algorithms=["RS256"],
            audience=platform.client_id,
            issuer=platform.issuer,
            leeway=settings.LTI_LEEWAY,
            options={"require": ["iss", "aud", "exp", "iat", "sub", "nonce"]},
        )
    except jwt.ExpiredSignatureError:
        raise LaunchRefused("id_token expired (exp)", STALE) from None
    except jwt.ImmatureSignatureError:
        raise LaunchRefused("id_token issued in the future (iat)") from None
    except jwt.InvalidAudienceError:
        raise LaunchRefused(f"wrong aud: not our client id {platform.client_id!r}", NOT_REGISTERED) from None
    except jwt.InvalidIssuerError:
        raise LaunchRefused(f"wrong iss: not {platform.issuer!r}", NOT_REGISTERED) from None
    except jwt.InvalidSignatureError:
        raise LaunchRefused(f"bad signature for key {kid!r}") from None
    except jwt.InvalidTokenError as error:
        raise LaunchRefused(f"invalid id_token: {error}") from error


def validate_launch(state: str, id_token: str, cookie_state: str | None) -> Launch:
    """Check a launch (the platform's form post) against everything LTI 1.3 asks; the Launch
    with its verified claims, or LaunchRefused."""
    login = consume_state(state)
    if not cookie_state or not secrets.compare_digest(cookie_state, state):
        raise LaunchRefused("state cookie missing or different (another browser, or cookies blocked)", STALE)
    platform = login.platform
    if not platform.active:
        raise LaunchRefused(f"platform {platform} is not active", NOT_REGISTERED)
    if not id_token:
        raise LaunchRefused("no id_token in the launch")
    claims = _decode(platform, id_token)
    audiences = [claims["aud"]] if isinstance(claims["aud"], str) else list(claims["aud"])
    if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != platform.client_id:
        raise LaunchRefused(f"azp {claims.get('azp')!r} is not our client id", NOT_REGISTERED)
    if not isinstance(claims["nonce"], str) or not secrets.compare_digest(claims["nonce"], login.nonce):
        raise LaunchRefused("nonce differs from the one this login sent (replayed id_token?)", STALE)
    if not isinstance(claims["sub"], str) or not claims["sub"]:
        raise LaunchRefused("sub is empty (anonymous launches are not supported)")
    deployment_id = claims.get(CLAIM + "deployment_id")
    if not isinstance(deployment_id, str) or not platform.knows_deployment(deployment_id):
        raise LaunchRefused(f"unknown deployment_id {deployment_id!r}", NOT_REGISTERED)
    if claims.get(CLAIM + "version") != "1.3.0":
        raise LaunchRefused(f"LTI version {claims.get(CLAIM + 'version')!r}, not 1.3.0")
    if claims.get(CLAIM + "message_type") not in MESSAGE_TYPES:
        raise LaunchRefused(f"message type {claims.get(CLAIM + 'message_type')!r} is not supported")
    return Launch(platform=platform, claims=claims, target_link_uri=login.target_link_uri)
