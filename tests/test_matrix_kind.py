"""The matrix question kind: the student types a small matrix (or pastes one), it is graded cell
by cell within a tolerance, the feedback marks the wrong cells, a known wrong matrix gives its
hint, and every student with variants types their own numbers."""

import re
import textwrap

import pytest
from django.urls import reverse
from django.utils import translation
from test_kind_registry import text_of
from test_rendered_text import write_course

from assessments.models import HandIn
from courses.importer import ImportRefused, import_course
from courses.kinds import AnswerError, NotGradable, SpecProblem, get_kind
from courses.models import Attempt, Course, Enrollment, Question

pytestmark = pytest.mark.django_db

MATRIX = get_kind("matrix")

QUESTIONS = """
[[questions]]
slug = "skorlar"
kind = "matrix"
prompt = "$S = Q K^T$ kaçtır?"
answer = [[2, -1, 0.5], [4, 3, 1]]
tolerance = 0.01
row_labels = ["ben", "sen"]
col_labels = ["a", "b", "c"]

[[questions.wrong]]
matrix = [[2, 4, 0.5], [-1, 3, 1]]
misconception = "query-key-swap"
hint = "Satırlar Query'lerdir."
"""

# A 2 × 2 with a generator: every student computes their own Q Kᵀ.
PARAMS = """
import numpy as np


def scores(rng):
    Q = rng.integers(-3, 4, size=(2, 2))
    K = rng.integers(-3, 4, size=(2, 2))
    return {"Q": Q, "K": K, "S": Q @ K.T, "ST": (Q @ K.T).T + 100}
"""

VARIANT_QUESTIONS = """
[[questions]]
slug = "kendi-skorlari"
kind = "matrix"
params = "scores"
variants = 12
prompt = "$Q = {{ Q }}$, $K = {{ K }}$: $Q K^T$ kaçtır?"
answer = "{{ S }}"
tolerance = 0.001

[[questions.wrong]]
matrix = "{{ ST }}"
hint = "Devrik."
"""


def spec_of(table: str) -> dict:
    """A question table (TOML keys) validated by the kind."""
    import tomllib

    data = tomllib.loads(textwrap.dedent(table))
    return MATRIX.validate(data, lambda markdown, keys: f"<p>{markdown}</p>")


def problem_of(table: str) -> SpecProblem:
    with pytest.raises(SpecProblem) as raised:
        spec_of('kind = "matrix"\nprompt = "?"\n' + textwrap.dedent(table))
    return raised.value


@pytest.fixture
def course(db, tmp_path, alice, client):
    import_course(write_course(tmp_path, QUESTIONS))
    course = Course.objects.get(slug="yazili")
    course.enroll(alice)
    client.force_login(alice)
    return course


def answer_url(slug="skorlar"):
    return reverse("answer_question", args=["yazili", "ders", slug])


def post_cells(client, rows: list[list[str]], slug="skorlar", paste="", **extra):
    data = {f"cell-{i}-{j}": text for i, row in enumerate(rows) for j, text in enumerate(row)}
    data["paste"] = paste
    return client.post(answer_url(slug), data, HTTP_X_REQUESTED_WITH="dikkat", **extra)


# -- the author's spec -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("table", "keys", "message"),
    [
        ("answer = [[1, 2], [3]]\ntolerance = 0", ("answer", 1), "row 2 has 1 numbers but row 1 has 2"),
        (
            "answer = [[1, 'x']]\ntolerance = 0",
            ("answer", 0, 1),
            "row 1, column 2 must be an integer or a number",
        ),
        ("answer = [1, 2]\ntolerance = 0", ("answer", 0), "row 1 must be a non-empty list of numbers"),
        ("answer = []\ntolerance = 0", ("answer",), "must be a matrix: a list of rows"),
        ("answer = [[1, 2]]\nrows = 2\ntolerance = 0", ("rows",), "rows = 2, but answer has 1 rows"),
        ("answer = [[1, 2]]\ncols = 3\ntolerance = 0", ("cols",), "cols = 3, but answer has 2 columns"),
        ("answer = [[1, 2]]\ntolerance = -1", ("tolerance",), "tolerance must be a finite number ≥ 0"),
        ("answer = [[1, 2]]\ntolerance = 0\nrow_labels = ['a', 'b']", ("row_labels",), "2 labels for 1 rows"),
        ("answer = [[1, 2]]\ntolerance = 0\ncolour = 'red'", ("colour",), "unknown key 'colour'"),
        (
            "answer = [[1, 2]]\ntolerance = 0\n[[wrong]]\nmatrix = [[1], [2]]",
            ("wrong", 0, "matrix"),
            "the wrong matrix is 2×1, the answer 1×2",
        ),
        (
            "answer = [[1, 2]]\ntolerance = 0.1\n[[wrong]]\nmatrix = [[1.05, 2]]",
            ("wrong", 0, "matrix"),
            "the wrong matrix is the answer (within the tolerance)",
        ),
        ("answer = [[1, 2]]\ntolerance = 0\n[[wrong]]\nhint = 'x'", ("wrong", 0), "needs its matrix"),
    ],
)
def test_spec_problems_name_the_key_and_say_what_is_wrong(table, keys, message):
    problem = problem_of(table)
    assert problem.keys == keys
    assert message in problem.message


def test_a_matrix_larger_than_8_by_8_is_refused():
    assert "has 9 rows: at most 8" in problem_of(f"answer = {[[1]] * 9}\ntolerance = 0").message
    assert "at most 8 columns" in problem_of(f"answer = [{list(range(9))}]\ntolerance = 0").message
    assert spec_of(f"kind = 'matrix'\nanswer = {[list(range(8))] * 8}\ntolerance = 0")["answer"][7][7] == 7.0


def test_a_bad_matrix_in_a_course_file_is_reported_at_its_line(tmp_path):
    broken = QUESTIONS.replace("[[2, -1, 0.5], [4, 3, 1]]", "[[2, -1, 0.5], [4, 3]]")
    with pytest.raises(ImportRefused) as refused:
        import_course(write_course(tmp_path, broken))
    (problem,) = refused.value.problems
    assert problem.file.endswith("questions.toml") and problem.line == 6
    assert "skorlar: row 2 has 2 numbers but row 1 has 3" in problem.message
    assert not Question.objects.exists()


# -- reading and grading answers -----------------------------------------------------------------
SPEC = {
    "answer": [[2.0, -1.0, 0.5], [4.0, 3.0, 1.0]],
    "tolerance": 0.01,
    "relative": False,
    "row_labels": [],
    "col_labels": [],
    "wrong": [],
}


def clean(answer, spec=SPEC):
    with translation.override("tr"):
        return MATRIX.clean_answer(spec, answer)


@pytest.mark.parametrize(
    "pasted",
    [
        "[[2, -1, 0.5], [4, 3, 1]]",
        "[[2,-1,0.5],[4,3,1]]",
        "np.array([[2, -1, 0.5], [4, 3, 1]])",
        "numpy.array([[ 2. , -1. ,  0.5],\n       [ 4. ,  3. ,  1. ]], dtype=float32)",
        "[[ 2.  -1.   0.5]\n [ 4.   3.   1. ]]",  # print(np_array)
        "2 -1 0,5\n4 3 1",  # one row per line, Turkish decimal comma
        "2\t−1\t0,5\n4\t3\t1\n",  # a spreadsheet's copy, a typographic minus
        "2, -1, 0,5; 4, 3, 1",
        "[2 -1 0,5; 4 3 1]",
    ],
)
def test_a_pasted_matrix_is_read_in_every_usual_notation(pasted):
    assert clean({"matrix": [[""] * 3] * 2, "paste": pasted}) == {"matrix": [[2, -1, 0.5], [4, 3, 1]]}


def test_cells_take_a_decimal_comma_or_dot_and_whole_numbers_stay_whole():
    cleaned = clean({"matrix": [["2", " −1 ", "0,5"], ["4.0", "3", "1e0"]], "paste": ""})
    assert cleaned == {"matrix": [[2, -1, 0.5], [4, 3, 1]]}
    assert all(isinstance(v, int) for v in cleaned["matrix"][1])
    assert clean(cleaned) == cleaned  # a stored answer reads back as itself


@pytest.mark.parametrize(
    ("answer", "english", "turkish"),
    [
        (
            {"matrix": [["2", "", "0,5"], ["4", "3", "1"]]},
            "Row 1, column 2 is empty: fill in every cell.",
            "Satır 1, sütun 2 boş: her hücreyi doldurun.",
        ),
        (
            {"matrix": [["2", "-1", "yarım"], ["4", "3", "1"]]},
            "Row 1, column 3: “yarım” is not a number.",
            "Satır 1, sütun 3: “yarım” bir sayı değil.",
        ),
        (
            {"matrix": [[""] * 3] * 2, "paste": ""},
            "Fill in the grid (or paste the whole matrix)",
            "Tabloyu doldurun (ya da matrisin tamamını yapıştırın)",
        ),
        (
            {"matrix": [[""] * 3] * 2, "paste": "[[1, 2], [3, 4]]"},
            "Row 1 of the pasted matrix has 2 numbers; every row needs 3.",
            "Yapıştırılan matrisin 1. satırında 2 sayı var; her satırda 3 sayı olmalı.",
        ),
        (
            {"matrix": [[""] * 3] * 2, "paste": "1 2 3"},
            "The pasted matrix has 1 row; this question asks for 2 × 3",
            "Yapıştırılan matriste 1 satır var; bu soru 2 × 3",
        ),
        ({"matrix": [[""] * 3] * 2, "paste": "[[1, 2, 3], [4, 5, 6]"}, "unmatched brackets", "eşleşmiyor"),
        (
            {"matrix": [[""] * 3] * 2, "paste": "[[1, 2, 3], x[4, 5, 6]]"},
            "Only numbers may stand between",
            "yalnızca sayılar olabilir",
        ),
    ],
)
def test_slips_are_explained_in_english_and_turkish_and_not_counted(answer, english, turkish):
    for language, message in (("en", english), ("tr", turkish)):
        with translation.override(language), pytest.raises(NotGradable) as raised:
            MATRIX.clean_answer(SPEC, answer)
        assert message in str(raised.value)


def test_a_number_a_thousands_separator_makes_ambiguous_is_asked_again():
    answer = {"matrix": [["2", "-1", "1.234"], ["4", "3", "1"]]}
    with translation.override("tr"), pytest.raises(NotGradable) as raised:
        MATRIX.clean_answer(SPEC, answer)
    assert str(raised.value).startswith("Satır 1, sütun 3: “1.234” iki türlü okunabilir")


@pytest.mark.parametrize(
    "answer",
    [
        {"matrix": [["1", "2", "3"]]},  # a row missing
        {"matrix": [["1", "2"], ["3", "4"]]},  # a column missing
        {"matrix": [["1", "2", None], ["4", "5", "6"]]},  # a field left out of the form
        {"matrix": [["1", "2", "3" * 33], ["4", "5", "6"]]},  # longer than the input allows
        {"matrix": [[""] * 3] * 2, "paste": "1 " * 1001},
        {"matrix": [[True, 2, 3], [4, 5, 6]]},
        {"matrix": [[1, 2, float("nan")], [4, 5, 6]]},
        {"cells": [[1, 2, 3], [4, 5, 6]]},
        [[1, 2, 3], [4, 5, 6]],
    ],
)
def test_malformed_answers_are_refused(answer):
    with pytest.raises(AnswerError):
        MATRIX.clean_answer(SPEC, answer)


def test_each_cell_is_graded_within_the_tolerance_for_partial_credit():
    near = MATRIX.grade(SPEC, {"matrix": [[2.009, -0.991, 0.5], [4, 3, 1]]})
    assert (near.score, near.correct) == (1.0, True)
    two_wrong = MATRIX.grade(SPEC, {"matrix": [[2.02, -1, 0.5], [4, 3, -1]]})
    assert (two_wrong.score, two_wrong.correct) == (0.6667, False)
    assert two_wrong.feedback[0]["marks"] == [[False, True, True], [True, True, False]]
    relative = {**SPEC, "tolerance": 0.01, "relative": True}
    assert MATRIX.grade(relative, {"matrix": [[2.019, -1.009, 0.5049], [4, 3, 1]]}).feedback[0]["marks"][
        0
    ] == [
        True,
        True,
        True,
    ]
    assert MATRIX.grade(relative, {"matrix": [[2.03, -1, 0.5], [4, 3, 1]]}).score == 0.8333


def test_more_than_four_wrong_cells_are_left_to_the_grid_to_name():
    spec = {**SPEC, "answer": [[1.0] * 3] * 3}
    grade = MATRIX.grade(spec, {"matrix": [[0] * 3] * 3})
    with translation.override("tr"):
        (item,) = MATRIX.feedback_items(spec, {"matrix": [[0] * 3] * 3}, grade.feedback)
    assert item["label_html"] == "9 hücreden 9 tanesi henüz doğru değil: aşağıdaki tabloda işaretli."
    assert item["html"].count("cell-bad") == 9


# -- on the lesson page ----------------------------------------------------------------------------
def test_the_grid_has_one_labelled_input_per_cell_and_a_paste_box(course, client):
    page = client.get(reverse("lesson", args=["yazili", "ders"])).text
    cells = re.findall(r'<input class="matrix-cell" name="(cell-\d-\d)"[^>]*aria-label="([^"]*)"', page)
    assert [name for name, _label in cells] == [f"cell-{i}-{j}" for i in range(2) for j in range(3)]
    assert cells[5][1] == "Satır 2 (sen), sütun 3 (c)"
    assert '<textarea id="skorlar-paste" name="paste"' in page
    assert "Matrisinizi yazın: 2 satır × 3 sütun" in text_of(page)
    assert "0,5" not in text_of(page.split('class="matrix-answer"')[1])  # the answer is not in the form


def test_wrong_cells_are_marked_by_sign_and_words_and_right_values_stay_hidden(course, client, alice):
    response = post_cells(client, [["2", "-1", "0,5"], ["4", "30", "2"]])
    assert response.status_code == 200
    attempt = Attempt.objects.get(user=alice)
    assert (attempt.score, attempt.correct) == (0.6667, False)
    html = response.text
    feedback = text_of(html[html.index("data-feedback") :])
    assert (
        "6 hücreden 2 tanesi henüz doğru değil: satır 2, sütun 2 (sen → b); satır 2, sütun 3 (sen → c)."
        in feedback
    )
    assert feedback.count("✗") == 1 + 2 and "30 ✗ (yanlış)" in feedback and "2 ✗ (yanlış)" in feedback
    assert "0,5 ✓ (doğru)" in feedback
    assert 'class="cell-bad"' in html and "matrix-marked" in html
    assert "data-solution" not in html  # the right 3 and 1 are not shown
    # The grid keeps what was typed, for the next try.
    assert 'name="cell-1-1"' in html and re.search(r'name="cell-1-1"[^>]*value="30"', html)


def test_a_known_wrong_matrix_gives_its_hint_and_misconception(course, client, alice):
    html = post_cells(client, [[""] * 3] * 2, paste="[[2, 4, 0.5], [-1, 3, 1]]").text
    assert "Satırlar Query'lerdir." in text_of(html)
    assert Attempt.objects.get(user=alice).misconceptions == ["query-key-swap"]


def test_a_pasted_numpy_array_is_graded_right(course, client, alice):
    post_cells(client, [[""] * 3] * 2, paste="np.array([[2., -1., 0.5],\n       [4., 3., 1.]])")
    attempt = Attempt.objects.get(user=alice)
    assert attempt.correct and attempt.answer == {"matrix": [[2, -1, 0.5], [4, 3, 1]]}


def test_an_empty_cell_is_explained_not_counted_and_the_typing_is_kept(course, client):
    response = post_cells(client, [["2", "-1", ""], ["4", "3", "1,5"]])
    assert response.status_code == 200
    assert "Satır 1, sütun 3 boş" in text_of(response.text)
    assert re.search(r'name="cell-1-2"[^>]*value="1,5"', response.text)
    assert not Attempt.objects.exists()


@pytest.mark.parametrize(
    "tamper",
    [
        lambda data: data.pop("cell-1-2"),
        lambda data: data.update({"cell-0-0": "1" * 33}),
        lambda data: data.update({"paste": "1 " * 1001}),
    ],
)
def test_tampered_posts_get_400_and_store_nothing(course, client, tamper):
    data = {f"cell-{i}-{j}": "1" for i in range(2) for j in range(3)} | {"paste": ""}
    tamper(data)
    response = client.post(answer_url(), data, HTTP_X_REQUESTED_WITH="dikkat")
    assert response.status_code == 400
    assert "Bu cevap okunamadı" in text_of(response.text)
    assert not Attempt.objects.exists()


def test_the_answer_shows_as_a_matrix_once_revealed(course, client, alice):
    post_cells(client, [["1"] * 3] * 2)
    html = client.post(
        reverse("reveal_question", args=["yazili", "ders", "skorlar"]),
        {"confirm": "1"},
        HTTP_X_REQUESTED_WITH="dikkat",
    ).text
    solution = html[html.index("data-solution") :]
    assert "2 × 3 matris:" in text_of(solution)
    assert re.search(r"<td>2</td><td>−1</td><td>0,5</td>", solution)


# -- variants --------------------------------------------------------------------------------------
@pytest.fixture
def variant_course(db, tmp_path):
    folder = write_course(tmp_path, VARIANT_QUESTIONS)
    (folder / "01-ders" / "params.py").write_text(PARAMS, encoding="utf-8")
    import_course(folder)
    return Course.objects.get(slug="yazili")


def test_every_student_types_their_own_numbers(variant_course, make_user, client):
    question = Question.objects.get(slug="kendi-skorlari")
    students = {}
    for n in range(30):
        user = make_user(f"ogrenci{n}")
        Enrollment.objects.create(user=user, course=variant_course)
        students.setdefault(question.variant_index(user), user)
        if len(students) == 2:
            break
    ayse, mehmet = students.values()
    theirs = {user: question.variant_for(user).params["S"] for user in (ayse, mehmet)}
    assert theirs[ayse] != theirs[mehmet]
    for user in (ayse, mehmet):
        client.force_login(user)
        page = client.get(reverse("lesson", args=["yazili", "ders"])).text
        assert question.variant_for(user).prompt_html in page
        post_cells(client, [[str(v) for v in row] for row in theirs[user]], slug="kendi-skorlari")
    assert list(Attempt.objects.order_by("pk").values_list("correct", flat=True)) == [True, True]
    # Mehmet's numbers are not Ayşe's answer; their transpose + 100 gives her the variant's hint.
    client.force_login(ayse)
    post_cells(client, [[str(v) for v in row] for row in theirs[mehmet]], slug="kendi-skorlari")
    transposed = [[v + 100 for v in row] for row in zip(*theirs[ayse])]
    html = post_cells(client, [[str(v) for v in row] for row in transposed], slug="kendi-skorlari").text
    assert "Devrik." in text_of(html)
    assert list(Attempt.objects.filter(user=ayse).values_list("correct", flat=True)) == [True, False, False]


# -- the instructor's item page ----------------------------------------------------------------------
def test_the_item_page_counts_wrong_cells_and_wrong_matrices(course, client, make_user):
    for n, rows in enumerate(
        [
            [["2", "-1", "0,5"], ["4", "3", "1"]],
            [["2", "-1", "0,5"], ["4", "3", "9"]],
            [["2", "-1", "0,5"], ["4", "3", "9"]],
            [["7", "-1", "0,5"], ["4", "3", "9"]],
        ]
    ):
        student = make_user(f"ogr{n}")
        course.enroll(student)
        client.force_login(student)
        post_cells(client, rows)
    teacher = make_user("hoca")
    course.instructors.add(teacher)
    client.force_login(teacher)
    page = client.get(reverse("instructors:item", args=["yazili", "q", "skorlar"])).text
    text = text_of(page)
    assert "Yanlış cevaplanan hücreler" in text
    start = page.index(">", page.index('class="data-table matrix-stats"')) + 1
    table = text_of(page[start : page.index("</table>", start)])
    assert table == "a b c ben 1 (%25) 0 (%0) 0 (%0) sen 0 (%0) 0 (%0) 3 (%75)"
    assert "[[2 −1 0,5] [4 3 9]] 2" in text and "[[7 −1 0,5] [4 3 9]] 1" in text


# -- in an assessment --------------------------------------------------------------------------------
HOMEWORK = """slug = "odev"
title = "Ödev"
kind = "homework"
opens = 2026-01-01T09:00:00+03:00
due = 2030-01-01T09:00:00+03:00
feedback = "{feedback}"
items = ["skorlar"]
"""


@pytest.mark.parametrize("feedback", ["score_only", "immediate"])
def test_an_assessment_marks_cells_only_when_it_shows_full_feedback(db, tmp_path, alice, client, feedback):
    folder = write_course(tmp_path, QUESTIONS)
    (folder / "assessments").mkdir()
    (folder / "assessments" / "odev.toml").write_text(HOMEWORK.format(feedback=feedback), encoding="utf-8")
    import_course(folder)
    Course.objects.get(slug="yazili").enroll(alice)
    client.force_login(alice)
    cells = {
        f"cell-{i}-{j}": text
        for i, row in enumerate([["2", "-1", "0,5"], ["4", "30", "2"]])
        for j, text in enumerate(row)
    }
    client.post(reverse("assessment_answer", args=["yazili", "odev", "skorlar"]), cells | {"paste": ""})
    assert Attempt.objects.get(user=alice).score == 0.6667
    page = client.get(reverse("assessment", args=["yazili", "odev"])).text
    assert re.search(r'name="cell-1-1"[^>]*value="30"', page)  # the student's own numbers, to correct
    marked = "6 hücreden 2 tanesi henüz doğru değil" in text_of(page)
    assert marked == ("cell-bad" in page) == (feedback == "immediate")


def test_the_instructor_sees_each_variants_matrix_and_answers_one_like_a_student(
    variant_course, make_user, client
):
    teacher = make_user("hoca")
    variant_course.instructors.add(teacher)
    client.force_login(teacher)
    question = Question.objects.get(slug="kendi-skorlari")
    url = reverse("instructors:test_question", args=["yazili", "kendi-skorlari"])
    every = client.get(url).text
    third = question.variants.get(index=2, current=True)
    row = every[every.index('data-variant="3"') : every.index('data-variant="4"')]
    assert "2 × 2 matris:" in text_of(row)
    assert "2 × 2 matris: " + " ".join(
        str(v).replace("-", "−") for r in third.params["S"] for v in r
    ) in text_of(row)
    answered = client.post(
        url,
        {"varyant": "3", "paste": str(third.params["S"])}
        | {f"cell-{i}-{j}": "" for i in range(2) for j in range(2)},
        follow=True,
    ).text
    assert "Doğru!" in text_of(answered)
    assert not Attempt.objects.exists()  # recorded nowhere


def test_a_paste_at_the_boxs_limit_is_read_although_the_browser_sends_crlf(course, client, alice):
    # The textarea's maxlength counts a newline once; the browser sends it as "\r\n".
    rows = "[2, -1, 0.5]\n[4, 3, 1]"
    paste = rows + "\n" * (2000 - len(rows))
    assert len(paste) == 2000
    post_cells(client, [[""] * 3] * 2, paste=paste.replace("\n", "\r\n"))
    assert Attempt.objects.get(user=alice).correct
    with pytest.raises(AnswerError):  # really too long stays refused
        clean({"matrix": [[""] * 3] * 2, "paste": paste.replace("\n", "\r\n") + "1"})


SQUARE = SPEC | {"answer": [[1.125, 2.5], [3.0, 4.0]]}


@pytest.mark.parametrize(
    "pasted",
    [
        "np.array([[1.125, 2.5], [3., 4.]])",
        "[[1.125 2.5  ]\n [3.    4.   ]]",  # print(np_array)
        "[[1.125, 2.5], [3.0, 4.0]]",
    ],
)
def test_in_turkish_a_dot_in_pasted_numpy_notation_is_a_decimal_point(pasted):
    cleaned = clean({"matrix": [[""] * 2] * 2, "paste": pasted}, SQUARE)
    assert cleaned == {"matrix": [[1.125, 2.5], [3, 4]]}
    assert MATRIX.grade(SQUARE, cleaned).correct


def test_in_turkish_a_typed_cell_or_plain_pasted_row_with_a_thousands_look_is_still_asked_again():
    for answer in (
        {"matrix": [["1.125", "2,5"], ["3", "4"]], "paste": ""},
        {"matrix": [[""] * 2] * 2, "paste": "1.125 2,5\n3 4"},
    ):
        with pytest.raises(NotGradable, match="iki türlü okunabilir"):
            clean(answer, SQUARE)


def homework_course(tmp_path, alice, client, feedback: str) -> None:
    folder = write_course(tmp_path, QUESTIONS)
    (folder / "assessments").mkdir()
    (folder / "assessments" / "odev.toml").write_text(HOMEWORK.format(feedback=feedback), encoding="utf-8")
    import_course(folder)
    Course.objects.get(slug="yazili").enroll(alice)
    client.force_login(alice)


def test_score_only_homework_counts_each_wrong_cell_as_a_part(db, tmp_path, alice, client):
    homework_course(tmp_path, alice, client, "score_only")
    cells = {
        f"cell-{i}-{j}": text
        for i, row in enumerate([["2", "9", "9"], ["9", "9", "9"]])  # 5 of 6 cells wrong
        for j, text in enumerate(row)
    }
    client.post(reverse("assessment_answer", args=["yazili", "odev", "skorlar"]), cells | {"paste": ""})
    page = text_of(client.get(reverse("assessment", args=["yazili", "odev"])).text)
    assert "5 kısım henüz doğru değil" in page
    assert "1 kısım" not in page


def test_an_empty_cell_in_a_homework_keeps_the_other_cells_typed_and_stores_nothing(
    db, tmp_path, alice, client
):
    homework_course(tmp_path, alice, client, "score_only")
    cells = {
        f"cell-{i}-{j}": text
        for i, row in enumerate([["2", "-1", ""], ["4", "3", "1,5"]])
        for j, text in enumerate(row)
    }
    response = client.post(
        reverse("assessment_answer", args=["yazili", "odev", "skorlar"]), cells | {"paste": ""}, follow=True
    )
    assert "Satır 1, sütun 3 boş" in text_of(response.text)
    assert re.search(r'name="cell-0-1"[^>]*value="-1"', response.text)
    assert re.search(r'name="cell-1-2"[^>]*value="1,5"', response.text)
    assert not Attempt.objects.exists() and not HandIn.objects.exists()
    # Shown once: the next visit shows the page as it is (nothing was stored).
    again = client.get(reverse("assessment", args=["yazili", "odev"])).text
    assert not re.search(r'name="cell-1-2"[^>]*value="1,5"', again)
