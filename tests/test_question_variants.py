"""Per-student variants of questions: each student is asked and graded on their own numbers,
the import proves every variant, and a changed generator re-assigns nobody silently."""

import json
import re
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from courses.authoring import load_course
from courses.exercises import check_exercises
from courses.importer import ImportRefused, import_course
from courses.models import Attempt, Course, Enrollment, Lesson, Question, QuestionVariant
from courses.variants import fill_markdown

FIXTURE = Path(__file__).parent / "fixtures" / "variants"


@pytest.fixture
def variants_dir(tmp_path) -> Path:
    target = tmp_path / "varyant"
    shutil.copytree(FIXTURE, target)
    return target


def _import(path: Path):
    return import_course(path, prepare_exercises=lambda source: check_exercises(source, build=True))


@pytest.fixture
def course(db, variants_dir):
    _import(variants_dir)
    return Course.objects.get(slug="varyant")


def _students_with_different_variants(course, make_user, slug: str):
    question = Question.objects.get(course=course, slug=slug)
    seen: dict[int, object] = {}
    for n in range(40):
        user = make_user(f"ogrenci{n}")
        Enrollment.objects.create(user=user, course=course)
        index = question.variant_index(user)
        if seen and index not in seen:
            return question, next(iter(seen.values())), user
        seen.setdefault(index, user)
    raise AssertionError("40 students all got one variant")


def _post_answer(client, question, value: str):
    url = f"/kurs/{question.course.slug}/{question.lesson.slug}/soru/{question.slug}/"
    return client.post(url, {"value": value}, HTTP_X_REQUESTED_WITH="dikkat")


def test_two_students_see_their_own_numbers_and_are_graded_on_them(course, make_user, client):
    question, ayse, mehmet = _students_with_different_variants(course, make_user, "dot-score")
    ayse_variant, mehmet_variant = question.variant_for(ayse), question.variant_for(mehmet)
    assert ayse_variant.params != mehmet_variant.params

    client.force_login(ayse)
    page = client.get(question.lesson.get_absolute_url()).content.decode()
    assert ayse_variant.prompt_html in page
    assert mehmet_variant.prompt_html not in page
    assert "{{" not in page

    # Mehmet's answer is wrong for Ayşe (unless their scores happen to agree), hers is right.
    if mehmet_variant.params["score"] != ayse_variant.params["score"]:
        _post_answer(client, question, str(mehmet_variant.params["score"]))
        wrong = Attempt.objects.get(user=ayse)
        assert not wrong.correct
        wrong.delete()
    _post_answer(client, question, str(ayse_variant.params["score"]))
    attempt = Attempt.objects.get(user=ayse)
    assert attempt.correct
    assert attempt.variant == ayse_variant  # kept with the attempt


def test_a_tampered_post_cannot_choose_a_variant(course, make_user, client):
    question, ayse, mehmet = _students_with_different_variants(course, make_user, "dot-score")
    mine = question.variant_for(ayse)
    client.force_login(ayse)
    url = f"/kurs/{course.slug}/{question.lesson.slug}/soru/{question.slug}/"
    client.post(
        url,
        {"value": str(mine.params["score"]), "variant": str(question.variant_for(mehmet).index), "seed": "1"},
        HTTP_X_REQUESTED_WITH="dikkat",
    )
    assert Attempt.objects.get(user=ayse).variant == mine


def test_markdown_gets_turkish_decimals_and_matrices():
    assert fill_markdown("$x = {{ a }}$ ve {{ a }}", {"a": 0.25}) == "$x = 0{,}25$ ve 0,25"
    assert fill_markdown("{{ m }}", {"m": [[1, 2], [3, -4]]}) == (
        r"$\begin{bmatrix} 1 & 2 \\ 3 & -4 \end{bmatrix}$"
    )
    assert fill_markdown("$Q = {{ m }}$", {"m": [1, 2]}) == r"$Q = \begin{bmatrix} 1 & 2 \end{bmatrix}$"


def test_the_lesson_page_asks_for_variants_in_one_query(course, make_user, client):
    """A lesson with four questions with variants costs one query more than the same lesson
    without variants, not one per question."""
    student = make_user("ogrenci")
    Enrollment.objects.create(user=student, course=course)
    client.force_login(student)
    url = Question.objects.filter(course=course).first().lesson.get_absolute_url()
    client.get(url)  # the frame and fragments cached
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    # Counted now: the next request's start empties the connection's query log.
    with_variants = len(queries)
    assert sum("courses_questionvariant" in q["sql"] for q in queries.captured_queries) == 1
    Question.objects.filter(course=course).update(variant_count=1, generated=False)
    Lesson.objects.filter(course=course).update(updated_at=timezone.now())  # a new page cache version
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    without = len(queries)
    assert without > 0
    assert with_variants == without + 1


def test_a_changed_generator_keeps_old_attempts_on_their_variant(course, make_user, client, variants_dir):
    question, ayse, _other = _students_with_different_variants(course, make_user, "dot-score")
    before = question.variant_for(ayse)
    client.force_login(ayse)
    _post_answer(client, question, str(before.params["score"]))
    params = variants_dir / "01-scores" / "params.py"
    params.write_text(params.read_text().replace("rng.integers(1, 6, size=3)", "rng.integers(6, 9, size=3)"))

    report = _import(variants_dir)

    note = next(line for line in report.changes if "variants of dot-score" in line)
    moved = int(re.search(r"(\d+) student\(s\) now get a different variant", note).group(1))
    assert moved == Enrollment.objects.filter(course=course).count()  # every number changed
    attempt = Attempt.objects.get(user=ayse)
    assert attempt.variant == before and not attempt.variant.current
    after = Question.objects.get(pk=question.pk).variant_for(ayse)
    assert after.index == before.index and after.params != before.params
    # Her page shows the new numbers; her answer's feedback stays the one it was graded on.
    page = client.get(question.lesson.get_absolute_url()).content.decode()
    assert after.prompt_html in page


def test_the_same_import_again_changes_nothing(course, variants_dir):
    rows = QuestionVariant.objects.count()
    report = _import(variants_dir)
    assert not any("variants" in line for line in report.changes)
    assert QuestionVariant.objects.count() == rows


def _validate(path: Path) -> dict:
    from io import StringIO

    out = StringIO()
    with pytest.raises(SystemExit):
        call_command("validate_course", str(path), "--json", stdout=out)
    return json.loads(out.getvalue())


def _write_generator(variants_dir: Path, body: str) -> None:
    (variants_dir / "01-scores" / "params.py").write_text(body)


def test_validate_reports_every_variant_count(variants_dir):
    source = load_course(variants_dir)
    assert not check_exercises(source, build=False)
    assert source.summary_dict()["variants"] == {
        "dot-score": 6,
        "scale-factor": 8,
        "root-choice": 4,
        "rows-fill": 3,
    }


@pytest.mark.parametrize(
    ("body", "line", "says"),
    [
        (
            "import time\n\n\ndef dot(rng):\n    return {'q': [1], 'k': [1], 'score': time.time_ns() % 1000}\n",
            4,
            "not deterministic",
        ),
        ("def dot(rng):\n    x = 1\n    raise ValueError('olmadı')\n", 3, "ValueError: olmadı"),
        ("def dot(rng):\n    return {'q': {1, 2}, 'k': 1, 'score': 1}\n", 1, "not JSON serializable"),
        ("def dot(rng):\n    return {'q': [1], 'k': [1], 'score': float('inf')}\n", 1, "not JSON compliant"),
        ("def dot(rng):\n    while True:\n        pass\n", 1, "did not finish within the time limit"),
        ("def dot(rng):\n    big = np.ones((30000, 30000))\n    return {'q': big}\n", 2, "MemoryError"),
        ("def dot(rng):\n    return {'q': [1], 'k': [1]}\n", None, "{{ score }} is not a parameter"),
    ],
    ids=["nondeterministic", "raises", "set", "infinite", "loops", "allocates", "missing"],
)
def test_a_bad_generator_is_a_problem_with_its_file_and_line(db, variants_dir, body, line, says):
    other = (variants_dir / "01-scores" / "params.py").read_text().split("def scale", 1)[1]
    # The other generators use np: imported last, so the lines above stay as written.
    _write_generator(variants_dir, body + "\n\ndef scale" + other + "\nimport numpy as np\n")
    with pytest.raises(ImportRefused) as refused:
        _import(variants_dir)
    problem = next(p for p in refused.value.problems if "dot-score" in p.message)
    assert says in problem.message
    if line is not None:
        assert problem.file.endswith("01-scores/params.py") and problem.line == line
    else:
        assert problem.file.endswith("questions.toml")
    assert not Course.objects.exists()  # the import changed nothing
    report = _validate(variants_dir)
    assert any(says in p["message"] for p in report["problems"])


def test_duplicate_numeric_answers_are_reported(variants_dir):
    source = load_course(variants_dir)
    check_exercises(source, build=False)
    assert any("scale-factor" in w.message and "one number gets right" in w.message for w in source.warnings)
    assert not any("dot-score" in w.message for w in source.warnings)


def test_the_admin_shows_a_questions_variants_read_only(course, make_user, client):
    admin = make_user("yonetici", is_staff=True, is_superuser=True)
    client.force_login(admin)
    question = Question.objects.get(course=course, slug="rows-fill")
    page = client.get(f"/admin/courses/question/{question.pk}/change/").content.decode()
    for variant in question.variants.filter(current=True):
        assert str(variant.seed) in page
    assert 'name="variants-0-params"' not in page  # shown, not editable
    assert 'name="variant_count"' not in page and 'name="generated"' not in page  # the import sets them


def test_cached_fragments_are_each_students_own(course, make_user, client):
    question, ayse, mehmet = _students_with_different_variants(course, make_user, "rows-fill")
    url = question.lesson.get_absolute_url()
    pages = {}
    for who in (ayse, mehmet, ayse, mehmet):  # the second round is served from the page cache
        client.force_login(who)
        pages.setdefault(who.pk, []).append(client.get(url).content.decode())
    for who, other in ((ayse, mehmet), (mehmet, ayse)):
        for page in pages[who.pk]:
            assert question.variant_for(who).prompt_html in page
            assert question.variant_for(other).prompt_html not in page


def test_an_answer_from_a_page_loaded_before_a_reimport_is_not_counted(
    course, make_user, client, variants_dir
):
    question, ayse, _other = _students_with_different_variants(course, make_user, "dot-score")
    client.force_login(ayse)
    page = client.get(question.lesson.get_absolute_url()).content.decode()
    asked = re.search(r'name="asked" value="([0-9a-f]+)"', page).group(1)
    old_score = question.variant_for(ayse).params["score"]
    params = variants_dir / "01-scores" / "params.py"
    params.write_text(params.read_text().replace("rng.integers(1, 6, size=3)", "rng.integers(6, 9, size=3)"))
    _import(variants_dir)

    url = f"/kurs/{course.slug}/{question.lesson.slug}/soru/{question.slug}/"
    response = client.post(url, {"value": str(old_score), "asked": asked}, HTTP_X_REQUESTED_WITH="dikkat")

    assert not Attempt.objects.filter(user=ayse).exists()  # not graded on the new numbers, not counted
    fragment = response.content.decode()
    assert Question.objects.get(pk=question.pk).variant_for(ayse).prompt_html in fragment  # the new question
    assert "new numbers" in fragment or "yeni sayıları" in fragment


def test_a_question_that_gains_a_generator_keeps_its_earlier_attempts(db, make_user, client, variants_dir):
    questions = variants_dir / "01-scores" / "questions.toml"
    original = questions.read_text()
    static = original.replace('params = "dot"\n', "").replace('answer = "{{ score }}"', "answer = 7")
    static = re.sub(r"\{\{ \w+ \}\}", "1", static.split('[[questions]]\nslug = "scale-factor"')[0])
    questions.write_text(static)
    _import(variants_dir)
    course = Course.objects.get(slug="varyant")
    student = make_user("ogrenci")
    Enrollment.objects.create(user=student, course=course)
    question = Question.objects.get(course=course, slug="dot-score")
    assert not question.generated
    client.force_login(student)
    _post_answer(client, question, "7")
    questions.write_text(original)

    report = _import(variants_dir)

    attempt = Attempt.objects.get(user=student)
    assert attempt.correct and attempt.variant is not None and not attempt.variant.current
    assert attempt.variant.spec["answer"] == 7  # graded on, and read against, the question as it was
    assert any("1 student(s) had answered it as it was" in line for line in report.changes)
    # The instructor's statistics count it apart from the variants students get now.
    from instructors.stats import question_stats, variant_stats

    question = Question.objects.get(pk=question.pk)
    rows = {row.index: row.students for row in variant_stats(question)}
    assert rows[None] == 1 and rows[0] == 0
    assert question_stats(question, 0)[0].students == 0


def test_one_variant_with_a_generator_still_keeps_attempts_on_it(course, make_user, client, variants_dir):
    questions = variants_dir / "01-scores" / "questions.toml"
    questions.write_text(questions.read_text().replace('params = "dot"\n', 'params = "dot"\nvariants = 1\n'))
    _import(variants_dir)
    question = Question.objects.get(course=course, slug="dot-score")
    student = make_user("ogrenci")
    Enrollment.objects.create(user=student, course=course)
    client.force_login(student)
    asked = question.variant_for(student)
    assert asked is not None and question.variant_count == 1
    _post_answer(client, question, str(asked.params["score"]))
    params = variants_dir / "01-scores" / "params.py"
    params.write_text(params.read_text().replace("rng.integers(1, 6, size=3)", "rng.integers(6, 9, size=3)"))
    _import(variants_dir)
    attempt = Attempt.objects.get(user=student)
    assert attempt.variant == asked and attempt.correct


def test_a_refused_reimport_leaves_the_variants_as_they_were(course, variants_dir):
    rows = list(QuestionVariant.objects.order_by("pk").values_list("pk", "digest", "current"))
    (variants_dir / "01-scores" / "params.py").write_text("def dot(rng):\n    raise ValueError('x')\n")
    with pytest.raises(ImportRefused):
        _import(variants_dir)
    assert list(QuestionVariant.objects.order_by("pk").values_list("pk", "digest", "current")) == rows


class _Kind:
    markdown_keys = frozenset({"prompt", "label", "unit", "text"})
    code_keys = frozenset({"code", "answer"})


def test_filling_knows_code_math_and_values_by_their_place():
    from courses.variants import fill_table

    params = {"x": 0.5, "Q": [[1, 2], [3, 4]], "ok": True, "tiny": 1.5e-7, "big": 1234567.5}
    table = {
        "prompt": "`echo $PATH` ve {{ x }}, $y = {{ x }}$\n\n```\nQ = np.array({{ Q }})\n```\n{{ ok }} {{ tiny }}",
        "code": "y = {{ x }} * Q",
        "unit": "{{ x }} cm",
        "cases": [{"inputs": {"answer": "{{ Q }}", "text": "{{ x }}"}}],
        "answer": "{{ big }}",
    }
    filled = fill_table(table, params, _Kind)
    assert filled["prompt"] == (
        "`echo $PATH` ve 0,5, $y = 0{,}5$\n\n```\nQ = np.array([[1, 2], [3, 4]])\n```\ndoğru 1,5·10⁻⁷"
    )
    assert filled["code"] == "y = 0.5 * Q"
    assert filled["unit"] == "0,5 cm"
    assert filled["cases"][0]["inputs"] == {"answer": [[1, 2], [3, 4]], "text": 0.5}
    assert filled["answer"] == "1234567.5"


def test_answers_one_number_gets_right_count_as_shared():
    from courses.variants import shared_answers

    specs = [{"answer": a, "tolerance": 0.001} for a in (0.5, 0.5015, 0.7, 0.5003, 0.9)]
    assert shared_answers(specs) == [[0, 1, 3]]
    relative = [{"answer": a, "tolerance": 0.01, "relative": True} for a in (100.0, 101.5, 200.0)]
    assert shared_answers(relative) == [[0, 1]]


def test_a_generator_with_many_calls_runs_in_several_sandboxes():
    from grader.core import run_generator

    calls = [("generate", seed) for seed in range(450)]
    made = run_generator("def generate(rng):\n    return {'v': list(range(2000))}\n", calls)
    assert len(made) == 450 and all(g.params == {"v": list(range(2000))} for g in made)


def test_an_exercises_new_cases_are_reported_with_the_students_they_reach(db, make_user, tmp_path):
    lab = tmp_path / "lab"
    shutil.copytree(Path(__file__).parent / "fixtures" / "lab_variants", lab)
    _import(lab)
    course = Course.objects.get(exercises__slug="double")
    for n in range(3):
        Enrollment.objects.create(user=make_user(f"ogrenci{n}"), course=course)
    cases = next(lab.glob("*/double/cases.py"))
    cases.write_text(cases.read_text() + "\n# one more comment: the files changed\n")

    report = _import(lab)

    assert any(
        "variants of double" in line and "3 student(s) now get other hidden cases" in line
        for line in report.changes
    )
    assert not any("variants of double" in line for line in _import(lab).changes)  # nothing new
