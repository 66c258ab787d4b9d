"""The lesson page's cost (issue 13): a repeated request reads the session, the user, the lesson
with the student's state of it (one query: courses.lessonpage.with_student_state) and only the
student's own work that exists; it writes nothing unless the visit is worth recording. The
pinned counts below are exact, so that a change that adds a query must change them too."""

import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from courses.importer import import_course
from courses.models import Course, Exercise, HintOpening, LessonProgress, Question
from courses.pagecache import CACHE_ALIAS, lesson_frame
from grader.models import Submission, Verdict

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
# Session, user, and the lesson with its course, the enrolment and the student's state.
NEW_STUDENT = 3
# ... and the student's answers.
WITH_ANSWERS = 4
# ... and their submissions and reveals, and their opened hint steps. (Whether an assessment
# holds an item whose next hint step could open is asked only in a course with assessments.)
WITH_ANSWERS_WORK_AND_HINTS = 6


@pytest.fixture(autouse=True)
def empty_page_cache():
    caches[CACHE_ALIAS].clear()
    yield
    caches[CACHE_ALIAS].clear()


@pytest.fixture
def hinted(tmp_path) -> Course:
    """The quiz course with a three-step hint ladder on its first question (who-attends)."""
    folder = tmp_path / "quiz"
    shutil.copytree(FIXTURES / "quiz", folder)
    questions = folder / "01-selftest" / "questions.toml"
    anchor = 'reveal = "after_first_attempt"\n'
    hints = 'hints = ["Soran taraf hangisi?", "Query ile ne karşılaştırılır?", "Key ile."]\n'
    questions.write_text(questions.read_text(encoding="utf-8").replace(anchor, anchor + hints, 1), "utf-8")
    import_course(folder)
    course = Course.objects.get(slug="quiz")
    Exercise.objects.create(
        course=course,
        lesson=course.lessons.get(slug="selftest"),
        slug="scores",
        title="Skorları hesaplayın",
        order=99,
        prompt_html="<p>Skorları hesaplayın.</p>",
        starter_code="scores = None",
        solution_code="scores = Q @ K.T",
        reveal={"rule": "always"},
    )
    return course


@pytest.fixture
def learner(client, alice, hinted):
    hinted.enroll(alice)
    client.force_login(alice)
    return client


def lesson_url() -> str:
    return reverse("lesson", args=["quiz", "selftest"])


def repeated_request(client) -> list[str]:
    """The SQL of a repeated request of the lesson page (the first fills the page cache)."""
    assert client.get(lesson_url()).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        response = client.get(lesson_url())
    count = len(queries)
    assert response.status_code == 200
    sql = [query["sql"] for query in queries.captured_queries]
    assert len(sql) == count
    return sql


def test_a_new_student_repeated_lesson_page_costs_three_queries_and_writes_nothing(learner):
    sql = repeated_request(learner)
    assert len(sql) == NEW_STUDENT, "\n".join(sql)
    assert not [s for s in sql if s.split()[0] in ("INSERT", "UPDATE", "DELETE")]


def test_a_student_with_answers_costs_one_more_query(learner):
    learner.post(reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qv"})
    sql = repeated_request(learner)
    assert len(sql) == WITH_ANSWERS, "\n".join(sql)
    assert "qv" in learner.get(lesson_url()).text  # their answer is on the page


def test_a_student_with_answers_code_and_hints_costs_only_what_they_have(learner, alice):
    learner.post(reverse("answer_question", args=["quiz", "selftest", "who-attends"]), {"option": "qv"})
    HintOpening.objects.create(user=alice, question=Question.objects.get(slug="who-attends"), step=1)
    Submission.objects.create(
        user=alice,
        exercise=Exercise.objects.get(slug="scores"),
        code="scores = Q @ K.T",
        code_hash="h",
        score=1.0,
        mode=Submission.Mode.SUBMIT,
        status=Submission.Status.DONE,
        verdict=Verdict.PASSED,
    )
    sql = repeated_request(learner)
    assert len(sql) == WITH_ANSWERS_WORK_AND_HINTS, "\n".join(sql)
    page = learner.get(lesson_url()).text
    assert "Soran taraf hangisi?" in page  # the opened step
    assert "Query ile ne karşılaştırılır?" not in page  # not opened yet


def test_a_visit_is_recorded_once_and_again_only_after_the_visit_resolution(learner, alice):
    learner.get(lesson_url())
    progress = LessonProgress.objects.get(user=alice, lesson__slug="selftest")
    earlier = timezone.now() - LessonProgress.VISIT_RESOLUTION - timedelta(minutes=1)
    LessonProgress.objects.filter(pk=progress.pk).update(last_visited_at=earlier)
    learner.get(lesson_url())
    progress.refresh_from_db()
    assert progress.last_visited_at > earlier + timedelta(minutes=1)
    assert LessonProgress.objects.filter(user=alice).count() == 1


def test_a_lesson_marked_done_still_says_so(learner, alice):
    assert "badge-done" not in learner.get(lesson_url()).text
    learner.post(reverse("lesson_complete", args=["quiz", "selftest"]))
    assert LessonProgress.objects.get(user=alice, lesson__slug="selftest").completed_at is not None
    assert "badge-done" in learner.get(lesson_url()).text
    assert "badge-done" in learner.get(lesson_url()).text


def header(page: str) -> str:
    return page[: page.index("</header>")]


def test_the_instructor_link_is_in_the_header_of_the_lesson_page_and_other_pages(make_user, hinted, learner):
    teacher = make_user("hoca")
    other = Course.objects.create(slug="aaa", title="Aaa kursu")
    hinted.instructors.add(teacher)
    other.instructors.add(teacher)
    client = Client()
    client.force_login(teacher)
    first_taught = reverse("instructors:dashboard", args=["aaa"])  # the first by title
    assert f'href="{first_taught}"' in header(client.get(lesson_url()).text)
    assert f'href="{first_taught}"' in header(client.get(reverse("home")).text)
    # A student has no such link, on the lesson page or elsewhere.
    assert "/egitmen/" not in header(learner.get(lesson_url()).text)
    assert "/egitmen/" not in header(learner.get(reverse("home")).text)


def test_each_request_gets_its_own_copies_of_a_frame_kept_in_memory(hinted):
    """The process keeps frames in memory (courses.pagecache._local); a page asks its questions
    as its student's variant (Question.ask changes the instance), so each request must get its
    own items, never another request's."""
    lesson = hinted.lessons.get(slug="selftest")
    first, second = lesson_frame(lesson, "tr"), lesson_frame(lesson, "tr")
    question = next(item for item in first.items if not item.is_exercise)
    question.prompt_html = "<p>Bir öğrencinin kendi sorusu</p>"
    other = next(item for item in second.items if item.pk == question.pk)
    assert other is not question and other.prompt_html != question.prompt_html
