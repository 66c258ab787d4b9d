"""Weight probes: the student's own attention weights, and what is wrong with them.

``attention(Q, K, I, mask)`` with the identity over the keys as ``V`` returns the weight
matrix itself.  A ``[[probes]]`` entry of ``exercise.toml`` derives such a case from a base
case (``<base>~probe``, run in the same sandbox run and phase as its base), or reads a result
that already is the weights (``causal_weights(S)``).  The host compares the student's weights
with the reference's and tells, in words tied to a concept, what differs: rows that do not
sum to 1, negative weights, weight on masked positions, a softmax along another axis, a
temperature (the weights are k times too peaked: √d_k was forgotten).

Hidden probes give fixed texts only.  A number shown for a hidden probe is a size of the
case's own inputs (√d_k, as shape traces show sizes), chosen by the host when the student's
weights fit that hypothesis; never a value the student's code could choose freely.  The
matrices for the heatmaps are kept for visible probes only (they run in phase 0, before
any hidden input exists).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from . import messages as M
from .compare import fmt_index, fmt_number, fmt_shape
from .messages import Message
from .spec import DERIVED_SEPARATOR, Case, ExerciseSpec, ProbeSpec, select_bases

if TYPE_CHECKING:
    from .grade import CaseResult, Reference

PROBE = "probe"
MAX_SHOWN = 16  # heatmaps up to 16 x 16 (larger probes: diagnoses only)
TOL = 1e-6
TEMPERATURE_TOL = 0.03  # |factor / hypothesis - 1| below this names the hypothesis
# A derived case that never finished (the run's time ran out in the last phase, ...) says
# nothing about the student's attention: no report, rather than noise on a passing grade.
UNFINISHED = {M.CASE_NOT_RUN, M.CASE_STOPPED, M.CASE_TIMEOUT, M.CASE_MEMORY, M.CASE_OUTPUT_LIMIT}


@dataclass
class ProbeReport:
    """What the probe of one base case found (attached to that case's result)."""

    case: str
    hidden: bool
    matches: bool  # the student's weights equal the reference's
    diagnoses: list[Message] = field(default_factory=list)
    # Visible probes only: one (n_q, n_k) matrix each, for the heatmaps.
    student: np.ndarray | None = None
    reference: np.ndarray | None = None
    allowed: np.ndarray | None = None  # bool, False where the mask forbids looking
    sliced: bool = False  # a batched probe: the matrices are its first slice

    def to_dict(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        """Language-neutral (messages as msgid + params, for storage), or with ``translate``
        the texts rendered (the CLI's JSON)."""
        data: dict[str, Any] = {
            "case": self.case,
            "hidden": self.hidden,
            "matches": self.matches,
            "diagnoses": [m.to_dict() if translate is None else m.render(translate) for m in self.diagnoses],
        }
        if not self.hidden and self.student is not None and self.reference is not None:
            data["student"] = _rounded(self.student)
            data["reference"] = _rounded(self.reference)
            data["allowed"] = None if self.allowed is None else self.allowed.tolist()
            data["sliced"] = self.sliced
        return data


def _rounded(matrix: np.ndarray) -> list[list[float]]:
    return [[float(f"{float(x):.6g}") for x in row] for row in matrix]


# --- derived cases ---------------------------------------------------------------------


def probe_case_name(base: str) -> str:
    return f"{base}{DERIVED_SEPARATOR}{PROBE}"


def _fits(probe: ProbeSpec, case: Case) -> str | None:
    """Why ``case`` cannot be probed (None when it can)."""
    needed = [n for n in (probe.values, probe.keys) if n]
    for name in needed:
        if name not in case.inputs:
            return f"has no input {name!r}"
        if case.inputs[name].ndim < 2:
            return f"input {name!r} is not a matrix"
    return None


def derive_probe_cases(spec: ExerciseSpec, cases: list[Case]) -> list[Case]:
    """``<base>~probe`` for every probe with ``values``: that input becomes the identity over
    the keys (its second-to-last axis), broadcast over its leading axes."""
    derived = []
    for i, probe in enumerate(spec.probes):
        for case in select_bases(probe.bases, cases, partial(_fits, probe), f"probes[{i}].base"):
            if probe.values is None:
                continue
            values = case.inputs[probe.values]
            n_k = values.shape[-2]
            eye = np.broadcast_to(np.eye(n_k), (*values.shape[:-2], n_k, n_k)).copy()
            derived.append(
                Case(
                    name=probe_case_name(case.name),
                    inputs={**case.inputs, probe.values: eye},
                    hidden=case.hidden,
                    weight=case.weight,
                )
            )
    return derived


# --- diagnoses -------------------------------------------------------------------------


def allowed_positions(probe: ProbeSpec, case: Case, shape: tuple[int, ...]) -> np.ndarray | None:
    """Where the weights may be non-zero, broadcast to ``shape`` (None: no mask)."""
    if len(shape) < 2:
        return None
    if probe.mask == "causal":
        n_q, n_k = shape[-2:]
        return np.broadcast_to(np.tri(n_q, n_k, dtype=bool), shape)
    mask = case.inputs.get(probe.mask) if probe.mask else None
    if mask is None or mask.dtype.kind != "b":
        return None
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        return None


def _sums_to_one(sums: np.ndarray) -> bool:
    return bool(np.all(np.abs(sums - 1.0) <= TOL * 10))


def temperature(student: np.ndarray, reference: np.ndarray, allowed: np.ndarray | None) -> float | None:
    """The factor k with student ≈ softmax(k · scores), from log-ratios within rows.

    Centred log-weights of a row are the row's scores up to the factor (the log of the
    softmax's denominator is a constant of the row), so k is the least-squares slope of the
    student's centred log-weights against the reference's.  None when the reference rows
    are (nearly) uniform or the student's weights are not a tempered softmax of them.
    """
    if student.shape != reference.shape or student.ndim < 1:
        return None
    w = student.reshape(-1, student.shape[-1])
    r = reference.reshape(-1, reference.shape[-1])
    ok = np.ones(w.shape, dtype=bool) if allowed is None else allowed.reshape(w.shape).copy()
    ok &= (r > 1e-12) & (w > 1e-300)
    sxx = sxy = syy = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        for row_w, row_r, row_ok in zip(w, r, ok):
            if row_ok.sum() < 2:
                continue
            x = np.log(row_r[row_ok])
            y = np.log(row_w[row_ok])
            x, y = x - x.mean(), y - y.mean()
            sxx += float(x @ x)
            sxy += float(x @ y)
            syy += float(y @ y)
    if sxx < 1e-8 or syy < 1e-12 or not math.isfinite(sxy):
        return None
    if sxy * sxy < 0.999 * sxx * syy:  # not a straight line through the origin: not a temperature
        return None
    return sxy / sxx


def _temperature_message(factor: float, d_k: int | None, hidden: bool) -> Message:
    root = math.sqrt(d_k) if d_k else None
    if root is not None and root > 1 and abs(factor / root - 1) < TEMPERATURE_TOL:
        return Message(M.PROBE_TOO_PEAKED_SQRT_DK, {"factor": f"{root:.3g}", "d_k": d_k})
    if root is not None and root > 1 and abs(factor * root - 1) < TEMPERATURE_TOL:
        return Message(M.PROBE_TOO_FLAT_SQRT_DK, {"factor": f"{root:.3g}", "d_k": d_k})
    if hidden:
        return Message(M.PROBE_TOO_PEAKED_HIDDEN if factor > 1 else M.PROBE_TOO_FLAT_HIDDEN)
    if factor > 1:
        return Message(M.PROBE_TOO_PEAKED, {"factor": f"{factor:.2g}"})
    return Message(M.PROBE_TOO_FLAT, {"factor": f"{1 / factor:.2g}"})


def diagnose(
    student: np.ndarray,
    reference: np.ndarray,
    allowed: np.ndarray | None,
    *,
    d_k: int | None = None,
    hidden: bool = False,
) -> list[Message]:
    """What is wrong with the student's weights, most basic first (empty when they match).

    For ``hidden`` probes every message is a fixed text (at most √d_k, a size of the case).
    """
    if student.shape != reference.shape:
        if hidden:
            return [Message(M.PROBE_SHAPE_HIDDEN)]
        return [
            Message(M.PROBE_SHAPE, {"expected": fmt_shape(reference.shape), "got": fmt_shape(student.shape)})
        ]
    if student.dtype.kind not in "iuf":
        return [Message(M.PROBE_NOT_REAL)]
    w = student.astype(np.float64)
    if not np.isfinite(w).all():
        return [Message(M.PROBE_NONFINITE)]
    if np.allclose(w, reference, rtol=1e-5, atol=1e-8):
        return []
    found: list[Message] = []
    if (w < -TOL).any():
        if hidden:
            found.append(Message(M.PROBE_NEGATIVE_HIDDEN))
        else:
            idx = np.unravel_index(int(np.argmin(w)), w.shape)
            found.append(Message(M.PROBE_NEGATIVE, {"index": fmt_index(idx), "value": fmt_number(w[idx])}))
    if allowed is not None and (~allowed).any():
        leak = np.where(allowed, 0.0, np.abs(w))
        if (leak > TOL).any():
            if hidden:
                found.append(Message(M.PROBE_MASKED_HIDDEN))
            else:
                idx = np.unravel_index(int(np.argmax(leak)), w.shape)
                found.append(
                    Message(
                        M.PROBE_MASKED,
                        {
                            "index": fmt_index(idx),
                            "row": int(idx[-2]),
                            "column": int(idx[-1]),
                            "value": fmt_number(w[idx]),
                        },
                    )
                )
    sums = w.sum(axis=-1)
    if not _sums_to_one(sums):
        axis = next((a for a in range(w.ndim - 2, -1, -1) if _sums_to_one(w.sum(axis=a))), None)
        if axis == w.ndim - 2:
            found.append(Message(M.PROBE_COLUMNS_SUM))
        elif axis is not None:
            found.append(Message(M.PROBE_OTHER_AXIS_SUMS, {"axis": axis}))
        elif allowed is not None and (~allowed).any() and bool(np.all(sums <= 1 + TOL)):
            found.append(Message(M.PROBE_ROWS_BELOW_ONE_MASK))
        elif hidden:
            found.append(Message(M.PROBE_ROW_SUMS_HIDDEN))
        else:
            bad = np.abs(sums - 1.0)
            idx = np.unravel_index(int(np.argmax(bad)), sums.shape)
            found.append(Message(M.PROBE_ROW_SUMS, {"row": fmt_index(idx), "sum": fmt_number(sums[idx])}))
    if found:
        return found
    factor = temperature(w, reference, allowed)
    if factor is not None and abs(factor - 1) > TEMPERATURE_TOL:
        return [_temperature_message(factor, d_k, hidden)]
    if hidden:
        return [Message(M.PROBE_DIFFERS_HIDDEN)]
    err = np.abs(w - reference)
    idx = np.unravel_index(int(np.argmax(err)), w.shape)
    return [
        Message(
            M.PROBE_DIFFERS,
            {"index": fmt_index(idx), "expected": fmt_number(reference[idx]), "got": fmt_number(w[idx])},
        )
    ]


# --- attaching probe reports to the graded cases ----------------------------------------


def _first_slice(matrix: np.ndarray) -> np.ndarray:
    while matrix.ndim > 2:
        matrix = matrix[0]
    return matrix


def probe_report(
    probe: ProbeSpec,
    base: Case,
    student: CaseResult | None,
    reference: dict[str, np.ndarray] | None,
    *,
    author: bool = False,
) -> ProbeReport | None:
    """The report for one probed case; None when there is nothing to judge (no reference,
    or the case never ran: the case list already says why)."""
    if reference is None or probe.result not in reference or student is None:
        return None
    hidden = base.hidden and not author
    expected = reference[probe.result]
    report = ProbeReport(case=base.name, hidden=base.hidden, matches=False)
    got = student.outputs.get(probe.result)
    if got is None:
        if student.message is None or student.message.msgid in UNFINISHED:
            return None
        report.diagnoses = [Message(M.PROBE_DID_NOT_RUN, {"reason": student.message})]
        return report
    allowed = allowed_positions(probe, base, expected.shape)
    d_k = None
    if probe.keys and probe.keys in base.inputs and base.inputs[probe.keys].ndim >= 1:
        d_k = int(base.inputs[probe.keys].shape[-1])
    report.diagnoses = diagnose(got, expected, allowed, d_k=d_k, hidden=hidden)
    report.matches = not report.diagnoses
    if (
        not hidden
        and got.shape == expected.shape
        and got.ndim >= 2
        and got.dtype.kind in "iuf"
        and max(got.shape[-2:]) <= MAX_SHOWN
        and bool(np.isfinite(got).all())  # stored as JSON: no NaN or inf (PostgreSQL refuses them)
    ):
        report.student = _first_slice(got.astype(np.float64))
        report.reference = _first_slice(expected)
        report.allowed = None if allowed is None else _first_slice(allowed)
        report.sliced = got.ndim > 2
    return report


def attach_probes(
    spec: ExerciseSpec,
    cases: list[Case],
    ref: Reference,
    tests: list[CaseResult],
    derived: list[CaseResult],
) -> None:
    """Set ``probe`` on the results of the probed base cases."""
    derived_by_name = {t.name: t for t in derived}
    case_by_name = {c.name: c for c in cases}
    for probe in spec.probes:
        for test in tests:
            base = case_by_name.get(test.name)
            if base is None or test.probe is not None:
                continue
            if not test.outputs:
                continue  # the case itself gave no result: the case list says why
            if probe.values is None:
                if not _selected(probe, base):
                    continue
                student: CaseResult | None = test
                reference = ref.outputs.get(base.name)
            else:
                name = probe_case_name(base.name)
                if name not in case_by_name:
                    continue
                student = derived_by_name.get(name)
                reference = ref.outputs.get(name)
            test.probe = probe_report(probe, base, student, reference)


def _selected(probe: ProbeSpec, case: Case) -> bool:
    if "*" in probe.bases:
        return _fits(probe, case) is None
    return case.name in probe.bases


__all__ = [
    "ProbeReport",
    "allowed_positions",
    "attach_probes",
    "derive_probe_cases",
    "diagnose",
    "probe_case_name",
    "temperature",
]
