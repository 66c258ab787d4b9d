"""Work handed in to an assessment that keeps its feedback back is left out of its lesson page,
yet its attempts still count: what the lesson page can say instead of "new" comes from
assessments.feedback.held_back (where it was answered, and when its feedback comes)."""

import time_machine
from django.utils.translation import override
from test_assessments import (  # noqa: F401 (fixtures)
    at,
    course,
    course_dir,
    exam,
    homework,
    long_sessions,
    post_answer,
    start,
    student,
)

from assessments.feedback import held_back, held_back_work
from assessments.models import Assessment, StudentOverride
from courses.models import Attempt


def test_an_exam_answer_held_back_says_where_and_until_when(student, alice, course, exam, homework):  # noqa: F811
    StudentOverride.objects.create(assessment=exam, user=alice, closes=at("2026-12-15 13:00"))
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        post_answer(student, "n1", "1", assessment="sinav")
        work = held_back(alice, course)
    answer = Attempt.objects.get(user=alice, question__slug="n1")
    assert work.answers == {answer.pk} and held_back_work(alice, course) == ({answer.pk}, set())
    assert set(work.notes) == {"n1"}  # n2 was not answered: it stays new
    note = work.notes["n1"]
    assert note.url == "/kurs/mini/degerlendirme/sinav/"
    with override("tr"):  # the student's own close (extended), in Istanbul time
        assert note.text == (
            "Bunu “Sınav” değerlendirmesinde cevapladınız; geri bildirimi 15.12.2026 13:00 sonrasında gösterilir."
        )
    with time_machine.travel(at("2026-12-15 13:01"), tick=False):  # closed: the lesson shows it all
        assert held_back(alice, course).notes == {}


def test_score_only_homework_says_the_score_is_on_its_page(student, alice, course, homework):  # noqa: F811
    Assessment.objects.filter(pk=homework.pk).update(feedback="score_only")
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        post_answer(student, "first-choice", "a")
        note = held_back(alice, course).notes["first-choice"]
    assert note.until is None
    with override("tr"):
        assert note.text.startswith(
            "Bunu “Ödev” değerlendirmesinde cevapladınız; o değerlendirme yalnızca puanı"
        )
