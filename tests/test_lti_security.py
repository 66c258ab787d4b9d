"""The LTI security fixes that need no test platform: outgoing calls refuse what is not a public
https address, and a launch's grade service claim replaces (or clears) what a link kept."""

import pytest

from lti.http import PlatformUnreachable, check_url, get_json, refused_address
from lti.linking import grade_service
from lti.models import ResourceLink


@pytest.mark.parametrize(
    "ip",
    ["127.0.0.1", "10.0.0.5", "192.168.1.1", "169.254.169.254", "::1", "::ffff:127.0.0.1", "224.0.0.1"]
    # IPv6 forms that lead to a private IPv4 address: NAT64 (the cloud's metadata service and a
    # private host), IPv4-compatible, 6to4.
    + [
        "64:ff9b::a9fe:a9fe",
        "64:ff9b::a00:1",
        "::127.0.0.1",
        "::a9fe:a9fe",
        "2002:a00:1::1",
        "::ffff:0:a9fe:a9fe",
    ],
)
def test_private_loopback_and_link_local_addresses_are_refused(ip):
    assert refused_address(ip)


@pytest.mark.parametrize("ip", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822"])
def test_a_public_address_is_allowed(ip):
    assert not refused_address(ip)


def test_http_and_credentials_in_urls_are_refused_in_production(settings):
    settings.LTI_ALLOW_PRIVATE_HOSTS = False
    with pytest.raises(PlatformUnreachable, match="not an https URL"):
        check_url("http://lms.example/jwks")
    with pytest.raises(PlatformUnreachable, match="user name or password"):
        check_url("https://me:pw@lms.example/jwks")
    assert check_url("https://lms.example/jwks").hostname == "lms.example"


def test_a_call_to_localhost_is_refused_before_connecting(settings):
    settings.LTI_ALLOW_PRIVATE_HOSTS = False
    with pytest.raises(PlatformUnreachable, match="not a public address"):
        get_json("https://localhost:9/jwks")


def test_a_later_launch_replaces_and_clears_the_grade_service_addresses():
    link = ResourceLink(lineitems_url="https://lms.example/items", lineitem_url="https://lms.example/items/1")
    moved = grade_service({"lineitems": "https://lms.example/other", "scope": ["s"]}, link)
    assert moved == {"lineitems_url": "https://lms.example/other", "lineitem_url": "", "ags_scopes": ["s"]}
    assert grade_service(None, link) == {"lineitems_url": "", "lineitem_url": "", "ags_scopes": []}
    # A line item Dikkat made under the same address (the launch names none) is kept.
    kept = grade_service({"lineitems": "https://lms.example/items"}, link)
    assert kept["lineitem_url"] == "https://lms.example/items/1"
