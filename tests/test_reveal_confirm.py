""" "Cevabı göster" says what it costs only when it costs something, and asks first.

Under the course's score policy a reveal counts as a 0 and answers after it score 0: before the
question is solved, that is the end of earning points on it, so the page says so and asks for
a second press (a form, so it works without JavaScript). A question solved under "best" keeps
its 1,00: no warning, one press shows the answer."""

import pytest
from django.urls import reverse

from courses.models import Attempt, Course

pytestmark = pytest.mark.django_db


def lesson(client, query=""):
    return client.get(reverse("lesson", args=["quiz", "selftest"]) + query).text


def article(page, slug):
    start = page.rindex("<article", 0, page.index(f'id="q-{slug}"'))
    return page[start : page.index("</article>", start)]


def reveal(client, slug, **data):
    return client.post(reverse("reveal_question", args=["quiz", "selftest", slug]), data)


def answer(client, slug, **data):
    return client.post(reverse("answer_question", args=["quiz", "selftest", slug]), data)


def reveals(user):
    return Attempt.objects.filter(user=user, kind=Attempt.Kind.REVEAL).count()


def test_before_solving_the_page_says_the_score_becomes_0_and_a_press_only_asks(student, alice):
    item = article(lesson(student), "sqrt-dk")  # reveal = "always", nothing answered
    assert "Cevabı şimdi görürseniz bu soru 0 puan alır" in item
    response = reveal(student, "sqrt-dk")
    assert response.status_code == 302 and response.url.endswith("?cevabi-goster=sqrt-dk#q-sqrt-dk")
    assert reveals(alice) == 0
    item = article(lesson(student, "?cevabi-goster=sqrt-dk"), "sqrt-dk")
    assert (
        "Cevap gösterilsin mi?" in item
        and "Evet, cevabı göster" in item
        and "Hayır, denemeye devam edeyim" in item
    )
    assert "data-solution" not in item


def test_no_keeps_the_question_as_it_was(student, alice):
    reveal(student, "sqrt-dk")
    response = reveal(student, "sqrt-dk", confirm="1", cancel="1")
    assert (
        response.status_code == 302
        and response.url.endswith("#q-sqrt-dk")
        and "cevabi-goster" not in response.url
    )
    assert reveals(alice) == 0
    assert "Cevap gösterilsin mi?" not in article(lesson(student), "sqrt-dk")


def test_yes_shows_the_answer(student, alice):
    reveal(student, "sqrt-dk")
    reveal(student, "sqrt-dk", confirm="1")
    assert reveals(alice) == 1
    assert "data-solution" in article(lesson(student), "sqrt-dk")


def test_the_script_gets_the_question_with_the_confirm_step(student, alice):
    response = student.post(
        reverse("reveal_question", args=["quiz", "selftest", "sqrt-dk"]), HTTP_X_REQUESTED_WITH="dikkat"
    )
    assert (
        response.status_code == 200
        and "Cevap gösterilsin mi?" in response.text
        and "data-confirm" in response.text
    )
    assert reveals(alice) == 0


def test_a_solved_question_shows_no_warning_and_one_press_reveals_keeping_its_score(student, alice, quiz):
    answer(student, "sqrt-dk", value="0,125")
    item = article(lesson(student), "sqrt-dk")
    assert "0 puan" not in item and "Cevabı göster" in item
    reveal(student, "sqrt-dk")
    assert reveals(alice) == 1
    from courses.selftest import states_for

    question = quiz.questions.get(slug="sqrt-dk")
    assert states_for(alice, [question])[question.pk].score(quiz.score_policy) == 1.0


def test_a_partly_right_question_keeps_its_best_score_and_says_so(student):
    answer(student, "true-facts", options=["a"])
    answer(student, "true-facts", options=["a", "c"])  # after_attempts = 2: may be revealed now
    item = article(lesson(student), "true-facts")
    assert "Cevabı gördükten sonra bu sorunun puanı 0,75 olarak kalır" in item


def test_under_the_last_answer_policy_even_a_solved_question_warns(student, quiz):
    Course.objects.filter(pk=quiz.pk).update(score_policy=Course.ScorePolicy.LAST)
    answer(student, "sqrt-dk", value="0,125")
    item = article(lesson(student), "sqrt-dk")
    assert "bu sorunun puanı 1,00 yerine 0 olur" in item
