"""Charts on the instructor pages, drawn by templates (the item page, a kind's statistics)."""

from collections.abc import Iterable

from django import template

from ..charts import bar_chart_context

register = template.Library()


@register.inclusion_tag("instructors/bar_chart.html")
def bar_chart(rows: Iterable[tuple[object, int]], title: str, label_heading: str = "") -> dict:
    """``{% bar_chart rows title label_heading %}``: nothing at all when there are no rows."""
    return bar_chart_context(rows, title, label_heading)
