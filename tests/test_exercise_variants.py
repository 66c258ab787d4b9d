"""Per-student variants of exercises: cases.py draws each variant's hidden inputs from its own
seed, every student is graded (and regraded) on their own variant, the import proves every
variant, and the command line can grade, answer and list any variant."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from courses.exercises import check_exercises
from courses.importer import import_course
from courses.models import Course, Exercise, Question
from courses.variants import variant_seed
from grader import bundles, itemcheck, regrade
from grader.grading import exercise_bundle, grade_claimed, seed_of, submit
from grader.models import ItemCheck, Submission

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).parent / "fixtures"
SEED = 42  # exercise.toml's seed: variant 0 keeps it
SOLUTION = "def double(x):\n    return 2 * x\n"


def _import(path: Path) -> None:
    import_course(path, prepare_exercises=lambda source: check_exercises(source, build=True))


@pytest.fixture
def labv(db) -> Course:
    _import(FIXTURES / "lab_variants")
    return Course.objects.get(slug="labv")


@pytest.fixture
def double(labv) -> Exercise:
    return Exercise.objects.get(course=labv, slug="double")


def _students(exercise, make_user, count: int = 2, avoid_zero: bool = True) -> list:
    """``count`` students with different variants (none of them variant 0 when ``avoid_zero``)."""
    found: dict[int, object] = {}
    for n in range(80):
        user = make_user(f"ogrenci{n}")
        index = exercise.variant_index(user)
        if (index == 0 and avoid_zero) or index in found:
            continue
        found[index] = user
        if len(found) == count:
            return list(found.values())
    raise AssertionError("80 students did not get enough different variants")


def _hidden(exercise, index: int) -> np.ndarray:
    _, cases, _ = bundles.load(exercise.spec, bundles.variant_dir(exercise_bundle(exercise), index))
    [case] = [c for c in cases if c.hidden]
    return case.inputs["x"]


def _fitted_to(exercise, index: int) -> str:
    """A solution that returns variant ``index``'s expected hidden output, whatever it is given
    (and the visible example's own): it passes that variant only."""
    expected = (2 * _hidden(exercise, index)).tolist()
    return (
        "import numpy as np\n\n"
        "def double(x):\n"
        "    if x.shape == (3,):\n"
        "        return 2 * x\n"
        f"    return np.array({expected!r})\n"
    )


def _graded(user, exercise, code: str) -> Submission:
    accepted = submit(user, exercise, code)
    grade_claimed(accepted.submission.pk)
    return Submission.objects.get(pk=accepted.submission.pk)


def test_two_students_get_their_own_hidden_inputs_and_are_graded_on_them(double, make_user):
    assert double.variant_count == 4
    ayse, mehmet = _students(double, make_user)
    a, m = double.variant_index(ayse), double.variant_index(mehmet)
    assert not np.allclose(_hidden(double, a), _hidden(double, m))
    # The visible example is the same in every variant.
    for index in range(4):
        _, cases, _ = bundles.load(double.spec, bundles.variant_dir(exercise_bundle(double), index))
        assert [c.inputs["x"].tolist() for c in cases if not c.hidden] == [[1.0, 2.0, 3.0]]

    for user, index in ((ayse, a), (mehmet, m)):
        submission = _graded(user, double, SOLUTION)
        assert submission.verdict == "passed"
        assert (submission.variant, submission.variant_seed) == (index, variant_seed(SEED, index))

    # Fitted to Ayşe's hidden outputs: right for her, wrong for Mehmet.
    fitted = _fitted_to(double, a)
    assert _graded(ayse, double, fitted).verdict == "passed"
    wrong = _graded(mehmet, double, fitted)
    assert wrong.verdict == "failed"
    assert [t["name"] for t in wrong.tests if not t["passed"]] == ["gizli"]


def test_an_instructors_preview_is_graded_on_the_instructors_own_variant(double, labv, make_user):
    [teacher] = _students(double, make_user, count=1)
    labv.instructors.add(teacher)
    accepted = submit(teacher, double, _fitted_to(double, double.variant_index(teacher)), preview=True)
    grade_claimed(accepted.submission.pk)
    submission = Submission.objects.get(pk=accepted.submission.pk)
    assert submission.preview and submission.variant == double.variant_index(teacher) != 0
    assert submission.verdict == "passed"


def test_a_regrade_grades_each_submission_on_its_students_variant(double, labv, make_user):
    [ayse] = _students(double, make_user, count=1)  # not variant 0
    submission = _graded(ayse, double, _fitted_to(double, double.variant_index(ayse)))
    assert submission.verdict == "passed"
    teacher = make_user("hoca")
    labv.instructors.add(teacher)
    preview = regrade.start(double, teacher)
    [item] = preview.items.all()
    regrade.grade_item(item.pk)
    item.refresh_from_db()
    assert (item.new_verdict, item.new_score) == ("passed", 1.0)


def test_a_misconception_caught_in_variant_0_only_is_reported_with_its_variant(tmp_path, capsys, db):
    root = tmp_path / "labv"
    shutil.copytree(FIXTURES / "lab_variants", root)
    folder = root / "01-ikiye" / "double"
    # Wrong only on variant 0's hidden input: caught there, nowhere else.
    from grader.core import build_cases, parse_spec

    spec = parse_spec({"kind": "function", "function": "double", "seed": SEED})
    [hidden] = [c.inputs["x"].tolist() for c in build_cases(spec, folder) if c.hidden]
    (folder / "variants" / "only-v0.py").write_text(
        f"import numpy as np\n\ndef double(x):\n    return 2 * x + np.allclose(x, {hidden!r})\n",
        encoding="utf-8",
    )
    toml = folder / "exercise.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8")
        + '\n[[misconceptions]]\ntag = "only-v0"\nfile = "variants/only-v0.py"\nhint = "Yalnızca bir durumda yanlış."\n',
        encoding="utf-8",
    )
    with pytest.raises(SystemExit):
        call_command("validate_course", str(root), "--json")
    problems = json.loads(capsys.readouterr().out)["problems"]
    messages = [p["message"] for p in problems]
    assert len(messages) == 3, messages  # variants 1, 2 and 3; variant 0 catches it
    for index in (1, 2, 3):
        assert any(
            "misconception 'only-v0'" in m and f"variant {index} (seed {variant_seed(SEED, index)})" in m
            for m in messages
        ), messages
    assert not any("variant 0" in m for m in messages)
    assert all(p["file"] == "labv/01-ikiye/double/exercise.toml" and p["line"] > 1 for p in problems)


def test_variants_need_cases_py(tmp_path, capsys, db):
    root = tmp_path / "labv"
    shutil.copytree(FIXTURES / "lab_variants", root)
    (root / "01-ikiye" / "double" / "cases.py").unlink()
    toml = root / "01-ikiye" / "double" / "exercise.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text + '\n[[cases]]\nname = "gizli"\n[cases.inputs]\nx = [4.0, -1.0]\n', encoding="utf-8")
    with pytest.raises(SystemExit):
        call_command("validate_course", str(root), "--json")
    [problem] = json.loads(capsys.readouterr().out)["problems"]
    line = text.splitlines().index("variants = 4") + 1
    assert (problem["file"], problem["line"]) == ("labv/01-ikiye/double/exercise.toml", line)
    assert "cases.py" in problem["message"]


def test_the_variants_command_lists_seeds_and_never_hidden_inputs(double, capsys):
    call_command("variants", "double", "--json")
    text = capsys.readouterr().out
    assert json.loads(text) == {
        "item": "double",
        "variants": [{"index": i, "seed": variant_seed(SEED, i), "params": {}} for i in range(4)],
    }
    for index in range(4):
        for x in _hidden(double, index):
            assert f"{x:.6g}" not in text and f"{2 * x:.6g}" not in text


def test_the_variants_command_lists_a_questions_parameters(db, capsys, tmp_path):
    shutil.copytree(FIXTURES / "variants", tmp_path / "varyant")
    _import(tmp_path / "varyant")
    question = Question.objects.get(slug="dot-score")
    call_command("variants", "dot-score", "--json")
    listed = json.loads(capsys.readouterr().out)
    rows = question.variants.filter(current=True).order_by("index")
    assert listed == {
        "item": "dot-score",
        "variants": [{"index": v.index, "seed": v.seed, "params": v.params} for v in rows],
    }
    assert len(listed["variants"]) == 6


def test_the_variants_command_gives_one_variant_for_a_question_without(db, capsys, mini_course):
    question = Question.objects.filter(course=mini_course).first()
    call_command("variants", question.slug, "--json")
    assert json.loads(capsys.readouterr().out) == {
        "item": question.slug,
        "variants": [{"index": 0, "seed": None, "params": {}}],
    }


def test_grade_on_the_command_line_takes_a_variant_or_a_students(double, make_user, capsys, tmp_path):
    [ayse] = _students(double, make_user, count=1)  # not variant 0
    index = double.variant_index(ayse)
    program = tmp_path / "fitted.py"
    program.write_text(_fitted_to(double, index), encoding="utf-8")

    def graded(*flags) -> dict:
        call_command("grade", "double", str(program), "--json", *flags)
        return json.loads(capsys.readouterr().out)

    default = graded()
    assert (default["variant"], default["verdict"]) == (0, "failed")  # variant 0, as before
    assert graded("--variant", str(index))["verdict"] == "passed"
    by_student = graded("--student", ayse.username)
    assert (by_student["variant"], by_student["verdict"]) == (index, "passed")
    with pytest.raises(CommandError, match="from 0 to 3"):
        graded("--variant", "4")
    with pytest.raises(CommandError, match="unknown user"):
        graded("--student", "kimse-yok")


def test_answer_on_the_command_line_takes_a_variant_or_a_students(db, make_user, capsys, tmp_path):
    shutil.copytree(FIXTURES / "variants", tmp_path / "varyant")
    _import(tmp_path / "varyant")
    question = Question.objects.get(slug="dot-score")
    rows = {v.index: v for v in question.variants.filter(current=True)}
    index = next(i for i, v in rows.items() if v.spec["answer"] != rows[0].spec["answer"])

    def answered(value, *flags) -> dict:
        call_command("answer", "dot-score", "--json", json.dumps({"value": value}), *flags)
        return json.loads(capsys.readouterr().out)

    assert answered(rows[0].spec["answer"])["correct"]  # variant 0 by default, as before
    assert not answered(rows[index].spec["answer"])["correct"]
    assert answered(rows[index].spec["answer"], "--variant", str(index))["correct"]
    student = next(u for u in (make_user(f"s{n}") for n in range(60)) if question.variant_index(u) == index)
    assert answered(rows[index].spec["answer"], "--student", student.username)["correct"]
    with pytest.raises(CommandError, match="from 0 to 5"):
        answered(1, "--variant", "6")
    with pytest.raises(CommandError, match="unknown user"):
        answered(1, "--student", "kimse-yok")


def test_test_this_item_on_one_variant_or_all(double, labv, make_user):
    teacher = make_user("hoca")
    labv.instructors.add(teacher)
    check = itemcheck.start(double, teacher)  # variant 0, as before
    assert {p["variant"] for p in check.programs} == {0}
    ItemCheck.objects.filter(pk=check.pk).update(status="done")
    check = itemcheck.start(double, teacher, "all")
    assert itemcheck.run(check.pk) == "done"
    check.refresh_from_db()
    by_variant = {(r["variant"], r["label"]): r["verdict"] for r in check.runs}
    assert by_variant == {
        **{(i, ""): "passed" for i in range(4)},  # the reference passes every variant
        **{(i, "add-two"): "failed" for i in range(4)},
    }
    with pytest.raises(ValueError):
        itemcheck.start(double, teacher, 4)


def test_test_this_item_on_all_variants_runs_each_program_once_with_the_verdicts_of_one_by_one(
    double, labv, make_user, monkeypatch
):
    import sys

    teacher = make_user("hoca")
    labv.instructors.add(teacher)
    sandbox_runs = []
    for module in (sys.modules["grader.core.grade"], sys.modules["grader.bundles"]):
        real = module.execute

        def counted(*args, real=real, **kwargs):
            sandbox_runs.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, "execute", counted)
    check = itemcheck.start(double, teacher, "all")
    assert itemcheck.run(check.pk) == "done"
    check.refresh_from_db()
    assert len(check.programs) == 8 and len(sandbox_runs) == 2  # the reference and add-two, once each
    together = {(r["variant"], r["label"]): r for r in check.runs}
    for index in range(4):
        ItemCheck.objects.filter(pk=check.pk).update(status="done")
        alone = itemcheck.start(double, teacher, index)
        assert itemcheck.run(alone.pk) == "done"
        alone.refresh_from_db()
        ItemCheck.objects.filter(pk=alone.pk).update(status="done")
        for run in alone.runs:
            assert together[(index, run["label"])] == run
    assert together[(1, "add-two")]["hidden_failed"]  # the catalogued mistake is caught on hidden cases


def test_cases_for_many_seeds_are_those_each_seed_makes_alone(tmp_path):
    """cases.py runs for many variants in one sandbox: each seed gets the cases (or the error) a
    run of its own gives it, so a seed on which make_cases fails is told as before."""
    from grader.core import SpecError, build_cases, parse_spec
    from grader.core.cases import build_cases_for_seeds

    (tmp_path / "cases.py").write_text(
        "def make_cases(rng):\n"
        "    x = rng.normal(size=3)\n"
        "    if x[0] > 1.0:\n"
        "        raise ValueError('too big')\n"
        "    return [{'name': 'gizli', 'inputs': {'x': x, 'b': x > 0}}]\n",
        encoding="utf-8",
    )
    spec = parse_spec({"kind": "function", "function": "f", "seed": SEED})
    seeds = [variant_seed(SEED, i) for i in range(12)]
    alone = []
    for seed in seeds:
        try:
            alone.append(build_cases(spec, tmp_path, seed=seed))
        except SpecError as exc:
            alone.append(exc)
    assert any(isinstance(a, SpecError) for a in alone) and any(isinstance(a, list) for a in alone)
    for one, many in zip(alone, build_cases_for_seeds(spec, tmp_path, seeds), strict=True):
        if isinstance(one, SpecError):
            assert isinstance(many, SpecError) and many.message == one.message
            continue
        assert [c.name for c in many] == [c.name for c in one] == ["gizli"]
        for name in ("x", "b"):
            assert many[0].inputs[name].dtype == one[0].inputs[name].dtype
            assert np.array_equal(many[0].inputs[name], one[0].inputs[name])

    # Without failures, every seed comes from the shared run.
    (tmp_path / "cases.py").write_text(
        "def make_cases(rng):\n    return [{'name': 'gizli', 'inputs': {'x': rng.normal(size=2)}}]\n",
        encoding="utf-8",
    )
    many = build_cases_for_seeds(spec, tmp_path, seeds)
    for seed, cases in zip(seeds, many, strict=True):
        assert np.array_equal(cases[0].inputs["x"], build_cases(spec, tmp_path, seed=seed)[0].inputs["x"])


def test_an_applied_regrade_stores_the_variant_it_graded_on(double, labv, make_user):
    """A submission made on a variant the exercise no longer has (fewer variants since) is
    regraded on the student's own variant now, and the applied grade says so (variant and seed)."""
    [ayse] = _students(double, make_user, count=1)
    own = double.variant_index(ayse)
    submission = _graded(ayse, double, _fitted_to(double, own))
    Submission.objects.filter(pk=submission.pk).update(variant=double.variant_count + 3, variant_seed=1)
    teacher = make_user("hoca")
    labv.instructors.add(teacher)
    preview = regrade.start(double, teacher)
    [item] = preview.items.all()
    regrade.grade_item(item.pk)
    item.refresh_from_db()
    assert item.new_verdict == "passed"  # graded on her own variant's hidden cases
    regrade.apply(preview)
    submission.refresh_from_db()
    assert (submission.variant, submission.variant_seed) == (own, seed_of(double, own))


def test_the_item_commands_name_an_unknown_slug_the_same_way(labv, tmp_path):
    program = tmp_path / "p.py"
    program.write_text("def f(x):\n    return x\n", encoding="utf-8")
    with pytest.raises(
        CommandError, match=re.escape("no active exercise with slug 'yok'; `manage.py grade --list`")
    ):
        call_command("grade", "yok", str(program))
    with pytest.raises(CommandError, match="no active question with slug 'yok'"):
        call_command("answer", "yok", "--json", "{}")
    with pytest.raises(CommandError, match="no active question or exercise with slug 'yok'"):
        call_command("variants", "yok")
    assert call_command("variants", "labv/double") is None  # course/slug finds it
