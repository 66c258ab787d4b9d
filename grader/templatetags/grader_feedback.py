"""What the feedback shows from a submission's weight probes and property checks.

The grader core stores them language-neutral next to each case (``probe``, ``properties``);
this turns them into what ``grader/_teaching.html`` and ``grader/_heatmap.html`` draw: the
visible probe's weights and the reference's as heatmaps with a difference view (cell geometry
and shades computed here, like the lesson figures), hidden probes' diagnoses deduplicated, and
the property checks grouped by relation.
"""

from django import template
from django.utils.translation import gettext as _

from grader.core.properties import title_for
from grader.models import render_message

register = template.Library()

CELL = 46  # as the lesson's heatmap
LEFT = 36  # room for the row labels (q0, q1, ...)
TOP = 26  # room for the column labels (k0, k1, ...)
LEAK = 1e-6


def _n(x: float) -> str:
    """An SVG coordinate, never localised (a template would print 46,0 in Turkish)."""
    return f"{float(x):.1f}".rstrip("0").rstrip(".")


def _label(value: float, signed: bool = False) -> str:
    text = f"{value:+.2f}" if signed else f"{value:.2f}"
    return text.replace("-", "−")


def _heatmap(matrix, allowed, *, kind: str, uid: str, title: str) -> dict:
    """Cells of one heatmap: ``kind`` is ``weights`` (shade = weight) or ``diff`` (shade =
    |difference|, one hue for more weight than expected, another for less)."""
    n_q, n_k = len(matrix), len(matrix[0]) if matrix else 0
    cells = []
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            masked = allowed is not None and not allowed[i][j]
            x, y = LEFT + j * CELL + 1, TOP + i * CELL + 1
            cell: dict[str, object] = {"x": _n(x), "y": _n(y), "masked": masked}
            cell.update(cx=_n(x + (CELL - 2) / 2), cy=_n(y + (CELL - 2) / 2))
            if kind == "diff":
                cell["cls"] = "hm-more" if value > 0 else "hm-less"
                cell["opacity"] = f"{min(1.0, abs(value) * 2):.3f}"
                cell["text"] = _label(value, signed=True) if abs(value) >= 0.005 else "0"
                cell["strong"] = abs(value) >= 0.1
            else:
                cell["cls"] = "hm-leak" if masked and abs(value) > LEAK else ""
                cell["opacity"] = f"{min(1.0, max(0.0, value)):.3f}"
                cell["text"] = _label(value)
                cell["strong"] = value >= 0.5
                # A masked cell is drawn hatched unless weight leaked into it (then it shows).
                cell["hatched"] = masked and abs(value) <= LEAK
            cells.append(cell)
    return {
        "uid": uid,
        "title": title,
        "kind": kind,
        "width": _n(LEFT + n_k * CELL + 4),
        "height": _n(TOP + n_q * CELL + 4),
        "cell": _n(CELL - 2),
        "cells": cells,
        "rows": [{"label": f"q{i}", "y": _n(TOP + i * CELL + CELL / 2)} for i in range(n_q)],
        "columns": [{"label": f"k{j}", "x": _n(LEFT + j * CELL + CELL / 2)} for j in range(n_k)],
        "label_x": _n(LEFT - 6),
        "label_y": _n(TOP - 8),
    }


def _table(student, reference, allowed) -> list[dict]:
    rows = []
    for i, (mine, expected) in enumerate(zip(student, reference)):
        cells = []
        for j, (a, b) in enumerate(zip(mine, expected)):
            cells.append(
                {
                    "student": _label(a),
                    "reference": _label(b),
                    "diff": _label(a - b, signed=True),
                    "masked": allowed is not None and not allowed[i][j],
                    "off": abs(a - b) >= 0.005,
                }
            )
        rows.append({"label": f"q{i}", "cells": cells})
    return rows


@register.simple_tag
def teaching(submission) -> dict | None:
    """Everything the "what your weights show" part of a result needs, or None."""
    tests = submission.tests or []
    probes = [t["probe"] for t in tests if isinstance(t.get("probe"), dict)]
    checks = [(t, p) for t in tests for p in t.get("properties") or [] if isinstance(p, dict)]
    if not probes and not checks:
        return None
    wrong = any(not p.get("matches") for p in probes) or any(not p.get("passed") for _t, p in checks)
    if not wrong:
        return None
    uid = f"hm{submission.pk or 0}"
    shown = None
    for probe in probes:
        if probe.get("hidden") or probe.get("matches") or not probe.get("student"):
            continue
        student, reference, allowed = probe["student"], probe["reference"], probe.get("allowed")
        diff = [[a - b for a, b in zip(r1, r2)] for r1, r2 in zip(student, reference)]
        shown = {
            "case": probe["case"],
            "sliced": probe.get("sliced"),
            "diagnoses": [render_message(m) for m in probe.get("diagnoses") or []],
            "maps": [
                _heatmap(student, allowed, kind="weights", uid=f"{uid}-s", title=_("Your weights")),
                _heatmap(reference, allowed, kind="weights", uid=f"{uid}-r", title=_("Expected weights")),
                _heatmap(
                    diff, allowed, kind="diff", uid=f"{uid}-d", title=_("Difference (yours − expected)")
                ),
            ],
            "table": _table(student, reference, allowed),
            "keys": [f"k{j}" for j in range(len(student[0]) if student else 0)],
        }
        break
    # Hidden probes: each diagnosis once, with the cases it was found on.
    hidden: dict[str, list[str]] = {}
    for probe in probes:
        if probe.get("matches") or (shown is not None and probe["case"] == shown["case"]):
            continue
        for message in probe.get("diagnoses") or []:
            hidden.setdefault(render_message(message), []).append(probe["case"])
    groups: dict[tuple, dict] = {}
    for test, check in checks:
        title = title_for(check)
        if title is None:
            continue
        key = (check.get("kind"), check.get("amount"), bool(check.get("passed")))
        group = groups.setdefault(
            key,
            {
                "title": render_message(title.to_dict()),
                "passed": bool(check.get("passed")),
                "cases": [],
                "hint": "",
                "details": [],
            },
        )
        group["cases"].append(test.get("name"))
        if not check.get("passed"):
            group["hint"] = group["hint"] or render_message(check.get("message"))
            if check.get("detail"):
                group["details"].append({"case": test.get("name"), "text": render_message(check["detail"])})
    properties = sorted(groups.values(), key=lambda g: g["passed"])
    return {
        "id": uid,
        "shown": shown,
        "hidden": [{"text": text, "cases": cases} for text, cases in hidden.items()],
        "properties": properties,
        "broken": sum(1 for g in properties if not g["passed"]),
    }
