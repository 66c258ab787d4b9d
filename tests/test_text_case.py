"""Headings capitalised from lower-case Turkish labels keep the dotted capital İ."""

from django.template import Context, Template
from django.utils import translation


def _render(value: str, language: str) -> str:
    with translation.override(language):
        return Template("{% load text_case %}{{ value|capfirst_locale }}").render(Context({"value": value}))


def test_turkish_i_becomes_dotted_capital():
    assert _render("iç hata", "tr") == "İç hata"
    assert _render("ıhlamur", "tr") == "Ihlamur"
    assert _render("süre sınırı", "tr") == "Süre sınırı"


def test_english_keeps_the_plain_rule():
    assert _render("internal error", "en") == "Internal error"
    assert _render("", "en") == ""
