from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security)
def client_address_behind_proxy(app_configs, **kwargs) -> list:
    """Behind a proxy with TRUSTED_PROXIES unset, every student has the proxy's address."""
    if settings.SECURE_PROXY_SSL_HEADER and not settings.TRUSTED_PROXIES:
        return [
            Warning(
                "BEHIND_PROXY is set but TRUSTED_PROXIES is 0: every client has the proxy's address, so "
                "the per-address log-in pause and rate limits treat all students as one.",
                hint="Set TRUSTED_PROXIES to the number of proxies that append to X-Forwarded-For "
                "(1 for one nginx with proxy_add_x_forwarded_for). See docs/deploy.md.",
                id="accounts.W001",
            )
        ]
    return []
