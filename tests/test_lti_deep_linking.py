"""Deep linking end to end against the test platform: an instructor's deep-linking launch, the
lesson picker, the signed answer the platform checks against Dikkat's JWKS, and a student's
launch of the new link landing on that lesson."""

import html
import logging
import re
import urllib.parse
import urllib.request

import test_lti_launch
from lti_platform import CLAIM, INSTRUCTOR, LEARNER, Launch
from test_lti_launch import assert_refused, run_launch

from lti.models import ResourceLink, ToolKey

platform = test_lti_launch.platform
linked = test_lti_launch.linked


def post_to_platform(action: str, fields: dict[str, str]) -> tuple[int, str]:
    data = urllib.parse.urlencode(fields).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(action, data=data), timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def form_of(page: str) -> tuple[str, dict[str, str]]:
    action = html.unescape(re.search(r'action="([^"]+)" id="lti-return"', page).group(1))
    jwt = page.split('name="JWT" value="', 1)[1].split('"', 1)[0]
    return action, {"JWT": jwt}


def test_instructor_adds_a_lesson_link_and_a_student_lands_on_the_lesson(platform, linked, client):
    keys = ToolKey.jwks()  # read here: the platform thread has no view of the test transaction
    platform.tool_jwks = lambda: keys
    response = run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True))
    assert response.status_code == 302 and response["Location"] == "/lti/icerik-sec/"
    picker = client.get("/lti/icerik-sec/")
    text = html.unescape(picker.content.decode())
    assert "Birinci ders" in text and "İkinci ders" in text
    answer = client.post("/lti/icerik-sec/", {"lesson": "first"})
    assert answer.status_code == 200
    assert f"form-action 'self' {platform.url}" in answer.headers["Content-Security-Policy"]
    status, page = post_to_platform(*form_of(answer.content.decode()))
    assert status == 200 and "Link added: Birinci ders" in page
    (item,) = platform.deep_links
    assert item["type"] == "ltiResourceLink" and item["url"] == "http://testserver/lti/launch/"

    client.logout()
    launch = Launch(
        sub="student-1", roles=[LEARNER], resource_link_id="link-2", claims={CLAIM + "custom": item["custom"]}
    )
    response = run_launch(client, platform, launch)
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/first/"
    assert ResourceLink.objects.get(resource_link_id="link-2").lesson.slug == "first"
    assert "Birinci ders" in client.get(response["Location"]).content.decode()


def test_a_learner_cannot_make_deep_links(platform, linked, client, caplog):
    with caplog.at_level(logging.WARNING, logger="lti"):
        response = run_launch(client, platform, Launch(sub="student-1", roles=[LEARNER], deep_link=True))
    assert_refused(
        response,
        caplog,
        "deep linking request from someone who is not an instructor",
        "yalnızca LMS kursunun eğitmeni",
    )


def test_a_custom_lesson_of_another_course_is_ignored(platform, linked, client):
    launch = Launch(
        sub="student-1", roles=[LEARNER], claims={CLAIM + "custom": {"dikkat_lesson": "other/first"}}
    )
    response = run_launch(client, platform, launch)
    assert response["Location"] == "/kurs/mini/"
    assert ResourceLink.objects.get(resource_link_id="link-1").lesson is None


def test_a_forged_answer_is_refused_by_the_platform(platform, linked, client):
    keys = ToolKey.jwks()  # read here: the platform thread has no view of the test transaction
    platform.tool_jwks = lambda: keys
    run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True))
    action, fields = form_of(client.post("/lti/icerik-sec/", {"lesson": "first"}).content.decode())
    head, body, signature = fields["JWT"].split(".")
    status, _page = post_to_platform(action, {"JWT": f"{head}.{body}.{signature[::-1]}"})
    assert status == 400 and not platform.deep_links
