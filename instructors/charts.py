"""Small horizontal bar charts as server-rendered SVG (no script, readable as a table too)."""

from django.template.loader import render_to_string


def bar_chart(rows: list[tuple[str, int]], title: str, label_heading: str = "") -> str:
    if not rows:
        return ""
    largest = max(count for _, count in rows) or 1
    bar_height, gap, width = 22, 6, 100
    bars = [
        {
            "label": label,
            "count": count,
            "y": i * (bar_height + gap),
            "width": round(width * count / largest, 2),
        }
        for i, (label, count) in enumerate(rows)
    ]
    return render_to_string(
        "instructors/bar_chart.html",
        {
            "title": title,
            "label_heading": label_heading,
            "bars": bars,
            "height": len(rows) * (bar_height + gap),
            "bar_height": bar_height,
        },
    )
