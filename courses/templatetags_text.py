"""Plain text of stored HTML, for places that cannot hold markup: a terminal, an <option>,
an aria-label. The result is text (entities decoded): the template escapes it once."""

import html
from html.parser import HTMLParser

# Elements whose children are written one after the other with a separator between them.
_MATH_JOINERS = {"msub": "_", "msup": "^", "mfrac": "/", "munder": "_", "mover": "^"}
_RELATIONS = {"=", "≤", "≥", "<", ">", "→", "·", "×", "+", "−", "≈", "≠"}
_BLOCK_TAGS = {"p", "li", "td", "th", "br", "div", "tr", "h1", "h2", "h3", "h4", "h5", "h6"}


class _Node:
    def __init__(self, tag: str):
        self.tag = tag
        self.children: list[_Node | str] = []


class _TreeBuilder(HTMLParser):
    """Just enough of a tree to write MathML linearly: (n_k, d_v), √(d_k), a/b."""

    VOID = {"br", "hr", "img", "input", "mspace"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = _Node("")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = _Node(tag)
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(_Node(tag))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def _math_text(node: "_Node | str") -> str:
    if isinstance(node, str):
        return node.strip()
    parts = [_math_text(child) for child in node.children]
    parts = [p for p in parts if p]
    if node.tag in _MATH_JOINERS and len(parts) == 2:
        first, second = parts
        if node.tag == "mfrac":
            first, second = (
                p if p.isalnum() or (p.startswith("√(") and p.endswith(")")) else f"({p})" for p in parts
            )
        return f"{first}{_MATH_JOINERS[node.tag]}{second}"
    if node.tag == "msubsup" and len(parts) == 3:
        return f"{parts[0]}_{parts[1]}^{parts[2]}"
    if node.tag in ("msqrt", "mroot"):
        inner = parts[0] if parts else ""
        return f"√{inner}" if len(inner) == 1 else f"√({inner})"
    text = ""
    for part in parts:
        # Spaces as a reader expects them: (n_k, d_v), a = b.
        text += part + " " if part == "," else f" {part} " if part in _RELATIONS and text else part
    return " ".join(text.split())


def _text(node: "_Node | str") -> str:
    if isinstance(node, str):
        return node
    if node.tag == "math":
        return _math_text(node)
    inner = "".join(_text(child) for child in node.children)
    return f" {inner} " if node.tag in _BLOCK_TAGS else inner


def html_to_text(markup: str) -> str:
    """Plain text of stored HTML (formulas written linearly, e.g. ``(n_k, d_v)``)."""
    if not markup:
        return ""
    builder = _TreeBuilder()
    builder.feed(markup)
    builder.close()
    return " ".join(html.unescape(_text(builder.root)).split())
