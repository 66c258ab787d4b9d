"""What instructors read about an item's variants: which one a student got ("Varyant 3 / 20"),
its parameters (numbers in the page's language, lists as matrices), and for an exercise the
hidden inputs of that variant, read from its grading data on disk. Instructor pages only:
nothing here ever reaches a student."""

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from django.utils.formats import get_format
from django.utils.translation import gettext as _

from grader import bundles

MAX_ROWS = 12  # a matrix shows at most this many rows and columns, then says how many more
MAX_COLS = 12
MAX_SLICES = 4  # of an array with more than two axes, the first few matrices
MAX_CASES = 20  # hidden cases shown per variant


def variant_label(index: int, count: int) -> str:
    """ "Varyant 3 / 20": the 1-based number students' variants are counted by everywhere."""
    return _("Variant %(number)s of %(count)s") % {"number": index + 1, "count": count}


def number_text(value: Any) -> str:
    """A number as the page writes numbers (a decimal comma in Turkish), to 4 significant
    digits; other values as text."""
    if isinstance(value, (bool, np.bool_)):
        return _("true") if value else _("false")
    if isinstance(value, (int, np.integer)):
        text = str(int(value))
    elif isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return str(value)
        text = str(int(value)) if value == int(value) and abs(value) < 1e15 else f"{value:.4g}"
        text = text.replace(".", get_format("DECIMAL_SEPARATOR"))
    else:
        return str(value)
    return "\u2212" + text[1:] if text.startswith("-") else text


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating, np.bool_))


def _numeric_list(value: list) -> bool:
    """A non-empty vector of numbers, or a matrix of them (rows of one length)."""
    if not value:
        return False
    if all(_is_number(v) for v in value):
        return True
    return all(isinstance(row, list) and row and all(_is_number(v) for v in row) for row in value) and (
        len({len(row) for row in value}) == 1
    )


def _shape_text(shape: Iterable[int]) -> str:
    return "×".join(str(n) for n in shape)


def _matrix(rows: list[list[Any]]) -> dict:
    shown = [[number_text(cell) for cell in row[:MAX_COLS]] for row in rows[:MAX_ROWS]]
    width = max((len(row) for row in rows), default=0)
    return {
        "rows": shown,
        "more_rows": max(len(rows) - MAX_ROWS, 0),
        "more_cols": max(width - MAX_COLS, 0),
    }


def value_view(name: str, value: Any) -> dict:
    """One parameter or input, ready for ``instructors/_value.html``: ``kind`` is "scalar"
    (``text``), "matrix" (``rows`` of cell texts, a vector being one row; ``shape``), "stack"
    (the first ``slices`` of an array with more axes) or "text"."""
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, list) and _numeric_list(value):
        array = np.asarray(value)
    elif _is_number(value):
        return {"name": name, "kind": "scalar", "text": number_text(value)}
    else:
        text = value if isinstance(value, str) else repr(value)
        return {"name": name, "kind": "text", "text": text}
    shape = _shape_text(array.shape)
    if array.ndim == 0:
        return {"name": name, "kind": "scalar", "text": number_text(array.item())}
    if array.ndim == 1:
        # A vector: one row, said as "a vector of 3" rather than by a shape.
        return {
            "name": name,
            "kind": "matrix",
            "shape": "",
            "length": len(array),
            **_matrix([array.tolist()]),
        }
    if array.ndim == 2:
        return {"name": name, "kind": "matrix", "shape": shape, **_matrix(array.tolist())}
    flat = array.reshape(-1, *array.shape[-2:])
    slices = []
    for position in range(min(len(flat), MAX_SLICES)):
        where = np.unravel_index(position, array.shape[:-2])
        label = "[" + ", ".join(str(int(i)) for i in where) + "]"
        slices.append({"label": label, **_matrix(flat[position].tolist())})
    return {
        "name": name,
        "kind": "stack",
        "shape": shape,
        "slices": slices,
        "more_slices": max(len(flat) - MAX_SLICES, 0),
    }


def params_view(params: dict) -> list[dict]:
    """A variant's parameters in the generator's order, each as ``value_view``."""
    return [value_view(name, value) for name, value in (params or {}).items()]


def params_summary(params: dict) -> list[str]:
    """The parameters in short parts for a table's line: numbers and a vector's first numbers
    written out, a matrix by its shape (["d_k = 16", "q = [5 3 3]", "Q: 2×3"])."""
    parts = []
    for view in params_view(params):
        if view["kind"] in ("scalar", "text"):
            text = view["text"] if len(view["text"]) <= 40 else view["text"][:39] + "…"
            parts.append(f"{view['name']} = {text}")
        elif view["kind"] == "matrix" and not view["shape"]:  # a vector: its first numbers
            more = " …" if view["length"] > 4 else ""
            parts.append(f"{view['name']} = [{' '.join(view['rows'][0][:4])}{more}]")
        else:
            parts.append(f"{view['name']}: {view['shape']}")
    return parts


def exercise_variant_dir(exercise, index: int):
    """Where the grading data of an exercise's variant ``index`` is (its current version)."""
    target = bundles.bundle_path("exercises", exercise.course.slug, exercise.slug, exercise.content_hash)
    return bundles.variant_dir(target, index)


def hidden_inputs(exercise, index: int) -> dict:
    """The hidden cases of an exercise's variant ``index`` with their inputs, for the instructor:
    ``{"cases": [{"name", "inputs": [value_view]}], "more": n, "missing": bool}``; ``missing``
    when this machine has no grading data for it (the course was not imported here)."""
    try:
        _spec, cases, _reference = bundles.load(exercise.spec, exercise_variant_dir(exercise, index))
    except (OSError, ValueError, KeyError):
        return {"cases": [], "more": 0, "missing": True}
    hidden = [case for case in cases if case.hidden]
    shown = [
        {"name": case.name, "inputs": [value_view(name, array) for name, array in case.inputs.items()]}
        for case in hidden[:MAX_CASES]
    ]
    return {"cases": shown, "more": max(len(hidden) - MAX_CASES, 0), "missing": False}
