"""exercise.toml validation: every problem names its key."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
from grader_testkit import FIXTURES

from grader.core import Limits, SpecError, check_source, parse_spec
from grader.core import messages as M

BASE = {"kind": "function", "function": "attention", "cases": [{"name": "a", "inputs": {"X": [1.0]}}]}


def spec_with(**changes):
    data = dict(BASE)
    data.update(changes)
    return parse_spec(data)


def error_key(**changes) -> str:
    with pytest.raises(SpecError) as info:
        spec_with(**changes)
    return info.value.key


def test_fixture_specs_parse_and_foreign_keys_are_ignored():
    spec = parse_spec(tomllib.loads((FIXTURES / "attention" / "exercise.toml").read_text()))
    assert spec.kind == "function" and spec.function == "attention"
    assert spec.results == ("return",)
    assert spec.seed == 1234
    assert spec.shape_names == {
        "return": ("n_q", "d_v"),
        "Q": ("n_q", "d_k"),
        "K": ("n_k", "d_k"),
        "V": ("n_k", "d_v"),
        "mask": ("n_q", "n_k"),
    }
    assert [c.name for c in spec.cases] == ["ornek", "maskeli-ornek"]
    assert spec.cases[1].inputs["mask"].dtype == np.bool_
    assert spec.cases[0].inputs["Q"].dtype == np.float64
    assert spec.cases[0].hidden is False
    script = parse_spec(tomllib.loads((FIXTURES / "softmax_script" / "exercise.toml").read_text()))
    assert script.results == ("A", "Y") and script.compare_stdout and script.row_sums == ("A",)
    assert script.limits == Limits(cpu_seconds=3, wall_seconds=6)
    assert script.cases[1].hidden is True and script.cases[1].weight == 1.0


def test_defaults():
    spec = spec_with()
    assert (spec.rtol, spec.atol, spec.seed) == (1e-6, 1e-9, 0)
    assert spec.limits == Limits()
    assert spec.limits.cpu_seconds == 5 and spec.limits.wall_seconds == 10 and spec.limits.memory_mb == 512


@pytest.mark.parametrize(
    "changes, key",
    [
        ({"kind": "notebook"}, "kind"),
        ({"function": "not a name"}, "function"),
        ({"function": "class"}, "function"),
        ({"results": ["A"]}, "results"),
        ({"rtol": "small"}, "rtol"),
        ({"atol": -1.0}, "atol"),
        ({"row_sums": ["A"]}, "row_sums[0]"),
        ({"seed": -3}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"shape_names": {"not a name": ["n"]}}, "shape_names.not a name"),
        ({"shape_names": {"Y": "n"}}, "shape_names.Y"),
        ({"limits": {"cpu_seconds": 31}}, "limits.cpu_seconds"),
        ({"limits": {"wall_seconds": 0}}, "limits.wall_seconds"),
        ({"limits": {"memory_mb": 4096}}, "limits.memory_mb"),
        ({"limits": {"memory_mb": 100.5}}, "limits.memory_mb"),
        ({"limits": {"network": True}}, "limits.network"),
        ({"limits": {"cpu_seconds": 20, "wall_seconds": 10}}, "limits.wall_seconds"),
        ({"cases": [{"name": "a"}, {"name": "a"}]}, "cases[1].name"),
        ({"cases": [{"name": "Büyük"}]}, "cases[0].name"),
        ({"cases": [{"name": "a", "weight": 0}]}, "cases[0].weight"),
        ({"cases": [{"name": "a", "hidden": "yes"}]}, "cases[0].hidden"),
        ({"cases": [{"name": "a", "inputs": {"X": [[1.0, 2.0], [3.0]]}}]}, "cases[0].inputs.X"),
        ({"cases": [{"name": "a", "inputs": {"X": [1.0, True]}}]}, "cases[0].inputs.X"),
        ({"cases": [{"name": "a", "inputs": {"X": ["s"]}}]}, "cases[0].inputs.X"),
        (
            {"cases": [{"name": "ok"}, {"name": "b", "inputs": {"not-valid": [1.0]}}]},
            "cases[1].inputs.not-valid",
        ),
        ({"cases": [{"name": "a", "colour": 1}]}, "cases[0].colour"),
    ],
)
def test_invalid_values_name_their_key(changes, key):
    assert error_key(**changes) == key


def test_script_kind_requires_results_and_rejects_function():
    with pytest.raises(SpecError) as info:
        parse_spec({"kind": "script"})
    assert info.value.key == "results"
    with pytest.raises(SpecError) as info:
        parse_spec({"kind": "script", "results": ["A"], "function": "f"})
    assert info.value.key == "function"
    spec = parse_spec(
        {"kind": "script", "results": ["A", "Y"], "row_sums": ["A"], "shape_names": {"Y": ["n", "d"]}}
    )
    assert spec.function is None


def test_integer_lists_become_float64_and_booleans_bool():
    spec = spec_with(cases=[{"name": "a", "inputs": {"X": [[1, 2], [3, 4]], "M": [[True, False]], "s": 3}}])
    inputs = spec.cases[0].inputs
    assert inputs["X"].dtype == np.float64 and inputs["X"].shape == (2, 2)
    assert inputs["M"].dtype == np.bool_
    assert inputs["s"].shape == ()


@pytest.mark.parametrize(
    "source, msgid",
    [
        ("", M.SOURCE_EMPTY),
        ("  \n\n\t", M.SOURCE_EMPTY),
        ("x = 1\x00", M.SOURCE_NUL),
        (b"x = '\xc3\x28'", M.SOURCE_NOT_UTF8),
        ("\udcff", M.SOURCE_NOT_UTF8),
        ("#" * (64 * 1024 + 1), M.SOURCE_TOO_LARGE),
    ],
)
def test_check_source_rejections(source, msgid):
    problem = check_source(source, spec_with())
    assert problem is not None and problem.msgid == msgid


def test_check_source_accepts_turkish_text_and_counts_bytes():
    assert check_source("# açıklama: dikkat ağırlıkları\nx = 1\n", spec_with()) is None
    # 'ş' is 2 bytes in UTF-8: the limit is on bytes, not characters.
    problem = check_source("ş" * (33 * 1024), spec_with())
    assert problem.msgid == M.SOURCE_TOO_LARGE and problem.params["limit"] == 64 * 1024
