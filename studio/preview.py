"""A lesson.md as students would see it, rendered from an unsaved text in the editor by the
same pipeline the import uses (courses.rendering: MathML, figures, highlighted code), with
the problems the import would report for it, by line of the file."""

from dataclasses import dataclass, field
from pathlib import Path

from courses.authoring import FRONT_MATTER, LESSON_KEYS
from courses.rendering import render_markdown
from courses.tomlsource import TomlSyntaxError, parse_toml
from courses.visuals import render_visual


@dataclass
class LessonPreview:
    title: str = ""
    html: str = ""
    problems: list[tuple[int, str]] = field(default_factory=list)  # (line of lesson.md, message)


def preview_lesson(text: str, lesson_dir: Path | None) -> LessonPreview:
    """Render ``text`` (a whole lesson.md); ``lesson_dir``: where its figures read their data."""
    preview = LessonPreview()
    lines = text.replace("\r\n", "\n").splitlines(keepends=True)
    if not lines or lines[0].strip() != FRONT_MATTER:
        preview.problems.append((1, "lesson.md must start with TOML front matter between +++ lines"))
        return preview
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() == FRONT_MATTER), None)
    if closing is None:
        preview.problems.append((1, "front matter is not closed by a +++ line"))
        return preview
    try:
        front = parse_toml("".join(lines[1:closing]))
    except TomlSyntaxError as exc:
        preview.problems.append((exc.line + 1, str(exc)))
        front = {}
    for key in front:
        if key not in LESSON_KEYS:
            preview.problems.append((1, f"unknown key {key!r} (allowed: {', '.join(sorted(LESSON_KEYS))})"))
    title = front.get("title")
    preview.title = title if isinstance(title, str) else ""

    def visual(name: str) -> tuple[str, str | None]:
        if lesson_dir is None:
            return "", f"visual {name!r} cannot be shown before the lesson is published"
        return render_visual(name, lesson_dir)

    body_line = closing + 2
    rendered = render_markdown("".join(lines[closing + 1 :]), visual)
    preview.html = rendered.html
    preview.problems += [(body_line + issue.line - 1, issue.message) for issue in rendered.issues]
    return preview
