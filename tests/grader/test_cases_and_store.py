"""cases.py runs sandboxed; bundles round-trip without pickle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from grader_testkit import SECRET

from grader.core import (
    ReferenceFailed,
    SpecError,
    Verdict,
    build_cases,
    grade,
    load_bundle,
    parse_spec,
    run_reference,
    save_bundle,
)

pytestmark = pytest.mark.sandbox


def test_cases_py_makes_seeded_reproducible_cases(attention):
    names = [c.name for c in attention.cases]
    assert names == ["ornek", "maskeli-ornek", "rastgele", "kare", "toplu", "maskeli", "buyuk"]
    again = build_cases(attention.spec, attention.dir)
    for a, b in zip(attention.cases, again):
        assert a.inputs.keys() == b.inputs.keys()
        for key in a.inputs:
            np.testing.assert_array_equal(a.inputs[key], b.inputs[key])
    toplu = attention.case("toplu")
    assert toplu.weight == 2.0 and toplu.hidden
    assert toplu.inputs["Q"].shape == (2, 3, 3)
    assert attention.case("maskeli").inputs["mask"].dtype == np.bool_


def _exercise(tmp_path, cases_py: str):
    (tmp_path / "cases.py").write_text(cases_py)
    return parse_spec({"kind": "function", "function": "f", "limits": {"cpu_seconds": 1, "wall_seconds": 2}})


@pytest.mark.parametrize(
    "cases_py, fragment",
    [
        ("def make_cases(rng):\n    raise ValueError('boom')\n", "boom"),
        ("x = 1\n", "make_cases"),
        ("def make_cases(rng):\n    return [{'name': 'Bad Name', 'inputs': {}}]\n", "name"),
        ("def make_cases(rng):\n    return [{'name': 'a', 'inputs': {'X': object()}}]\n", "X"),
        ("def make_cases(rng):\n    while True: pass\n", "time"),
        (
            "def make_cases(rng):\n    return [{'name': 'a', 'inputs': {'X': open('"
            + "/etc/hostname"
            + "').read()}}]\n",
            "",
        ),
    ],
)
def test_broken_cases_py_raises_spec_error(tmp_path, cases_py, fragment):
    spec = _exercise(tmp_path, cases_py)
    with pytest.raises(SpecError) as info:
        build_cases(spec, tmp_path)
    assert info.value.key == "cases.py"
    assert fragment in info.value.message


def test_cases_py_cannot_read_the_exercise_folder(tmp_path):
    (tmp_path / "secret.txt").write_text(SECRET)
    spec = _exercise(
        tmp_path,
        (
            "import os\n"
            "def make_cases(rng):\n"
            f"    assert not os.path.exists({str(tmp_path / 'secret.txt')!r})\n"
            "    return [{'name': 'a', 'inputs': {'X': rng.normal(size=3)}}]\n"
        ),
    )
    assert [c.name for c in build_cases(spec, tmp_path)] == ["a"]


def test_bundle_round_trip(attention, tmp_path):
    save_bundle(tmp_path / "bundle", attention.spec, attention.cases, attention.ref)
    manifest = json.loads((tmp_path / "bundle" / "manifest.json").read_text())
    assert manifest["format"] == 1
    assert not list((tmp_path / "bundle").rglob("*.pkl"))
    cases, ref = load_bundle(tmp_path / "bundle")
    assert [(c.name, c.hidden, c.weight) for c in cases] == [
        (c.name, c.hidden, c.weight) for c in attention.cases
    ]
    for c in attention.cases:
        np.testing.assert_array_equal(ref.outputs[c.name]["return"], attention.ref.outputs[c.name]["return"])
    assert grade(attention.solution, attention.spec, cases, ref).verdict == Verdict.PASSED
    # Saving again replaces the bundle as a whole.
    save_bundle(tmp_path / "bundle", attention.spec, cases[:2], ref)
    assert len(load_bundle(tmp_path / "bundle")[0]) == 2


def test_script_reference_keeps_stdout(script_exercise):
    assert script_exercise.ref.stdout["ornek"] == "A: (3, 2)\nY: (3, 3)\n"


def test_failing_reference_raises_with_details(attention):
    bad = attention.solution.replace("return weights @ V", "return weights @ V if Q.ndim == 2 else 1 / 0")
    with pytest.raises(ReferenceFailed) as info:
        run_reference(bad, attention.spec, attention.cases)
    result = info.value.result
    assert result.verdict == Verdict.ERROR
    toplu = next(t for t in result.tests if t.name == "toplu")
    # The author sees full details even for hidden cases.
    assert (
        toplu.message.params["exc_type"] == "ZeroDivisionError"
        and "division" in toplu.message.params["detail"]
    )
