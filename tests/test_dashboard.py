"""İlerlemem (/panom/): where to continue, what to do next, each lesson's and item's score;
a student who has started lands there after logging in."""

import pytest
from django.urls import reverse

from courses.models import Course, LessonProgress

pytestmark = pytest.mark.django_db


@pytest.fixture
def student(client, alice, quiz, mini_course):
    quiz.enroll(alice)
    mini_course.enroll(alice)
    client.force_login(alice)
    return client


def answer(client, slug, **data):
    return client.post(reverse("answer_question", args=["quiz", "selftest", slug]), data)


def text(response) -> str:
    import re

    return " ".join(re.sub(r"<[^>]+>", " ", response.text).split())


def test_scores_per_lesson_and_item_and_what_to_do_next(student):
    student.get(reverse("lesson", args=["quiz", "selftest"]))
    answer(student, "who-attends", option="qk")  # solved: 1,00
    answer(student, "true-facts", options=["a", "c"])  # partly: 0,50
    page = text(student.get(reverse("dashboard")))
    assert "Soru 1 çözüldü 1,00" in page
    assert "Soru 2 denendi 0,50" in page
    assert "Soru 3 henüz denenmedi —" in page
    assert "Kaldığınız yerden devam edin: Kendini test et · Soru 2" in page
    assert "Sıradaki adım: Kendini test et · Soru 2 (denendi, henüz çözülmedi)" in page
    assert "açıldı · 6 öğeden 1 çözüldü 1,50 / 6" in page
    # The other course, not started: its next step is its first lesson.
    assert "Sıradaki adım: Birinci ders" in page


def test_an_answer_revealed_counts_as_done_for_what_comes_next(student, alice, quiz):
    from courses.selftest import reveal_answer

    for slug in ("who-attends", "true-facts", "roles", "score-fill", "word-fill"):
        Course.objects.get(slug="quiz").questions.filter(slug=slug).update(reveal={"rule": "always"})
    for question in quiz.questions.all():
        reveal_answer(alice, question)
    page = text(student.get(reverse("dashboard")))
    assert "Soru 6 cevap gösterildi 0,00" in page
    # Every question's answer seen: next comes the lesson itself, to be marked done.
    assert "Sıradaki adım: Kendini test et (okuyun ve bitti olarak işaretleyin)" in page


def test_login_lands_on_the_dashboard_once_enrolled_else_on_the_course_list(client, alice, quiz):
    login = {"username": "alice", "password": "a-Long-passw0rd"}
    assert client.post(reverse("login"), login).url == reverse("home")  # not enrolled: choose a course
    client.logout()
    quiz.enroll(alice)
    assert client.post(reverse("login"), login).url == reverse("dashboard")  # where to begin
    client.logout()
    LessonProgress.record_visit(alice, quiz.lessons.first())
    client.logout()
    assert client.post(reverse("login"), login).url == reverse("dashboard")
    client.logout()
    assert client.post(reverse("login"), {**login, "next": "/kurs/quiz/"}).url == "/kurs/quiz/"


def test_the_score_policy_of_the_course_is_the_gradebooks(student, quiz):
    Course.objects.filter(pk=quiz.pk).update(score_policy=Course.ScorePolicy.LAST)
    answer(student, "who-attends", option="qk")
    answer(student, "who-attends", option="qv")
    assert "Soru 1 çözüldü 0,00" in text(student.get(reverse("dashboard")))
