"""Metamorphic (property) cases: relations attention must keep, checked on the student's
own outputs (no reference needed).

A ``[[properties]]`` entry of ``exercise.toml`` derives, from each base case, a changed case
``<base>~<kind>`` that runs in the same sandbox run and phase as its base (after the author's
cases of that phase).  On the host the student's output on the changed case is compared with
the student's own output on the base case:

``permute_keys``   keys and values reordered together (the same permutation; a mask's key
                   axis too): the output is unchanged — attention treats the keys as a set.
``shift_keys``     one vector c added to every key: row i of the scores gains q_i·c, one
                   constant for the whole row, and softmax ignores a shift of a row: unchanged.
``shift_rows``     one number added to every score of a row (inputs that are scores): unchanged.
``future_values``  the keys and values at a position some queries may not see changed: the
                   outputs of those queries are unchanged.
``future_scores``  the scores above the diagonal (the future under a causal mask) changed:
                   the weights are unchanged.
``scale_values``   V multiplied by a factor: the output is multiplied by it (a weighted sum).

A failure gives the concept hint of its kind; visible cases add where the output changed
(they run in phase 0, before any hidden input exists), hidden ones the fixed text only.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from . import messages as M
from .compare import fmt_index, fmt_number
from .messages import Message
from .probes import UNFINISHED
from .spec import DERIVED_SEPARATOR, Case, ExerciseSpec, PropertySpec, select_bases

if TYPE_CHECKING:
    from .grade import CaseResult, Reference

HINTS = {
    "permute_keys": M.PROPERTY_PERMUTE_KEYS,
    "shift_keys": M.PROPERTY_SHIFT_KEYS,
    "shift_rows": M.PROPERTY_SHIFT_ROWS,
    "future_values": M.PROPERTY_FUTURE_VALUES,
    "future_scores": M.PROPERTY_FUTURE_SCORES,
    "scale_values": M.PROPERTY_SCALE_VALUES,
}
TITLES = {
    "permute_keys": M.PROPERTY_TITLE_PERMUTE_KEYS,
    "shift_keys": M.PROPERTY_TITLE_SHIFT_KEYS,
    "shift_rows": M.PROPERTY_TITLE_SHIFT_ROWS,
    "future_values": M.PROPERTY_TITLE_FUTURE_VALUES,
    "future_scores": M.PROPERTY_TITLE_FUTURE_SCORES,
    "scale_values": M.PROPERTY_TITLE_SCALE_VALUES,
}


@dataclass
class PropertyResult:
    """One relation on one base case: held, or broken (with the concept hint)."""

    kind: str
    case: str
    hidden: bool
    passed: bool
    amount: float = 0.0
    message: Message | None = None  # the concept hint when broken
    detail: Message | None = None  # visible cases: where the output changed

    def title(self) -> Message:
        params: dict[str, Any] = {"factor": fmt_number(self.amount)} if self.kind == "scale_values" else {}
        return Message(TITLES[self.kind], params)

    def to_dict(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        """Stored next to its case (kept small: a relation that holds is its kind alone;
        the title follows from kind and amount, `title_for`); with ``translate`` the texts
        rendered, title included (the CLI's JSON)."""
        data: dict[str, Any] = {"kind": self.kind, "passed": self.passed}
        if self.kind == "scale_values":
            data["amount"] = self.amount
        for key, message in (("message", self.message), ("detail", self.detail)):
            if message is not None:
                data[key] = message.to_dict() if translate is None else message.render(translate)
        if translate is not None:
            data["title"] = self.title().render(translate)
        return data


def title_for(stored: dict[str, Any]) -> Message | None:
    """The title of a stored property result (None for a kind this grader does not know)."""
    kind = stored.get("kind")
    if kind not in TITLES:
        return None
    amount = stored.get("amount")
    return PropertyResult(
        kind, "", False, False, float(amount) if isinstance(amount, (int, float)) else 0.0
    ).title()


def property_case_name(base: str, kind: str) -> str:
    return f"{base}{DERIVED_SEPARATOR}{kind}"


# --- derived cases ---------------------------------------------------------------------


def _rng(spec: ExerciseSpec, name: str) -> np.random.Generator:
    return np.random.default_rng([spec.seed, zlib.crc32(name.encode())])


def _key_axis_column(mask: np.ndarray, n_k: int) -> int | None:
    """The key position hidden from the most queries (None when the mask hides none)."""
    if mask.ndim < 1 or mask.shape[-1] != n_k:
        return None
    hidden_from = (~mask).reshape(-1, n_k).sum(axis=0)
    return int(np.argmax(hidden_from)) if hidden_from.max() > 0 else None


def _why_not(prop: PropertySpec, case: Case) -> str | None:
    """Why ``prop`` cannot be derived from ``case`` (None when it can)."""
    for name in prop.inputs:
        if name not in case.inputs:
            return f"has no input {name!r}"
        if case.inputs[name].dtype.kind not in "iuf":
            return f"input {name!r} is not numeric"
    first = case.inputs[prop.inputs[0]]
    if prop.kind in ("permute_keys", "future_values"):
        if any(case.inputs[n].ndim < 2 for n in prop.inputs):
            return "has an input that is not a matrix"
        n_k = first.shape[-2]
        if any(case.inputs[n].shape[-2] != n_k for n in prop.inputs):
            return f"has inputs {list(prop.inputs)} with different numbers of keys"
        if prop.kind == "permute_keys":
            if n_k < 2:
                return "has a single key"
            for name in prop.columns:
                col = case.inputs.get(name)
                if col is not None and (col.ndim < 1 or col.shape[-1] not in (1, n_k)):
                    return f"input {name!r} has no key axis"
        else:
            mask = case.inputs.get(prop.mask or "")
            if mask is None or mask.dtype.kind != "b":
                return f"has no boolean mask {prop.mask!r}"
            if _key_axis_column(mask, n_k) is None:
                return "has a mask that hides nothing"
    elif prop.kind in ("shift_keys", "shift_rows") and first.ndim < 1:
        return f"input {prop.inputs[0]!r} is a single number"
    elif prop.kind == "future_scores" and (first.ndim < 2 or first.shape[-1] != first.shape[-2]):
        return f"input {prop.inputs[0]!r} is not a square matrix of scores"
    return None


def _changed_inputs(spec: ExerciseSpec, prop: PropertySpec, case: Case) -> dict[str, np.ndarray]:
    rng = _rng(spec, property_case_name(case.name, prop.kind))
    inputs = dict(case.inputs)
    first = case.inputs[prop.inputs[0]].astype(np.float64)
    if prop.kind == "permute_keys":
        n_k = first.shape[-2]
        perm = rng.permutation(n_k)
        while np.array_equal(perm, np.arange(n_k)):
            perm = rng.permutation(n_k)
        for name in prop.inputs:
            inputs[name] = np.ascontiguousarray(case.inputs[name][..., perm, :])
        for name in prop.columns:
            col = case.inputs.get(name)
            if col is not None and col.shape[-1] == n_k:
                inputs[name] = np.ascontiguousarray(col[..., perm])
    elif prop.kind == "shift_keys":
        inputs[prop.inputs[0]] = first + prop.amount * rng.normal(size=first.shape[-1])
    elif prop.kind == "shift_rows":
        inputs[prop.inputs[0]] = first + prop.amount * rng.normal(size=(*first.shape[:-1], 1))
    elif prop.kind == "future_values":
        n_k = first.shape[-2]
        column = _key_axis_column(case.inputs[prop.mask or ""], n_k)
        for name in prop.inputs:
            changed = case.inputs[name].astype(np.float64)
            changed[..., column, :] += 3.0 * rng.normal(size=changed[..., column, :].shape)
            inputs[name] = changed
    elif prop.kind == "future_scores":
        n = first.shape[-1]
        above = np.triu(np.ones((n, n), dtype=bool), 1)
        inputs[prop.inputs[0]] = first + np.where(above, 5.0 * rng.normal(size=first.shape), 0.0)
    elif prop.kind == "scale_values":
        inputs[prop.inputs[0]] = prop.amount * first
    return inputs


def derive_property_cases(spec: ExerciseSpec, cases: list[Case]) -> list[Case]:
    """One changed case ``<base>~<kind>`` per property and base case."""
    derived = []
    for i, prop in enumerate(spec.properties):
        for case in select_bases(prop.bases, cases, partial(_why_not, prop), f"properties[{i}].base"):
            derived.append(
                Case(
                    name=property_case_name(case.name, prop.kind),
                    inputs=_changed_inputs(spec, prop, case),
                    hidden=case.hidden,
                    weight=case.weight,
                )
            )
    return derived


# --- checking --------------------------------------------------------------------------


def _unaffected_rows(prop: PropertySpec, case: Case, shape: tuple[int, ...]) -> np.ndarray | None:
    """future_values: True where an output row may not see the changed key position."""
    mask = case.inputs[prop.mask or ""]
    n_k = case.inputs[prop.inputs[0]].shape[-2]
    column = _key_axis_column(mask, n_k)
    if column is None or len(shape) < 2:
        return None
    blind = ~mask[..., column]  # (..., n_q)
    try:
        return np.broadcast_to(blind[..., None], shape)
    except ValueError:
        return None


def relation_error(
    prop: PropertySpec, base: Case, before: np.ndarray, after: np.ndarray, spec: ExerciseSpec
) -> tuple[bool, tuple[int, ...] | None, float]:
    """(holds, where it is broken worst, by how much) for one result array."""
    if before.shape != after.shape or before.dtype.kind not in "iuf" or after.dtype.kind not in "iuf":
        return False, None, float("nan")
    b, a = before.astype(np.float64), after.astype(np.float64)
    expected = prop.amount * b if prop.kind == "scale_values" else b
    region = np.ones(b.shape, dtype=bool)
    if prop.kind == "future_values":
        rows = _unaffected_rows(prop, base, b.shape)
        if rows is None:
            return False, None, float("nan")
        region = rows
    finite = np.isfinite(expected)
    scale = float(np.max(np.abs(expected[finite]), initial=0.0))
    close = np.isclose(a, expected, rtol=max(spec.rtol, 1e-6), atol=max(spec.atol, 1e-9) + 1e-7 * (1 + scale))
    close |= ~region
    if close.all():
        return True, None, 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.nan_to_num(np.abs(a - expected), nan=np.inf)
    err = np.where(close, -1.0, err)
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape)) if err.ndim else ()
    return False, idx, float(err[idx])


def check_property(
    prop: PropertySpec,
    base: Case,
    base_result: CaseResult,
    changed_result: CaseResult | None,
    spec: ExerciseSpec,
    *,
    author: bool = False,
) -> PropertyResult | None:
    """The relation on one base case; None when the base case gave no output to compare."""
    hidden = base.hidden and not author
    if not base_result.outputs or any(r not in base_result.outputs for r in prop.results):
        return None
    if any(
        base_result.outputs[r].dtype.kind not in "iuf" or not np.isfinite(base_result.outputs[r]).all()
        for r in prop.results
    ):
        return None  # NaN on the case itself: the case list says so, no relation to judge
    result = PropertyResult(
        kind=prop.kind, case=base.name, hidden=base.hidden, passed=False, amount=prop.amount
    )
    hint = Message(
        HINTS[prop.kind], {"factor": fmt_number(prop.amount)} if prop.kind == "scale_values" else {}
    )
    if changed_result is None or (changed_result.message and changed_result.message.msgid in UNFINISHED):
        return None
    if any(r not in changed_result.outputs for r in prop.results):
        # The changed input broke the code (an exception, no result): that is the finding.
        result.message = hint
        if changed_result.message is not None:
            result.detail = Message(M.PROPERTY_CHANGED_CASE_FAILED, {"reason": changed_result.message})
        return result
    for name in prop.results:
        holds, idx, error = relation_error(
            prop, base, base_result.outputs[name], changed_result.outputs[name], spec
        )
        if holds:
            continue
        result.message = hint
        if not hidden and idx is not None:
            shown = f"{spec.function}(...)" if name == "return" and spec.function else name
            result.detail = Message(
                M.PROPERTY_DETAIL, {"result": shown, "index": fmt_index(idx), "error": fmt_number(error)}
            )
        return result
    result.passed = True
    return result


def attach_properties(
    spec: ExerciseSpec,
    cases: list[Case],
    tests: list[CaseResult],
    derived: list[CaseResult],
    *,
    author: bool = False,
) -> None:
    """Append each property's result to its base case's result."""
    case_by_name = {c.name: c for c in cases}
    derived_by_name = {t.name: t for t in derived}
    for test in tests:
        base = case_by_name.get(test.name)
        if base is None:
            continue
        for prop in spec.properties:
            name = property_case_name(base.name, prop.kind)
            if name not in case_by_name:
                continue
            found = check_property(prop, base, test, derived_by_name.get(name), spec, author=author)
            if found is not None:
                test.properties.append(found)


def reference_problems(spec: ExerciseSpec, cases: list[Case], ref: Reference) -> list[str]:
    """Properties the instructor's own solution breaks (an authoring error: the relation or
    the case does not fit the exercise), as English sentences for the author."""
    problems = []
    case_by_name = {c.name: c for c in cases}
    for prop in spec.properties:
        for case in cases:
            if case.base is not None:
                continue
            changed = property_case_name(case.name, prop.kind)
            if changed not in case_by_name:
                continue
            before, after = ref.outputs.get(case.name), ref.outputs.get(changed)
            if before is None or after is None:
                continue
            for name in prop.results:
                if name in before and name in after:
                    holds, idx, error = relation_error(prop, case, before[name], after[name], spec)
                    if not holds:
                        problems.append(
                            f"the reference breaks property {prop.kind} on case {case.name!r} "
                            f"(result {name}, error {fmt_number(error)} at {fmt_index(idx or ())})"
                        )
    return problems


def behaviour(tests: list[CaseResult]) -> dict[str, list[str]]:
    """What a graded program does wrong beyond the cases: the properties it breaks and the
    probe diagnoses (message ids), e.g. for the misconception catalogue of validate_course."""
    broken = sorted({p.kind for t in tests for p in t.properties if not p.passed})
    diagnoses = sorted(
        {
            DIAGNOSIS_NAMES.get(m.msgid, m.msgid)
            for t in tests
            if t.probe is not None
            for m in t.probe.diagnoses
        }
    )
    return {"properties_broken": broken, "diagnoses": diagnoses}


# Short names of the probe diagnoses for reports (the msgids are sentences).
DIAGNOSIS_NAMES = {
    M.PROBE_SHAPE: "shape",
    M.PROBE_SHAPE_HIDDEN: "shape",
    M.PROBE_NOT_REAL: "not_real",
    M.PROBE_NONFINITE: "nonfinite",
    M.PROBE_NEGATIVE: "negative",
    M.PROBE_NEGATIVE_HIDDEN: "negative",
    M.PROBE_MASKED: "masked_weight",
    M.PROBE_MASKED_HIDDEN: "masked_weight",
    M.PROBE_COLUMNS_SUM: "wrong_axis",
    M.PROBE_OTHER_AXIS_SUMS: "wrong_axis",
    M.PROBE_ROWS_BELOW_ONE_MASK: "mask_after_softmax",
    M.PROBE_ROW_SUMS: "row_sums",
    M.PROBE_ROW_SUMS_HIDDEN: "row_sums",
    M.PROBE_TOO_PEAKED_SQRT_DK: "temperature_sqrt_dk",
    M.PROBE_TOO_FLAT_SQRT_DK: "temperature_flat_sqrt_dk",
    M.PROBE_TOO_PEAKED: "temperature",
    M.PROBE_TOO_FLAT: "temperature",
    M.PROBE_TOO_PEAKED_HIDDEN: "temperature",
    M.PROBE_TOO_FLAT_HIDDEN: "temperature",
    M.PROBE_DIFFERS: "differs",
    M.PROBE_DIFFERS_HIDDEN: "differs",
    M.PROBE_DID_NOT_RUN: "did_not_run",
}
