"""The grader's part of ``exercise.toml``: parsing and validation.

Keys that belong to the Django side (title, lesson, reveal, ...) are ignored.
Every problem raises `SpecError` with a dotted key path so that the caller can
point the author at the right line.
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .limits import Limits

# An author's case name; a case derived from one (a weight probe, a property case) is
# ``<base>~<what>`` (properties.py, probes.py), a name no author can write.
AUTHOR_CASE_NAME_RE = re.compile(r"^[a-z0-9_-]{1,64}$")
CASE_NAME_RE = re.compile(r"^[a-z0-9_-]{1,64}(?:~[a-z0-9_-]{1,32})?$")
DERIVED_SEPARATOR = "~"
MAX_CASES = 200
MAX_DERIVED_CASES = 400
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

    @property
    def base(self) -> str | None:
        """The case this one was derived from (a probe or property case), else None."""
        base, sep, _ = self.name.partition(DERIVED_SEPARATOR)
        return base if sep else None

    @property
    def derived(self) -> str | None:
        """What a derived case is for (``probe``, ``permute_keys``, ...), else None."""
        _, sep, what = self.name.partition(DERIVED_SEPARATOR)
        return what.replace("-", "_") if sep else None


# Property kinds (properties.py) and the defaults of their keys, fitting attention(Q, K, V, mask).
PROPERTY_KINDS: dict[str, dict[str, Any]] = {
    "permute_keys": {"inputs": ["K", "V"], "columns": ["mask"]},
    "shift_keys": {"inputs": ["K"], "amount": 10.0},
    "shift_rows": {"inputs": ["S"], "amount": 10.0},
    "future_values": {"inputs": ["K", "V"], "mask": "mask"},
    "future_scores": {"inputs": ["S"]},
    "scale_values": {"inputs": ["V"], "amount": -2.0},
}


@dataclass(frozen=True)
class ProbeSpec:
    """A weight probe: the attention weights read from a case (``[[probes]]``).

    With ``values`` the case is run again with that input replaced by the identity over the
    keys (``attention(Q, K, I, mask)`` is the weight matrix); without, ``result`` already is
    the weights.  ``mask`` names the boolean input (True = may look) or is ``"causal"``;
    ``keys`` names the input whose last axis is d_k (for the scaling diagnosis).
    """

    bases: tuple[str, ...]  # case names; "*" is every case the probe fits
    result: str
    values: str | None = None
    keys: str | None = None
    mask: str | None = None


@dataclass(frozen=True)
class PropertySpec:
    """A metamorphic relation checked on the student's own outputs (``[[properties]]``)."""

    kind: str
    bases: tuple[str, ...]
    results: tuple[str, ...]
    inputs: tuple[str, ...]
    columns: tuple[str, ...] = ()
    mask: str | None = None
    amount: float = 0.0


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
    probes: tuple[ProbeSpec, ...] = ()
    properties: tuple[PropertySpec, ...] = ()


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
    if not isinstance(name, str) or not AUTHOR_CASE_NAME_RE.match(name):
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


def select_bases(
    bases: tuple[str, ...], cases: list[Case], why_not: Callable[[Case], str | None], key: str
) -> list[Case]:
    """The author's cases a probe or property is derived from: ``"*"`` is every case it fits;
    a named case must exist and fit (`SpecError` at ``key`` otherwise)."""
    regular = [c for c in cases if c.base is None]
    if "*" in bases:
        return [c for c in regular if why_not(c) is None]
    by_name = {c.name: c for c in regular}
    chosen = []
    for name in bases:
        case = by_name.get(name)
        if case is None:
            raise SpecError(f"there is no case named {name!r}", key)
        problem = why_not(case)
        if problem:
            raise SpecError(f"case {name!r} {problem}", key)
        chosen.append(case)
    return chosen


def _bases(value: Any, key: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise SpecError('must be a case name, a list of them, or "*" (every case)', key)
    for i, name in enumerate(items):
        if not isinstance(name, str) or not (name == "*" or AUTHOR_CASE_NAME_RE.match(name)):
            raise SpecError(f"{name!r} is not a case name", f"{key}[{i}]" if isinstance(value, list) else key)
    return tuple(items)


def _input_name(value: Any, key: str) -> str:
    if not is_identifier(value):
        raise SpecError("must name an input", key)
    return str(value)


def _probe(data: Any, key: str, results: tuple[str, ...]) -> ProbeSpec:
    if not isinstance(data, dict):
        raise SpecError("must be a table", key)
    unknown = set(data) - {"base", "result", "values", "keys", "mask"}
    if unknown:
        raise SpecError(f"unknown key {sorted(unknown)[0]!r}", f"{key}.{sorted(unknown)[0]}")
    result = data.get("result", results[0] if len(results) == 1 else None)
    if result not in results:
        raise SpecError(f"must name one of the results {list(results)}", f"{key}.result")
    values = _input_name(data["values"], f"{key}.values") if "values" in data else None
    keys = _input_name(data["keys"], f"{key}.keys") if "keys" in data else None
    mask = data.get("mask")
    if mask is not None and mask != "causal":
        mask = _input_name(mask, f"{key}.mask")
    return ProbeSpec(
        bases=_bases(data.get("base"), f"{key}.base"), result=result, values=values, keys=keys, mask=mask
    )


def _property(data: Any, key: str, results: tuple[str, ...]) -> PropertySpec:
    if not isinstance(data, dict):
        raise SpecError("must be a table", key)
    kind = data.get("kind")
    if kind not in PROPERTY_KINDS:
        raise SpecError(f"must be one of {', '.join(sorted(PROPERTY_KINDS))}", f"{key}.kind")
    defaults = PROPERTY_KINDS[kind]
    allowed = {"kind", "base", "results", *defaults}
    unknown = set(data) - allowed
    if unknown:
        raise SpecError(f"unknown key for {kind} {sorted(unknown)[0]!r}", f"{key}.{sorted(unknown)[0]}")
    chosen = data.get("results", list(results))
    if not isinstance(chosen, list) or not chosen or any(r not in results for r in chosen):
        raise SpecError(f"must list some of the results {list(results)}", f"{key}.results")
    inputs = data.get("inputs", defaults["inputs"])
    if not isinstance(inputs, list) or not inputs:
        raise SpecError("must be a non-empty list of input names", f"{key}.inputs")
    for i, name in enumerate(inputs):
        _input_name(name, f"{key}.inputs[{i}]")
    if kind in ("shift_keys", "shift_rows", "future_scores", "scale_values") and len(inputs) != 1:
        raise SpecError(f"{kind} changes one input", f"{key}.inputs")
    columns = data.get("columns", defaults.get("columns", []))
    if not isinstance(columns, list):
        raise SpecError("must be a list of input names", f"{key}.columns")
    for i, name in enumerate(columns):
        _input_name(name, f"{key}.columns[{i}]")
    mask = data.get("mask", defaults.get("mask"))
    if mask is not None:
        mask = _input_name(mask, f"{key}.mask")
    amount = _finite(data.get("amount", defaults.get("amount", 0.0)), f"{key}.amount")
    if kind == "scale_values" and amount in (0.0, 1.0):
        raise SpecError("a factor of 0 or 1 tests nothing", f"{key}.amount")
    if kind in ("shift_keys", "shift_rows") and amount <= 0:
        raise SpecError("must be positive", f"{key}.amount")
    return PropertySpec(
        kind=kind,
        bases=_bases(data.get("base"), f"{key}.base"),
        results=tuple(chosen),
        inputs=tuple(inputs),
        columns=tuple(columns),
        mask=mask,
        amount=amount,
    )


def _finite(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError("must be a finite number", key)
    if abs(value) > 1e6:
        raise SpecError("is unreasonably large", key)
    return float(value)


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

    probes_data = data.get("probes", [])
    if not isinstance(probes_data, list):
        raise SpecError("must be an array of tables ([[probes]])", "probes")
    probes = tuple(_probe(p, f"probes[{i}]", results) for i, p in enumerate(probes_data))
    properties_data = data.get("properties", [])
    if not isinstance(properties_data, list):
        raise SpecError("must be an array of tables ([[properties]])", "properties")
    properties = tuple(_property(p, f"properties[{i}]", results) for i, p in enumerate(properties_data))

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
        probes=probes,
        properties=properties,
    )
