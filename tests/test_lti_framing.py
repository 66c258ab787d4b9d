"""A session begun by an LTI launch works inside the LMS's frame: its cookies are SameSite=None;
Secure and its pages may be framed by that platform only. Every other page keeps
frame-ancestors 'none' and X-Frame-Options: DENY."""

import re

import pytest
import test_lti_launch
from django.test import Client
from lti_platform import LEARNER, Launch
from test_lti_launch import run_launch

from lti.models import Platform

platform = test_lti_launch.platform  # the test platform and the LMS course linked to "mini"
linked = test_lti_launch.linked


def frame_ancestors(response) -> str:
    policy = response.headers["Content-Security-Policy"]
    return re.search(r"frame-ancestors ([^;]*)", policy).group(1)


def test_launched_session_has_cross_site_cookies_and_may_be_framed_by_its_platform(platform, linked, client):
    response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER]))
    cookie = response.cookies["sessionid"]
    assert cookie["samesite"] == "None; Partitioned" and cookie["secure"]
    page = client.get("/kurs/mini/")
    assert page.status_code == 200
    assert frame_ancestors(page) == f"'self' {platform.url}"
    assert "X-Frame-Options" not in page.headers
    assert (
        "'nonce-" in page.headers["Content-Security-Policy"]
        or "style-src 'self'" in page.headers["Content-Security-Policy"]
    )


def test_pages_of_other_sessions_are_never_framed(platform, linked, make_user):
    make_user("deniz", password="Parola-2026-uzun")
    browser = Client()
    response = browser.post("/accounts/login/", {"username": "deniz", "password": "Parola-2026-uzun"})
    assert response.cookies["sessionid"]["samesite"] == "Lax"
    page = browser.get("/kurs/mini/")
    assert frame_ancestors(page) == "'none'"
    assert page.headers["X-Frame-Options"] == "DENY"


def test_a_refused_launch_may_be_shown_in_a_registered_platform_frame(platform, linked, client):
    response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], claims={"aud": "x"}))
    assert response.status_code == 403
    assert frame_ancestors(response) == f"'self' {platform.url}"
    assert "X-Frame-Options" not in response.headers


@pytest.mark.parametrize(
    ("frame_origins", "expected"),
    [
        ("", ["https://moodle.example.edu"]),
        (
            "https://school.instructure.com\nhttps://school.instructure.com/courses/1 nonsense",
            ["https://school.instructure.com"],
        ),
    ],
)
def test_frame_ancestors_of_a_platform(frame_origins, expected):
    registration = Platform(
        issuer="https://moodle.example.edu",
        auth_url="https://moodle.example.edu/mod/lti/auth.php",
        frame_origins=frame_origins,
    )
    assert registration.frame_ancestors() == expected
