"""Regressions found in review: each test fails without its fix."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from courses.models import Attempt, Question
from grader.grading import grade_claimed, submit
from grader.models import Submission
from jobs.sweeper import sweep

FIXTURES = Path(__file__).parent / "fixtures"
SOLUTION = (FIXTURES / "lab" / "01-lab" / "attn" / "solution.py").read_text()


@pytest.mark.django_db(transaction=True)
@pytest.mark.sandbox
@pytest.mark.queue
def test_a_queued_submission_whose_task_was_lost_is_queued_again(alice, lab, run_queue, settings):
    lab.enroll(alice)
    attn = lab.exercises.get(slug="attn")
    # Stored, but its task never made it onto the queue (enqueue failed, worker died first…).
    lost = Submission.objects.create(
        user=alice,
        exercise=attn,
        code=SOLUTION,
        code_hash=Submission.hash_code(SOLUTION),
        created_at=timezone.now() - timedelta(minutes=10),
    )
    assert not DBTaskResult.objects.exists()
    assert sweep() == {"grader.Submission": (1, 0)}
    run_queue()
    lost.refresh_from_db()
    assert (lost.status, lost.verdict) == ("done", "passed")


@pytest.mark.django_db
def test_an_answer_after_the_reveal_never_counts_as_solved(client, alice, quiz):
    quiz.enroll(alice)
    client.force_login(alice)
    url = reverse("answer_question", args=["quiz", "selftest", "sqrt-dk"])
    client.post(
        reverse("reveal_question", args=["quiz", "selftest", "sqrt-dk"]), {"confirm": "1"}
    )  # reveal = "always"
    client.post(url, {"value": "0,125"})
    page = client.get(reverse("lesson", args=["quiz", "selftest"])).text
    assert 'class="item question status-revealed" id="q-sqrt-dk"' in page


@pytest.mark.django_db
def test_used_up_question_is_refused_before_anything_runs(client, alice, quiz):
    quiz.enroll(alice)
    Question.objects.filter(slug="score-fill").update(max_attempts=1)
    client.force_login(alice)
    url = reverse("answer_question", args=["quiz", "selftest", "score-fill"])
    client.post(url, {"blank-0": "K"})
    started = timezone.now()
    response = client.post(url, {"blank-0": "__import__('time').sleep(30)"}, follow=True)
    assert (timezone.now() - started).total_seconds() < 3  # no sandbox was started
    assert "bütün deneme hakkınızı kullandınız" in response.text
    assert Attempt.objects.count() == 1


@pytest.mark.django_db
def test_answering_too_fast_is_refused_with_when_to_retry(client, alice, quiz, settings):
    settings.ANSWER_RATE_LIMIT = 2
    quiz.enroll(alice)
    client.force_login(alice)
    url = reverse("answer_question", args=["quiz", "selftest", "who-attends"])
    for _ in range(3):
        response = client.post(url, {"option": "qv"}, HTTP_X_REQUESTED_WITH="dikkat")
    assert "saniye" in response.text
    assert Attempt.objects.count() == 2


@pytest.mark.django_db
def test_a_question_whose_kind_changed_does_not_break_the_lesson(client, alice, quiz):
    quiz.enroll(alice)
    client.force_login(alice)
    client.post(reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qv"})
    question = Question.objects.get(slug="who-attends")
    Question.objects.filter(pk=question.pk).update(
        kind="multiple_choice",
        spec={
            "options": [
                {
                    "id": "x",
                    "html": "X",
                    "correct": True,
                    "explanation_html": "",
                    "misconception": "",
                    "hint_html": "",
                },
                {
                    "id": "y",
                    "html": "Y",
                    "correct": False,
                    "explanation_html": "",
                    "misconception": "",
                    "hint_html": "",
                },
            ],
            "shuffle": True,
        },
    )
    assert client.get(reverse("lesson", args=["quiz", "selftest"])).status_code == 200


@pytest.mark.django_db
def test_instructors_cannot_edit_raw_html_or_move_lessons_to_other_courses(
    client, make_user, quiz, mini_course
):
    teacher = make_user("hoca", is_staff=True)
    quiz.instructors.add(teacher)
    from django.contrib.auth.models import Permission

    teacher.user_permissions.set(Permission.objects.filter(content_type__app_label="courses"))
    client.force_login(teacher)
    course_form = client.get(reverse("admin:courses_course_change", args=[quiz.pk])).text
    assert 'name="description_html"' not in course_form
    lesson = quiz.lessons.first()
    lesson_form = client.get(reverse("admin:courses_lesson_change", args=[lesson.pk])).text
    assert 'name="course"' not in lesson_form
    assert client.get(reverse("admin:courses_course_change", args=[mini_course.pk])).status_code in (302, 404)


@pytest.mark.django_db(transaction=True)
@pytest.mark.sandbox
def test_a_preview_made_before_the_exercise_changed_again_cannot_be_applied(make_user, lab):
    from grader import regrade as regrades

    student = make_user("ogr")
    lab.enroll(student)
    attn = lab.exercises.get(slug="attn")
    grade_claimed(submit(student, attn, SOLUTION).submission.pk)
    old = regrades.start(attn, None)
    for item in old.items.all():
        regrades.grade_item(item.pk)
    type(attn).objects.filter(pk=attn.pk).update(content_hash="f" * 64)  # imported again since
    with pytest.raises(regrades.NotReady):
        regrades.apply(old)


@pytest.mark.django_db(transaction=True)
@pytest.mark.sandbox
def test_code_sent_after_seeing_the_sample_solution_scores_zero(client, alice, lab):
    from instructors.stats import course_items, gradebook

    lab.enroll(alice)
    client.force_login(alice)
    attn = lab.exercises.get(slug="attn")
    reveal = reverse("reveal_solution", args=["lab", "lab", "attn"])
    client.post(reveal)  # after_attempts = 2: not yet
    assert (
        "np.sqrt(Q.shape[-1])"
        not in client.get(reverse("lesson", args=["lab", "lab"])).text.split('id="ex-attn"')[1]
    )
    for code in ("x = 1\n", "y = 2\n"):
        grade_claimed(submit(alice, attn, code).submission.pk)
    client.post(reveal)
    page = client.get(reverse("lesson", args=["lab", "lab"])).text
    assert "np.sqrt(Q.shape[-1])" in page.split('id="ex-attn"')[1]
    copied = submit(alice, attn, SOLUTION).submission
    grade_claimed(copied.pk)
    copied.refresh_from_db()
    assert (copied.verdict, copied.after_reveal) == ("passed", True)
    [row] = gradebook(lab, course_items(lab))
    assert row.cells["e:attn"].score == 0.0
