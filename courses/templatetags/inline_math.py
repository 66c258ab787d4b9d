"""``{{ text|inline_math }}``: a plain-text field (a summary) with ``$…$`` shown as formulas.

Text outside the dollars is escaped; each formula goes through the lesson pipeline's
`render_math` (latex2mathml, then the allow-list), so the result is safe to mark as such.
"""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from courses.rendering import render_math

register = template.Library()
MATH = re.compile(r"\$([^$\n]{1,200})\$")


@register.filter
def inline_math(text: str) -> SafeString:
    if not isinstance(text, str):
        return mark_safe("")
    parts: list[str] = []
    last = 0
    for found in MATH.finditer(text):
        parts.append(escape(text[last : found.start()]))
        mathml, problem = render_math(found.group(1), display=False)
        parts.append(escape(found.group(0)) if problem else mathml)
        last = found.end()
    parts.append(escape(text[last:]))
    return mark_safe("".join(parts))
