"""A question answered in an exam that keeps its feedback back shows on its lesson page as
handed in there, with when the feedback comes, not as new; its attempts still count."""

import time_machine
from test_assessments import (  # noqa: F401 (fixtures)
    at,
    course,
    course_dir,
    exam,
    long_sessions,
    post_answer,
    start,
    student,
)

from courses.models import Question

LESSON = "/kurs/mini/second/"


def test_a_question_answered_in_an_exam_is_handed_in_on_its_lesson_page(student, alice, course, exam):  # noqa: F811
    Question.objects.filter(course=course, slug="n1").update(max_attempts=3)
    with time_machine.travel(at("2026-12-15 10:05"), tick=False):
        start(student)
        post_answer(student, "n1", "1", assessment="sinav")
        student.post("/kurs/mini/degerlendirme/sinav/bitir/")
    with time_machine.travel(at("2026-12-15 11:00"), tick=False):  # handed in; closes at 12:00
        page = student.get(LESSON).text
    n1 = page[page.index('id="q-n1"') : page.index('id="q-n2"')]
    assert "teslim edildi" in n1
    assert (
        "Bunu “Sınav” değerlendirmesinde cevapladınız; geri bildirimi 15.12.2026 12:00 sonrasında gösterilir."
        in n1
    )
    assert "2 deneme hakkı kaldı" in n1 or "2 deneme hakkınız kaldı" in n1
    assert "Doğru" not in n1  # the feedback itself stays back
