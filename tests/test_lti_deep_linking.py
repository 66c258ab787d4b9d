"""Deep linking end to end against the test platform: an instructor's deep-linking launch, the
picker of lessons, exercises and assessments, the signed answer the platform checks against
Dikkat's JWKS, and a student's launch of the new link landing on what was picked."""

import html
import logging
import re
import shutil
import urllib.parse
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
import test_lti_launch
from django.utils import timezone
from lti_platform import CLAIM, INSTRUCTOR, LEARNER, Launch
from test_lti_launch import assert_refused, run_launch

from assessments.models import Assessment
from courses.models import Exercise
from lti.models import ResourceLink, ToolKey

platform = test_lti_launch.platform
linked = test_lti_launch.linked
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def mini_course_dir(tmp_path) -> Path:
    """The mini course with a code exercise in its first lesson and an open homework."""
    root = tmp_path / "mini"
    shutil.copytree(FIXTURES / "mini", root)
    shutil.copytree(FIXTURES / "lab" / "01-lab" / "attn", root / "01-first" / "attn")
    now = timezone.now()
    (root / "assessments").mkdir()
    (root / "assessments" / "odev.toml").write_text(
        f"""slug = "odev"
title = "Birinci ödev"
kind = "homework"
opens = {(now - timedelta(days=1)).isoformat(timespec="seconds")}
due = {(now + timedelta(days=7)).isoformat(timespec="seconds")}
items = ["first-choice", {{ item = "attn", points = 2 }}]
""",
        encoding="utf-8",
    )
    return root


def pick(client, platform, value: str) -> dict:
    """An instructor's deep-linking launch, ``value`` picked, the answer posted to the platform:
    the content item the platform took."""
    keys = ToolKey.jwks()  # read here: the platform thread has no view of the test transaction
    platform.tool_jwks = lambda: keys
    response = run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True))
    assert response.status_code == 302 and response["Location"] == "/lti/icerik-sec/"
    answer = client.post("/lti/icerik-sec/", {"item": value})
    assert answer.status_code == 200, answer.content.decode()
    status, page = post_to_platform(*form_of(answer.content.decode()))
    assert status == 200, page
    client.logout()
    return platform.deep_links[-1]


def student_launch(client, platform, item: dict, link_id: str = "link-2"):
    launch = Launch(
        sub="student-1", roles=[LEARNER], resource_link_id=link_id, claims={CLAIM + "custom": item["custom"]}
    )
    return run_launch(client, platform, launch)


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
    answer = client.post("/lti/icerik-sec/", {"item": "lesson:first"})
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
    action, fields = form_of(client.post("/lti/icerik-sec/", {"item": "lesson:first"}).content.decode())
    head, body, signature = fields["JWT"].split(".")
    status, _page = post_to_platform(action, {"JWT": f"{head}.{body}.{signature[::-1]}"})
    assert status == 400 and not platform.deep_links


def test_the_picker_offers_the_courses_lessons_exercises_and_assessments(platform, linked, client):
    Exercise.objects.create(
        course=linked, lesson=linked.lessons.get(slug="second"), slug="gone", title="Emekli", retired=True
    )
    run_launch(client, platform, Launch(sub="teacher-1", roles=[INSTRUCTOR], deep_link=True))
    page = client.get("/lti/icerik-sec/").content.decode()
    text = html.unescape(page)
    assert "“Dikkat 101 (LMS)” içindeki yeni bağlantı “Mini kurs” kursunda neyi açsın?" in text
    for legend in ("Ders", "Alıştırma", "Değerlendirme"):
        assert f"<legend>{legend}</legend>" in page
    values = re.findall(r'name="item" value="([^"]+)"', page)
    assert values == ["lesson:first", "lesson:second", "exercise:attn", "assessment:odev"]
    assert "Attention" in text and "Birinci ödev" in text and "Emekli" not in text
    refused = client.post("/lti/icerik-sec/", {"item": "exercise:gone"})
    assert refused.status_code == 400
    assert "Lütfen listedeki ders, alıştırma ya da değerlendirmelerden birini seçin." in html.unescape(
        refused.content.decode()
    )


def test_instructor_links_an_exercise_and_a_student_lands_on_it_with_a_grade_column(platform, linked, client):
    item = pick(client, platform, "exercise:attn")
    assert item["title"] == "Attention" and item["url"] == "http://testserver/lti/launch/"
    assert item["custom"] == {"dikkat_exercise": "mini/attn"}
    assert item["lineItem"] == {
        "label": "Dikkat: Attention",
        "scoreMaximum": 1.0,
        "resourceId": "mini/exercise:attn",
    }

    response = student_launch(client, platform, item)
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/first/#ex-attn"
    link = ResourceLink.objects.get(resource_link_id="link-2")
    assert link.exercise.slug == "attn" and link.lesson is None and link.assessment is None
    page = html.unescape(client.get("/kurs/mini/first/").content.decode())
    assert 'id="ex-attn"' in page and "Alıştırma: Attention" in page


def test_instructor_links_an_assessment_and_a_student_lands_on_it(platform, linked, client):
    item = pick(client, platform, "assessment:odev")
    assert item["custom"] == {"dikkat_assessment": "mini/odev"}
    # Worth its items' points: first-choice 1, attn 2.
    assert item["lineItem"] == {
        "label": "Dikkat: Birinci ödev",
        "scoreMaximum": 3.0,
        "resourceId": "mini/assessment:odev",
    }

    response = student_launch(client, platform, item)
    assert response.status_code == 302 and response["Location"] == "/kurs/mini/degerlendirme/odev/"
    assert ResourceLink.objects.get(resource_link_id="link-2").assessment.slug == "odev"
    page = html.unescape(client.get(response["Location"]).content.decode())
    assert "Birinci ödev" in page and "Attention" in page


def test_a_link_to_a_retired_assessment_opens_the_course_and_a_later_custom_changes_nothing(
    platform, linked, client
):
    item = pick(client, platform, "assessment:odev")
    student_launch(client, platform, item)
    client.logout()
    Assessment.objects.filter(slug="odev").update(retired=True)
    # The link keeps what it opened; a launch naming something else (edited custom) is ignored.
    response = student_launch(client, platform, {"custom": {"dikkat_exercise": "mini/attn"}})
    assert response["Location"] == "/kurs/mini/"
    link = ResourceLink.objects.get(resource_link_id="link-2")
    assert link.assessment.slug == "odev" and link.exercise is None


def test_a_lesson_link_made_before_exercises_could_be_picked_still_lands_on_its_lesson(
    platform, linked, client
):
    response = student_launch(client, platform, {"custom": {"dikkat_lesson": "mini/second"}})
    assert response["Location"] == "/kurs/mini/second/"


def test_an_exercise_or_assessment_of_another_course_is_ignored(platform, linked, client):
    response = student_launch(client, platform, {"custom": {"dikkat_assessment": "other/odev"}})
    assert response["Location"] == "/kurs/mini/"
    client.logout()
    response = student_launch(
        client, platform, {"custom": {"dikkat_exercise": "mini/nope"}}, link_id="link-3"
    )
    assert response["Location"] == "/kurs/mini/"
    assert not ResourceLink.objects.filter(exercise__isnull=False).exists()
    assert not ResourceLink.objects.filter(assessment__isnull=False).exists()


def test_an_assessment_with_a_pool_asks_for_a_column_worth_what_each_student_draws(platform, linked, client):
    Assessment.objects.filter(slug="odev").update(
        items=[{"pool": ["first-choice", "attn"], "pick": 2, "points": 1.5}]
    )
    item = pick(client, platform, "assessment:odev")
    assert item["lineItem"]["scoreMaximum"] == 3.0  # two drawn items of 1.5 points
