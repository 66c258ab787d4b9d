"""Capitalisation that knows Turkish: Django's ``capfirst`` turns "iç hata" into "Iç hata"."""

from django import template
from django.utils.translation import get_language

register = template.Library()

TURKISH_UPPER = {"i": "İ", "ı": "I"}


@register.filter
def capfirst_locale(value: object) -> str:
    """``value`` with its first letter upper-cased by the rules of the active language."""
    text = str(value)
    if not text:
        return text
    first = text[0]
    if (get_language() or "").startswith(("tr", "az")) and first in TURKISH_UPPER:
        return TURKISH_UPPER[first] + text[1:]
    return first.upper() + text[1:]
