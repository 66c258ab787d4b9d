"""Small horizontal bar charts as server-rendered SVG (no script, readable as a table too)."""

from collections.abc import Iterable


def bar_chart_context(rows: Iterable[tuple[object, int]], title: str, label_heading: str = "") -> dict:
    """What ``instructors/bar_chart.html`` draws: one bar per (label, count), the longest as
    wide as the chart. A label is text, or a kind's Choice (its ``correct`` gets a ✓)."""
    rows = list(rows)
    largest = max((count for _, count in rows), default=0) or 1
    bars = [
        {
            "label": getattr(label, "label", label),
            "correct": getattr(label, "correct", False),
            "count": count,
            "width": round(100 * count / largest, 2),
        }
        for label, count in rows
    ]
    return {"title": title, "label_heading": label_heading, "bars": bars}
