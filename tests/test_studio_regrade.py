"""Student work across a publish from the authoring area: editing an item's text keeps its
attempts and their grades; changing its answers keeps them too, and the publish page says how
many would change and offers the regrade (an exercise's: the instructors' regrade tool)."""

import html

import pytest
from django.urls import reverse

from courses.models import Attempt, Enrollment
from courses.selftest import submit_answer
from grader.models import Submission, Verdict
from studio import drafts, structure

pytestmark = pytest.mark.django_db(transaction=True)

QUESTIONS = "01-first/questions.toml"
FOLDER = "02-second/ikiyle-carp"


@pytest.fixture
def teacher(client, mini_course, make_user):
    user = make_user("hoca")
    mini_course.instructors.add(user)
    client.force_login(user)
    return user


@pytest.fixture
def answered(mini_course, make_user):
    """Two students' answers to first-choice: one right (Query ve Key), one wrong."""
    question = mini_course.questions.get(slug="first-choice")
    right, wrong = make_user("ayse"), make_user("burak")
    for user in (right, wrong):
        Enrollment.objects.create(user=user, course=mini_course)
    submit_answer(right, question, {"option": "a"})  # Query ve Key
    submit_answer(wrong, question, {"option": "b"})  # Query ve Value
    return question


def _edit(course, user, old: str, new: str, path: str = QUESTIONS) -> None:
    text = drafts.read_text(course, path)
    assert old in text, text
    drafts.save_draft(course, path, text.replace(old, new, 1), user)


def _publish(client, run_queue) -> str:
    response = client.post(reverse("studio:publish", args=["mini"]))
    assert response.status_code == 302, response.text
    run_queue()
    return html.unescape(client.get(response.url).text)


def _offers(page: str) -> str:
    """The publish page's section on students' work graded on the earlier version."""
    start = page.index('id="regrade-heading"')
    return page[start : page.index("</section>", start)]


def test_editing_a_questions_text_keeps_its_attempts_and_offers_no_regrade(
    client, mini_course, teacher, answered, run_queue
):
    before = list(Attempt.objects.order_by("pk").values_list("pk", "question_id", "score", "correct"))
    _edit(mini_course, teacher, "Skor hangi iki parçadan hesaplanır?", "Ham skor hangi iki matristen gelir?")

    page = _publish(client, run_queue)

    assert "Sürüm 1 olarak yayınlandı" in page
    answered.refresh_from_db()
    assert "matristen gelir" in answered.prompt_html and not answered.retired
    assert list(Attempt.objects.order_by("pk").values_list("pk", "question_id", "score", "correct")) == before
    assert "(changed: prompt_html)" in page
    assert "regrade-heading" not in page and "notlandırılmış" not in page


def test_changing_a_questions_answer_keeps_the_grades_and_says_how_many_would_change(
    client, mini_course, teacher, answered, run_queue
):
    before = list(Attempt.objects.order_by("pk").values_list("score", "correct"))
    assert before == [(1.0, True), (0.0, False)]
    # The right option becomes the wrong one and the other way round.
    _edit(mini_course, teacher, 'text = "Query ve Key"\ncorrect = true', 'text = "Query ve Key"')
    _edit(mini_course, teacher, 'text = "Query ve Value"', 'text = "Query ve Value"\ncorrect = true')

    page = _publish(client, run_queue)

    assert list(Attempt.objects.order_by("pk").values_list("score", "correct")) == before  # kept as graded
    offer = _offers(page)
    assert "2 notlandırılmış cevabın 2 tanesi başka bir puan alırdı" in offer, offer
    assert reverse("instructors:item", args=["mini", "q", "first-choice"]) in offer


def test_a_changed_option_text_alone_keeps_every_answers_score(
    client, mini_course, teacher, answered, run_queue
):
    _edit(mini_course, teacher, 'text = "Query ve Value"', 'text = "Query ile Value"')

    page = _publish(client, run_queue)

    offer = _offers(page)
    assert "2 notlandırılmış cevabı yeni cevaplarla da aynı puanı alır" in offer, offer


def test_changing_an_exercises_grading_offers_the_regrade_of_its_submissions(
    client, mini_course, teacher, make_user, run_queue
):
    structure.create_exercise(mini_course, "02-second", "ikiyle-carp", "İkiyle çarp", teacher)
    assert client.post(reverse("studio:start_check", args=["mini", FOLDER])).status_code == 302
    run_queue()
    assert "Sürüm 1 olarak yayınlandı" in _publish(client, run_queue)
    exercise = mini_course.exercises.get(slug="ikiyle-carp")
    student = make_user("ayse")
    Enrollment.objects.create(user=student, course=mini_course)
    Submission.objects.create(
        user=student,
        exercise=exercise,
        code="def scale(x):\n    return 2 * x\n",
        code_hash="x",
        status=Submission.Status.DONE,
        verdict=Verdict.PASSED,
        score=1.0,
        graded_hash=exercise.content_hash,
    )
    # The exercise now asks for three times x: its reference and its prompt change.
    _edit(mini_course, teacher, "return 2 * x", "return 3 * x", f"{FOLDER}/solution.py")
    assert client.post(reverse("studio:start_check", args=["mini", FOLDER])).status_code == 302
    run_queue()

    page = _publish(client, run_queue)

    submission = Submission.objects.get()
    assert (submission.verdict, submission.score) == (Verdict.PASSED, 1.0)  # nothing regraded yet
    offer = _offers(page)
    assert "1 gönderim daha önceki bir sürüme göre notlandırıldı" in offer, offer
    action = reverse("instructors:regrade_start", args=["mini", "ikiyle-carp"])
    assert f'action="{action}"' in offer
    started = client.post(action)
    assert started.status_code == 302
    assert exercise.regrades.get().items.get().submission_id == submission.pk
