"""The grader's part of ``exercise.toml``: parsing and validation.

Keys that belong to the Django side (title, lesson, reveal, ...) are ignored.
Every problem raises `SpecError` with a dotted key path so that the caller can
point the author at the right line.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .limits import Limits

CASE_NAME_RE = re.compile(r"^[a-z0-9_-]{1,64}$")
MAX_CASES = 200
MAX_INPUT_ELEMENTS = 1_000_000


class SpecError(ValueError):
    """An invalid exercise spec; ``key`` is a dotted path such as ``limits.cpu_seconds``."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(f"{key}: {message}" if key else message)
        self.message = message
        self.key = key


@dataclass(frozen=True, eq=False)
class Case:
    """One test case: named inputs (plain float64/bool/int arrays)."""

    name: str
    inputs: dict[str, np.ndarray]
    hidden: bool = True
    weight: float = 1.0


@dataclass(frozen=True)
class ExerciseSpec:
    """Validated grader settings of one exercise."""

    kind: str  # "function" | "script"
    results: tuple[str, ...]  # ("return",) for the function kind
    function: str | None = None
    compare_stdout: bool = False
    rtol: float = 1e-6
    atol: float = 1e-9
    row_sums: tuple[str, ...] = ()
    seed: int = 0
    shape_names: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    limits: Limits = Limits()  # noqa: RUF009 -- Limits is frozen: one shared default is safe
    cases: tuple[Case, ...] = field(default=(), hash=False)  # literal [[cases]]


def is_identifier(name: Any) -> bool:
    return (
        isinstance(name, str)
        and name.isidentifier()
        and name.isascii()
        and not keyword.iskeyword(name)
        and not name.startswith("__")
    )


def _number(value: Any, key: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError("must be a finite number", key)
    if value < 0 or (positive and value == 0):
        raise SpecError("must be positive" if positive else "must not be negative", key)
    return float(value)


def _bool(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise SpecError("must be true or false", key)
    return value


def _names(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise SpecError("must be a non-empty list of names", key)
    for i, name in enumerate(value):
        if not is_identifier(name):
            raise SpecError(f"{name!r} is not a valid Python variable name", f"{key}[{i}]")
    if len(set(value)) != len(value):
        raise SpecError("names must be unique", key)
    return tuple(value)


def input_array(value: Any, key: str) -> np.ndarray:
    """Convert a TOML value (number, bool or nested lists) to a plain array.

    Numbers become float64, booleans bool; mixed or ragged lists are errors.
    """

    def leaves(v: Any, depth: int = 0) -> Iterator[Any]:
        if depth > 32:
            raise SpecError("nested too deeply", key)
        if isinstance(v, list):
            for item in v:
                yield from leaves(item, depth + 1)
        else:
            yield v

    items = list(leaves(value))
    if not items and not isinstance(value, list):
        raise SpecError("must be a number, a boolean or a list of them", key)
    dtype: type[np.generic]
    if items and all(isinstance(v, bool) for v in items):
        dtype = np.bool_
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        dtype = np.float64
    else:
        raise SpecError("must hold only numbers or only booleans", key)
    try:
        arr = np.array(value, dtype=dtype)
    except (ValueError, OverflowError) as exc:
        raise SpecError(f"is not a rectangular array ({exc})", key) from None
    if arr.size > MAX_INPUT_ELEMENTS:
        raise SpecError("is too large", key)
    return arr


def _case(data: Any, key: str) -> Case:
    if not isinstance(data, dict):
        raise SpecError("must be a table", key)
    unknown = set(data) - {"name", "hidden", "weight", "inputs"}
    if unknown:
        raise SpecError(f"unknown key {sorted(unknown)[0]!r}", f"{key}.{sorted(unknown)[0]}")
    name = data.get("name")
    if not isinstance(name, str) or not CASE_NAME_RE.match(name):
        raise SpecError("must be 1-64 characters from a-z, 0-9, '_' and '-'", f"{key}.name")
    hidden = _bool(data.get("hidden", True), f"{key}.hidden")
    weight = _number(data.get("weight", 1.0), f"{key}.weight", positive=True)
    inputs_data = data.get("inputs", {})
    if not isinstance(inputs_data, dict):
        raise SpecError("must be a table", f"{key}.inputs")
    inputs = {}
    for input_name, value in inputs_data.items():
        ikey = f"{key}.inputs.{input_name}"
        if not is_identifier(input_name):
            raise SpecError("is not a valid Python variable name", ikey)
        inputs[input_name] = input_array(value, ikey)
    return Case(name=name, inputs=inputs, hidden=hidden, weight=weight)


def _limits(data: Any) -> Limits:
    if data is None:
        return Limits()
    if not isinstance(data, dict):
        raise SpecError("must be a table", "limits")
    values: dict[str, Any] = {}
    for name, value in data.items():
        key = f"limits.{name}"
        if name not in Limits.AUTHOR_RANGES:
            raise SpecError(f"unknown limit; allowed: {', '.join(sorted(Limits.AUTHOR_RANGES))}", key)
        low, high = Limits.AUTHOR_RANGES[name]
        number = _number(value, key)
        if not low <= number <= high:
            raise SpecError(f"must be between {low} and {high}", key)
        if name in ("memory_mb", "processes"):
            if number != int(number):
                raise SpecError("must be a whole number", key)
            number = int(number)
        values[name] = number
    limits = Limits(**values)
    if limits.wall_seconds < limits.cpu_seconds:
        raise SpecError("must not be smaller than cpu_seconds", "limits.wall_seconds")
    return limits


def parse_spec(data: dict[str, Any]) -> ExerciseSpec:
    """Validate the grader keys of a parsed ``exercise.toml`` and build an `ExerciseSpec`.

    Raises `SpecError(message, key)`; other keys of the file are ignored.
    """
    if not isinstance(data, dict):
        raise SpecError("the exercise spec must be a table")
    kind = data.get("kind")
    if kind not in ("function", "script"):
        raise SpecError('must be "function" or "script"', "kind")

    function = None
    if kind == "function":
        function = data.get("function")
        if not is_identifier(function):
            raise SpecError("must name the function to call", "function")
        if "results" in data:
            raise SpecError('is only for kind = "script" (a function\'s result is "return")', "results")
        if "compare_stdout" in data:
            raise SpecError('is only for kind = "script"', "compare_stdout")
        results: tuple[str, ...] = ("return",)
    else:
        if "function" in data:
            raise SpecError('is only for kind = "function"', "function")
        if "results" not in data:
            raise SpecError("is required for a script exercise", "results")
        results = _names(data["results"], "results")
    compare_stdout = _bool(data.get("compare_stdout", False), "compare_stdout")

    rtol = _number(data.get("rtol", 1e-6), "rtol")
    atol = _number(data.get("atol", 1e-9), "atol")
    if rtol > 1 or atol > 1e6:
        raise SpecError("tolerance is unreasonably large", "rtol" if rtol > 1 else "atol")

    row_sums_data = data.get("row_sums", [])
    if not isinstance(row_sums_data, list):
        raise SpecError("must be a list of result names", "row_sums")
    for i, name in enumerate(row_sums_data):
        if name not in results:
            raise SpecError(f"{name!r} is not one of the results {list(results)}", f"row_sums[{i}]")
    row_sums = tuple(row_sums_data)

    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SpecError("must be a non-negative integer", "seed")

    shape_names: dict[str, tuple[str, ...]] = {}
    sn = data.get("shape_names", {})
    if not isinstance(sn, dict):
        raise SpecError("must be a table", "shape_names")
    for name, axes in sn.items():
        # A result's axes (checked against its shape) or an input's (named in shape traces,
        # aligned to its last axes so that leading batch axes need no name).
        key = f"shape_names.{name}"
        if name not in results and not is_identifier(name):
            raise SpecError(f"{name!r} is not the name of a result or an input", key)
        if not isinstance(axes, list) or not all(isinstance(a, str) and 0 < len(a) <= 32 for a in axes):
            raise SpecError("must be a list of short axis names", key)
        shape_names[name] = tuple(axes)

    limits = _limits(data.get("limits"))

    cases_data = data.get("cases", [])
    if not isinstance(cases_data, list):
        raise SpecError("must be an array of tables ([[cases]])", "cases")
    if len(cases_data) > MAX_CASES:
        raise SpecError(f"at most {MAX_CASES} cases are allowed", "cases")
    cases = tuple(_case(c, f"cases[{i}]") for i, c in enumerate(cases_data))
    seen: set[str] = set()
    for i, case in enumerate(cases):
        if case.name in seen:
            raise SpecError(f"duplicate case name {case.name!r}", f"cases[{i}].name")
        seen.add(case.name)

    return ExerciseSpec(
        kind=kind,
        results=results,
        function=function,
        compare_stdout=compare_stdout,
        rtol=rtol,
        atol=atol,
        row_sums=row_sums,
        seed=seed,
        shape_names=shape_names,
        limits=limits,
        cases=cases,
    )
