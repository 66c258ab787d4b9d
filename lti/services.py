"""LTI Advantage services' access: an OAuth2 access token from the platform's token endpoint,
asked for with a client assertion that Dikkat signs with its own key (client_credentials with
private_key_jwt). Tokens are kept in the cache until shortly before they expire."""

import secrets
import time

import jwt
from django.core.cache import cache

from .http import PlatformUnreachable, post_form
from .models import Platform, ToolKey

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class ServiceFailed(Exception):
    """A platform service did not answer as it should; the message says which and why."""


def client_assertion(platform: Platform) -> str:
    key = ToolKey.current()
    now = int(time.time())
    claims = {
        "iss": platform.client_id,
        "sub": platform.client_id,
        "aud": platform.token_url,
        "iat": now,
        "exp": now + 300,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode(claims, key.private_key(), algorithm="RS256", headers={"kid": key.kid})


def _cache_key(platform: Platform, scopes: list[str]) -> str:
    return f"lti-token:{platform.pk}:{platform.client_id}:{' '.join(sorted(scopes))}"


def forget_token(platform: Platform, scopes: list[str]) -> None:
    """Drop a kept token the platform no longer takes (it answered 401)."""
    cache.delete(_cache_key(platform, scopes))


def access_token(platform: Platform, scopes: list[str]) -> str:
    cache_key = _cache_key(platform, scopes)
    if token := cache.get(cache_key):
        return token
    try:
        answer = post_form(
            platform.token_url,
            {
                "grant_type": "client_credentials",
                "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": client_assertion(platform),
                "scope": " ".join(scopes),
            },
        )
    except PlatformUnreachable as error:
        raise ServiceFailed(f"no access token: {error}") from error
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token:
        raise ServiceFailed(f"no access token in the answer of {platform.token_url}")
    lifetime = answer.get("expires_in") if isinstance(answer.get("expires_in"), int) else 3600
    cache.set(cache_key, token, max(0, lifetime - 60))
    return token
