"""Shape traces: a shape error told in the exercise's own axis names.

When a case stops with NumPy's ValueError for a matrix product (``@``, ``np.matmul``,
``np.dot``) or for broadcasting, the message names the arrays and axes involved, from the
case's inputs and the exercise's ``shape_names`` (``Q = ["n_q", "d_k"]``, aligned to the
*last* axes, so leading batch axes need no name)::

    `Q` (n_q=2, d_k=4) @ `K` (n_k=3, d_k=4): the inner axes are 4 and 3 — should it be `K.T`?

The exception text comes from the sandbox and is untrusted: only the sizes in it are read,
and only to pick among the case's own inputs, whose shapes the host knows.  The message is
built from those host-known shapes and names alone, so it may be shown on hidden cases
(shapes, never values).  Sizes that match no input give no trace.  What remains is a choice:
which of a few known names and inputs a message names (a few bits per hidden case, like the
choice of exception name, and far less than the pass/fail of the case already tells).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from . import messages as M
from .messages import Message

MATMUL = re.compile(
    r"matmul: Input operand 1 has a mismatch in its core dimension 0.*\(size (\d+) is different from (\d+)\)"
)
DOT = re.compile(r"shapes \([\d, ]*\) and \([\d, ]*\) not aligned: (\d+) \(dim \d+\) != (\d+) \(dim \d+\)")
BROADCAST = re.compile(r"operands could not be broadcast together with shapes ((?:\([\d,]*\) ?){2,})")
SHAPE = re.compile(r"\(([\d,]*)\)")


@dataclass(frozen=True)
class Operand:
    name: str
    shape: tuple[int, ...]
    axes: tuple[str, ...]  # names of the last len(axes) axes

    def axes_text(self) -> str:
        """(n_q=2, d_k=4): the named axes with their sizes (leading batch axes as sizes)."""
        named = dict(zip(range(len(self.shape) - len(self.axes), len(self.shape)), self.axes))
        return (
            "("
            + ", ".join(f"{named[i]}={n}" if i in named else str(n) for i, n in enumerate(self.shape))
            + ")"
        )

    def describe(self) -> str:
        """``Q`` (n_q=2, d_k=4)."""
        return f"`{self.name}` {self.axes_text()}"


def _operands(inputs: dict[str, np.ndarray], shape_names: dict[str, tuple[str, ...]]) -> list[Operand]:
    found = []
    for name, arr in inputs.items():
        axes = shape_names.get(name, ())
        if arr.ndim >= 2 and len(axes) <= arr.ndim:
            found.append(Operand(name, tuple(int(n) for n in arr.shape), tuple(axes)))
    return found


def _axis_name(operands: list[Operand], size: int) -> str | None:
    """The one axis name whose size is ``size`` in this case (None when none or ambiguous)."""
    names = {
        op.axes[i - (len(op.shape) - len(op.axes))]
        for op in operands
        for i, n in enumerate(op.shape)
        if n == size and i >= len(op.shape) - len(op.axes)
    }
    return names.pop() if len(names) == 1 else None


PRODUCT = re.compile(
    r"\b([A-Za-z_]\w*)\s*@\s*([A-Za-z_]\w*)\b(?!\s*\.)|"
    r"np\.(?:dot|matmul)\(\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*\)"
)


def _matmul(left_cols: int, right_rows: int, operands: list[Operand], line: str = "") -> Message | None:
    """``left @ right`` failed: ``left`` has ``left_cols`` columns, ``right`` has ``right_rows`` rows."""
    known_sizes = {n for op in operands for n in op.shape}
    if left_cols not in known_sizes or right_rows not in known_sizes:
        return None  # a number the case does not have came from the sandbox: show nothing of it
    by_name = {op.name: op for op in operands}
    # The products the failing line writes (``Q @ K``, ``np.dot(Q, K)``), in order: the first
    # whose operands have exactly these sizes is the one that failed.
    for found in PRODUCT.finditer(line[:300] if isinstance(line, str) else ""):
        names = [g for g in found.groups() if g]
        left_op, right_op = by_name.get(names[0]), by_name.get(names[1])
        if left_op and right_op and left_op.shape[-1] == left_cols and right_op.shape[-2] == right_rows:
            rights, lefts = [right_op], [left_op]
            break
    else:
        rights = [op for op in operands if op.shape[-2] == right_rows]
        lefts = [op for op in operands if op.shape[-1] == left_cols and op not in rights]
    a_name, b_name = _axis_name(operands, left_cols), _axis_name(operands, right_rows)
    a = f"{left_cols} ({a_name})" if a_name else str(left_cols)
    b = f"{right_rows} ({b_name})" if b_name else str(right_rows)
    if len(rights) != 1 or len(lefts) != 1:
        if a_name is None and b_name is None:
            return None
        return Message(M.SHAPE_MATMUL_AXES, {"a": a, "b": b})
    left, right = lefts[0], rights[0]
    params = {"left": left.describe(), "right": right.describe(), "a": a, "b": b}
    # Q @ K for Q @ K.T: the right operand's last axis is the left one's (by name, else by size).
    if right.axes and left.axes:
        fits = right.axes[-1] == left.axes[-1]
    else:
        fits = right.shape[-1] == left_cols
    if fits:
        return Message(M.SHAPE_MATMUL_FIX, {**params, "fix": f"`{right.name}.T`"})
    return Message(M.SHAPE_MATMUL, params)


def _broadcast(shapes: list[tuple[int, ...]], operands: list[Operand]) -> Message | None:
    """Two shapes that do not broadcast.  A shape is shown only when it is one of the case's
    inputs' whole shape (the sandbox wrote the tuple: anything else could spell a hidden value
    in ones and known sizes); otherwise only the two clashing axes are named."""
    known_sizes = {n for op in operands for n in op.shape}
    if len(shapes) != 2:
        return None
    first, second = shapes
    for offset in range(1, min(len(first), len(second)) + 1):
        a, b = first[-offset], second[-offset]
        if a not in (b, 1) and b != 1:
            if a not in known_sizes or b not in known_sizes:
                return None
            axis_a = _axis_name(operands, a) or str(a)
            axis_b = _axis_name(operands, b) or str(b)
            whole = {op.shape: op for op in operands}
            if first in whole and second in whole:
                return Message(
                    M.SHAPE_BROADCAST,
                    {
                        # Shapes only: an intermediate array may have an input's shape without being it.
                        "left": whole[first].axes_text(),
                        "right": whole[second].axes_text(),
                        "a": axis_a,
                        "b": axis_b,
                    },
                )
            return Message(M.SHAPE_BROADCAST_AXES, {"a": axis_a, "b": axis_b})
    return None


def shape_trace(
    detail: str, inputs: dict[str, np.ndarray], shape_names: dict[str, tuple[str, ...]], line: str = ""
) -> Message | None:
    """A message for a shape error in ``detail`` (untrusted text), or None.

    ``line`` (the student's failing line, untrusted too) narrows the operands to the inputs it
    names: ``Q @ K`` and ``Q @ V`` fail with the same sizes when ``K`` and ``V`` have as many rows.
    """
    operands = _operands(inputs, shape_names)
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", line[:300])) if isinstance(line, str) else set()
    narrowed = [op for op in operands if op.name in named]
    if narrowed:
        operands = narrowed
    if not operands or not isinstance(detail, str):
        return None
    detail = detail[:1000]
    if found := MATMUL.search(detail):
        return _matmul(int(found.group(2)), int(found.group(1)), operands, line)
    if found := DOT.search(detail):
        return _matmul(int(found.group(1)), int(found.group(2)), operands, line)
    if found := BROADCAST.search(detail):
        shapes = [tuple(int(n) for n in s.split(",") if n) for s in SHAPE.findall(found.group(1))]
        return _broadcast(shapes, operands)
    return None
