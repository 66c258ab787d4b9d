"""Choice and matching feedback does not give the answer key away (issue 15): until the last
attempt or the answer is shown, a student reads how many options or pairs are wrong, not which
(else: tick every box, read ✓/✗ per option, answer again for full marks)."""

import re

import pytest
from django.urls import reverse

from courses.models import Question

pytestmark = pytest.mark.django_db


@pytest.fixture
def student(client, alice, quiz):
    quiz.enroll(alice)
    client.force_login(alice)
    return client


def feedback_of(client, slug: str) -> str:
    """The words of one question's feedback box on the lesson page."""
    html = client.get(reverse("lesson", args=["quiz", "selftest"])).text
    box = re.search(
        rf'id="q-{slug}".*?<div class="feedback [^"]*"[^>]*data-feedback>(.*?)</div>\s*\n', html, re.S
    )
    assert box is not None
    return " ".join(re.sub(r"<[^>]+>", " ", box.group(1)).split())


def answer(client, slug: str, **data):
    return client.post(reverse("answer_question", args=["quiz", "selftest", slug]), data)


def test_ticking_every_box_says_how_many_are_wrong_until_the_last_attempt(student):
    answer(student, "true-facts", options=["a", "b", "c", "d"])
    shown = feedback_of(student, "true-facts")
    assert "2 seçenek henüz doğru değil" in shown
    assert "✓" not in shown and "Value skora girer." not in shown  # which ones: not yet
    answer(student, "true-facts", options=["a", "c"])
    assert "✓" not in feedback_of(student, "true-facts")
    answer(student, "true-facts", options=["a", "c"])  # the third and last attempt
    shown = feedback_of(student, "true-facts")
    assert "✓ doğru: Softmax satırları 1'e tamamlar." in shown
    assert "✗ yanlış: Value skora girer." in shown
    assert "henüz doğru değil" not in shown


def test_after_the_answer_is_shown_the_marks_show(student, quiz):
    answer(student, "true-facts", options=["a", "c"])
    answer(student, "true-facts", options=["a", "c"])
    assert "Value skora girer." not in feedback_of(student, "true-facts")
    student.post(reverse("reveal_question", args=["quiz", "selftest", "true-facts"]), {"confirm": "1"})
    assert "✗ yanlış: Value skora girer." in feedback_of(student, "true-facts")


def test_matching_says_how_many_pairs_are_wrong_not_which(student, quiz):
    spec = Question.objects.get(course=quiz, slug="roles").spec
    rights = {r["html"]: r["id"] for r in spec["rights"]}
    right = {
        text: next(rid for html, rid in rights.items() if text in html)
        for text in ("Bende ne var?", "Ne arıyorum?", "Ne veririm?")
    }
    answer(
        student,
        "roles",
        **{
            "pair-l1": right["Bende ne var?"],
            "pair-l2": right["Ne arıyorum?"],
            "pair-l3": right["Ne veririm?"],
        },
    )
    shown = feedback_of(student, "roles")
    assert "2 eşleştirme henüz doğru değil." in shown
    assert "Query →" not in shown and "Query arar, Key sunar." not in shown


def test_a_fill_in_blank_keeps_its_mark_while_attempts_are_left(student):
    # A blank's ✗ gives no answer away: kinds other than choice and matching keep their marks.
    answer(student, "word-fill", **{"blank-0": "softmax"})
    shown = feedback_of(student, "word-fill")
    assert "✗" in shown and "henüz doğru değil" not in shown
