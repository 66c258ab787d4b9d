"""Correct solutions pass in many styles; known mistakes fail with the message
that points at them, and are recognised as misconceptions."""

from __future__ import annotations

import pytest
from grader_testkit import dump

from grader.core import Verdict, run_reference
from grader.core import messages as M

pytestmark = pytest.mark.sandbox

EINSUM = """
import numpy as np

def attention(Q, K, V, mask=None):
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    w = np.exp(scores)
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kv->...qv", w, V)
"""

SWAPAXES = """
import numpy as np

def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)

def attention(Q, K, V, mask=None):
    d_k = K.shape[-1]
    s = np.matmul(Q, K.swapaxes(-1, -2)) / d_k ** 0.5
    if mask is not None:
        s = np.where(mask, s, -1e30)
    return softmax(s) @ V
"""

LOG_SUM_EXP = """
import numpy as np

def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
    return np.exp(s - lse) @ V
"""

LOOPS = """
import math
import numpy as np

def attention(Q, K, V, mask=None):
    if Q.ndim == 3:
        return np.stack([attention(Q[b], K[b], V[b], None if mask is None else mask[b] if mask.ndim == 3 else mask)
                         for b in range(Q.shape[0])])
    n_q, d_k = Q.shape
    n_k, d_v = V.shape
    out = np.zeros((n_q, d_v))
    for i in range(n_q):
        scores = []
        for j in range(n_k):
            if mask is not None and not mask[i, j]:
                scores.append(-math.inf)
            else:
                scores.append(sum(Q[i, t] * K[j, t] for t in range(d_k)) / math.sqrt(d_k))
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        for j in range(n_k):
            out[i] += weights[j] / total * V[j]
    return out
"""

NO_MAX_SUBTRACTION = """
import numpy as np

def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s)
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


@pytest.mark.parametrize(
    "source", [EINSUM, SWAPAXES, LOG_SUM_EXP, LOOPS], ids=["einsum", "swapaxes", "log-sum-exp", "loops"]
)
def test_correct_solutions_in_any_style_pass(attention, source):
    result = attention.grade(source)
    assert result.verdict == Verdict.PASSED, dump(result)
    assert result.score == 1.0
    assert result.message.msgid == M.ALL_PASSED
    assert all(t.passed and t.message is None for t in result.tests)


@pytest.fixture(scope="module")
def variants(attention):
    vdir = attention.dir / "variants"
    return {
        p.stem: run_reference(p.read_text(), attention.spec, attention.cases, allow_failures=True)
        for p in sorted(vdir.glob("*.py"))
    }


def test_missing_scaling_fails_on_values_and_is_recognised(attention, variants):
    source = (attention.dir / "variants" / "no_scaling.py").read_text()
    result = attention.grade(source, variants=variants)
    assert result.verdict == Verdict.FAILED
    assert result.tests[0].message.msgid == M.CASE_VALUES
    params = result.tests[0].message.params
    assert params["result"] == "attention(...)" and params["index"].startswith("[")
    assert result.misconception == "no_scaling"


def test_wrong_softmax_axis_is_recognised(attention, variants):
    source = (attention.dir / "variants" / "wrong_axis.py").read_text()
    result = attention.grade(source, variants=variants)
    assert result.verdict == Verdict.FAILED
    assert result.misconception == "wrong_axis"


def test_ignored_mask_fails_only_on_masked_cases(attention, variants):
    source = (attention.dir / "variants" / "mask_ignored.py").read_text()
    result = attention.grade(source, variants=variants)
    assert result.verdict == Verdict.FAILED
    failing = {t.name for t in result.tests if not t.passed}
    assert failing == {"maskeli-ornek", "maskeli"}
    assert result.misconception == "mask_ignored"
    hidden = next(t for t in result.tests if t.name == "maskeli")
    assert hidden.message.msgid == M.CASE_VALUES_HIDDEN
    assert hidden.message.params == {"result": "attention(...)"}


def test_missing_max_subtraction_overflows_on_large_inputs(attention, variants):
    result = attention.grade(NO_MAX_SUBTRACTION, variants=variants)
    assert result.verdict == Verdict.FAILED
    failing = [t for t in result.tests if not t.passed]
    assert [t.name for t in failing] == ["buyuk"]
    assert failing[0].message.msgid == M.CASE_NONFINITE_HIDDEN
    assert result.score == pytest.approx(1 - 1 / 8)  # 'toplu' weighs 2


def test_score_is_the_weighted_fraction_of_passed_cases(attention):
    result = attention.grade(NO_MAX_SUBTRACTION)
    weights = {t.name: t.weight for t in result.tests}
    assert weights["toplu"] == 2.0
    assert result.score == pytest.approx(
        sum(w for n, w in weights.items() if n != "buyuk") / sum(weights.values())
    )


def test_missing_function_is_an_error_naming_it(attention):
    result = attention.grade("import numpy as np\n\ndef atention(Q, K, V, mask=None):\n    return Q\n")
    assert result.verdict == Verdict.ERROR
    assert result.message.msgid == M.MISSING_FUNCTION
    assert result.message.params == {"function": "attention"}


def test_returning_none_says_return_is_missing(attention):
    result = attention.grade("def attention(Q, K, V, mask=None):\n    scores = Q\n")
    assert result.verdict == Verdict.FAILED
    assert result.tests[0].message.msgid == M.CASE_RETURNED_NONE


def test_exception_traceback_is_trimmed_to_the_students_lines(attention):
    source = "import numpy as np\n\ndef attention(Q, K, V, mask=None):\n    return np.dot(Q, V)\n"
    result = attention.grade(source)
    assert result.verdict == Verdict.ERROR
    msg = result.tests[0].message
    assert msg.params["exc_type"] == "ValueError"
    assert msg.params["line"] == 4
    assert "numpy" not in msg.params["traceback"]
    assert msg.params["traceback"] == "  4 | return np.dot(Q, V)"
    hidden = next(t for t in result.tests if t.hidden).message
    assert hidden.msgid == M.CASE_SHAPE_ERROR_HIDDEN  # a shape error: told in axis names
    assert (
        hidden.params["exc_type"] == "ValueError" and "line" not in hidden.params
    )  # the code could choose it
    assert "`V`" in hidden.render() and "n_k" in hidden.render()


def test_only_visible_runs_just_the_visible_cases(attention):
    result = attention.grade(attention.solution, only_visible=True)
    assert result.verdict == Verdict.PASSED
    assert [t.name for t in result.tests] == ["ornek", "maskeli-ornek"]


def test_stdout_comes_only_from_visible_cases(attention):
    source = attention.solution.replace(
        "    d_k = Q.shape[-1]", "    print('shape', Q.shape)\n    d_k = Q.shape[-1]"
    )
    result = attention.grade(source)
    assert result.verdict == Verdict.PASSED
    assert result.stdout == "[ornek]\nshape (4, 2)\n[maskeli-ornek]\nshape (2, 2)\n"


def test_to_dict_has_the_agreed_keys(attention):
    d = attention.grade(attention.solution).to_dict()
    assert set(d) >= {"verdict", "score", "tests", "stdout", "duration_ms", "misconception"}
    assert set(d["tests"][0]) == {"name", "passed", "hidden", "message"}
    assert d["verdict"] == "passed"


# --- the script kind ---------------------------------------------------------


def test_script_solution_passes(script_exercise):
    result = script_exercise.grade(script_exercise.solution)
    assert result.verdict == Verdict.PASSED, dump(result)
    assert result.stdout == "A: (3, 2)\nY: (3, 3)\n"  # one visible case: no header


def test_script_wrong_softmax_axis_hints_at_row_sums(script_exercise):
    source = script_exercise.solution.replace("axis=1", "axis=0")
    result = script_exercise.grade(source)
    assert result.verdict == Verdict.FAILED
    msg = result.tests[0].message
    assert msg.msgid == M.CASE_ROW_SUMS
    assert msg.params["result"] == "A"
    assert result.tests[1].message.msgid == M.CASE_ROW_SUMS_HIDDEN


def test_script_missing_variable_is_named(script_exercise):
    source = script_exercise.solution.replace("Y = A @ V", "Z = A @ V").replace('print("Y:", Y.shape)', "")
    result = script_exercise.grade(source)
    assert result.verdict == Verdict.FAILED
    assert result.tests[0].message.msgid == M.CASE_UNDEFINED
    assert result.tests[0].message.params == {"result": "Y"}


def test_script_printed_output_is_compared(script_exercise):
    source = script_exercise.solution.replace('print("Y:", Y.shape)', 'print("Y:", Y.shape[0])')
    result = script_exercise.grade(source)
    assert result.verdict == Verdict.FAILED
    msg = result.tests[0].message
    assert msg.msgid == M.CASE_STDOUT
    assert msg.params == {"line": 2, "expected": "'Y: (3, 3)'", "got": "'Y: 3'"}
    assert result.tests[1].message.msgid == M.CASE_STDOUT_HIDDEN


def test_script_whitespace_differences_are_ignored(script_exercise):
    source = script_exercise.solution.replace('print("A:", A.shape)', 'print("A:  ", A.shape, "  ")')
    assert script_exercise.grade(source).verdict == Verdict.PASSED


def test_script_shape_message_uses_axis_names(script_exercise):
    source = script_exercise.solution.replace("Y = A @ V", "Y = (A @ V)[:, :2]")
    result = script_exercise.grade(source)
    assert result.tests[0].message.render() == (
        "Y has the wrong shape: expected (n_q, d_v) = (3, 3), got (3, 2)."
    )


def test_cli_grades_an_exercise_folder(tmp_path):
    import json
    import subprocess
    import sys

    from grader_testkit import FIXTURES

    wrong = tmp_path / "wrong.py"
    wrong.write_text((FIXTURES / "softmax_script" / "solution.py").read_text().replace("axis=1", "axis=0"))
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.core",
            str(FIXTURES / "softmax_script"),
            str(FIXTURES / "softmax_script" / "solution.py"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["verdict"] == "passed"
    bad = subprocess.run(
        [sys.executable, "-m", "grader.core", str(FIXTURES / "softmax_script"), str(wrong)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stdout.startswith("failed")
    assert "should each sum to 1" in bad.stdout


def test_sys_exit_at_top_level_is_reported_as_such(attention):
    result = attention.grade("import sys\nsys.exit(0)\ndef attention(Q, K, V, mask=None):\n    return Q\n")
    assert result.verdict == Verdict.ERROR
    assert result.message.msgid == M.MODULE_EXCEPTION
    assert result.message.params["exc_type"] == "SystemExit" and result.message.params["line"] == 2


def test_warnings_on_stderr_are_shown_but_not_compared(script_exercise):
    source = "import warnings\nwarnings.warn('dikkat: uyarı')\n" + script_exercise.solution
    result = script_exercise.grade(source)
    assert result.verdict == Verdict.PASSED, dump(result)
    assert "UserWarning: dikkat: uyarı" in result.stdout


def test_every_case_gets_its_inputs_as_given_fresh_and_writable(attention):
    """Inputs travel in one file per phase: each case's dtype, byte order, shape and values
    arrive exactly, as arrays of their own that a case may change without touching the next
    case's (two cases share each phase; the second phase is hidden)."""
    import numpy as np

    from grader.core.grade import execute
    from grader.core.spec import Case

    def given(k: int) -> dict[str, np.ndarray]:
        return {
            "big_endian": np.arange(6, dtype=">i4").reshape(2, 3) + k,
            "flag": np.array([True, False]) ^ bool(k % 2),
            "empty": np.zeros((0, 3), np.float32),
            "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)) * (k + 1),
            "text": np.array(["çok", "az"])[:: 1 if k % 2 else -1],
            "small": np.array([1, -2], dtype=np.int8) * k,
            "scalar": np.array(2.5 + k),  # a TOML number: 0-d, so float(scalar) works
        }

    cases = [Case(name=f"c{k}", inputs=given(k), hidden=k >= 2) for k in range(4)]
    code = (
        "def attention(**kw):\n"
        "    for name, v in sorted(kw.items()):\n"
        "        print(name, v.dtype.str, v.shape, v.flags.writeable, v.flags.owndata, v.tolist())\n"
        "        v[...] = v.flat[0] if v.size else v\n"  # changed in place: the next case must not see it
        "    return kw['big_endian']\n"
    )
    run = execute(code, attention.spec, cases, [[0, 1], [2, 3]])
    for k in range(4):
        expected = "".join(
            f"{name} {v.dtype.str} {v.shape} True True {v.tolist()}\n" for name, v in sorted(given(k).items())
        )
        assert run.cases[k].stdout == expected, k
        assert run.cases[k].outputs["return"].tolist() == [[k] * 3] * 2
