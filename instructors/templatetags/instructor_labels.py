"""Words instead of identifiers on the instructor pages: "süre sınırı", not "timeout"."""

from django import template
from django.utils.translation import gettext as _

from grader.models import Verdict

register = template.Library()


@register.filter
def verdict_label(value: str) -> str:
    """The translated name of a verdict ("output_limit" → "çıktı sınırı")."""
    return Verdict(value).label if value in Verdict.values else value


@register.filter
def label_in(value: str, labels: dict) -> str:
    """``labels[value]`` when there is one (a misconception's readable label), else ``value``."""
    return (labels or {}).get(value, value)


@register.filter
def percent(value: float | None) -> str:
    """A share (0.42) as a whole percentage the way the page's language writes it: "%42" in
    Turkish, "42%" in English; "—" when there is none."""
    if value is None:
        return "—"
    return _("%(percent)s%%") % {"percent": round(100 * value)}
