"""The outline of a lesson for its sidebar (the sections of its body, each with an anchor), and
its Markdown tables in a frame that scrolls on a narrow screen."""

import re
from dataclasses import dataclass

from django import template
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

register = template.Library()

_H2 = re.compile(r"<h2(?P<attrs>[^>]*)>(?P<inner>.*?)</h2>", re.S)
# Tables written in Markdown come as a bare <table>; the figures' tables have a class and their own frame.
_MARKDOWN_TABLE = re.compile(r"<table>(?P<inner>.*?)</table>", re.S)


@dataclass
class Outline:
    html: SafeString  # the body, each <h2> with an id to link to
    sections: list[tuple[str, SafeString]]  # (id, the heading's inner HTML)


@register.simple_tag
def lesson_outline(body_html: str) -> Outline:
    """Give every <h2> of a rendered lesson body an id ("bolum-1", …) unless it has one, list
    the sections, and frame each Markdown table so that it scrolls by itself (keyboard too)
    instead of widening the page. The body is HTML rendered at import: it is trusted."""
    sections: list[tuple[str, SafeString]] = []

    def anchor(match: re.Match) -> str:
        attrs, inner = match.group("attrs"), match.group("inner")
        found = re.search(r'\bid="([^"]+)"', attrs)
        section_id = found.group(1) if found else f"bolum-{len(sections) + 1}"
        sections.append((section_id, mark_safe(inner)))
        return match.group(0) if found else f'<h2 id="{section_id}"{attrs}>{inner}</h2>'

    html = _H2.sub(anchor, body_html or "")
    frame = '<div class="table-scroll" tabindex="0" role="region" aria-label="{}"><table class="lesson-table">{}</table></div>'
    html = _MARKDOWN_TABLE.sub(lambda m: frame.format(_("Table"), m.group("inner")), html)
    return Outline(mark_safe(html), sections)
