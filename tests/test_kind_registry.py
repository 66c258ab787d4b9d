"""The kind registry owns everything per kind: a new kind is one class and one template, and
every page (the lesson, grading, the instructor's item page and chart, the gradebook) serves it
without another module knowing its name."""

import csv
import io
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from django.urls import reverse

from courses.kinds import AnswerError, Grade, NotGradable, QuestionKind, register
from courses.kinds.base import Choice, unregister
from courses.models import Attempt, Question

pytestmark = [pytest.mark.django_db]

FIXTURES = Path(__file__).parent / "fixtures"

# The one template of the toy kind, as an author of a new kind would write it.
TOY_TEMPLATE = """{% load i18n %}<p class="toy-word">
  <label for="{{ question.slug }}-word">Bir kelime yazın</label>
  <input id="{{ question.slug }}-word" name="word" required maxlength="40">
</p>"""

TOY_QUESTION = """
[[questions]]
slug = "toy-question"
kind = "toy_word"
prompt = "Dikkatin İngilizcesi nedir?"
word = "Attention"
"""


class ToyWord(QuestionKind):
    """A kind no shipped course has: type one word; right when it is the expected one."""

    name = "toy_word"
    label = "toy word"
    keys = {"word"}
    required = {"word"}

    def validate(self, data, render):
        self.check_keys(data)
        return {"word": data["word"]}

    def answer_from_post(self, spec, post):
        return {"word": post.get("word", "")}

    def clean_answer(self, spec, answer):
        if not isinstance(answer, dict) or not isinstance(answer.get("word"), str):
            raise AnswerError("expected a word")
        if not answer["word"].strip():
            raise NotGradable("Write a word.")
        return {"word": answer["word"].strip()}

    def grade(self, spec, answer):
        right = answer["word"].casefold() == spec["word"].casefold()
        return Grade(score=1.0 if right else 0.0, correct=right)

    def choice_keys(self, spec, answered):
        return [answered.answer["word"].casefold()]

    def describe(self, spec, key):
        return Choice(key, correct=key == spec["word"].casefold())


@pytest.fixture
def toy_kind(settings, tmp_path):
    templates = tmp_path / "templates"
    (templates / "courses" / "kinds").mkdir(parents=True)
    (templates / "courses" / "kinds" / "toy_word.html").write_text(TOY_TEMPLATE)
    settings.TEMPLATES = [
        {**settings.TEMPLATES[0], "DIRS": [*settings.TEMPLATES[0]["DIRS"], templates]},
        *settings.TEMPLATES[1:],
    ]
    register(ToyWord)
    yield ToyWord
    unregister(ToyWord.name)


@pytest.fixture
def toy_course(toy_kind, tmp_path):
    from courses.importer import import_course
    from courses.models import Course

    course_dir = tmp_path / "mini"
    shutil.copytree(FIXTURES / "mini", course_dir)
    questions = course_dir / "01-first" / "questions.toml"
    questions.write_text(questions.read_text() + TOY_QUESTION)
    import_course(course_dir)
    return Course.objects.get(slug="mini")


def text_of(html: str) -> str:
    html = re.sub(r"<!--.*?-->|<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_toy_kind_is_one_class_and_one_template_and_every_page_serves_it(client, make_user, toy_course):
    question = Question.objects.get(slug="toy-question")
    assert question.kind == "toy_word" and question.spec == {"word": "Attention"}
    ayse, can = make_user("ayse"), make_user("can")
    answer_url = reverse("answer_question", args=["mini", "first", "toy-question"])

    # The lesson asks it with the kind's template.
    toy_course.enroll(ayse)
    client.force_login(ayse)
    lesson = client.get(reverse("lesson", args=["mini", "first"])).text
    assert 'name="word"' in lesson and "Bir kelime yazın" in lesson
    # Answers are graded by the kind: wrong, then right.
    client.post(answer_url, {"word": "dikkat"})
    client.post(answer_url, {"word": "attention"})
    toy_course.enroll(can)
    client.force_login(can)
    client.post(answer_url, {"word": "Dikkat"})
    graded = list(Attempt.objects.order_by("pk").values_list("user__username", "correct", "score"))
    assert graded == [("ayse", False, 0.0), ("ayse", True, 1.0), ("can", False, 0.0)]

    teacher = make_user("hoca")
    toy_course.instructors.add(teacher)
    client.force_login(teacher)
    # The instructor's item page: how students fared, and the kind's chart of what they wrote.
    item = text_of(client.get(reverse("instructors:item", args=["mini", "q", "toy-question"])).text)
    assert "toy word" in item
    assert "Öğrencilerin seçtikleri" in item  # the default chart of a kind: what students chose
    assert "dikkat 2" in item and "✓ attention 1" in item
    assert "Deneyen öğrenciler 2 Denemeler 3" in item
    assert re.search(r"Sonunda başarı (%50|50%)", item)  # one of the two got it in the end
    # The gradebook counts it like any other question.
    gradebook = client.get(reverse("instructors:gradebook", args=["mini"]), {"sort": "name"}).text
    assert re.search(r">ayse</th>.*?<td>1,00</td>", gradebook, flags=re.S)
    body = client.get(reverse("instructors:gradebook_csv", args=["mini"])).getvalue().decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [(r["kullanıcı adı"], r["toy-question"]) for r in rows] == [("ayse", "1.00"), ("can", "0.00")]


def test_each_shipped_kind_draws_what_its_students_answered_on_the_item_page(client, make_user, quiz):
    from courses.selftest import submit_answer

    questions = {q.slug: q for q in Question.objects.filter(course=quiz)}
    rights = {text_of(r["html"]): r["id"] for r in questions["roles"].spec["rights"]}
    answers = {
        "true-facts": [{"options": ["a", "c"]}, {"options": ["a", "b"]}],
        "roles": [{"pairs": {"l1": rights["Bende ne var?"]}}, {"pairs": {"l1": rights["Ne arıyorum?"]}}],
        "word-fill": [{"blanks": ["softmax"]}, {"blanks": ["softmax"]}],
        "sqrt-dk": [{"value": "8"}, {"value": "0,125"}],
    }
    for index in range(2):
        student = make_user(f"ogrenci{index}")
        quiz.enroll(student)
        for slug, given in answers.items():
            submit_answer(student, questions[slug], given[index])
    teacher = make_user("hoca")
    quiz.instructors.add(teacher)
    client.force_login(teacher)

    def item(slug):
        return text_of(client.get(reverse("instructors:item", args=["quiz", "q", slug])).text)

    # Choices: every option with how many chose it, ✓ on the right ones.
    facts = item("true-facts")
    assert "✓ Softmax satırları 1'e tamamlar. 2" in facts and "Value skora girer. 1" in facts
    assert "Key'ler sabittir. 0" in facts
    # Matching: the pairs students made, read as left → right.
    roles = item("roles")
    assert "Query → Bende ne var? 1" in roles and "✓ Query → Ne arıyorum? 1" in roles
    # Fill-in and numeric: the wrong answers they wrote most often, never the right ones.
    words = item("word-fill")
    assert "En sık yanlış cevaplar Boşluk Cevap Sayı 1. boşluk softmax 2" in words
    numbers = item("sqrt-dk")
    assert "En sık yanlış cevaplar Cevap Sayı 8 1" in numbers and "0,125" not in numbers.split("Sayı")[-1]
