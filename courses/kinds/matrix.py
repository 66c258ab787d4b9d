"""Matrix answers: a small grid of numbers, graded cell by cell with a tolerance.

The student types each cell, or pastes the whole matrix (``[[1, 2], [3, 4]]``,
``np.array([[…]])``, NumPy's printout, one row per line or rows split by ``;``); numbers are read
as numeric answers read them (``0,5`` and ``0.5``). Feedback marks every cell that is not right
(never its right value, until the answer is shown); a known wrong matrix (the transpose, the
unscaled scores) gives its author's hint.
"""

import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable

from django.utils.formats import number_format
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .base import (
    Answered,
    AnswerError,
    Choice,
    Grade,
    NotGradable,
    QuestionKind,
    SpecProblem,
    check_table_keys,
    expect,
    optional_text,
    register,
)
from .forms import MatrixForm
from .numeric import AmbiguousNumber, parse_number

MAX_SIDE = 8  # rows and columns: a matrix a student types by hand
MAX_CELL_CHARS = 32
MAX_PASTE_CHARS = 2000
MAX_LABEL_CHARS = 40
# How many wrong cells the feedback's sentence names; the grid marks them all.
NAMED_CELLS = 4


class MatrixTextError(ValueError):
    """A pasted text that is not a matrix; the message says what to change."""


@register
class Matrix(QuestionKind):
    name = "matrix"
    label = gettext_lazy("matrix")
    keys = {"answer", "rows", "cols", "tolerance", "relative", "row_labels", "col_labels", "wrong"}
    required = {"answer", "tolerance"}

    def authoring_form(self):
        return MatrixForm

    # -- authoring -------------------------------------------------------------------------
    def validate(self, data, render):
        self.check_keys(data)
        answer = _spec_matrix(data["answer"], ("answer",))
        rows, cols = len(answer), len(answer[0])
        for key, size, what in (("rows", rows, "rows"), ("cols", cols, "columns")):
            if key in data:
                given = expect(data[key], int, (key,), key)
                if given != size:
                    raise SpecProblem((key,), f"{key} = {given}, but answer has {size} {what}")
        tolerance = expect(data["tolerance"], (int, float), ("tolerance",), "tolerance")
        if not math.isfinite(tolerance) or tolerance < 0:
            raise SpecProblem(("tolerance",), "tolerance must be a finite number ≥ 0")
        spec = {
            "answer": answer,
            "tolerance": float(tolerance),
            "relative": expect(data.get("relative", False), bool, ("relative",), "relative"),
            "row_labels": _labels(data, "row_labels", rows),
            "col_labels": _labels(data, "col_labels", cols),
            "wrong": [],
        }
        for index, entry in enumerate(expect(data.get("wrong", []), list, ("wrong",), "wrong")):
            keys = ("wrong", index)
            expect(entry, dict, keys, "each wrong matrix")
            check_table_keys(entry, {"matrix", "misconception", "hint"}, keys, "wrong matrix")
            if "matrix" not in entry:
                raise SpecProblem(keys, "a wrong matrix needs its matrix = [[…], …]")
            matrix = _spec_matrix(entry["matrix"], keys + ("matrix",))
            if (len(matrix), len(matrix[0])) != (rows, cols):
                raise SpecProblem(
                    keys + ("matrix",),
                    f"the wrong matrix is {len(matrix)}×{len(matrix[0])}, the answer {rows}×{cols}: "
                    "students can only type the answer's shape",
                )
            if _all_close(spec, matrix, answer):
                raise SpecProblem(keys + ("matrix",), "the wrong matrix is the answer (within the tolerance)")
            spec["wrong"].append(
                {
                    "matrix": matrix,
                    "misconception": expect(
                        entry.get("misconception", ""), str, keys + ("misconception",), "misconception"
                    ),
                    "hint_html": optional_text(entry, "hint", keys, render),
                }
            )
        return spec

    # -- answering -------------------------------------------------------------------------
    def context(self, spec, seed):
        row_labels, col_labels = spec["row_labels"], spec["col_labels"]
        return {
            "row_count": len(spec["answer"]),
            "col_count": len(spec["answer"][0]),
            "col_labels": col_labels,
            "has_row_labels": bool(row_labels),
            "rows": [
                {
                    "label": row_labels[i] if row_labels else "",
                    "cells": [
                        {
                            "name": f"cell-{i}-{j}",
                            "row": i + 1,
                            "col": j + 1,
                            "row_label": row_labels[i] if row_labels else "",
                            "col_label": col_labels[j] if col_labels else "",
                        }
                        for j in range(len(row))
                    ],
                }
                for i, row in enumerate(spec["answer"])
            ],
        }

    def answer_from_post(self, spec, post):
        # A missing field is None: the form always sends every cell (clean_answer refuses it).
        return {
            "matrix": [
                [post.get(f"cell-{i}-{j}") for j in range(len(row))] for i, row in enumerate(spec["answer"])
            ],
            "paste": post.get("paste", ""),
        }

    def clean_answer(self, spec, answer):
        rows, cols = len(spec["answer"]), len(spec["answer"][0])
        if not isinstance(answer, dict) or not answer or not set(answer) <= {"matrix", "paste"}:
            raise AnswerError(_('expected {"matrix": [[<number>, …], …]}'))
        paste = answer.get("paste", "")
        matrix = answer.get("matrix")
        if isinstance(matrix, str):  # the whole matrix as text (the command line's JSON)
            paste, matrix = matrix, None
        if not isinstance(paste, str):
            raise AnswerError(_("the pasted matrix must be text"))
        # Browsers submit a textarea's newlines as CRLF: its maxlength counts them as one character.
        paste = paste.replace("\r\n", "\n")
        if len(paste) > MAX_PASTE_CHARS:
            raise AnswerError(
                _("the pasted matrix is longer than %(limit)d characters") % {"limit": MAX_PASTE_CHARS}
            )
        if paste.strip():
            try:
                cells = split_matrix_text(paste, cols)
            except MatrixTextError as problem:
                raise NotGradable(str(problem)) from None
            _check_pasted_shape(cells, rows, cols)
            dot_is_decimal = is_code_notation(paste)
        else:
            dot_is_decimal = False  # a cell typed "1.125" in Turkish is asked again
            if (
                not isinstance(matrix, list)
                or len(matrix) != rows
                or not all(isinstance(row, list) and len(row) == cols for row in matrix)
            ):
                raise AnswerError(
                    _("a grid of %(rows)d × %(cols)d cells is expected") % {"rows": rows, "cols": cols}
                )
            cells = matrix
            for row in cells:
                for cell in row:
                    if cell is None or isinstance(cell, bool) or not isinstance(cell, (str, int, float)):
                        raise AnswerError(_("every cell must be a number or a text"))
                    if isinstance(cell, str) and len(cell) > MAX_CELL_CHARS:
                        raise AnswerError(
                            _("a cell is longer than %(limit)d characters") % {"limit": MAX_CELL_CHARS}
                        )
            if all(isinstance(cell, str) and not cell.strip() for row in cells for cell in row):
                raise NotGradable(_("Fill in the grid (or paste the whole matrix), then check your answer."))
        return {
            "matrix": [
                [_cell_value(cell, i, j, dot_is_decimal) for j, cell in enumerate(row)]
                for i, row in enumerate(cells)
            ]
        }

    def grade(self, spec, answer):
        target, matrix = spec["answer"], answer["matrix"]
        if _shape(matrix) == _shape(target):
            marks = [[_close(spec, v, t) for v, t in zip(row, goal)] for row, goal in zip(matrix, target)]
        else:  # an answer to the question before a re-import changed its shape
            marks = [[False for _cell in row] for row in target]
        right = sum(sum(row) for row in marks)
        total = sum(len(row) for row in marks)
        hint, misconceptions = "", []
        if right < total:
            for wrong in spec["wrong"]:
                if _shape(wrong["matrix"]) == _shape(matrix) and _all_close(spec, matrix, wrong["matrix"]):
                    hint = wrong["hint_html"]
                    if wrong["misconception"]:
                        misconceptions.append(wrong["misconception"])
                    break
        return Grade(
            score=round(right / total, 4),
            correct=right == total,
            feedback=[{"marks": marks, "hint_html": hint}],
            misconceptions=misconceptions,
        )

    # Marks per cell give no cell's value away (unlike marks per pair of a matching, which
    # leave few choices): they are shown at once, as a numeric answer's ✓ or ✗ is.
    def feedback_items(self, spec, answer, grade_feedback):
        entry = grade_feedback[0]
        marks, matrix = entry["marks"], answer["matrix"]
        wrong = [(i, j) for i, row in enumerate(marks) for j, ok in enumerate(row) if not ok]
        total = sum(len(row) for row in marks)
        if not wrong:
            summary = _("All %(total)d cells are right.") % {"total": total}
        elif len(wrong) <= NAMED_CELLS:
            summary = ngettext(
                "%(n)d of %(total)d cells is not right yet: %(cells)s.",
                "%(n)d of %(total)d cells are not right yet: %(cells)s.",
                len(wrong),
            ) % {
                "n": len(wrong),
                "total": total,
                "cells": "; ".join(_cell_name(spec, i, j) for i, j in wrong),
            }
        else:  # a list that long reads worse than the grid
            summary = _("%(n)d of %(total)d cells are not right yet: they are marked in the grid below.") % {
                "n": len(wrong),
                "total": total,
            }
        return [
            {
                "correct": not wrong,
                "label_html": escape(summary),
                "html": _grid_html(spec, matrix, marks),
                "hint_html": entry.get("hint_html", ""),
            }
        ]

    def wrong_parts(self, spec, answer, grade_feedback):
        # One feedback item sums up the grid: each wrong cell is a part.
        return sum(1 for row in grade_feedback[0]["marks"] for ok in row if not ok)

    def solution_items(self, spec):
        rows, cols = _shape(spec["answer"])
        return [
            {
                "label_html": escape(_("The %(rows)d × %(cols)d matrix:") % {"rows": rows, "cols": cols}),
                "html": _grid_html(spec, spec["answer"], None),
            }
        ]

    # -- statistics: which cells students get wrong, and the wrong matrices they typed -------
    stats_template = "instructors/kinds/matrix.html"

    def choice_keys(self, spec, answered):
        matrix = (answered.answer or {}).get("matrix")
        if answered.correct or not isinstance(matrix, list):
            return []
        return [tuple(tuple(row) for row in matrix)]

    def describe(self, spec, key):
        return Choice("[" + " ".join("[" + " ".join(_cell_text(v) for v in row) + "]" for row in key) + "]")

    def shown_keys(self, spec, counts):
        return [key for key, _count in counts.most_common(10)]

    def answer_stats(self, spec, answers: Iterable[Answered]) -> dict:
        rows, cols = _shape(spec["answer"])
        wrong = [[0] * cols for _row in range(rows)]
        graded = 0
        counts: Counter[Hashable] = Counter()
        for answered in answers:
            counts.update(self.choice_keys(spec, answered))
            marks = ((answered.feedback or [{}])[0] or {}).get("marks")
            if not isinstance(marks, list) or _shape(marks) != (rows, cols):
                continue  # graded on another shape of the question
            graded += 1
            for i, row in enumerate(marks):
                for j, ok in enumerate(row):
                    wrong[i][j] += not ok
        return {
            "rows": [(self.describe(spec, key), counts[key]) for key in self.shown_keys(spec, counts)],
            "graded": graded,
            "col_labels": spec["col_labels"],
            "cells": [
                {
                    "label": spec["row_labels"][i] if spec["row_labels"] else str(i + 1),
                    "cells": [{"wrong": n, "share": n / graded if graded else None} for n in wrong[i]],
                }
                for i in range(rows)
            ],
        }


# -- reading a pasted matrix ------------------------------------------------------------------
_CALL = re.compile(r"^(?:(?:np|numpy)\s*\.\s*)?(?:array|asarray|matrix)\s*\((.*)\)$", re.S)
_DTYPE = re.compile(r",\s*dtype\s*=[^\]\)]*$", re.S)
_INNER = re.compile(r"\[([^\[\]]*)\]")
# A comma next to a space separates numbers ("1, 2" or "0,5 , 1"); one inside a number ("0,5")
# is a decimal comma.
_SPACED_COMMA = re.compile(r"\s+,\s*|\s*,\s+")


def split_matrix_text(text: str, cols: int) -> list[list[str]]:
    """The rows and cells of a pasted matrix, as texts: ``[[1, 2], [3, 4]]``,
    ``np.array([[1., 2.], [3., 4.]])``, NumPy's printout ``[[1. 2.]\\n [3. 4.]]``, one row per
    line (cells split by spaces or tabs, as a spreadsheet copies them) or rows split by ``;``.
    A comma next to a space, or any comma between brackets when the row has no spaces, splits
    cells; otherwise ``cols`` (the question's columns) tells ``1,5`` (two cells) from ``1,5``
    (one decimal) in a row without spaces. Raise MatrixTextError when it is no matrix."""
    body = text.strip().replace("\u2212", "-")
    call = _CALL.match(body)
    if call:
        body = _DTYPE.sub("", call.group(1).strip()).strip()
    if "[" in body or "]" in body:
        if body.count("[") != body.count("]"):
            raise MatrixTextError(_("The pasted matrix has unmatched brackets: check its [ and ]."))
        lines = _INNER.findall(body)
        if re.sub(r"[\[\],;\s]", "", _INNER.sub("", body)):
            raise MatrixTextError(
                _("Only numbers may stand between the brackets, for example [[1, 2], [3, 4]].")
            )
        if len(lines) == 1:  # one row "[1, 2]", or rows split by ";" inside: "[1 2; 3 4]"
            lines = re.split(r"[;\n]", lines[0])
    else:
        lines = re.split(r"[;\n]", body)
    bracketed = "[" in body
    rows = [_split_row(line, cols, bracketed) for line in lines if line.strip()]
    if not rows:
        raise MatrixTextError(_("The pasted text holds no numbers."))
    return rows


def is_code_notation(text: str) -> bool:
    """Whether a pasted matrix is written as Python or NumPy writes one (brackets,
    ``np.array(…)``, NumPy's printout): there a dot is a decimal point, never a thousands
    separator, in any language."""
    body = text.strip()
    return bool(_CALL.match(body)) or "[" in body


def _split_row(line: str, cols: int, bracketed: bool) -> list[str]:
    line = line.strip().strip(",").strip()
    if _SPACED_COMMA.search(line):
        return [cell for piece in _SPACED_COMMA.split(line) for cell in piece.split()]
    if re.search(r"\s", line):
        return line.split()
    # "[1,2]" is a Python list; "1,5" alone is one decimal unless the row needs that many cells.
    if "," in line and (bracketed or "." in line or len(line.split(",")) == cols):
        return [cell for cell in line.split(",") if cell]
    return [line]


def _check_pasted_shape(cells: list[list[str]], rows: int, cols: int) -> None:
    if len(cells) != rows:
        raise NotGradable(
            ngettext(
                "The pasted matrix has %(n)d row; this question asks for %(rows)d × %(cols)d "
                "(rows × columns).",
                "The pasted matrix has %(n)d rows; this question asks for %(rows)d × %(cols)d "
                "(rows × columns).",
                len(cells),
            )
            % {"n": len(cells), "rows": rows, "cols": cols}
        )
    for index, row in enumerate(cells):
        if len(row) != cols:
            raise NotGradable(
                ngettext(
                    "Row %(row)d of the pasted matrix has %(n)d number; every row needs %(cols)d.",
                    "Row %(row)d of the pasted matrix has %(n)d numbers; every row needs %(cols)d.",
                    len(row),
                )
                % {"row": index + 1, "n": len(row), "cols": cols}
            )


def _cell_value(cell: str | int | float, i: int, j: int, dot_is_decimal: bool = False) -> float | int:
    if isinstance(cell, str):
        if not cell.strip():
            raise NotGradable(
                _("Row %(row)d, column %(col)d is empty: fill in every cell.") % {"row": i + 1, "col": j + 1}
            )
        try:
            value = parse_number(cell, dot_is_decimal=dot_is_decimal)
        except AmbiguousNumber as exc:
            raise NotGradable(
                _("Row %(row)d, column %(col)d: %(problem)s") % {"row": i + 1, "col": j + 1, "problem": exc}
            ) from None
        except ValueError:
            raise NotGradable(
                _(
                    "Row %(row)d, column %(col)d: “%(text)s” is not a number. Write a number, for example %(example)s."
                )
                % {
                    "row": i + 1,
                    "col": j + 1,
                    "text": cell.strip()[:MAX_CELL_CHARS],
                    "example": number_format(0.25, 2),
                }
            ) from None
    else:
        value = float(cell)
        if not math.isfinite(value):
            raise AnswerError(_("every cell must be a finite number"))
    # Whole numbers are kept whole: the grid shows them again as "2", not "2,0".
    return int(value) if value.is_integer() and abs(value) < 1e15 else value


# -- the spec ---------------------------------------------------------------------------------
def _spec_matrix(value, keys: tuple) -> list[list[float]]:
    if not isinstance(value, list) or not value:
        raise SpecProblem(keys, "must be a matrix: a list of rows, like [[1, 2], [3, 4]]")
    if len(value) > MAX_SIDE:
        raise SpecProblem(keys, f"has {len(value)} rows: at most {MAX_SIDE} (students type every cell)")
    matrix = []
    for i, row in enumerate(value):
        if not isinstance(row, list) or not row:
            raise SpecProblem(keys + (i,), f"row {i + 1} must be a non-empty list of numbers")
        if len(row) > MAX_SIDE:
            raise SpecProblem(keys + (i,), f"row {i + 1} has {len(row)} numbers: at most {MAX_SIDE} columns")
        if len(row) != len(value[0]):
            raise SpecProblem(
                keys + (i,),
                f"row {i + 1} has {len(row)} numbers but row 1 has {len(value[0])}: every row needs the same",
            )
        cells = []
        for j, cell in enumerate(row):
            expect(cell, (int, float), keys + (i, j), f"row {i + 1}, column {j + 1}")
            if not math.isfinite(cell):
                raise SpecProblem(keys + (i, j), f"row {i + 1}, column {j + 1} must be a finite number")
            cells.append(float(cell))
        matrix.append(cells)
    return matrix


def _labels(data: dict, key: str, count: int) -> list[str]:
    labels = expect(data.get(key, []), list, (key,), key)
    if labels and len(labels) != count:
        raise SpecProblem(
            (key,), f"{key} has {len(labels)} labels for {count} {key.removesuffix('_labels')}s"
        )
    for index, label in enumerate(labels):
        expect(label, str, (key, index), "a label")
        if not label.strip() or len(label) > MAX_LABEL_CHARS:
            raise SpecProblem((key, index), f"a label is 1 to {MAX_LABEL_CHARS} characters")
    return [label.strip() for label in labels]


# -- grading ----------------------------------------------------------------------------------
def _shape(matrix: list) -> tuple[int, int]:
    cols = {len(row) if isinstance(row, list) else -1 for row in matrix}
    return (len(matrix), cols.pop() if len(cols) == 1 else -1)


def _close(spec: dict, value: float, target: float) -> bool:
    tolerance = spec["tolerance"] * abs(target) if spec["relative"] else spec["tolerance"]
    return abs(value - target) <= tolerance


def _all_close(spec: dict, matrix: list, target: list) -> bool:
    return all(_close(spec, v, t) for row, goal in zip(matrix, target) for v, t in zip(row, goal))


# -- display ----------------------------------------------------------------------------------
def _cell_text(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return str(int(value)).replace("-", "\u2212")
    return number_format(value, decimal_pos=None).replace("-", "\u2212")


def _cell_name(spec: dict, i: int, j: int) -> str:
    name = _("row %(row)d, column %(col)d") % {"row": i + 1, "col": j + 1}
    labels = [
        spec["row_labels"][i] if spec["row_labels"] else "",
        spec["col_labels"][j] if spec["col_labels"] else "",
    ]
    if any(labels):
        name += " (" + " → ".join(label for label in labels if label) + ")"
    return name


def _grid_html(spec: dict, matrix: list, marks: list | None) -> SafeString:
    """The matrix as a table; with ``marks``, each cell says (by sign and words, not colour
    alone) whether it is right."""
    head = SafeString("")
    if spec["col_labels"]:
        corner = mark_safe("<td></td>") if spec["row_labels"] else SafeString("")
        head = format_html(
            "<thead><tr>{}{}</tr></thead>",
            corner,
            format_html_join("", '<th scope="col">{}</th>', ((label,) for label in spec["col_labels"])),
        )
    right, wrong = _("right"), _("wrong")
    body = []
    for i, row in enumerate(matrix):
        cells = []
        for j, value in enumerate(row):
            if marks is None:
                cells.append(format_html("<td>{}</td>", _cell_text(value)))
                continue
            ok = marks[i][j] if i < len(marks) and j < len(marks[i]) else False
            cells.append(
                format_html(
                    '<td class="{}">{} <span class="cell-mark" aria-hidden="true">{}</span> '
                    '<span class="visually-hidden">({})</span></td>',
                    "cell-ok" if ok else "cell-bad",
                    _cell_text(value),
                    "✓" if ok else "✗",
                    right if ok else wrong,
                )
            )
        label = format_html('<th scope="row">{}</th>', spec["row_labels"][i]) if spec["row_labels"] else ""
        body.append(format_html("<tr>{}{}</tr>", label, mark_safe("".join(cells))))
    return format_html(
        '<table class="matrix-table{}">{}<tbody>{}</tbody></table>',
        " matrix-marked" if marks is not None else "",
        head,
        mark_safe("".join(body)),
    )
