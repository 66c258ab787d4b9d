"""Ordering (Parsons) questions: every order the dependency graph allows is right, a wrong one
is told by the dependency it breaks, distractors are explained, authoring mistakes are named
at their line, tampered forms store nothing, and the instructor sees the orders given."""

import re
import tomllib
from datetime import UTC, datetime
from html import unescape
from itertools import permutations
from pathlib import Path

import pytest
from django.urls import reverse
from test_rendered_text import write_course

from courses.authoring import load_course
from courses.kinds import AnswerError, NotGradable, get_kind
from courses.models import Attempt, Course, Question
from courses.rendering import render_markdown
from courses.selftest import grade_answer, submit_answer

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent

# Scaling and masking both need the scores and nothing else: either may come first.
QUESTION = """
[[questions]]
slug = "adimlar"
kind = "ordering"
prompt = "Adımları sıraya koyun."
max_attempts = 3
{extra}

[[questions.steps]]
id = "scores"
text = "Skorlar"

[[questions.steps]]
id = "scale"
text = "Ölçekleme"

[[questions.steps]]
id = "mask"
text = "Maske"
explanation = "Maske skorlara uygulanır."

[[questions.steps]]
id = "softmax"
text = "Softmax"

[[questions.steps]]
id = "blend"
text = "Harmanlama"

[[questions.distractors]]
id = "divide-dk"
text = "d_k'ya bölme"
explanation = "Ölçek karekök d_k'dır."
misconception = "scale-by-dk"

[questions.after]
scale = ["scores"]
mask = ["scores"]
softmax = ["scale", "mask"]
blend = ["softmax"]
"""

RIGHT = ["scores", "scale", "mask", "softmax", "blend"]


def text_of(html: str) -> str:
    html = re.sub(r"<!--.*?-->|<(script|style|template)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


@pytest.fixture
def course(tmp_path):
    from courses.importer import import_course

    import_course(write_course(tmp_path, QUESTION.format(extra="")))
    return Course.objects.get(slug="yazili")


@pytest.fixture
def question(course):
    return Question.objects.get(course=course, slug="adimlar")


@pytest.fixture
def student(client, alice, course):
    course.enroll(alice)
    client.force_login(alice)
    return client


def grade(question, order):
    return grade_answer(question, {"order": order})[1]


def form_fields(question, places: dict[str, str]) -> dict[str, str]:
    """The POST of the lesson's form: a place per step (given by id; "0": not used)."""
    items = [*question.spec["steps"], *question.spec["distractors"]]
    return {f"step-{i['key']}": places.get(i["id"], "0") for i in items}


def post(client, question, places):
    url = reverse("answer_question", args=["yazili", "ders", "adimlar"])
    return client.post(url, form_fields(question, places))


def in_order(*ids):
    return {step_id: str(n) for n, step_id in enumerate(ids, start=1)}


def lesson_text(client):
    return text_of(client.get(reverse("lesson", args=["yazili", "ders"])).text)


# -- grading ---------------------------------------------------------------------------------


def test_every_order_the_graph_allows_is_right_and_no_other(question):
    right = [list(order) for order in permutations(RIGHT) if grade(question, list(order)).correct]
    # Scaling and masking do not depend on each other: two right orders, no more.
    assert right == [RIGHT, ["scores", "mask", "scale", "softmax", "blend"]]
    assert question.spec["orders"] == 2
    assert all(grade(question, order).score == 1.0 for order in right)


def test_a_step_before_what_it_needs_is_marked_with_the_dependency_it_breaks(question):
    result = grade(question, ["scores", "scale", "softmax", "mask", "blend"])
    assert not result.correct
    assert [e for e in result.feedback if not e["correct"]] == [
        {"step": "softmax", "place": 3, "correct": False, "problem": "before", "needs": "mask"}
    ]
    assert result.score == pytest.approx(4 / 5)
    # Reversed, only the first step (it needs nothing) stands right.
    assert grade(question, list(reversed(RIGHT))).score == pytest.approx(1 / 5)


def test_a_step_before_what_it_needs_through_other_steps_is_not_right(question):
    # Blend needs softmax, which needs the scores: blend before the scores is wrong even with
    # softmax (the step between them) left out.
    result = grade(question, ["blend", "scores"])
    assert {e["step"]: e["correct"] for e in result.feedback if e["place"]} == {
        "blend": False,
        "scores": True,
    }
    assert result.feedback[0]["needs"] == "scores"
    assert result.score == pytest.approx(1 / 5)


def test_a_distractor_costs_a_step_and_names_its_misconception(question):
    result = grade(question, ["scores", "divide-dk", "scale", "mask", "softmax", "blend"])
    assert not result.correct
    assert result.score == pytest.approx(4 / 5)  # five steps right, less one for the distractor
    assert result.misconceptions == ["scale-by-dk"]
    left_out = grade(question, ["scores", "scale", "softmax", "blend"])
    assert left_out.feedback[-1] == {"step": "mask", "place": None, "correct": False, "problem": "missing"}
    assert left_out.score == pytest.approx(4 / 5)
    assert grade(question, ["divide-dk"]).score == 0.0  # never below 0


@pytest.mark.parametrize(
    "answer",
    [
        {"order": ["scores", "nope"]},
        {"order": ["scores", "scores"]},
        {"order": "scores"},
        {"order": ["scores", 3]},
        {"steps": ["scores"]},
        {"order": ["scores"], "extra": 1},
        ["scores"],
    ],
)
def test_malformed_answers_are_refused(question, answer):
    with pytest.raises(AnswerError):
        grade_answer(question, answer)


def test_an_empty_order_is_explained_not_graded(question):
    with pytest.raises(NotGradable):
        grade_answer(question, {"order": []})


def test_the_shipped_course_asks_the_steps_of_scaled_dot_product_attention():
    path = ROOT / "courses/content/attention/06-scaled-dot-product/questions.toml"
    data = next(
        q for q in tomllib.loads(path.read_text(encoding="utf-8"))["questions"] if q["kind"] == "ordering"
    )
    kind = get_kind("ordering")
    spec = kind.validate(data, lambda markdown, keys: render_markdown(markdown).html)
    right = ["scores", "scale", "mask", "softmax", "blend"]
    assert kind.grade(spec, {"order": right}).correct
    assert kind.grade(spec, {"order": ["scores", "mask", "scale", "softmax", "blend"]}).correct
    mask_late = kind.grade(spec, {"order": ["scores", "scale", "softmax", "mask-weights", "blend"]})
    assert mask_late.misconceptions == ["mask-after-softmax"] and not mask_late.correct
    softmax_first = kind.grade(spec, {"order": ["scores", "scale", "softmax", "mask", "blend"]})
    assert softmax_first.misconceptions == ["mask-after-softmax"]
    assert kind.withheld_feedback(spec, {}, softmax_first.feedback)[0]["hint_html"]
    assert spec["orders"] == 2 and len(spec["distractors"]) >= 2


WRONG_ORDER = """
[[questions.wrong_orders]]
step = "softmax"
before = "mask"
misconception = "mask-after-softmax"
hint = "Maske skorlara uygulanır, ağırlıklara değil."
"""


def test_a_known_wrong_order_names_its_misconception_and_gives_its_hint(tmp_path, alice, client):
    from courses.importer import import_course

    import_course(write_course(tmp_path, QUESTION.format(extra=WRONG_ORDER)))
    question = Question.objects.get(slug="adimlar")
    # Scaling is late too, but the known wrong order is the one named (it has a hint).
    result = grade(question, ["scores", "softmax", "scale", "mask", "blend"])
    assert result.feedback[1] == {
        "step": "softmax",
        "place": 2,
        "correct": False,
        "problem": "before",
        "needs": "mask",
    }
    assert result.misconceptions == ["mask-after-softmax"]
    assert grade(question, ["scores", "mask", "softmax", "scale", "blend"]).misconceptions == []
    question.course.enroll(alice)
    client.force_login(alice)
    post(client, question, in_order("scores", "softmax", "scale", "mask", "blend"))
    text = lesson_text(client)
    assert "«Softmax» adımı «Maske» adımından önce geliyor; oysa onun sonucunu kullanır." in text
    assert "İpucu: Maske skorlara uygulanır, ağırlıklara değil." in text


# -- the page a student sees ----------------------------------------------------------------


def test_the_form_has_a_place_select_per_step_and_never_says_which_are_distractors(student, question):
    html = student.get(reverse("lesson", args=["yazili", "ders"])).text
    selects = re.findall(r'<select name="(step-s[0-9a-f]{10})"', html)
    assert len(selects) == 6  # five steps and the distractor, each by a digest
    assert "divide-dk" not in html and "scores" not in html
    block = html[html.index(selects[0]) :]
    block = block[: block.index("</select>")]
    assert re.findall(r'<option value="(\w+)"', block) == ["1", "2", "3", "4", "5", "6", "0"]
    assert ">kullanılmaz</option>" in block
    text = text_of(html)
    assert "Adımları, hesaplamada yapıldıkları sıraya koyun." in text


def test_after_an_answer_the_selects_show_it(student, question):
    post(student, question, in_order("scores", "mask", "scale", "softmax", "blend"))
    html = student.get(reverse("lesson", args=["yazili", "ders"])).text
    chosen = {}
    for item in [*question.spec["steps"], *question.spec["distractors"]]:
        block = html[html.index(f'name="step-{item["key"]}"') :]
        block = block[: block.index("</select>")]
        chosen[item["id"]] = re.findall(r'<option value="(\w+)" selected', block)
    assert chosen == {
        "scores": ["1"],
        "mask": ["2"],
        "scale": ["3"],
        "softmax": ["4"],
        "blend": ["5"],
        "divide-dk": ["0"],
    }


def test_while_attempts_are_left_only_the_first_problem_is_named(student, question):
    post(student, question, in_order("scores", "divide-dk", "softmax", "scale", "mask", "blend"))
    text = lesson_text(student)
    assert "«d_k'ya bölme» adımı bu hesaplamaya ait değil. Ölçek karekök d_k'dır." in text
    assert "1 adım daha henüz doğru yerde değil." in text
    assert "«Softmax» adımı" not in text  # the second problem waits for the next attempt
    post(student, question, in_order("scores", "scale", "softmax", "mask", "blend"))
    text = lesson_text(student)
    assert "«Softmax» adımı «Maske» adımından önce geliyor; oysa onun sonucunu kullanır." in text
    assert "daha henüz doğru yerde değil" not in text


def test_after_the_last_attempt_every_step_is_marked(student, question):
    for _ in range(3):
        post(student, question, in_order("scores", "softmax", "scale", "mask"))
    text = lesson_text(student)
    assert "1. Skorlar" in text
    assert "2. «Softmax» adımı «Maske» adımından önce geliyor" in text
    assert "— «Harmanlama» adımı sıralamanızda yok." in text


def test_a_right_order_is_accepted_from_the_form(student, question):
    post(student, question, in_order("scores", "mask", "scale", "softmax", "blend"))
    attempt = Attempt.objects.get()
    assert (attempt.correct, attempt.score) == (True, 1.0)
    assert attempt.answer == {"order": ["scores", "mask", "scale", "softmax", "blend"]}
    assert "Doğru!" in lesson_text(student)


def test_the_shown_answer_gives_one_right_order_says_what_may_swap_and_what_is_left_out(student, question):
    post(student, question, in_order("scores"))
    student.post(reverse("reveal_question", args=["yazili", "ders", "adimlar"]), {"confirm": "1"})
    text = lesson_text(student)
    assert "1. Skorlar 2. Ölçekleme 3. Maske Maske skorlara uygulanır. 4. Softmax 5. Harmanlama" in text
    assert "Bu, 2 doğru sıradan biri: birbirine bağlı olmayan adımlar yer değiştirebilir." in text
    assert "«Ölçekleme» ile «Maske»" in text
    assert "Kullanılmaz: «d_k'ya bölme» Ölçek karekök d_k'dır." in text


# -- forms that the page cannot send --------------------------------------------------------


def _tampered(question):
    steps = form_fields(question, in_order(*RIGHT))
    first = next(iter(steps))
    yield "unknown step", {**steps, "step-s0123456789": "1"}
    yield "missing place", {k: v for k, v in steps.items() if k != first}
    yield "place too high", {**steps, first: "7"}
    yield "place not a number", {**steps, first: "bir"}
    yield "place in other digits", {**steps, first: "١"}
    yield "place too long for a number", {**steps, first: "9" * 5000}


def test_tampered_forms_are_refused_with_400_and_store_nothing(student, question):
    url = reverse("answer_question", args=["yazili", "ders", "adimlar"])
    for what, fields in _tampered(question):
        response = student.post(url, fields)
        assert response.status_code == 400, what
        assert "Bu cevap okunamadı" in text_of(response.text), what
    assert not Attempt.objects.exists()


def test_one_place_given_to_two_steps_is_explained_and_not_counted(student, question):
    places = in_order(*RIGHT)
    places["mask"] = "2"  # the select form allows it
    response = post(student, question, places)
    assert response.status_code == 302
    text = lesson_text(student)
    assert "2. sıra birden fazla adıma verilmiş. Her sırayı tek bir adıma verin" in text
    assert not Attempt.objects.exists()


# -- authoring -------------------------------------------------------------------------------


def problems(tmp_path, questions: str) -> list[str]:
    return [str(p) for p in load_course(write_course(tmp_path, questions)).problems]


def replace(old: str, new: str) -> str:
    text = QUESTION.format(extra="")
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        (
            replace('softmax = ["scale", "mask"]', 'softmax = ["scale", "maske"]'),
            "after names an unknown step 'maske'",
        ),
        (replace('blend = ["softmax"]', 'blend = ["divide-dk"]'), "'divide-dk' is a distractor"),
        (replace('scale = ["scores"]', 'scores = ["blend"]\nscale = ["scores"]'), "cycle"),
        (replace('id = "mask"', 'id = "scale"'), "duplicate step id 'scale'"),
        (
            QUESTION.format(extra=WRONG_ORDER.replace('before = "mask"', 'before = "blend"')),
            "'softmax' does not come after 'blend'",
        ),
        (
            replace('blend = ["softmax"]', 'blend = "softmax"'),
            "after.blend (the steps 'blend' comes after) must be a list",
        ),
        (replace('text = "Maske"', 'text = " "'), "step 'mask' has an empty text"),
        (replace('id = "divide-dk"', 'id = "Böl"'), "a step id must be lowercase letters"),
        (
            QUESTION.format(extra="").split("[questions.after]")[0] + "[questions.after]\n",
            "after names no dependency",
        ),
        (
            QUESTION.format(extra="")
            + "".join(f'\n[[questions.distractors]]\nid = "d{n}"\ntext = "Fazla {n}"\n' for n in range(7)),
            "5 steps and 8 distractors: at most 12 together",
        ),
    ],
    ids=[
        "unknown",
        "distractor",
        "cycle",
        "duplicate",
        "wrong-order",
        "not-a-list",
        "empty",
        "bad-id",
        "no-dependency",
        "too-many",
    ],
)
def test_authoring_mistakes_are_named_at_their_line(tmp_path, questions, message):
    found = problems(tmp_path, questions)
    assert len(found) == 1 and message in found[0], found
    assert re.match(r"yazili/01-ders/questions\.toml:\d+: adimlar: ", found[0])


def test_a_cycle_is_named_step_by_step(tmp_path):
    questions = replace('scale = ["scores"]', 'scores = ["blend"]\nscale = ["scores"]')
    (found,) = problems(tmp_path, questions)
    # Each step needs the one before it, round to the first again.
    assert found.endswith("no order is right: scores → scale → softmax → blend → scores"), found
    line = int(found.split(":")[1])
    lines = (tmp_path / "yazili/01-ders/questions.toml").read_text(encoding="utf-8").split("\n")
    assert lines[line - 1].startswith("scale = ")


# -- the instructor's item page ---------------------------------------------------------------


def test_the_item_page_counts_the_orders_given_and_where_they_went_wrong(client, make_user, course, question):
    answers = [
        RIGHT,
        ["scores", "mask", "scale", "softmax", "blend"],
        ["scores", "scale", "softmax", "mask", "blend"],
        ["scores", "scale", "softmax", "mask", "blend"],
        ["scores", "divide-dk", "mask", "softmax", "blend"],
    ]
    for index, order in enumerate(answers):
        user = make_user(f"ogrenci{index}")
        course.enroll(user)
        submit_answer(user, question, {"order": order})
    teacher = make_user("hoca")
    course.instructors.add(teacher)
    client.force_login(teacher)
    page = text_of(client.get(reverse("instructors:item", args=["yazili", "q", "adimlar"])).text)
    assert "sıralama" in page
    assert "Öğrencilerin verdiği sıralar Verilen sıra Sayı" in page
    assert "Skorlar → Ölçekleme → Softmax → Maske → Harmanlama 2" in page
    assert "✓ Skorlar → Ölçekleme → Maske → Softmax → Harmanlama 1" in page
    assert "✓ Skorlar → Maske → Ölçekleme → Softmax → Harmanlama 1" in page
    assert "Sıraların bozulduğu yerler Hata Sayı" in page
    assert "«Softmax», «Maske» adımından önce 2" in page
    assert "«d_k'ya bölme» kullanıldı 1" in page
    assert "«Ölçekleme» dışarıda bırakıldı 1" in page
    assert "scale-by-dk" in page  # the distractor's misconception is counted


def test_an_instructor_answers_it_on_the_test_page_and_nothing_is_recorded(
    client, make_user, course, question
):
    from courses.models import AnswerPreview

    teacher = make_user("hoca")
    course.instructors.add(teacher)
    client.force_login(teacher)
    url = reverse("instructors:test_question", args=["yazili", "adimlar"])
    page = client.get(url).text
    assert len(re.findall(r'<select name="step-s[0-9a-f]{10}"', page)) == 6
    response = client.post(
        url, form_fields(question, in_order("scores", "mask", "scale", "softmax", "blend"))
    )
    assert response.status_code == 302
    assert AnswerPreview.objects.get().correct
    assert "Doğru!" in text_of(client.get(response.url).text)
    assert not Attempt.objects.exists()


# -- variants ----------------------------------------------------------------------------------

VARIANT_QUESTION = """

[[questions]]
slug = "olcek-sirasi"
kind = "ordering"
params = "scale"
variants = 4
prompt = "$d_k = {{ d_k }}$ iken adımları sıraya koyun."

[[questions.steps]]
id = "scores"
text = "Skorları hesaplayın"

[[questions.steps]]
id = "scale"
text = "Skorları {{ root }} ile bölün"

[[questions.distractors]]
id = "divide-dk"
text = "Skorları {{ d_k }} ile bölün"

[questions.after]
scale = ["scores"]
"""


def test_with_variants_each_student_orders_their_own_steps(tmp_path, make_user, client):
    import shutil

    from courses.exercises import check_exercises
    from courses.importer import import_course
    from courses.models import Enrollment

    folder = tmp_path / "varyant"
    shutil.copytree(ROOT / "tests/fixtures/variants", folder)
    questions = folder / "01-scores/questions.toml"
    questions.write_text(questions.read_text(encoding="utf-8") + VARIANT_QUESTION, encoding="utf-8")
    import_course(folder, prepare_exercises=lambda source: check_exercises(source, build=True))
    question = Question.objects.get(slug="olcek-sirasi")
    students: dict[str, object] = {}
    for n in range(60):
        user = make_user(f"ogrenci{n}")
        Enrollment.objects.create(user=user, course=question.course)
        # Two variants may draw the same d_k: two students whose steps read differently.
        scale = Question.objects.get(pk=question.pk).ask_for(user).spec["steps"][1]["html"]
        students.setdefault(scale, user)
        if len(students) == 2:
            break
    (first, second) = students.values()
    url = reverse("answer_question", args=["varyant", "skorlar", "olcek-sirasi"])
    own = {}
    for user in (first, second):
        asked = Question.objects.get(pk=question.pk).ask_for(user)
        own[user] = asked
        client.force_login(user)
        page = text_of(client.get(reverse("lesson", args=["varyant", "skorlar"])).text)
        scale_text = text_of(next(s["html"] for s in asked.spec["steps"] if s["id"] == "scale"))
        assert scale_text in page
    assert own[first].spec["steps"][1]["key"] != own[second].spec["steps"][1]["key"]
    # The other student's form is not this student's question: refused, nothing stored.
    client.force_login(second)
    assert client.post(url, form_fields(own[first], in_order("scores", "scale"))).status_code == 400
    assert client.post(url, form_fields(own[second], in_order("scores", "scale"))).status_code == 302
    attempt = Attempt.objects.get()
    assert (attempt.user, attempt.correct, attempt.variant.index) == (
        second,
        True,
        question.variant_index(second),
    )


# -- in a graded assessment -----------------------------------------------------------------------

HOMEWORK = """slug = "odev"
title = "Ödev"
kind = "homework"
opens = 2026-12-01T09:00:00+03:00
due = 2026-12-08T23:59:00+03:00
feedback = "immediate"
max_attempts = 2
items = [{ item = "adimlar", points = 5 }]
"""


def test_in_a_homework_it_is_answered_and_scored_like_on_the_lesson_page(tmp_path, alice, client):
    import time_machine

    from assessments.models import Assessment
    from assessments.scoring import student_scores
    from courses.importer import import_course

    folder = write_course(tmp_path, QUESTION.format(extra=""))
    (folder / "assessments").mkdir()
    (folder / "assessments" / "odev.toml").write_text(HOMEWORK, encoding="utf-8")
    import_course(folder)
    course = Course.objects.get(slug="yazili")
    course.enroll(alice)
    client.force_login(alice)
    question = Question.objects.get(slug="adimlar")
    page_url = reverse("assessment", args=["yazili", "odev"])
    answer_url = reverse("assessment_answer", args=["yazili", "odev", "adimlar"])
    with time_machine.travel(datetime(2026, 12, 2, 12, 0, tzinfo=UTC), tick=False):
        page = client.get(page_url).text
        assert len(re.findall(r'<select name="step-s[0-9a-f]{10}"', page)) == 6
        wrong = form_fields(question, in_order("scores", "scale", "softmax", "mask", "blend"))
        client.post(answer_url, wrong)
        text = text_of(client.get(page_url).text)
        assert "«Softmax» adımı «Maske» adımından önce geliyor" in text
        assert "1. Skorlar" not in text  # per-step marks wait while an attempt is left
        assert client.post(answer_url, {**wrong, "step-s0123456789": "1"}).status_code == 400
        client.post(answer_url, form_fields(question, in_order(*RIGHT)))
    [row] = student_scores(Assessment.objects.get(slug="odev"), [alice])
    assert row.total == 5
    assert Attempt.objects.count() == 2


def test_a_step_with_a_formula_shows_it_as_math_and_names_its_select_in_words(tmp_path, alice, client):
    from courses.importer import import_course

    questions = QUESTION.format(extra="").replace(
        'text = "Ölçekleme"', 'text = "Skorları $\\\\sqrt{d_k}$\'ya bölün"'
    )
    import_course(write_course(tmp_path, questions))
    Course.objects.get(slug="yazili").enroll(alice)
    client.force_login(alice)
    html = client.get(reverse("lesson", args=["yazili", "ders"])).text
    steps = html.split('<li class="ordering-step"')[1:]
    step = next(chunk[: chunk.index("</li>")] for chunk in steps if "<msqrt>" in chunk)
    assert "<math" in step
    assert 'aria-label="Sıra: «Skorları √(d_k)&#x27;ya bölün»"' in step
    assert 'data-text="Skorları √(d_k)&#x27;ya bölün"' in step  # what the script says when it moves
    assert "$" not in text_of(html) and "&#" not in text_of(html)
