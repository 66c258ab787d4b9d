import html
import re

_TAG = re.compile(r"<[^>]+>")


def html_to_text(markup: str) -> str:
    """Plain text of stored HTML for terminals (MathML keeps its characters)."""
    return " ".join(html.unescape(_TAG.sub(" ", markup or "")).split())
