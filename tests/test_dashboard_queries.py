"""The instructor dashboard's cost (issue 13): a constant number of queries, however many
lessons, items, students and tries the course has, and the same totals and last activity as
the gradebook computes for them. The pinned count is exact, so that a change that adds a query
must change it too."""

import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from courses.models import Attempt, Course, Exercise, Lesson, LessonProgress, Question
from grader.models import Submission, Verdict
from instructors import stats
from instructors.gradebook import roster
from instructors.views import STUDENTS_PER_PAGE

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"
# Session, user, the course (with whether the user teaches it and the first course they teach,
# for the header), its lessons, questions and exercises, a page of enrolments with their users
# and their count, and the page's totals and last activity.
DASHBOARD = 8
START = timezone.now() - timedelta(days=2)


@pytest.fixture
def course(tmp_path) -> Course:
    """The quiz fixture course without its code blank (nothing to build in the sandbox), and
    one code exercise in its lesson."""
    from courses.importer import import_course

    folder = tmp_path / "quiz"
    shutil.copytree(FIXTURES / "quiz", folder)
    questions = folder / "01-selftest" / "questions.toml"
    blocks = questions.read_text().split("[[questions]]")
    questions.write_text("[[questions]]".join(b for b in blocks if 'slug = "score-fill"' not in b))
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
    )
    return course


@pytest.fixture
def instructor(client, course) -> Client:
    teacher = User.objects.create(username="hoca")
    course.instructors.add(teacher)
    client.force_login(teacher)
    return client


def submit(student: User, exercise: Exercise, score: float, at, **extra) -> Submission:
    return Submission.objects.create(
        user=student,
        exercise=exercise,
        code=f"scores = {score}",
        code_hash=f"{student.pk}-{score}-{at}",
        score=score,
        mode=Submission.Mode.SUBMIT,
        status=Submission.Status.DONE,
        verdict=Verdict.PASSED if score == 1 else Verdict.FAILED,
        created_at=at,
        **extra,
    )


def add_students(course: Course, names: list[str]) -> None:
    """Students with tries at every item of the course (a right and a wrong answer to each
    question, a failing then a passing submission of each exercise) and a lesson visit."""
    questions = list(Question.objects.active().filter(course=course))
    exercises = list(Exercise.objects.active().filter(course=course))
    lessons = list(course.active_lessons())
    for index, name in enumerate(names):
        student = User.objects.create(username=name, email=f"{name}@example.com")
        course.enroll(student)
        at = START + timedelta(minutes=index)
        for question in questions:
            for score in (1.0, 0.0):
                at += timedelta(seconds=1)
                Attempt.objects.create(
                    user=student, question=question, answer={}, score=score, correct=score == 1, created_at=at
                )
        for exercise in exercises:
            for score in (0.4, 1.0):
                at += timedelta(seconds=1)
                submit(student, exercise, score, at)
        for lesson in lessons:
            LessonProgress.objects.create(user=student, lesson=lesson, last_visited_at=at)


def add_lesson_with_items(course: Course, slug: str) -> None:
    """One more lesson with a question and an exercise, copies of the course's first ones."""
    lesson = Lesson.objects.create(course=course, slug=slug, title=f"Ders {slug}", order=50)
    question = Question.objects.filter(course=course).first()
    exercise = Exercise.objects.filter(course=course).first()
    assert question is not None and exercise is not None
    for item in (question, exercise):
        item.pk, item.lesson, item.slug = None, lesson, f"{item.slug}-{slug}"
        item.save()


def dashboard_url(page: int | str | None = None) -> str:
    url = reverse("instructors:dashboard", args=["quiz"])
    return url if page is None else f"{url}?page={page}"


def queries_of(client: Client, url: str) -> list[str]:
    """The SQL of a repeated request of ``url``."""
    assert client.get(url).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return [query["sql"] for query in queries.captured_queries]


def roster_text(client: Client, url: str) -> str:
    page = client.get(url).text
    section = page[page.index('id="roster-heading"') :]
    return " ".join(re.sub(r"<[^>]+>", " ", section).split())


def test_the_dashboard_costs_eight_queries_and_writes_nothing(instructor, course):
    add_students(course, ["ali", "buse"])
    sql = queries_of(instructor, dashboard_url())
    assert len(sql) == DASHBOARD, "\n".join(sql)
    assert not [s for s in sql if s.split()[0] in ("INSERT", "UPDATE", "DELETE")]


def test_more_lessons_items_students_and_tries_cost_no_more_queries(instructor, course):
    add_students(course, ["ali"])
    few = queries_of(instructor, dashboard_url())
    add_lesson_with_items(course, "ek")
    add_lesson_with_items(course, "ek2")
    add_students(course, [f"ogrenci{n:02d}" for n in range(STUDENTS_PER_PAGE + 5)])
    many = queries_of(instructor, dashboard_url())
    assert len(many) == len(few) == DASHBOARD, "\n".join(many)
    assert len(queries_of(instructor, dashboard_url(2))) == DASHBOARD  # the last, shorter page
    text = roster_text(instructor, dashboard_url(2))
    n = STUDENTS_PER_PAGE + 6
    assert f"{n} öğrenciden {STUDENTS_PER_PAGE + 1}–{n}." in text
    assert "ogrenci54" in text and "ali" not in text.split()


@pytest.mark.parametrize("policy", [Course.ScorePolicy.BEST, Course.ScorePolicy.LAST])
def test_totals_and_last_activity_are_the_gradebooks(instructor, course, policy):
    Course.objects.filter(pk=course.pk).update(score_policy=policy)
    course.refresh_from_db()
    add_students(course, ["ali", "buse"])
    buse = User.objects.get(username="buse")
    exercise = Exercise.objects.get(slug="scores")
    # Code sent after seeing the sample solution scores 0; an instructor's preview is not counted.
    submit(buse, exercise, 1.0, START + timedelta(hours=1), after_reveal=True)
    submit(buse, exercise, 1.0, START + timedelta(hours=2), preview=True)
    User.objects.create(username="can").enrollments.create(course=course)  # nothing done yet
    items = stats.course_items(course)
    enrolments = list(course.enrollments.select_related("user").order_by("user__username"))
    expected = {row.user.username: (row.total, row.last_activity) for row in stats.gradebook(course, items)}
    found = {row.user.username: (row.total, row.last_activity) for row in roster(course, items, enrolments)}
    assert {name: last for name, (_, last) in found.items()} == {
        name: last for name, (_, last) in expected.items()
    }
    assert {name: total for name, (total, _) in found.items()} == pytest.approx(
        {name: total for name, (total, _) in expected.items()}
    )
    # What the instructor reads: five questions, each answered right and then wrong, and the
    # exercise failed and then passed (buse's last code came after the sample solution).
    shown = totals_shown(roster_text(instructor, dashboard_url()))
    if policy == Course.ScorePolicy.BEST:
        assert shown == {"ali": ("6,00", True), "buse": ("6,00", True), "can": ("0,00", False)}
    else:
        assert shown == {"ali": ("1,00", True), "buse": ("0,00", True), "can": ("0,00", False)}


def totals_shown(text: str) -> dict[str, tuple[str, bool]]:
    """Each roster row as read: the student's total and whether a last activity is shown."""
    date = r"\d\d \w+ \d{4}"  # "01 Ara 2026", as the page writes dates in Turkish
    rows = re.findall(rf"(\w+) {date} ({date} \d\d:\d\d|—) (\d+,\d\d)", text)
    return {name: (total, last != "—") for name, last, total in rows}


def test_a_page_that_is_no_number_is_the_first_and_one_past_the_end_the_last(instructor, course):
    add_students(course, [f"ogrenci{n:02d}" for n in range(STUDENTS_PER_PAGE + 2)])
    first, last = roster_text(instructor, dashboard_url()), roster_text(instructor, dashboard_url(2))
    assert roster_text(instructor, dashboard_url("abc")) == first
    assert roster_text(instructor, dashboard_url("²")) == first
    assert roster_text(instructor, dashboard_url(99)) == last
    assert roster_text(instructor, dashboard_url("9" * 40)) == last  # beyond any offset the database holds
    assert f"{STUDENTS_PER_PAGE + 2} öğrenciden {STUDENTS_PER_PAGE + 1}–{STUDENTS_PER_PAGE + 2}." in last


def test_only_the_courses_instructors_and_admins_get_in_and_the_header_links_their_first_course(
    client, course
):
    student, teacher = User.objects.create(username="ali"), User.objects.create(username="hoca")
    admin = User.objects.create(username="yonetici", is_superuser=True, is_staff=True)
    course.enroll(student)
    course.instructors.add(teacher)
    Course.objects.create(slug="aaa", title="Aaa kursu").instructors.add(teacher)  # first by title
    for user, status in ((student, 404), (teacher, 200), (admin, 200)):
        client.force_login(user)
        assert client.get(dashboard_url()).status_code == status
    client.force_login(teacher)
    header = client.get(dashboard_url()).text.split("</header>")[0]
    assert f'href="{reverse("instructors:dashboard", args=["aaa"])}"' in header
    client.force_login(admin)  # teaches nothing: no "Instructor" link in the header
    assert 'href="/egitmen/' not in client.get(dashboard_url()).text.split("</header>")[0]
