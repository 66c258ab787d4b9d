"""An exercise says what its numbers count: graded submissions in its header, submissions and
example runs together on the link to their history; the instructor's preview offers the editor,
records nothing, and links Test this item."""

import pytest
from django.urls import reverse

from grader.models import Submission

pytestmark = pytest.mark.django_db


def test_graded_submissions_and_example_runs_are_counted_apart(client, alice, lab):
    lab.enroll(alice)
    client.force_login(alice)
    attn = lab.exercises.get(slug="attn")
    for mode, verdict in (("submit", "failed"), ("submit", "failed"), ("run", "passed")):
        Submission.objects.create(
            user=alice, exercise=attn, code="x", mode=mode, status="done", verdict=verdict, score=0.0
        )
    page = client.get(attn.lesson.get_absolute_url()).text
    assert "2 notlandırılmış gönderim" in page
    assert "Gönderimlerim ve örnek çalıştırmalarım (3)" in page
    history = client.get(reverse("submission_history", args=["lab", attn.lesson.slug, "attn"])).text
    # Numbered per kind, oldest first: the header's "2" is the history's "Gönderim 2".
    assert "Gönderim 2 ·" in history and "Gönderim 1 ·" in history and "Örnek çalıştırma 1 ·" in history
    assert f"#{attn.submissions.first().pk}" not in history


def test_the_preview_offers_the_editor_unrecorded_and_links_the_item_test(client, make_user, lab):
    teacher = make_user("hoca")
    lab.instructors.add(teacher)
    client.force_login(teacher)
    attn = lab.exercises.get(slug="attn")
    page = client.get(reverse("instructors:preview", args=["lab", attn.lesson.slug])).text
    assert "hiçbir şey kaydedilmez" in page and 'name="preview" value="1"' in page
    assert reverse("instructors:test_item", args=["lab", "attn"]) in page
    assert "kursa katılın" not in page.lower()
