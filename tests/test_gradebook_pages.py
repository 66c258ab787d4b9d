"""The gradebook at course scale: a page of students at a time, sorted and filtered over every
student of the course (not within a page), and a CSV that streams every student."""

import csv
import io
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from courses.models import Attempt, Course, Question

pytestmark = [pytest.mark.django_db]

FIXTURES = Path(__file__).parent / "fixtures"

# name -> {question slug: score}; totals: ece 3.5, zeki 2, can 2, ali 1, buse 0.5, deniz 0, fatma 0
SCORES = {
    "ali": {"who-attends": 1.0},
    "buse": {"true-facts": 0.5},
    "can": {"who-attends": 1.0, "sqrt-dk": 1.0},
    "deniz": {"who-attends": 0.0},
    "ece": {"who-attends": 1.0, "sqrt-dk": 1.0, "word-fill": 1.0, "true-facts": 0.5},
    "fatma": {},
    "zeki": {"sqrt-dk": 1.0, "word-fill": 1.0},
}


@pytest.fixture
def quiz(tmp_path):
    """The quiz fixture course without its code blank: nothing to build in the sandbox."""
    from courses.importer import import_course

    course_dir = tmp_path / "quiz"
    shutil.copytree(FIXTURES / "quiz", course_dir)
    questions = course_dir / "01-selftest" / "questions.toml"
    blocks = questions.read_text().split("[[questions]]")
    questions.write_text("[[questions]]".join(b for b in blocks if 'slug = "score-fill"' not in b))
    import_course(course_dir)
    return Course.objects.get(slug="quiz")


@pytest.fixture
def course(quiz, monkeypatch):
    from django.contrib.auth.models import User

    import instructors.views

    monkeypatch.setattr(instructors.views, "STUDENTS_PER_PAGE", 3)
    questions = {q.slug: q for q in Question.objects.filter(course=quiz)}
    start = timezone.now() - timedelta(days=1)
    for index, (name, scores) in enumerate(SCORES.items()):
        student = User.objects.create(username=name, email=f"{name}@example.com")  # no password to hash
        quiz.enroll(student)
        for slug, score in scores.items():
            Attempt.objects.create(
                user=student,
                question=questions[slug],
                answer={},
                score=score,
                correct=score == 1.0,
                created_at=start + timedelta(minutes=index),
            )
    return quiz


@pytest.fixture
def instructor(client, course):
    from django.contrib.auth.models import User

    teacher = User.objects.create(username="hoca")
    course.instructors.add(teacher)
    client.force_login(teacher)
    return client


def students_on(client, **params) -> list[str]:
    return _names(client.get(reverse("instructors:gradebook", args=["quiz"]), params).text)


def _names(page: str) -> list[str]:
    return re.findall(r'<th scope="row" class="sticky-col">([^<]+)</th>', page)


def every_page(client, **params) -> list[str]:
    """The students of every page, in order, following the pages' own "next" links."""
    url = reverse("instructors:gradebook", args=["quiz"])
    page = client.get(url, params).text
    names = _names(page)
    while next_link := re.search(r'rel="next" href="([^"]+)"', page):
        page = client.get(url + next_link.group(1).replace("&amp;", "&")).text
        names += _names(page)
    return names


def test_the_gradebook_shows_a_page_of_students_and_the_next_page_the_next_ones(instructor):
    assert students_on(instructor) == ["ali", "buse", "can"]
    assert students_on(instructor, page=2) == ["deniz", "ece", "fatma"]
    assert students_on(instructor, page=3) == ["zeki"]
    page = instructor.get(reverse("instructors:gradebook", args=["quiz"]), {"page": 2}).text
    assert "7 öğrenciden 4–6." in page and "Sayfa 2 / 3" in page
    assert 'rel="next" href="?sort=name&amp;page=3"' in page
    # Past the end is the last page, not an error.
    assert students_on(instructor, page=99) == ["zeki"]


def test_sorting_by_total_orders_every_student_across_pages(instructor):
    by_total = every_page(instructor, sort="total", desc="1")
    assert by_total == ["ece", "can", "zeki", "ali", "buse", "deniz", "fatma"]  # ties by name
    assert every_page(instructor, sort="total") == ["deniz", "fatma", "buse", "ali", "can", "zeki", "ece"]
    # The next page's link keeps the sort.
    page = instructor.get(
        reverse("instructors:gradebook", args=["quiz"]), {"sort": "total", "desc": "1"}
    ).text
    assert 'href="?sort=total&amp;desc=1&amp;page=2"' in page


def test_sorting_by_one_item_puts_students_without_a_score_last_when_descending(instructor):
    names = every_page(instructor, sort="q:who-attends", desc="1")
    assert names[:3] == ["ali", "can", "ece"] and names[3] == "deniz"  # 1, 1, 1, then 0
    assert names[4:] == ["buse", "fatma", "zeki"]  # never answered it


def test_the_last_attempt_counts_when_the_course_says_so(instructor, course):
    deniz = Attempt.objects.get(user__username="deniz")
    Attempt.objects.create(
        user=deniz.user,
        question=deniz.question,
        answer={},
        score=1.0,
        correct=True,
        created_at=timezone.now(),
    )
    ali = Attempt.objects.get(user__username="ali")
    Attempt.objects.create(
        user=ali.user, question=ali.question, answer={}, score=0.0, created_at=timezone.now()
    )
    assert every_page(instructor, sort="total", desc="1")[3:5] == ["ali", "deniz"]  # best: 1 and 1
    Course.objects.filter(pk=course.pk).update(score_policy=Course.ScorePolicy.LAST)
    order = every_page(instructor, sort="total", desc="1")
    assert order.index("deniz") < order.index("buse") < order.index("ali")  # last: 1, 0.5, 0
    # An answer still waiting for its grade counts nowhere yet.
    Attempt.objects.create(
        user=ali.user, question=ali.question, answer={}, score=1.0, status="queued", created_at=timezone.now()
    )
    # The page and the CSV count the same.
    page = instructor.get(reverse("instructors:gradebook", args=["quiz"]), {"q": "ali"}).text
    assert re.search(r">ali</th>\s*<td>[^<]*</td>\s*<td>0,00</td>", page)
    body = instructor.get(reverse("instructors:gradebook_csv", args=["quiz"])).getvalue().decode("utf-8-sig")
    totals = {row[0]: row[4] for row in csv.reader(io.StringIO(body))}
    assert totals["ali"] == "0.00" and totals["deniz"] == "1.00"


def test_sorting_by_last_activity_uses_every_students_latest_action(instructor):
    newest = Attempt.objects.get(user__username="ali")
    Attempt.objects.filter(pk=newest.pk).update(created_at=timezone.now())
    names = every_page(instructor, sort="activity", desc="1")
    assert names[0] == "ali" and names[-1] == "fatma"  # fatma never did anything


def test_filters_narrow_the_rows_before_paging(instructor):
    assert every_page(instructor, q="I") == ["ali", "deniz", "zeki"]  # usernames, any case
    assert every_page(instructor, q="zeki@example") == ["zeki"]  # e-mail addresses too
    # Every student has an unfinished item; with one question shown, those who finished it drop out.
    Question.objects.filter(course__slug="quiz").exclude(slug="who-attends").update(retired=True)
    unfinished = every_page(instructor, only="incomplete", sort="total")
    assert unfinished == ["buse", "deniz", "fatma", "zeki"]
    page = instructor.get(reverse("instructors:gradebook", args=["quiz"]), {"only": "incomplete"}).text
    assert "4 öğrenciden 1–3." in page


def test_the_csv_streams_every_student_with_the_same_columns(instructor, monkeypatch):
    import instructors.views

    monkeypatch.setattr(instructors.views, "CSV_CHUNK", 2)  # four chunks for seven students
    response = instructor.get(reverse("instructors:gradebook_csv", args=["quiz"]))
    assert response.streaming
    rows = list(csv.reader(io.StringIO(response.getvalue().decode("utf-8-sig"))))
    assert rows[0][:5] == ["kullanıcı adı", "e-posta", "kayıt tarihi", "son etkinlik", "toplam"]
    slugs = rows[0][5:]
    assert "who-attends" in slugs and "sqrt-dk" in slugs
    assert [row[0] for row in rows[1:]] == sorted(SCORES)
    totals = {row[0]: row[4] for row in rows[1:]}
    assert totals == {
        "ali": "1.00",
        "buse": "0.50",
        "can": "2.00",
        "deniz": "0.00",
        "ece": "3.50",
        "fatma": "0.00",
        "zeki": "2.00",
    }
    ece = dict(zip(rows[0], next(row for row in rows[1:] if row[0] == "ece")))
    assert ece["sqrt-dk"] == "1.00" and ece["roles"] == ""


def test_the_dashboard_lists_the_roster_a_page_at_a_time(instructor):
    url = reverse("instructors:dashboard", args=["quiz"])
    first = instructor.get(url).text
    assert ">ali<" in first and ">can<" in first and ">deniz<" not in first
    assert "7 öğrenciden 1–3." in first
    assert ">deniz<" in instructor.get(url, {"page": 2}).text


def _gradebook_says(course, excel: bool) -> list[list[str]]:
    """Every student's CSV row as the gradebook page computes it (stats.gradebook reads each
    student's tries and keeps a score per item in Python): the CSV must say the same."""
    from instructors import stats

    number = (lambda value: f"{value:.2f}".replace(".", ",")) if excel else (lambda value: f"{value:.2f}")
    items = stats.course_items(course)
    rows = []
    for row in stats.gradebook(course, items):
        last = row.last_activity
        rows.append(
            [
                row.user.username,
                row.user.email,
                timezone.localtime(row.enrolled_at).date().isoformat(),
                timezone.localtime(last).isoformat(timespec="minutes") if last else "",
                number(row.total),
            ]
            + [
                "" if row.cells[item.key].score is None else number(row.cells[item.key].score)
                for item in items
            ]
        )
    return rows


def _csv_rows(client, slug: str, excel: bool) -> list[list[str]]:
    name = "instructors:gradebook_csv_excel" if excel else "instructors:gradebook_csv"
    body = client.get(reverse(name, args=[slug])).getvalue().decode("utf-8-sig")
    return list(csv.reader(io.StringIO(body), delimiter=";" if excel else ","))


def test_the_csv_gives_every_student_the_scores_and_last_activity_the_gradebook_computes(
    instructor, course, monkeypatch
):
    """Questions: answers and reveals count, an answer still waiting does not; a lesson visit
    is activity; best and last policies; streamed in chunks of two."""
    import instructors.views
    from courses.models import LessonProgress

    monkeypatch.setattr(instructors.views, "CSV_CHUNK", 2)
    questions = {q.slug: q for q in Question.objects.filter(course=course)}
    buse, can = (User.objects.get(username=name) for name in ("buse", "can"))
    later = timezone.now() - timedelta(hours=2)
    Attempt.objects.create(
        user=buse, question=questions["true-facts"], kind="reveal", answer={}, score=0.0, created_at=later
    )
    Attempt.objects.create(
        user=can, question=questions["sqrt-dk"], answer={}, score=0.0, status="queued", created_at=later
    )
    LessonProgress.objects.create(user=can, lesson=course.lessons.get(), last_visited_at=timezone.now())
    for policy in (Course.ScorePolicy.BEST, Course.ScorePolicy.LAST):
        Course.objects.filter(pk=course.pk).update(score_policy=policy)
        course.refresh_from_db()
        for excel in (False, True):
            rows = _csv_rows(instructor, "quiz", excel)
            assert rows[1:] == _gradebook_says(course, excel), (policy, excel)
    # Read by a person: ece's total, and buse's last try (a reveal) counting 0 when the last counts.
    totals = {row[0]: row[4] for row in rows[1:]}
    assert totals["ece"] == "3,50" and totals["buse"] == "0,00" and totals["fatma"] == "0,00"
    assert next(row for row in rows[1:] if row[0] == "can")[3].startswith(timezone.localdate().isoformat())


def test_the_csv_gives_every_students_exercise_scores_as_the_gradebook_computes(client, monkeypatch):
    """Exercises: counted submissions only (not example runs, previews, rejected code or code
    still waiting), code sent after seeing the sample solution scores 0; streamed in chunks of
    five over twelve students."""
    import instructors.views
    from courses.importer import import_course
    from courses.models import LessonProgress
    from grader.models import Submission

    monkeypatch.setattr(instructors.views, "CSV_CHUNK", 5)
    import_course(FIXTURES / "lab")  # its exercises are never graded here: nothing to build
    lab = Course.objects.get(slug="lab")
    attn, slow = lab.exercises.get(slug="attn"), lab.exercises.get(slug="slow")
    teacher = User.objects.create(username="hoca")
    lab.instructors.add(teacher)
    start = timezone.now() - timedelta(days=3)
    for n in range(12):
        student = User.objects.create(username=f"öğrenci{n:02d}", email=f"o{n}@example.com")
        lab.enroll(student)
        for k in range(n % 4):
            Submission.objects.create(
                user=student,
                exercise=attn if k % 2 == 0 else slow,
                code="x = 1\n",
                status=Submission.Status.DONE,
                verdict="passed" if (n + k) % 3 == 0 else "failed",
                score=[0.25, 1.0, 0.5][(n + k) % 3],
                after_reveal=n == 7 and k == 2,
                created_at=start + timedelta(hours=n, minutes=k),
            )
        others = [
            {"mode": Submission.Mode.RUN, "score": 1.0},
            {"preview": True, "score": 1.0},
            {"verdict": "rejected", "score": 1.0},
            {"status": Submission.Status.QUEUED, "score": None},
        ]
        if n % 3 == 0:
            fields = {"status": Submission.Status.DONE, "verdict": "passed", **others[n // 3]}
            Submission.objects.create(
                user=student,
                exercise=attn,
                code="y = 2\n",
                created_at=start + timedelta(hours=n, minutes=9),
                **fields,
            )
        if n == 7:
            LessonProgress.objects.create(
                user=student, lesson=lab.lessons.get(), last_visited_at=timezone.now()
            )
    client.force_login(teacher)
    for policy in (Course.ScorePolicy.BEST, Course.ScorePolicy.LAST):
        Course.objects.filter(pk=lab.pk).update(score_policy=policy)
        lab.refresh_from_db()
        for excel in (False, True):
            rows = _csv_rows(client, "lab", excel)
            assert rows[0][5:] == ["slow", "attn"]
            assert rows[1:] == _gradebook_says(lab, excel), (policy, excel)
    by_name = {row[0]: row for row in rows[1:]}
    assert len(by_name) == 12 and by_name["öğrenci00"][4] == "0,00"
    assert by_name["öğrenci07"][5:] == ["0,50", "0,00"]  # its last attempt at attn: after the reveal
