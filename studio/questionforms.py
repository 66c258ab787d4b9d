"""A question edited through its kind's form: found in the course's working copy, checked by
the import's own loader, written back into its file as a draft, and shown as students see it.

- A question lives in a lesson folder's ``questions.toml`` (one ``[[questions]]`` table) or in
  a file of its ``questions/`` folder. Saving replaces exactly that table (tomlkit keeps the
  rest of the file as it was, comments included) and keeps the file as a draft
  (studio.drafts.save_draft), as the file editor does; a new question is appended to the
  lesson's questions.toml.
- ``check_question`` lays the changed file over the working copy and runs ``load_course`` on
  it: the same checks an import and a publish run, no second rule set. The problems found in
  the question's own lines come back with the key path of the table they are at (found from
  their line), so the form can show each at its field.
- ``preview_question`` is the checked question as an unsaved ``courses.Question``: the lesson
  page's template renders it, its kind grades answers to it, and nothing is stored.
"""

import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

import tomlkit
from django.utils.translation import gettext as _
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, String, StringType, Table, Trivia

from courses.authoring import QuestionSource, load_course
from courses.exporter import folder_name
from courses.kinds import get_kind
from courses.models import Course, Lesson, Question
from courses.tomlsource import TomlSource, TomlSyntaxError, parse_toml

from .drafts import save_draft, working_copy

QUESTIONS_FILE = "questions.toml"


class QuestionNotFound(Exception):
    pass


class FileUnreadable(Exception):
    """The question's file is not TOML the form can write into; the message (translated)
    says where, so it can be mended in the file's editor first."""


@dataclass
class Place:
    """Where a question's table is: ``path`` in the course, its index among the file's
    ``[[questions]]`` (None: the file is the question; -1: a new one, appended)."""

    lesson: str  # the lesson folder
    path: str
    index: int | None
    table: dict = field(default_factory=dict)

    @property
    def keys(self) -> tuple:
        return () if self.index is None else ("questions", self.index)


def lesson_folders(course: Course) -> list[str]:
    """The folders of the working copy that hold a lesson.md."""
    return sorted(
        str(PurePosixPath(path).parent)
        for path in working_copy(course)
        if PurePosixPath(path).name == "lesson.md" and len(PurePosixPath(path).parts) == 2
    )


def _text(files: dict[str, bytes], path: str) -> str | None:
    data = files.get(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def find_question(course: Course, lesson: str, slug: str) -> Place:
    """The question ``slug`` of the lesson folder ``lesson`` in the working copy."""
    files = working_copy(course)
    candidates = [f"{lesson}/{QUESTIONS_FILE}"] + sorted(
        path
        for path in files
        if PurePosixPath(path).parent == PurePosixPath(lesson, "questions") and path.endswith(".toml")
    )
    for path in candidates:
        text = _text(files, path)
        if text is None:
            continue
        try:
            data = parse_toml(text)
        except TomlSyntaxError:
            continue
        if path.endswith(f"/{QUESTIONS_FILE}"):
            entries = data.get("questions", [])
            for index, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, dict) and entry.get("slug") == slug:
                    return Place(lesson, path, index, entry)
        elif data.get("slug") == slug:
            return Place(lesson, path, None, data)
    raise QuestionNotFound(slug)


def new_place(course: Course, lesson: str) -> Place:
    """Where a new question of the lesson goes: appended to its questions.toml."""
    path = f"{lesson}/{QUESTIONS_FILE}"
    text = _text(working_copy(course), path)
    if text is None:
        return Place(lesson, path, 0, {})
    try:
        entries = parse_toml(text).get("questions", [])
    except TomlSyntaxError as broken:
        raise FileUnreadable(
            _("%(path)s has a TOML error at line %(line)s: mend it in the file's editor first.")
            % {"path": path, "line": broken.line}
        ) from None
    if not isinstance(entries, list):
        raise FileUnreadable(
            _("%(path)s: questions must be [[questions]] tables; mend it in the file's editor first.")
            % {"path": path}
        )
    return Place(lesson, path, len(entries), {})


# -- writing the table --------------------------------------------------------------------


def _toml_item(value):
    if isinstance(value, str) and "\n" in value:
        text = tomlkit.string(value, multiline=True)
        if value.startswith("\n"):
            return text
        # Written as the course's files are: the text starts on the line after the quotes
        # (a newline right after the opening quotes is not part of the string).
        return String(StringType.MLB, value, "\n" + text.as_string()[3:-3], Trivia())
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        tables = tomlkit.aot()
        for item in value:
            tables.append(_toml_table(item))
        return tables
    if isinstance(value, list) and any(isinstance(item, str) and len(item) > 40 for item in value):
        array = tomlkit.array()
        array.extend(value)
        array.multiline(True)
        return array
    if (
        isinstance(value, dict)
        and all(not isinstance(v, (dict, list)) for v in value.values())
        and len(value) == 1
    ):
        inline = tomlkit.inline_table()
        inline.update(value)
        return inline
    if isinstance(value, dict):
        return _toml_table(value)
    return value


def _toml_table(data: dict) -> Table:
    table = tomlkit.table()
    # Plain keys before sub-tables: TOML reads a key after a sub-table as the sub-table's.
    nested = [key for key, value in data.items() if isinstance(_toml_item(value), (Table, AoT))]
    for key, value in data.items():
        if key not in nested:
            table.add(key, _toml_item(value))
    for key in nested:
        table.add(key, _toml_item(data[key]))
    return table


def file_text(current: str | None, place: Place, table: dict) -> str:
    """The file's text with the question's table put in its place (everything else as it was)."""
    if place.index is None:
        return tomlkit.dumps(_toml_table(table))
    doc = tomlkit.parse(current or "")
    entries = doc.get("questions")
    if entries is None or not 0 <= place.index < len(entries):
        # A new question goes after everything else, the file before it untouched.
        alone = tomlkit.document()
        alone.add("questions", tomlkit.aot())
        alone["questions"].append(_toml_table(table))
        before = (current or "").rstrip("\n")
        return (before + "\n\n" if before else "") + tomlkit.dumps(alone)
    new = _toml_table(table)
    if place.index < len(entries) - 1:
        new.add(tomlkit.nl())  # the blank line before the next question
    entries[place.index] = new
    return tomlkit.dumps(doc)


# -- checking -----------------------------------------------------------------------------


@dataclass
class Checked:
    """What the import's checks said of a question: ``problems`` as (key path, message), and
    the question as loaded when there were none."""

    text: str
    problems: list[tuple[tuple, str]] = field(default_factory=list)
    source: QuestionSource | None = None
    lesson_slug: str = ""


def _anchors(doc: TomlSource, prefix: tuple, table: dict) -> list[tuple[int, tuple]]:
    """(line, key path) of every key of the table, the question's own line as its slug."""
    anchors = [(doc.line_of(*prefix) if prefix else 1, ("slug",))]

    def walk(keys: tuple, value) -> None:
        anchors.append((doc.line_of(*prefix, *keys), keys))
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            for index, item in enumerate(value):
                walk(keys + (index,), item)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(keys + (key,), item)

    for key, value in table.items():
        walk((key,), value)
    return sorted(anchors, key=lambda anchor: (anchor[0], len(anchor[1])))


def _keys_at(anchors: list[tuple[int, tuple]], line: int) -> tuple:
    best: tuple = ()
    best_line = 0
    for at, keys in anchors:
        if at <= line and at > best_line:
            best, best_line = keys, at
    return best


def _entry_lines(doc: TomlSource, place: Place, count: int) -> tuple[int, int]:
    if place.index is None:
        return 1, 10**9
    start = doc.line_of("questions", place.index)
    end = doc.line_of("questions", place.index + 1) - 1 if place.index + 1 < count else 10**9
    return start, end


def check_question(course: Course, place: Place, table: dict) -> Checked:
    """Put ``table`` in its place in the working copy and load the course as an import does."""
    files = working_copy(course)
    try:
        text = file_text(_text(files, place.path), place, table)
    except TOMLKitError:  # the file was broken in its editor since the form was opened
        raise FileUnreadable(
            _("%(path)s is no longer valid TOML: mend it in the file's editor first.") % {"path": place.path}
        ) from None
    files[place.path] = text.encode()
    folder = folder_name(course)
    with tempfile.TemporaryDirectory(prefix="studio-question-") as tmp:
        root = Path(tmp) / folder
        for name, data in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        source = load_course(root)
    checked = Checked(text)
    doc = TomlSource(Path(place.path), text, parse_toml(text))
    count = len(doc.data.get("questions", []))
    if place.index is not None:  # a new question was appended: it is the last one
        place = Place(place.lesson, place.path, min(place.index, count - 1), table)
    start, end = _entry_lines(doc, place, count)
    anchors = _anchors(doc, place.keys, table)
    wanted = f"{folder}/{place.path}"
    for problem in source.problems:
        if problem.file == wanted and start <= problem.line <= end:
            checked.problems.append((_keys_at(anchors, problem.line), problem.message))
    if not checked.problems:
        for lesson in source.lessons:
            for question in lesson.questions:
                if question.file == wanted and question.slug == table.get("slug"):
                    checked.source, checked.lesson_slug = question, lesson.slug
    return checked


def save_question(course: Course, place: Place, text: str, user) -> None:
    """Keep the checked file text as the draft of the question's file."""
    save_draft(course, place.path, text, user)


# -- the preview --------------------------------------------------------------------------


def preview_question(course: Course, lesson_slug: str, source: QuestionSource) -> Question:
    """The question as students would be asked it, in memory only (never saved)."""
    lesson = course.lessons.filter(slug=lesson_slug).first() or Lesson(course=course, slug=lesson_slug)
    question = Question(
        course=course,
        lesson=lesson,
        slug=source.slug,
        kind=source.kind,
        prompt_html=source.prompt_html,
        explanation_html=source.explanation_html,
        spec=source.spec,
        reveal=source.reveal,
        hints=source.hints,
        max_attempts=source.max_attempts,
        generated=bool(source.generator),
    )
    question.__dict__["number"] = 0  # "Question", no number: it is not in the lesson yet
    return question


def stored_question(source: QuestionSource) -> dict:
    """What the preview keeps of a checked question between requests (JSON-able)."""
    return {
        "slug": source.slug,
        "kind": source.kind,
        "prompt_html": source.prompt_html,
        "explanation_html": source.explanation_html,
        "spec": source.spec,
        "reveal": source.reveal,
        "hints": source.hints,
        "max_attempts": source.max_attempts,
        "generator": source.generator,
    }


def restored_question(data: dict) -> QuestionSource:
    return QuestionSource(
        slug=data["slug"],
        kind=data["kind"],
        order=0,
        prompt_html=data["prompt_html"],
        explanation_html=data["explanation_html"],
        spec=data["spec"],
        reveal=data["reveal"],
        max_attempts=data["max_attempts"],
        file="",
        line=0,
        hints=data["hints"],
        generator=data["generator"],
    )


def kind_form(kind_name: str):
    """The kind's authoring form class, or None (an unknown kind, or one without a form)."""
    kind = get_kind(kind_name) if isinstance(kind_name, str) else None
    return kind.authoring_form() if kind is not None else None


def json_safe(value):
    """A question table without datetimes (a reveal date), for the session."""
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def lesson_question_list(course: Course, lesson: str) -> list[dict]:
    """The questions of a lesson folder in the working copy, in file order: slug, kind's
    label, whether its kind has a form, and its file."""
    files = working_copy(course)
    found = []
    paths = [f"{lesson}/{QUESTIONS_FILE}"] + sorted(
        path
        for path in files
        if PurePosixPath(path).parent == PurePosixPath(lesson, "questions") and path.endswith(".toml")
    )
    for path in paths:
        text = _text(files, path)
        if text is None:
            continue
        try:
            data = parse_toml(text)
        except TomlSyntaxError:
            continue
        entries = data.get("questions", []) if path.endswith(f"/{QUESTIONS_FILE}") else [data]
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("slug"), str):
                continue
            kind = get_kind(entry.get("kind", "")) if isinstance(entry.get("kind"), str) else None
            found.append(
                {
                    "slug": entry["slug"],
                    "kind_label": kind.label if kind else entry.get("kind", ""),
                    "has_form": bool(kind and kind.authoring_form()),
                    "path": path,
                }
            )
    return found
