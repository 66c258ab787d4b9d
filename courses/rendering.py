"""Markdown → HTML at import time: math as MathML, code highlighted with Pygments.

Lesson HTML is rendered once and stored, so pages never parse Markdown per request and
formulas are readable with JavaScript off.
"""

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

# latex2mathml passes a command it does not know through as an identifier: <mi>\name</mi>.
_UNKNOWN_COMMAND = re.compile(r"<mi>\\([A-Za-z]+)</mi>")
_FORMATTER = HtmlFormatter(nowrap=True)


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
        mathml = latex_to_mathml(latex, display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises several exception types on bad input
        return f'<code class="math-error">{html.escape(latex)}</code>', (
            f"cannot convert LaTeX {latex!r}: {exc}"
        )
    if unknown := _UNKNOWN_COMMAND.findall(mathml):
        names = ", ".join(sorted({"\\" + name for name in unknown}))
        return mathml, f"unknown LaTeX command {names} in {latex!r}"
    return mathml, None


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        lexer = get_lexer_by_name("text")
    # Starting with <pre tells markdown-it to use this markup as the whole block.
    language = html.escape(lang or "text", quote=True)
    body = highlight(code, lexer, _FORMATTER)
    return f'<pre class="highlight" tabindex="0"><code class="language-{language}">{body}</code></pre>\n'



# An interactive figure: ``::: visual NAME`` … ``:::``. The named visual renders itself
# (server-side numbers, SVG, a table that works without JavaScript); see courses/visuals.py.
VisualRenderer = Callable[[str], tuple[str, str | None]]


def _markdown(issues: list[RenderIssue], visual: "VisualRenderer | None" = None) -> MarkdownIt:
    # Raw HTML stays off: lesson text is Markdown, never markup that could carry scripts.
    md = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "typographer": False})
    md.enable("table")
    md.use(dollarmath_plugin, double_inline=True, allow_digits=False)

    def math(display: bool):
        def rule(self, tokens, idx, options, env):
            token = tokens[idx]
            mathml, problem = render_math(token.content.strip(), display=display)
            if problem:
                issues.append(RenderIssue(token.meta.get("line", 1), problem))
            # A span (styled as a block) stays valid inside the paragraph of $$…$$ inline.
            return f'<span class="math-display">{mathml}</span>' if display else mathml

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
        return markup

    md.use(container_plugin, "visual", render=render_visual)
    # The container's own text (if any) is kept as a caption-less fallback paragraph.
    md.add_render_rule("math_inline", math(display=False))
    md.add_render_rule("math_inline_double", math(display=True))
    for name in ("math_block", "math_block_label", "math_block_eqno"):
        md.add_render_rule(name, math(display=True))
    return md


def render_markdown(text: str, visual: "VisualRenderer | None" = None) -> Rendered:
    """Render Markdown with $…$ / $$…$$ math, fenced code and ``::: visual NAME`` figures;
    report problems by line."""
    issues: list[RenderIssue] = []
    md = _markdown(issues, visual)
    tokens = md.parse(text)
    # Remember each formula's line: blocks carry a map, inline formulas take the line of
    # the paragraph that holds them.
    for token in tokens:
        line = token.map[0] + 1 if token.map else 1
        token.meta["line"] = line
        for child in token.children or []:
            child.meta["line"] = line
    return Rendered(md.renderer.render(tokens, md.options, {}), issues)


def pygments_css() -> str:
    return HtmlFormatter().get_style_defs(".highlight")
