"""An instructor tries an exercise in the student preview: graded through the queue as a
student's code is, shown with the student's feedback, and never counted anywhere."""

import pytest
from django.urls import reverse

from grader.models import Submission

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.sandbox, pytest.mark.queue]

FIXTURES_NO_SCALING = "tests/fixtures/lab/01-lab/attn/variants/no_scaling.py"


@pytest.fixture
def lab(lab_live):
    return lab_live


@pytest.fixture
def teacher(make_user, lab):
    user = make_user("hoca")
    lab.instructors.add(user)
    return user


def test_an_instructor_runs_code_in_the_preview_and_sees_a_students_feedback_unrecorded(
    client, teacher, lab, run_queue
):
    attn = lab.exercises.get(slug="attn")
    preview_url = reverse("instructors:preview", args=["lab", attn.lesson.slug])
    client.force_login(teacher)
    page = client.get(preview_url).text
    assert 'name="preview" value="1"' in page and "Kursa katılın" not in page
    wrong = open(FIXTURES_NO_SCALING).read()
    response = client.post(
        reverse("submit_code", args=["lab", attn.lesson.slug, "attn"]),
        {"code": wrong, "mode": "submit", "preview": "1"},
    )
    assert response.status_code == 302 and response.url.startswith(preview_url)  # back to the preview
    run_queue()
    page = client.get(preview_url).text  # (a request first: the worker closed this thread's connection)
    submission = Submission.objects.get()
    assert submission.preview and submission.status == "done" and submission.verdict == "failed"
    assert "√" in page or "no-scaling" in page or "ölçek" in page.lower(), (
        "the misconception hint a student gets"
    )
    # Never counted: not an attempt, not in the gradebook's or the statistics' data, not regraded.
    assert not Submission.objects.counted().exists()
    from grader.regrade import regradable

    assert not regradable(attn).exists()


def test_a_student_cannot_send_preview_code(client, make_user, lab):
    attn = lab.exercises.get(slug="attn")
    outsider = make_user("meraklı")
    client.force_login(outsider)
    response = client.post(
        reverse("submit_code", args=["lab", attn.lesson.slug, "attn"]),
        {"code": "x = 1", "mode": "run", "preview": "1"},
    )
    assert response.status_code == 403
    assert not Submission.objects.exists()
