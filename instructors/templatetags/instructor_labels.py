"""Words instead of identifiers on the instructor pages: "süre sınırı", not "timeout"."""

from django import template

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
