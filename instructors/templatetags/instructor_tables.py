"""The gradebook's score cells: a page holds thousands, so their markup is written here in one
pass instead of a template loop per cell (the template language costs ~100 µs a cell)."""

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def score_cells(cells: list[dict], best_title: str) -> SafeString:
    """``<td>`` per cell prepared by the view: "—" without a score, else the score (a link to
    the student's code for an exercise), the attempts and when the best one was. Every text
    that is not the view's own (numbers, dates, class names) is escaped."""
    title = escape(best_title)
    html = []
    for cell in cells:
        if cell["score"] is None:
            html.append(f'<td class="{cell["css"]}">—</td>')
            continue
        score: str = escape(cell["score"])
        if cell["href"]:
            score = f'<a href="{escape(cell["href"])}">{score}</a>'
        best = (
            f' <span class="muted cell-time" title="{title}">{escape(cell["best_at"])}</span>'
            if cell["best_at"]
            else ""
        )
        html.append(
            f'<td class="{cell["css"]}">{score} <span class="muted">· {int(cell["attempts"])}×</span>{best}</td>'
        )
    return mark_safe("".join(html))  # every part escaped above
