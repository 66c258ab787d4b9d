"""The tool's own LTI endpoints as a platform is given them: absolute, from SITE_URL."""

from django.conf import settings
from django.urls import reverse


def absolute(name: str, *args: str) -> str:
    return settings.SITE_URL + reverse(f"lti:{name}", args=args)


def tool_endpoints() -> dict[str, str]:
    return {
        "login_url": absolute("login"),
        "launch_url": absolute("launch"),
        "jwks_url": absolute("jwks"),
        "deep_link_url": absolute("deep_link"),
    }
