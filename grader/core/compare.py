"""Comparing one result array with the expected one, on the host.

Runs in the grader's own process with the grader's own NumPy: nothing the
student did inside the sandbox (monkeypatching ``np.allclose``, a lying
``__eq__``) can reach these functions.  Hidden cases get messages without
numbers taken from the inputs, expected values or the student's values, and without
anything else the student's code chose (a dtype, a number of axes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import messages as M
from .messages import Message
from .spec import ExerciseSpec

ROW_SUM_TOL = 1e-6


def fmt_number(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (complex, np.complexfloating)):
        return f"{complex(x):.6g}"
    return f"{float(x):.6g}"


def fmt_index(idx: tuple[Any, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(int(n)) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def compare_result(
    name: str,
    got: np.ndarray,
    expected: np.ndarray,
    spec: ExerciseSpec,
    hidden: bool,
    key: str | None = None,
) -> Message | None:
    """None when ``got`` matches ``expected``; otherwise the most useful single message.

    ``name`` is how the result is shown; ``key`` its name in the spec (defaults to ``name``).
    """
    key = key or name
    assert type(got) is np.ndarray and type(expected) is np.ndarray
    ek, gk = expected.dtype.kind, got.dtype.kind
    if ek == "b":
        if gk != "b":
            if hidden:
                return Message(M.CASE_NOT_BOOL_HIDDEN, {"result": name})
            return Message(M.CASE_NOT_BOOL, {"result": name, "dtype": str(got.dtype)})
    else:
        if gk == "c" and ek != "c":
            return Message(M.CASE_COMPLEX, {"result": name})
        if gk == "b":
            return Message(M.CASE_BOOL, {"result": name})
        if gk not in "iufc":
            return Message(M.CASE_NOT_NUMERIC, {"result": name, "dtype": "?" if hidden else str(got.dtype)})

    if got.shape != expected.shape:
        return shape_message(name, got.shape, expected.shape, spec.shape_names.get(key), hidden)

    if ek == "b":
        wrong = got != expected
        if not wrong.any():
            return None
        if hidden:
            return Message(M.CASE_VALUES_HIDDEN, {"result": name})
        idx = np.unravel_index(int(np.argmax(wrong)), got.shape) if got.ndim else ()
        return Message(
            M.CASE_VALUES,
            {
                "result": name,
                "error": "1",
                "index": fmt_index(idx),
                "expected": fmt_number(expected[idx]),
                "got": fmt_number(got[idx]),
            },
        )

    got_f = got if gk in "fc" else got.astype(np.float64)
    exp_finite = np.isfinite(expected)
    bad = ~np.isfinite(got_f) & exp_finite
    if bad.any():
        if hidden:
            return Message(M.CASE_NONFINITE_HIDDEN, {"result": name})
        idx = np.unravel_index(int(np.argmax(bad)), got.shape) if got.ndim else ()
        return Message(M.CASE_NONFINITE, {"result": name, "index": fmt_index(idx)})

    close = np.isclose(got_f, expected, rtol=spec.rtol, atol=spec.atol, equal_nan=True)
    if close.all():
        return None

    if key in spec.row_sums and got.ndim >= 1 and gk != "c":
        sums = got_f.sum(axis=-1)
        off = ~np.isclose(sums, 1.0, rtol=0, atol=max(ROW_SUM_TOL, spec.atol))
        if np.ndim(off) == 0:
            off = np.asarray([off])
            sums = np.asarray([sums])
        if off.any():
            if hidden:
                return Message(M.CASE_ROW_SUMS_HIDDEN, {"result": name})
            ridx = np.unravel_index(int(np.argmax(off)), off.shape)
            return Message(
                M.CASE_ROW_SUMS,
                {
                    "result": name,
                    "index": fmt_index(ridx),
                    "sum": fmt_number(sums[ridx]),
                },
            )

    if hidden:
        return Message(M.CASE_VALUES_HIDDEN, {"result": name})
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got_f - expected).astype(np.float64, copy=False)
    err = np.where(close, -1.0, np.nan_to_num(err, nan=np.inf))
    idx = np.unravel_index(int(np.argmax(err)), got.shape) if got.ndim else ()
    return Message(
        M.CASE_VALUES,
        {
            "result": name,
            "error": fmt_number(err[idx]),
            "index": fmt_index(idx),
            "expected": fmt_number(expected[idx]),
            "got": fmt_number(got[idx]),
        },
    )


def shape_message(
    name: str,
    got_shape: tuple[int, ...],
    expected_shape: tuple[int, ...],
    names: tuple[str, ...] | list[str] | None,
    hidden: bool,
) -> Message:
    if hidden:
        if len(got_shape) != len(expected_shape):
            # Not the number the code chose: it could be a hidden input.
            return Message(M.CASE_NDIM_HIDDEN_EXPECTED, {"result": name, "expected": len(expected_shape)})
        axis = next(i for i, (a, b) in enumerate(zip(got_shape, expected_shape)) if a != b)
        label = names[axis] if names and len(names) == len(expected_shape) else str(axis)
        return Message(M.CASE_SHAPE_HIDDEN_AXIS, {"result": name, "axis": label})
    if names and len(names) == len(expected_shape):
        return Message(
            M.CASE_SHAPE_NAMED,
            {
                "result": name,
                "names": "(" + ", ".join(names) + ")",
                "expected": fmt_shape(expected_shape),
                "got": fmt_shape(got_shape),
            },
        )
    return Message(
        M.CASE_SHAPE,
        {
            "result": name,
            "expected": fmt_shape(expected_shape),
            "got": fmt_shape(got_shape),
        },
    )


def normalise_stdout(text: str) -> list[str]:
    lines = [" ".join(line.split()) for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def compare_stdout(got: str, expected: str, hidden: bool) -> Message | None:
    g, e = normalise_stdout(got), normalise_stdout(expected)
    if g == e:
        return None
    if hidden:
        return Message(M.CASE_STDOUT_HIDDEN, {})
    n = next((i for i, (a, b) in enumerate(zip(g, e)) if a != b), min(len(g), len(e)))
    return Message(
        M.CASE_STDOUT,
        {
            "line": n + 1,
            "expected": repr(e[n][:200]) if n < len(e) else "''",
            "got": repr(g[n][:200]) if n < len(g) else "''",
        },
    )


def outputs_match(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], spec: ExerciseSpec) -> bool:
    """True when every expected result is present and close (used for misconceptions)."""
    for name, exp in expected.items():
        g = got.get(name)
        if not isinstance(g, np.ndarray) or g.shape != exp.shape:
            return False
        if (g.dtype.kind == "b") != (exp.dtype.kind == "b"):
            return False
        try:
            if not np.isclose(g, exp, rtol=spec.rtol, atol=spec.atol, equal_nan=True).all():
                return False
        except TypeError:
            return False
    return True
