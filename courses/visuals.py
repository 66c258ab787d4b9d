"""Interactive figures placed in lessons with ``::: visual NAME`` … ``:::``.

Each visual is a function ``(lesson_dir) -> html`` registered under its name. It computes
its numbers with NumPy at import time (from data files kept in the lesson's folder), and
returns markup that reads on its own without JavaScript (a table, an SVG); the small
script in static/js/visuals.js makes it interactive. Raise VisualError for author mistakes.
"""

from collections.abc import Callable
from pathlib import Path

VISUALS: dict[str, Callable[[Path], str]] = {}


class VisualError(Exception):
    pass


def visual(name: str):
    def register(function: Callable[[Path], str]) -> Callable[[Path], str]:
        VISUALS[name] = function
        return function

    return register


def render_visual(name: str, lesson_dir: Path) -> tuple[str, str | None]:
    """(markup, problem) for the visual ``name`` in the lesson at ``lesson_dir``."""
    function = VISUALS.get(name)
    if function is None:
        known = ", ".join(sorted(VISUALS)) or "none yet"
        return "", f"unknown visual {name!r} (known: {known})"
    try:
        return function(lesson_dir), None
    except VisualError as exc:
        return "", f"visual {name!r}: {exc}"

