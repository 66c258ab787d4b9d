"""A course's structure read from its working copy (drafts included), and the changes to it
an instructor makes in the outline, each written as drafts of the files that hold it:

- a new lesson (a folder with lesson.md and an empty questions.toml) or a new exercise (its
  folder from a small template that passes validation);
- retiring a lesson, question or exercise (its files, or its [[questions]] table, removed: on
  publish the import retires the rows and keeps students' work);
- a new order of the lessons or of a lesson's items: the ``order`` keys the format defines
  (a lesson's front matter, a question's table, exercise.toml), renumbered.

Files are edited as text, line by line, so an author's comments and layout stay; every edit
is parsed again and compared with what it meant to change, and refused when it would change
anything else (a file too unusual to edit this way is left to the editor).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from django.utils.translation import gettext as _

from courses.authoring import FRONT_MATTER, SLUG
from courses.models import Course
from courses.tomlsource import TomlSyntaxError, parse_toml

from .drafts import EXERCISE_FILE, DraftRefused, delete_file, save_draft, working_copy

LESSON_FILE = "lesson.md"
QUESTIONS_FILE = "questions.toml"
ITEM_STEP = 10  # items are renumbered 10, 20, 30 …: room to put one in between by hand


@dataclass
class Item:
    """A question or an exercise of a lesson, where its ``order`` lives."""

    slug: str
    kind: str  # a question kind's name, or "exercise"
    title: str
    order: int
    file: str  # the file holding it
    index: int | None = None  # its place among questions.toml's [[questions]] tables
    folder: str = ""  # an exercise's folder

    @property
    def is_exercise(self) -> bool:
        return self.kind == "exercise"


@dataclass
class LessonOutline:
    folder: str
    slug: str = ""
    title: str = ""
    order: int = 0
    items: list[Item] = field(default_factory=list)
    readable: bool = True  # False: its lesson.md has no front matter the outline can read

    @property
    def file(self) -> str:
        return f"{self.folder}/{LESSON_FILE}"


def _toml(data: bytes) -> dict:
    try:
        return parse_toml(data.decode("utf-8"))
    except (TomlSyntaxError, UnicodeDecodeError):
        return {}


def _front_matter(text: str) -> tuple[list[str], int, int] | None:
    """The lines of a lesson.md and the span of its front matter (first, closing line)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FRONT_MATTER:
        return None
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() == FRONT_MATTER), None)
    return None if closing is None else (lines, 1, closing)


def _number(value, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def read_outline(files: dict[str, bytes]) -> list[LessonOutline]:
    """The lessons of a working copy in the order students see them, with their items; the
    same defaults as the import (courses.authoring): a lesson without ``order`` is 0, an
    exercise 50, a question in questions.toml 100 + its place, one in questions/ 200 + its place."""
    lessons = []
    for path, data in files.items():
        parts = PurePosixPath(path).parts
        if len(parts) != 2 or parts[1] != LESSON_FILE:
            continue
        folder = parts[0]
        lesson = LessonOutline(folder)
        found = _front_matter(data.decode("utf-8", errors="replace"))
        front = parse_front(found) if found else None
        if front is None:
            lesson.readable = False
        else:
            lesson.slug = str(front.get("slug", ""))
            lesson.title = str(front.get("title", ""))
            lesson.order = _number(front.get("order"), 0)
        lesson.items = _items(files, folder)
        lessons.append(lesson)
    return sorted(lessons, key=lambda lesson: (lesson.order, lesson.slug, lesson.folder))


def parse_front(found: tuple[list[str], int, int]) -> dict | None:
    lines, first, closing = found
    try:
        return parse_toml("".join(lines[first:closing]))
    except TomlSyntaxError:
        return None


def _items(files: dict[str, bytes], folder: str) -> list[Item]:
    items = []
    questions_file = f"{folder}/{QUESTIONS_FILE}"
    if questions_file in files:
        entries = _toml(files[questions_file]).get("questions", [])
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict):
                items.append(_question(entry, questions_file, 100 + index, index))
    singles = sorted(p for p in files if PurePosixPath(p).parent == PurePosixPath(folder, "questions"))
    for index, path in enumerate(p for p in singles if p.endswith(".toml")):
        items.append(_question(_toml(files[path]), path, 200 + index, None))
    for path, text in files.items():
        parts = PurePosixPath(path).parts
        if len(parts) == 3 and parts[0] == folder and parts[2] == EXERCISE_FILE:
            data = _toml(text)
            items.append(
                Item(
                    slug=str(data.get("slug", "")),
                    kind="exercise",
                    title=str(data.get("title", "")),
                    order=_number(data.get("order"), 50),
                    file=path,
                    folder=f"{folder}/{parts[1]}",
                )
            )
    return sorted(items, key=lambda item: (item.order, item.slug))


def _question(entry: dict, file: str, default_order: int, index: int | None) -> Item:
    return Item(
        slug=str(entry.get("slug", "")),
        kind=str(entry.get("kind", "")),
        title="",
        order=_number(entry.get("order"), default_order),
        file=file,
        index=index,
    )


def item_slugs(lessons: list[LessonOutline]) -> set[str]:
    return {item.slug for lesson in lessons for item in lesson.items}


def find_lesson(lessons: list[LessonOutline], folder: str) -> LessonOutline:
    for lesson in lessons:
        if lesson.folder == folder:
            return lesson
    raise DraftRefused(_("There is no lesson in the folder %(folder)s.") % {"folder": folder})


def find_item(lesson: LessonOutline, slug: str) -> Item:
    for item in lesson.items:
        if item.slug == slug:
            return item
    raise DraftRefused(
        _("The lesson %(lesson)s has no item %(slug)s.") % {"lesson": lesson.folder, "slug": slug}
    )


# -- editing the order key -------------------------------------------------------------------

_ANY_HEADER = re.compile(r"^\s*\[\[?\s*[A-Za-z0-9_.\"' -]+\s*\]\]?\s*(#.*)?$")
_QUESTIONS_HEADER = re.compile(r"^\s*\[\[\s*questions\s*\]\]\s*(#.*)?$")
_ORDER_LINE = re.compile(r"^(\s*order\s*=\s*)[^#\r\n]*?(\s*(#.*)?)(\r?\n?)$")
_SLUG_LINE = re.compile(r"^\s*slug\s*=")


def _table_span(lines: list[str], index: int | None) -> tuple[int, int]:
    """Where the keys of a table are: the top level (``index`` None) or the index-th
    [[questions]] table, from its first key line to the next header."""
    if index is None:
        start = 0
    else:
        headers = [n for n, line in enumerate(lines) if _QUESTIONS_HEADER.match(line)]
        start = headers[index] + 1
    end = next((n for n in range(start, len(lines)) if _ANY_HEADER.match(lines[n])), len(lines))
    return start, end


def _set_order(lines: list[str], index: int | None, order: int) -> list[str]:
    start, end = _table_span(lines, index)
    lines = list(lines)
    for n in range(start, end):
        match = _ORDER_LINE.match(lines[n])
        if match:
            lines[n] = f"{match.group(1)}{order}{match.group(2)}{match.group(4) or ''}"
            return lines
    after = next((n + 1 for n in range(start, end) if _SLUG_LINE.match(lines[n])), start)
    lines.insert(after, f"order = {order}\n")
    return lines


def _checked(before: dict, after_text: str, path: str, expect) -> None:
    """Refuse an edit whose parsed result is not what it meant (``expect(before)``)."""
    try:
        after = parse_toml(after_text)
    except TomlSyntaxError:
        after = None
    if after != expect(before):
        raise DraftRefused(
            _(
                "%(path)s is laid out in a way this page cannot change safely; "
                "make the change in the file's editor."
            )
            % {"path": path}
        )


def with_order(path: str, text: str, order: int, index: int | None = None) -> str:
    """``text`` of the file ``path`` with the item's (or the lesson's) ``order`` set."""

    def expect(data: dict) -> dict:
        data = _copy(data)
        table = data if index is None else data["questions"][index]
        table["order"] = order
        return data

    if PurePosixPath(path).name == LESSON_FILE:
        found = _front_matter(text)
        if found is None:
            raise DraftRefused(_("%(path)s has no front matter between +++ lines.") % {"path": path})
        lines, first, closing = found
        front = lines[first:closing]
        new_front = _set_order(front, None, order)
        _checked(parse_front(found) or {}, "".join(new_front), path, expect)
        return "".join(lines[:first] + new_front + lines[closing:])
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    new = _set_order(lines, index, order)
    _checked(parse_toml(text), "".join(new), path, expect)
    return "".join(new)


def _copy(data):
    if isinstance(data, dict):
        return {key: _copy(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_copy(value) for value in data]
    return data


def without_question(path: str, text: str, index: int) -> str:
    """``text`` of a questions.toml without its index-th [[questions]] table."""
    lines = text.splitlines(keepends=True)
    headers = [n for n, line in enumerate(lines) if _QUESTIONS_HEADER.match(line)]
    start = headers[index]
    end = headers[index + 1] if index + 1 < len(headers) else len(lines)
    new = "".join(lines[:start] + lines[end:])

    def expect(data: dict) -> dict:
        data = _copy(data)
        del data["questions"][index]
        return data

    _checked(parse_toml(text), new, path, expect)
    return new


# -- the changes ---------------------------------------------------------------------------------


def _write(course: Course, texts: dict[str, str], user) -> None:
    for path, text in texts.items():
        save_draft(course, path, text, user)


def _reorder(course: Course, user, wanted: list, current: list, write_order) -> None:
    if sorted(map(id, wanted)) != sorted(map(id, current)):
        raise DraftRefused(_("The new order must list each of them once."))
    texts: dict[str, str] = {}
    for position, thing in enumerate(wanted, start=1):
        write_order(thing, position, texts)
    _write(course, texts, user)


def _text(files: dict[str, bytes], texts: dict[str, str], path: str) -> str:
    return texts[path] if path in texts else files[path].decode("utf-8")


def order_lessons(course: Course, folders: list[str], user) -> None:
    """Put the lessons in the order of ``folders`` (every lesson folder once): orders 1, 2, 3 …"""
    files = working_copy(course)
    lessons = read_outline(files)
    by_folder = {lesson.folder: lesson for lesson in lessons}
    wanted = [by_folder.get(folder) for folder in folders]
    if None in wanted or len(set(folders)) != len(folders):
        raise DraftRefused(_("The new order must list each of them once."))

    def write(lesson: LessonOutline, position: int, texts: dict[str, str]) -> None:
        if lesson.order != position:
            texts[lesson.file] = with_order(lesson.file, _text(files, texts, lesson.file), position)

    _reorder(course, user, wanted, lessons, write)


def order_items(course: Course, folder: str, slugs: list[str], user) -> None:
    """Put the items of the lesson in ``folder`` in the order of ``slugs``: 10, 20, 30 …"""
    files = working_copy(course)
    lesson = find_lesson(read_outline(files), folder)
    by_slug = {item.slug: item for item in lesson.items}
    wanted = [by_slug.get(slug) for slug in slugs]
    if None in wanted or len(set(slugs)) != len(slugs):
        raise DraftRefused(_("The new order must list each of them once."))

    def write(item: Item, position: int, texts: dict[str, str]) -> None:
        order = position * ITEM_STEP
        if item.order != order:
            texts[item.file] = with_order(item.file, _text(files, texts, item.file), order, item.index)

    _reorder(course, user, wanted, lesson.items, write)


def _moved(names: list[str], name: str, step: int) -> list[str]:
    at = names.index(name)
    to = at + step
    if 0 <= to < len(names):
        names[at], names[to] = names[to], names[at]
    return names


def move_lesson(course: Course, folder: str, step: int, user) -> None:
    """Move a lesson one place up (``step`` -1) or down (+1)."""
    folders = [lesson.folder for lesson in read_outline(working_copy(course))]
    if folder not in folders:
        raise DraftRefused(_("There is no lesson in the folder %(folder)s.") % {"folder": folder})
    order_lessons(course, _moved(folders, folder, step), user)


def move_item(course: Course, folder: str, slug: str, step: int, user) -> None:
    lesson = find_lesson(read_outline(working_copy(course)), folder)
    find_item(lesson, slug)
    order_items(course, folder, _moved([item.slug for item in lesson.items], slug, step), user)


def retire_lesson(course: Course, folder: str, user) -> None:
    """Draft the removal of every file of the lesson: on publish it is retired."""
    files = working_copy(course)
    find_lesson(read_outline(files), folder)
    for path in files:
        if path.startswith(f"{folder}/"):
            delete_file(course, path, user)


def retire_item(course: Course, folder: str, slug: str, user) -> None:
    """Draft the removal of an item: an exercise's folder, a question's file or its table."""
    files = working_copy(course)
    item = find_item(find_lesson(read_outline(files), folder), slug)
    if item.is_exercise:
        for path in files:
            if path.startswith(f"{item.folder}/"):
                delete_file(course, path, user)
    elif item.index is None:
        delete_file(course, item.file, user)
    else:
        save_draft(
            course, item.file, without_question(item.file, files[item.file].decode("utf-8"), item.index), user
        )


# -- new lessons and exercises -------------------------------------------------------------------


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def slug_problem(slug: str, taken: set[str]) -> str:
    """Why ``slug`` cannot name a new lesson or item ("" when it can)."""
    if not SLUG.match(slug):
        return _("Use lowercase letters and digits joined by hyphens, such as query-projection.")
    if slug in taken:
        return _("%(slug)s is already used in this course; choose another.") % {"slug": slug}
    return ""


def lesson_files(slug: str, title: str, order: int) -> dict[str, str]:
    """A new lesson's files: lesson.md with its front matter and a first line, no question yet."""
    lesson = (
        f"+++\nslug = {toml_string(slug)}\ntitle = {toml_string(title)}\norder = {order}\n+++\n\n"
        + _("Write the lesson here in Markdown; put formulas between dollar signs, such as $QK^T$.")
        + "\n"
    )
    questions = "# " + _("Self-test questions: [[questions]] tables (see docs/authoring.md).") + "\n"
    return {LESSON_FILE: lesson, QUESTIONS_FILE: questions}


def create_lesson(course: Course, slug: str, title: str, user) -> str:
    """Draft a new lesson's folder (named by its place and slug, "07-slug"); its folder."""
    files = working_copy(course)
    lessons = read_outline(files)
    taken = {lesson.slug for lesson in lessons}
    problem = slug_problem(slug, taken)
    if problem:
        raise DraftRefused(problem)
    folders = {PurePosixPath(path).parts[0] for path in files}
    number = len(lessons) + 1
    while f"{number:02d}-{slug}" in folders:
        number += 1
    folder = f"{number:02d}-{slug}"
    order = max((lesson.order for lesson in lessons), default=0) + 1
    _write(
        course, {f"{folder}/{name}": text for name, text in lesson_files(slug, title, order).items()}, user
    )
    return folder


EXERCISE_FUNCTION = "scale"


def exercise_files(slug: str, title: str, order: int) -> dict[str, str]:
    """A new exercise's files: a small function exercise that passes validation as it is
    (a visible example case, hidden cases from cases.py, limits), to be rewritten."""
    prompt = _("Write `scale(x)`: it returns the array `x` with every element multiplied by 2.")
    return {
        EXERCISE_FILE: (
            f"slug = {toml_string(slug)}\n"
            f"title = {toml_string(title)}\n"
            f"order = {order}\n"
            f'prompt = """\n{prompt}\n"""\n'
            'kind = "function"\n'
            f'function = "{EXERCISE_FUNCTION}"\n'
            "rtol = 1e-6\n"
            "\n[limits]\ncpu_seconds = 5\nwall_seconds = 10\n"
            '\n[[cases]]\nname = "ornek"\nhidden = false\n[cases.inputs]\nx = [1.0, 2.0, 3.0]\n'
        ),
        "starter.py": f"import numpy as np\n\n\ndef {EXERCISE_FUNCTION}(x):\n    ...\n",
        "solution.py": f"import numpy as np\n\n\ndef {EXERCISE_FUNCTION}(x):\n    return 2 * x\n",
        "cases.py": (
            "def make_cases(rng):\n"
            '    return [{"name": f"gizli-{i}", "inputs": {"x": rng.normal(size=4)}} for i in range(3)]\n'
        ),
    }


def create_exercise(course: Course, folder: str, slug: str, title: str, user) -> str:
    """Draft a new exercise in the lesson at ``folder``, after its items; its folder."""
    files = working_copy(course)
    lessons = read_outline(files)
    lesson = find_lesson(lessons, folder)
    problem = slug_problem(slug, item_slugs(lessons))
    if not problem and any(path.startswith(f"{folder}/{slug}/") for path in files):
        problem = _("%(slug)s is already used in this course; choose another.") % {"slug": slug}
    if problem:
        raise DraftRefused(problem)
    order = (max((item.order for item in lesson.items), default=0) // ITEM_STEP + 1) * ITEM_STEP
    where = f"{folder}/{slug}"
    _write(
        course, {f"{where}/{name}": text for name, text in exercise_files(slug, title, order).items()}, user
    )
    return where
