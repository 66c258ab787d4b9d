"""The gradebook at course scale: a page of students at a time, sorted and filtered over every
student of the course (not within a page), and a CSV that streams every student."""

import csv
import io
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
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
