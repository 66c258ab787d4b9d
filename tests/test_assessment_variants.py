"""Per-student variants on an assessment's page: each student sees their own numbers for a
question with variants, and their answer is graded against their own variant (issue 14)."""

import shutil
from pathlib import Path

import pytest
import time_machine
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from test_assessments import at, long_sessions  # noqa: F401 (fixture)

from courses.models import Attempt, Course, Question

PAGE = reverse("assessment", args=["varyant-sinav", "odev"])
ANSWER = reverse("assessment_answer", args=["varyant-sinav", "odev", "dot-score"])


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def course(db, tmp_path) -> Course:
    """The variants fixture course with a homework of its questions (assessment_variants/)."""
    folder = tmp_path / "varyant-sinav"
    shutil.copytree(FIXTURES / "variants", folder)
    shutil.copytree(FIXTURES / "assessment_variants" / "assessments", folder / "assessments")
    course_toml = folder / "course.toml"
    course_toml.write_text(course_toml.read_text().replace('slug = "varyant"', 'slug = "varyant-sinav"'))
    call_command("import_course", str(folder), verbosity=0)
    return Course.objects.get(slug="varyant-sinav")


def two_students_with_different_numbers(make_user, course, question):
    """Two enrolled students whose variants of ``question`` have different answers."""
    first = make_user("ayse")
    course.enroll(first)
    for i in range(50):
        second = make_user(f"ogrenci{i}")
        if question.variant_for(second).params["score"] != question.variant_for(first).params["score"]:
            course.enroll(second)
            return first, second
    raise AssertionError("every student got the same numbers")


def test_each_student_sees_and_is_graded_on_their_own_variant(make_user, course):
    question = Question.objects.get(course=course, slug="dot-score")
    ayse, other = two_students_with_different_numbers(make_user, course, question)
    mine, theirs = question.variant_for(ayse), question.variant_for(other)
    clients = {}
    for user in (ayse, other):
        clients[user.pk] = Client()
        clients[user.pk].force_login(user)

    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        page = clients[ayse.pk].get(PAGE).text
        assert mine.prompt_html in page and theirs.prompt_html not in page
        page = clients[other.pk].get(PAGE).text
        assert theirs.prompt_html in page and mine.prompt_html not in page

        # Each answers with Ayşe's number: right for her, wrong for the other student.
        for user in (ayse, other):
            clients[user.pk].post(ANSWER, {"value": str(mine.params["score"])})
    hers = Attempt.objects.get(user=ayse)
    his = Attempt.objects.get(user=other)
    assert (hers.correct, hers.variant_id) == (True, mine.pk)
    assert (his.correct, his.variant_id) == (False, theirs.pk)

    with time_machine.travel(at("2026-12-05 12:01"), tick=False):
        page = clients[ayse.pk].get(PAGE).text
        assert "Puan: 1 üzerinden 1." in page
        assert mine.prompt_html in page  # her numbers, after the answer too


def test_an_answer_to_numbers_a_reimport_replaced_is_refused_and_stores_nothing(make_user, course):
    question = Question.objects.get(course=course, slug="dot-score")
    ayse = make_user("ayse")
    course.enroll(ayse)
    client = Client()
    client.force_login(ayse)
    mine = question.variant_for(ayse)
    with time_machine.travel(at("2026-12-05 12:00"), tick=False):
        page = client.get(PAGE).text
        assert f'name="asked" value="{mine.digest[:16]}"' in page  # the form says which numbers it showed
        page = client.post(ANSWER, {"value": str(mine.params["score"]), "asked": "0" * 16}, follow=True).text
    assert "Sayfa yüklendikten sonra bu soru değişti" in page
    assert not Attempt.objects.exists()
