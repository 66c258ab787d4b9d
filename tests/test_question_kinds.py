"""Grading of every question kind, as `manage.py answer` and the web both use it."""

import pytest

from courses.kinds import AnswerError, NotGradable
from courses.models import Question
from courses.selftest import grade_answer

pytestmark = pytest.mark.django_db


def grade(quiz, slug, answer):
    question = Question.objects.get(course=quiz, slug=slug)
    return grade_answer(question, answer)[1]


def test_single_choice_right_and_wrong_with_misconception(quiz):
    assert grade(quiz, "who-attends", {"option": "qk"}).score == 1.0
    wrong = grade(quiz, "who-attends", {"option": "qv"})
    assert (wrong.score, wrong.correct, wrong.misconceptions) == (0.0, False, ["value-in-score"])


@pytest.mark.parametrize(
    "answer", [{"option": "zz"}, {"option": 3}, {"options": ["qk"]}, ["qk"], {"option": "qk", "x": 1}]
)
def test_single_choice_rejects_malformed_answers(quiz, answer):
    with pytest.raises(AnswerError):
        grade(quiz, "who-attends", answer)


@pytest.mark.parametrize(
    ("options", "score"),
    [
        (["a", "b"], 1.0),
        (["a"], 0.75),
        (["a", "b", "c"], 0.75),
        (["a", "b", "c", "d"], 0.5),
        (["c", "d"], 0.0),
    ],
)
def test_multiple_choice_gives_partial_credit_per_option(quiz, options, score):
    result = grade(quiz, "true-facts", {"options": options})
    assert result.score == score
    assert result.correct == (score == 1.0)


def test_multiple_choice_rejects_duplicates_and_unknown_ids(quiz):
    for answer in ({"options": ["a", "a"]}, {"options": ["a", "x"]}, {"options": "a"}):
        with pytest.raises(AnswerError):
            grade(quiz, "true-facts", answer)
    with pytest.raises(NotGradable):  # nothing ticked: a slip, explained, not counted
        grade(quiz, "true-facts", {"options": []})


def _roles(quiz):
    spec = Question.objects.get(course=quiz, slug="roles").spec
    by_text = {r["html"]: r["id"] for r in spec["rights"]}
    ids = {}
    for text, key in (
        ("Ne arıyorum?", "ask"),
        ("Bende ne var?", "offer"),
        ("Ne veririm?", "give"),
        ("Ne hesaplarım?", "extra"),
    ):
        ids[key] = next(rid for html, rid in by_text.items() if text in html)
    return ids


def test_matching_partial_credit_and_wrong_pair_misconception(quiz):
    r = _roles(quiz)
    assert grade(quiz, "roles", {"pairs": {"l1": r["ask"], "l2": r["offer"], "l3": r["give"]}}).score == 1.0
    swapped = grade(quiz, "roles", {"pairs": {"l1": r["offer"], "l2": r["ask"], "l3": r["give"]}})
    assert swapped.score == pytest.approx(1 / 3, abs=1e-3)
    assert swapped.misconceptions == ["query-key-swap"]
    distractor = grade(quiz, "roles", {"pairs": {"l1": r["extra"], "l2": r["offer"]}})
    assert distractor.score == pytest.approx(1 / 3, abs=1e-3)


def test_matching_rejects_unknown_items(quiz):
    r = _roles(quiz)
    for answer in ({"pairs": {"l9": r["ask"]}}, {"pairs": {"l1": "r-nope"}}, {"pairs": ["l1"]}):
        with pytest.raises(AnswerError):
            grade(quiz, "roles", answer)
    with pytest.raises(NotGradable):
        grade(quiz, "roles", {"pairs": {}})


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "blank",
    ["K.T", "K.transpose()", "np.transpose(K)", "K.swapaxes(0, 1)", "np.swapaxes(K, -1, -2)", " K.T "],
)
def test_fill_in_equivalent_expressions_pass_by_running(quiz, blank):
    result = grade(quiz, "score-fill", {"blanks": [blank]})
    assert (result.score, result.correct) == (1.0, True)


@pytest.mark.sandbox
@pytest.mark.parametrize("blank", ["K", "V.T", "Q.T"])
def test_fill_in_non_equivalent_expressions_fail(quiz, blank):
    result = grade(quiz, "score-fill", {"blanks": [blank]})
    assert (result.score, result.correct) == (0.0, False)
    assert result.feedback[0]["message"]  # says why (error, wrong shape or values)


@pytest.mark.sandbox
def test_fill_in_wrong_pattern_names_the_misconception(quiz):
    result = grade(quiz, "score-fill", {"blanks": ["K"]})
    assert result.misconceptions == ["no-transpose"]
    assert "Boyutlara" in result.feedback[0]["hint_html"]


@pytest.mark.parametrize("blank", ["K.T; import os", "x = K.T", "K.T\nK", "", "def f(): pass", "K.T)"])
def test_fill_in_blank_that_is_not_one_expression_is_not_graded(quiz, blank):
    with pytest.raises(NotGradable):
        grade(quiz, "score-fill", {"blanks": [blank]})


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "blank",
    [
        "__import__('os').system('touch /tmp/pwned-by-fill-in')",
        "[0 for _ in iter(int, 1)]",
        "__import__('time').sleep(60)",
        "open('/etc/shadow').read()",
    ],
)
def test_fill_in_hostile_blank_is_contained_and_graded_wrong(quiz, blank):
    import os

    result = grade(quiz, "score-fill", {"blanks": [blank]})
    assert result.correct is False and result.feedback[0]["message"]
    assert not os.path.exists("/tmp/pwned-by-fill-in")


def test_fill_in_accept_list_is_case_insensitive(quiz):
    assert grade(quiz, "word-fill", {"blanks": ["SKOR"]}).correct
    assert grade(quiz, "word-fill", {"blanks": ["Attention skoru"]}).correct
    assert not grade(quiz, "word-fill", {"blanks": ["ağırlık"]}).correct


@pytest.mark.parametrize(
    ("value", "correct"), [(0.125, True), ("0,125", True), ("0.1252", True), ("1/8", None), (0.2, False)]
)
def test_numeric_tolerance_and_turkish_decimal_comma(quiz, value, correct):
    if correct is None:  # not a number: explained to the student, not counted (not a tampered form)
        with pytest.raises(NotGradable):
            grade(quiz, "sqrt-dk", {"value": value})
    else:
        assert grade(quiz, "sqrt-dk", {"value": value}).correct is correct


def test_numeric_known_wrong_value_gives_its_hint(quiz):
    result = grade(quiz, "sqrt-dk", {"value": "8"})
    assert result.misconceptions == ["sqrt-not-inverted"]


def test_answer_command_prints_the_contract(quiz, capsys):
    import json

    from django.core.management import call_command

    call_command("answer", "who-attends", "--json", '{"option": "qv"}')
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"question", "kind", "score", "correct", "feedback"}
    assert out["question"] == "who-attends" and out["kind"] == "single_choice"
    assert out["score"] == 0.0 and out["correct"] is False
    assert "Value skora katılmaz" in out["feedback"][0]
