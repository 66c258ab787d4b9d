"""Markdown → HTML at import time: math as MathML, code highlighted with Pygments.

Lesson HTML is rendered once and stored, so pages never parse Markdown per request and
formulas are readable with JavaScript off.

Everything an author writes is cleaned with an allow-list (nh3) before it is stored: the
tags and attributes of CommonMark with tables, Pygments' highlighted code and the MathML
that latex2mathml makes, nothing else. Figures (``::: visual NAME``) are the exception:
their markup is built by our own code in courses/visuals.py from numbers and escaped author
strings, and it needs what an author never may (a JSON ``<script>`` block, SVG, inputs and
buttons), so it is put in after the author's Markdown has been cleaned. Its formulas come
from ``render_math``, which cleans its own output.
"""

import html
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from xml.etree.ElementTree import tostring

import nh3
from latex2mathml.converter import convert_to_element
from markdown_it import MarkdownIt
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.dollarmath.index import math_inline_dollar
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# latex2mathml passes a command it does not know through as an identifier: <mi>\name</mi>.
_UNKNOWN_COMMAND = re.compile(r"<mi>\\([A-Za-z]+)</mi>")
_FORMATTER = HtmlFormatter(nowrap=True)
# latex2mathml writes character references ("&#x000A0;") into element text, then unescapes
# its whole output, which turns \text{<form>} into a real tag. We serialise its tree
# ourselves, text escaped, and give back only those references.
_ESCAPED_CHAR_REF = re.compile(r"&amp;(#x[0-9A-Fa-f]+;|#[0-9]+;)")

_MARKDOWN_TAGS = {
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "ul",
    "ol",
    "li",
    "hr",
    "br",
    "em",
    "strong",
    "a",
    "img",
    "code",
    "pre",
    "span",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
# What latex2mathml produces; never href, style or class (\href, \style, \class).
_MATHML_TAGS = {
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "mtext",
    "mspace",
    "mpadded",
    "mphantom",
    "mstyle",
    "mfrac",
    "msqrt",
    "mroot",
    "msub",
    "msup",
    "msubsup",
    "munder",
    "mover",
    "munderover",
    "menclose",
    "mtable",
    "mtr",
    "mtd",
}
_MATHML_ATTRIBUTES = {
    "display",
    "xmlns",
    "mathvariant",
    "mathsize",
    "mathcolor",
    "displaystyle",
    "scriptlevel",
    "fence",
    "form",
    "stretchy",
    "separator",
    "lspace",
    "rspace",
    "largeop",
    "movablelimits",
    "accent",
    "accentunder",
    "minsize",
    "maxsize",
    "symmetric",
    "width",
    "height",
    "depth",
    "voffset",
    "linethickness",
    "notation",
    "columnalign",
    "columnspacing",
    "columnlines",
    "rowspacing",
    "rowlines",
}
_CLEANER = nh3.Cleaner(
    tags=_MARKDOWN_TAGS | _MATHML_TAGS,
    attributes={
        "a": {"href", "title"},
        "img": {"src", "alt", "title"},
        "ol": {"start"},
        "th": {"style"},  # text-align of a table column, nothing else (below)
        "td": {"style"},
        "pre": {"class", "tabindex"},  # Pygments blocks: scrollable by keyboard
        "code": {"class"},
        "span": {"class", "tabindex"},  # Pygments tokens, display math (scrollable by keyboard)
        **dict.fromkeys(_MATHML_TAGS, _MATHML_ATTRIBUTES),
    },
    filter_style_properties={"text-align"},
    url_schemes={"http", "https", "mailto"},
)


def clean_html(markup: str) -> str:
    """Keep only the tags and attributes a lesson may carry (see the module docstring)."""
    return _CLEANER.clean(markup)


@dataclass
class RenderIssue:
    line: int  # 1-based, relative to the start of the rendered text
    message: str


@dataclass
class Rendered:
    html: str
    issues: list[RenderIssue] = field(default_factory=list)


def render_math(latex: str, *, display: bool) -> tuple[str, str | None]:
    """Return (MathML, problem); the problem names an unknown command or a parse failure."""
    try:
        tree = convert_to_element(latex, display="block" if display else "inline")
    except Exception as exc:  # noqa: BLE001 -- latex2mathml raises several exception types on bad input
        return f'<code class="math-error">{html.escape(latex)}</code>', (
            f"cannot convert LaTeX {latex!r}: {exc}"
        )
    mathml = _ESCAPED_CHAR_REF.sub(r"&\1", tostring(tree, encoding="unicode"))
    problem = None
    if unknown := _UNKNOWN_COMMAND.findall(mathml):
        names = ", ".join(sorted({"\\" + name for name in unknown}))
        problem = f"unknown LaTeX command {names} in {latex!r}"
    # Cleaned here too, not only with the Markdown around it: figures use formulas as well.
    return clean_html(mathml), problem


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    # Starting with <pre tells markdown-it to use this markup as the whole block.
    language = html.escape(lang or "text", quote=True)
    body = highlight(code, lexer, _FORMATTER)
    return f'<pre class="highlight" tabindex="0"><code class="language-{language}">{body}</code></pre>\n'


_INLINE_MATH = math_inline_dollar(allow_space=True, allow_digits=True, allow_double=True)


def _inline_math_not_next_to_digits(state, silent: bool) -> bool:
    """``$…$`` as the plugin reads it, but not next to a digit ("$5 and $10" stay prices).

    The plugin's own digit check looks at ``src[pos - 1]``, which at the start of a table
    cell or paragraph is the *last* character: a cell like ``$0 \\le a \\le 1$, toplamı 1``
    stayed raw LaTeX."""
    start = state.pos
    if start > 0 and state.src[start - 1].isdigit():
        return False
    if not _INLINE_MATH(state, True):
        return False
    end, state.pos = state.pos, start
    if end < len(state.src) and state.src[end].isdigit():
        return False
    return _INLINE_MATH(state, silent)


# An interactive figure: ``::: visual NAME`` … ``:::``. The named visual renders itself
# (server-side numbers, SVG, a table that works without JavaScript); see courses/visuals.py.
VisualRenderer = Callable[[str], tuple[str, str | None]]


def _markdown(
    issues: list[RenderIssue], figures: dict[str, str], visual: "VisualRenderer | None" = None
) -> MarkdownIt:
    # Raw HTML stays off: lesson text is Markdown, never markup that could carry scripts.
    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "typographer": False})
    md.enable("table")
    md.use(dollarmath_plugin, double_inline=True, allow_digits=False)
    md.inline.ruler.at("math_inline", _inline_math_not_next_to_digits)

    def math(display: bool):
        def rule(self, tokens, idx, options, env):
            token = tokens[idx]
            mathml, problem = render_math(token.content.strip(), display=display)
            if problem:
                issues.append(RenderIssue(token.meta.get("line", 1), problem))
            # A span (styled as a block) stays valid inside the paragraph of $$…$$ inline.
            # tabindex: a formula wider than a phone scrolls; the keyboard must reach it too.
            return f'<span class="math-display" tabindex="0">{mathml}</span>' if display else mathml

        return rule

    def render_visual(self, tokens, idx, options, env):
        token = tokens[idx]
        if token.nesting != 1:
            return ""
        name = token.info.strip().removeprefix("visual").strip()
        if visual is None:
            issues.append(RenderIssue(token.meta.get("line", 1), f"visual {name!r} cannot be used here"))
            return ""
        markup, problem = visual(name)
        if problem:
            issues.append(RenderIssue(token.meta.get("line", 1), problem))
        # A stand-in the author cannot write (it holds a fresh random token): the figure
        # takes its place once the author's text has been cleaned.
        placeholder = f"dikkat-figure-{secrets.token_hex(16)}"
        figures[placeholder] = markup
        return placeholder

    md.use(container_plugin, "visual", render=render_visual)
    # The container's own text (if any) is kept as a caption-less fallback paragraph.
    md.add_render_rule("math_inline", math(display=False))
    md.add_render_rule("math_inline_double", math(display=True))
    for name in ("math_block", "math_block_label", "math_block_eqno"):
        md.add_render_rule(name, math(display=True))
    return md


def render_markdown(text: str, visual: "VisualRenderer | None" = None) -> Rendered:
    """Render Markdown with $…$ / $$…$$ math, fenced code and ``::: visual NAME`` figures;
    report problems by line. The author's part is cleaned with the allow-list; figures are not."""
    issues: list[RenderIssue] = []
    figures: dict[str, str] = {}
    md = _markdown(issues, figures, visual)
    tokens = md.parse(text)
    # Remember each formula's line: blocks carry a map, inline formulas take the line of
    # the paragraph that holds them.
    for token in tokens:
        line = token.map[0] + 1 if token.map else 1
        token.meta["line"] = line
        for child in token.children or []:
            child.meta["line"] = line
    markup = clean_html(md.renderer.render(tokens, md.options, {}))
    for placeholder, figure in figures.items():
        markup = markup.replace(placeholder, figure, 1)
    return Rendered(markup, issues)
