"""Read a course folder into plain data, collecting every problem with its file and line.

Layout (documented in docs/authoring.md):

    <course>/course.toml
    <course>/<lesson folder>/lesson.md              +++ TOML front matter +++ then Markdown
    <course>/<lesson folder>/questions.toml         [[questions]] … (optional)
    <course>/<lesson folder>/questions/*.toml       one question per file (optional)
    <course>/<lesson folder>/<exercise folder>/exercise.toml, starter.py, solution.py, …
    <course>/assessments/<slug>.toml                graded homework and exams (optional)

Nothing here touches the database: ``load_course`` is shared by validate_course and
import_course, and the import only writes once the whole course loaded without a problem.
"""

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .kinds import REGISTRY, SpecProblem, get_kind
from .rendering import render_markdown
from .reveal import parse_reveal
from .tomlsource import TomlSource, TomlSyntaxError
from .variants import DEFAULT_VARIANTS, MAX_VARIANTS, MissingParameter, ParameterTooLarge, fill_table
from .visuals import render_visual

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# Folder and file names an author chooses end up in paths (the course copy on the server,
# the grading data); like slugs, with "_" allowed as in Python file names.
_NAME = r"[a-z0-9]+(?:[-_][a-z0-9]+)*"
PATH_NAME = re.compile(rf"^{_NAME}$")
VARIANT_FILE = re.compile(rf"^(?:{_NAME}/)*{_NAME}\.py$")
FRONT_MATTER = "+++"
COURSE_KEYS = {
    "slug",
    "title",
    "summary",
    "description",
    "enrollment",
    "enrollment_code",
    "score_policy",
    "variants",
}
PARAMS_FILE = "params.py"
MAX_VARIANT_BYTES = 128 * 1024  # one variant's rendered prompt, explanation and spec
LESSON_KEYS = {"slug", "title", "order", "summary"}
EXERCISE_KEYS = {
    "slug",
    "title",
    "order",
    "prompt",
    "reveal",
    "hints",
    "misconceptions",
    "variants",
}  # plus the grader's keys
MAX_SOURCE_BYTES = 64 * 1024
# Keys of a question that belong to the item, whatever its kind: read here, never given to the kind.
ITEM_KEYS = frozenset({"hints"})
MAX_HINTS = 5  # steps of a hint ladder
ASSESSMENT_KEYS = {
    "slug",
    "title",
    "kind",
    "opens",
    "due",
    "closes",
    "late",
    "time_limit_minutes",
    "password",
    "feedback",
    "max_attempts",
    "items",
}
ASSESSMENT_KINDS = ("homework", "exam")
FEEDBACK_POLICIES = ("immediate", "score_only", "after_close")


@dataclass
class Problem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "message": self.message}


@dataclass
class QuestionSource:
    slug: str
    kind: str
    order: int
    prompt_html: str
    explanation_html: str
    spec: dict
    reveal: dict
    max_attempts: int | None
    file: str
    line: int
    hints: list[str] = field(default_factory=list)  # the hint ladder's steps, rendered
    # With a generator: ``generator(rng)`` in ``params_path`` makes ``variant_count`` variants.
    # ``build(params)`` fills the table in and returns (prompt_html, explanation_html, spec,
    # problems), raising VariantProblem; the check fills ``variants`` (and prompt/spec from variant 0).
    generator: str = ""
    params_path: Path | None = None
    variant_count: int = 1
    build: Callable[[dict], tuple[str, str, dict, list["Problem"]]] | None = None
    variants: list[dict] = field(default_factory=list)


class VariantProblem(Exception):
    """One variant's parameters do not make a valid question: at ``line`` of the question's file."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass
class ExerciseSource:
    slug: str
    title: str
    order: int
    prompt_html: str
    starter_code: str
    solution_code: str
    spec: dict  # the grader's keys of exercise.toml, untouched
    reveal: dict
    content_hash: str
    directory: Path
    file: str
    # Known-wrong variants: {"tag", "hint_html", "file", "line", "source"}.
    misconceptions: list[dict] = field(default_factory=list)
    # ``variants = N`` in exercise.toml: cases.py makes each variant's cases from its own seed.
    variant_count: int = 1
    hints: list[str] = field(default_factory=list)  # the hint ladder's steps, rendered


@dataclass
class LessonSource:
    slug: str
    title: str
    order: int
    summary: str
    body_source: str
    body_html: str
    file: str
    questions: list[QuestionSource] = field(default_factory=list)
    exercises: list[ExerciseSource] = field(default_factory=list)


@dataclass
class AssessmentSource:
    slug: str
    title: str
    kind: str  # homework | exam
    opens: datetime
    due: datetime
    closes: datetime
    late: list[dict]  # [{"until": datetime, "credit": float}], in time order
    time_limit_minutes: int | None
    password: str
    feedback: str
    max_attempts: int | None
    # [{"item": slug, "points": p}] or [{"pool": [slugs], "pick": n, "points": p}] (points per drawn item)
    items: list[dict]
    file: str
    line: int

    def item_slugs(self) -> list[str]:
        """Every item the assessment may use: fixed items and pool members, in order."""
        return [
            slug for entry in self.items for slug in ([entry["item"]] if "item" in entry else entry["pool"])
        ]


@dataclass
class CourseSource:
    slug: str = ""
    title: str = ""
    summary: str = ""
    description_html: str = ""
    enrollment: str = "open"
    enrollment_code: str = ""
    score_policy: str = "best"
    default_variants: int = DEFAULT_VARIANTS
    root: Path = Path()
    lessons: list[LessonSource] = field(default_factory=list)
    assessments: list[AssessmentSource] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # Worth an author's look but not wrong (two variants with the same answer): never refuse an import.
    warnings: list[Problem] = field(default_factory=list)

    def all_questions(self) -> list[QuestionSource]:
        return [q for lesson in self.lessons for q in lesson.questions]

    def all_exercises(self) -> list[ExerciseSource]:
        return [e for lesson in self.lessons for e in lesson.exercises]

    def summary_dict(self) -> dict:
        """The shape validate_course --json prints."""
        return {
            "course": self.slug,
            "lessons": [
                {
                    "slug": lesson.slug,
                    "title": lesson.title,
                    "questions": dict(Counter(q.kind for q in lesson.questions)),
                    "exercises": [e.slug for e in lesson.exercises],
                }
                for lesson in self.lessons
            ],
            "assessments": [
                {"slug": a.slug, "items": a.item_slugs(), "kind": a.kind} for a in self.assessments
            ],
            "variants": {
                **{q.slug: q.variant_count for q in self.all_questions() if q.generator},
                **{e.slug: e.variant_count for e in self.all_exercises() if e.variant_count > 1},
            },
            "problems": [p.as_dict() for p in self.problems],
            # Only when there are some, like validate_course's "misconceptions".
            **({"warnings": [p.as_dict() for p in self.warnings]} if self.warnings else {}),
        }


class _Loader:
    def __init__(self, root: Path):
        self.root = root
        self.course = CourseSource(root=root)

    # -- reporting ---------------------------------------------------------------------
    def rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root.parent))
        except ValueError:
            return str(path)

    def problem(self, path: Path, line: int, message: str) -> None:
        self.course.problems.append(Problem(self.rel(path), line, message))

    def read_toml(self, path: Path, text: str | None = None, first_line: int = 1) -> TomlSource | None:
        try:
            return TomlSource.read(path, text, first_line)
        except TomlSyntaxError as exc:
            self.problem(path, exc.line, str(exc))
        except UnicodeDecodeError:
            self.problem(path, 1, "file is not valid UTF-8")
        return None

    def render(self, source: TomlSource | None, path: Path, markdown: str, line: int, visual=None) -> str:
        rendered = render_markdown(markdown, visual)
        for issue in rendered.issues:
            self.problem(path, line + issue.line - 1, issue.message)
        return rendered.html

    def string(self, doc: TomlSource, keys: tuple, *, required=False, default="") -> str:
        value = _lookup(doc.data, keys)
        if value is None:
            if required:
                self.problem(
                    doc.path,
                    doc.line_of(*keys[:-1]) if len(keys) > 1 else 1,
                    f"missing required key {keys[-1]!r}",
                )
            return default
        if not isinstance(value, str):
            self.problem(doc.path, doc.line_of(*keys), f"{keys[-1]!r} must be a string")
            return default
        return value

    def slug(self, doc: TomlSource, keys: tuple = ("slug",)) -> str:
        value = self.string(doc, keys, required=True)
        if value and not SLUG.match(value):
            self.problem(
                doc.path,
                doc.line_of(*keys),
                f"slug {value!r} must be lowercase letters and digits joined by hyphens",
            )
        return value

    def path_name(self, name: str, path: Path, line: int, what: str) -> None:
        if not PATH_NAME.match(name):
            self.problem(
                path,
                line,
                f"{what} {name!r} must be lowercase letters and digits joined by "
                f"hyphens or underscores (it is used in file paths); rename it",
            )

    def order(self, doc: TomlSource, keys: tuple, default: int) -> int:
        value = _lookup(doc.data, keys)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            self.problem(doc.path, doc.line_of(*keys), "order must be a whole number ≥ 0")
            return default
        return value

    def unknown_keys(self, doc: TomlSource, table: dict, allowed: set, keys: tuple = ()) -> None:
        for key in table:
            if key not in allowed:
                self.problem(
                    doc.path,
                    doc.line_of(*keys, key),
                    f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})",
                )

    # -- course --------------------------------------------------------------------------
    def load(self) -> CourseSource:
        course_file = self.root / "course.toml"
        if not self.root.is_dir():
            self.problem(self.root, 1, "course folder does not exist")
            return self.course
        if not course_file.is_file():
            self.problem(course_file, 1, "course.toml is missing")
            return self.course
        doc = self.read_toml(course_file)
        if doc:
            self.load_course_file(doc)
        lesson_dirs = sorted(p.parent for p in self.root.glob("*/lesson.md"))
        if not lesson_dirs:
            self.problem(course_file, 1, "the course has no lesson (a folder with lesson.md)")
        for lesson_dir in lesson_dirs:
            lesson = self.load_lesson(lesson_dir)
            if lesson:
                self.course.lessons.append(lesson)
        self.course.lessons.sort(key=lambda lesson: (lesson.order, lesson.slug))
        self.check_duplicates()
        self.load_assessments()
        return self.course

    def load_course_file(self, doc: TomlSource) -> None:
        c = self.course
        self.unknown_keys(doc, doc.data, COURSE_KEYS)
        c.slug = self.slug(doc)
        c.title = self.string(doc, ("title",), required=True)
        c.summary = self.string(doc, ("summary",))
        description = self.string(doc, ("description",))
        c.description_html = self.render(doc, doc.path, description, doc.line_of("description"))
        c.enrollment = self.string(doc, ("enrollment",), default="open")
        if c.enrollment not in ("open", "code"):
            self.problem(doc.path, doc.line_of("enrollment"), 'enrollment must be "open" or "code"')
        c.enrollment_code = self.string(doc, ("enrollment_code",))
        if c.enrollment == "code" and not c.enrollment_code:
            self.problem(doc.path, doc.line_of("enrollment"), 'enrollment = "code" needs enrollment_code')
        c.score_policy = self.string(doc, ("score_policy",), default="best")
        if c.score_policy not in ("best", "last"):
            self.problem(doc.path, doc.line_of("score_policy"), 'score_policy must be "best" or "last"')
        c.default_variants = self.variant_count(doc, ("variants",), DEFAULT_VARIANTS)

    def variant_count(self, doc: TomlSource, keys: tuple, default: int) -> int:
        value = _lookup(doc.data, keys)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_VARIANTS:
            self.problem(
                doc.path, doc.line_of(*keys), f"variants must be a whole number from 1 to {MAX_VARIANTS}"
            )
            return default
        return value

    # -- lessons -------------------------------------------------------------------------
    def load_lesson(self, folder: Path) -> LessonSource | None:
        path = folder / "lesson.md"
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            self.problem(path, 1, "file is not valid UTF-8")
            return None
        self.path_name(folder.name, path, 1, "lesson folder name")
        lines = text.splitlines(keepends=True)
        if not lines or lines[0].strip() != FRONT_MATTER:
            self.problem(path, 1, "lesson.md must start with TOML front matter between +++ lines")
            return None
        try:
            closing = next(i for i in range(1, len(lines)) if lines[i].strip() == FRONT_MATTER)
        except StopIteration:
            self.problem(path, 1, "front matter is not closed by a +++ line")
            return None
        doc = self.read_toml(path, "".join(lines[1:closing]), first_line=2)
        if not doc:
            return None
        self.unknown_keys(doc, doc.data, LESSON_KEYS)
        body = "".join(lines[closing + 1 :])
        body_line = closing + 2
        lesson = LessonSource(
            slug=self.slug(doc),
            title=self.string(doc, ("title",), required=True),
            order=self.order(doc, ("order",), 0),
            summary=self.string(doc, ("summary",)),
            body_source=body,
            body_html=self.render(
                doc, path, body, body_line, visual=lambda name: render_visual(name, folder)
            ),
            file=self.rel(path),
        )
        if not body.strip():
            self.problem(path, body_line, "the lesson has no text after the front matter")
        questions_file = folder / "questions.toml"
        if questions_file.is_file():
            qdoc = self.read_toml(questions_file)
            if qdoc:
                self.unknown_keys(qdoc, qdoc.data, {"questions"})
                entries = qdoc.data.get("questions", [])
                if not isinstance(entries, list):
                    self.problem(
                        questions_file, qdoc.line_of("questions"), "questions must be [[questions]] tables"
                    )
                    entries = []
                for index, entry in enumerate(entries):
                    question = self.load_question(
                        qdoc, entry, ("questions", index), default_order=100 + index
                    )
                    if question:
                        lesson.questions.append(question)
        for index, single in enumerate(sorted((folder / "questions").glob("*.toml"))):
            self.path_name(single.stem, single, 1, "question file name")
            qdoc = self.read_toml(single)
            if qdoc:
                question = self.load_question(qdoc, qdoc.data, (), default_order=200 + index)
                if question:
                    lesson.questions.append(question)
        for exercise_dir in sorted(p.parent for p in folder.glob("*/exercise.toml")):
            exercise = self.load_exercise(exercise_dir)
            if exercise:
                lesson.exercises.append(exercise)
        return lesson

    # -- questions -----------------------------------------------------------------------
    def load_question(self, doc: TomlSource, data, keys: tuple, default_order: int) -> QuestionSource | None:
        if not isinstance(data, dict):
            self.problem(doc.path, doc.line_of(*keys), "a question must be a table")
            return None
        line = doc.line_of(*keys) if keys else 1
        slug = self.slug(doc, keys + ("slug",))
        kind_name = self.string(doc, keys + ("kind",), required=True)
        kind = get_kind(kind_name)
        if kind_name and kind is None:
            self.problem(
                doc.path,
                doc.line_of(*keys, "kind"),
                f"unknown question kind {kind_name!r} (known: {', '.join(sorted(REGISTRY))})",
            )
        prompt = self.string(doc, keys + ("prompt",), required=True)
        if not prompt.strip() and isinstance(data.get("prompt"), str):
            self.problem(doc.path, doc.line_of(*keys, "prompt"), "prompt is empty")
        try:
            reveal = parse_reveal(data.get("reveal"))
        except ValueError as exc:
            self.problem(doc.path, doc.line_of(*keys, "reveal"), f"reveal: {exc}")
            reveal = {}
        max_attempts = data.get("max_attempts")
        if max_attempts is not None and (
            not isinstance(max_attempts, int) or isinstance(max_attempts, bool) or max_attempts < 1
        ):
            self.problem(
                doc.path, doc.line_of(*keys, "max_attempts"), "max_attempts must be a whole number ≥ 1"
            )
            max_attempts = None
        hints = self.hints(doc, data, keys, generated="params" in data or "variants" in data)
        # What belongs to the item is not the kind's: it never sees those keys.
        data = {key: value for key, value in data.items() if key not in ITEM_KEYS}

        def render(markdown: str, at: tuple) -> str:
            return self.render(doc, doc.path, markdown, doc.line_of(*keys, *at))

        generator = data.get("params")
        if generator is not None or "variants" in data:
            question = self.load_generated_question(
                doc, data, keys, default_order, slug, kind_name, reveal, max_attempts
            )
            if question:
                question.hints = hints
            return question
        spec = {}
        if kind:
            try:
                spec = kind.validate(data, render)
            except SpecProblem as problem:
                self.problem(
                    doc.path, doc.line_of(*keys, *problem.keys), f"{slug or 'question'}: {problem.message}"
                )
                return None
        return QuestionSource(
            slug=slug,
            kind=kind_name,
            order=self.order(doc, keys + ("order",), default_order),
            prompt_html=render(prompt, ("prompt",)),
            explanation_html=render(self.string(doc, keys + ("explanation",)), ("explanation",)),
            spec=spec,
            reveal=reveal,
            max_attempts=max_attempts,
            file=self.rel(doc.path),
            line=line,
            hints=hints,
        )

    def load_generated_question(
        self,
        doc: TomlSource,
        data: dict,
        keys: tuple,
        default_order: int,
        slug: str,
        kind_name: str,
        reveal: dict,
        max_attempts: int | None,
    ) -> QuestionSource | None:
        """A question with ``params``: checked here as far as it can be without its parameters;
        its variants are made by the check (courses.exercises), which runs the generator."""
        kind = get_kind(kind_name)
        generator = data.get("params")
        if not isinstance(generator, str) or not generator.isidentifier():
            self.problem(
                doc.path,
                doc.line_of(*keys, "params" if "params" in data else "variants"),
                f"{slug or 'question'}: params must name a function of {PARAMS_FILE} "
                '(params = "generate" for def generate(rng))',
            )
            return None
        count = self.variant_count(doc, keys + ("variants",), self.course.default_variants)
        params_path = doc.path.parent / PARAMS_FILE
        if not params_path.is_file():
            self.problem(
                doc.path,
                doc.line_of(*keys, "params"),
                f"{slug}: params = {generator!r} needs {PARAMS_FILE} next to {doc.path.name}",
            )
            return None
        if kind is None:
            return None
        try:
            kind.check_keys(data)
        except SpecProblem as problem:
            self.problem(doc.path, doc.line_of(*keys, *problem.keys), f"{slug}: {problem.message}")
            return None
        file = self.rel(doc.path)
        question_line = doc.line_of(*keys) if keys else 1

        def build(params: dict) -> tuple[str, str, dict, list[Problem]]:
            problems: list[Problem] = []

            def render(markdown: str, at: tuple) -> str:
                rendered = render_markdown(markdown)
                for issue in rendered.issues:
                    problems.append(Problem(file, doc.line_of(*keys, *at) + issue.line - 1, issue.message))
                return rendered.html

            try:
                filled = fill_table(data, params, kind)
            except MissingParameter as missing:
                raise VariantProblem(
                    doc.line_of(*keys, *missing.keys),
                    f"{{{{ {missing.name} }}}} is not a parameter {generator}(rng) returns "
                    f"(it returns: {', '.join(sorted(params))})",
                ) from None
            except ParameterTooLarge as large:
                raise VariantProblem(question_line, str(large)) from None
            try:
                spec = kind.validate(filled, render)
            except SpecProblem as problem:
                raise VariantProblem(doc.line_of(*keys, *problem.keys), problem.message) from None
            prompt = filled.get("prompt") if isinstance(filled.get("prompt"), str) else ""
            explanation = filled.get("explanation") if isinstance(filled.get("explanation"), str) else ""
            prompt_html, explanation_html = render(prompt, ("prompt",)), render(explanation, ("explanation",))
            size = len(prompt_html) + len(explanation_html) + len(json.dumps(spec, default=str))
            if size > MAX_VARIANT_BYTES:
                raise VariantProblem(
                    question_line,
                    f"one variant of the question is {size // 1024} KB as shown and graded "
                    f"(at most {MAX_VARIANT_BYTES // 1024} KB): use smaller parameters",
                )
            return prompt_html, explanation_html, spec, problems

        return QuestionSource(
            slug=slug,
            kind=kind_name,
            order=self.order(doc, keys + ("order",), default_order),
            prompt_html="",
            explanation_html="",
            spec={},
            reveal=reveal,
            max_attempts=max_attempts,
            file=file,
            line=question_line,
            generator=generator,
            params_path=params_path,
            variant_count=count,
            build=build,
        )

    # -- exercises -----------------------------------------------------------------------
    def load_exercise(self, folder: Path) -> ExerciseSource | None:
        path = folder / "exercise.toml"
        self.path_name(folder.name, path, 1, "exercise folder name")
        doc = self.read_toml(path)
        if not doc:
            return None
        texts = {}
        for name, required in (("starter.py", False), ("solution.py", True)):
            file = folder / name
            if not file.is_file():
                if required:
                    self.problem(path, 1, f"{name} is missing next to exercise.toml")
                texts[name] = ""
                continue
            try:
                texts[name] = file.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                self.problem(file, 1, "file is not valid UTF-8")
                texts[name] = ""
        try:
            reveal = parse_reveal(doc.data.get("reveal"))
        except ValueError as exc:
            self.problem(path, doc.line_of("reveal"), f"reveal: {exc}")
            reveal = {}
        spec = {key: value for key, value in doc.data.items() if key not in EXERCISE_KEYS}
        misconceptions = self.load_misconceptions(doc, folder)
        slug = self.slug(doc)
        # Only an exercise that asks for variants has them (not the course's default): the
        # hidden cases of the others stay what they were.
        variant_count = self.variant_count(doc, ("variants",), 1)
        if variant_count > 1 and not (folder / "cases.py").is_file():
            self.problem(
                path,
                doc.line_of("variants"),
                f"{slug}: variants = {variant_count} needs cases.py next to exercise.toml "
                "(its make_cases(rng) draws each variant's hidden cases)",
            )
            variant_count = 1
        return ExerciseSource(
            slug=slug,
            title=self.string(doc, ("title",), required=True),
            order=self.order(doc, ("order",), 50),
            prompt_html=self.render(doc, path, self.string(doc, ("prompt",)), doc.line_of("prompt")),
            starter_code=texts["starter.py"],
            solution_code=texts["solution.py"],
            spec=spec,
            reveal=reveal,
            content_hash=grading_hash(folder, spec, misconceptions, variant_count),
            directory=folder,
            file=self.rel(path),
            misconceptions=misconceptions,
            variant_count=variant_count,
            hints=self.hints(doc, doc.data, ()),
        )

    def hints(self, doc: TomlSource, data: dict, keys: tuple, *, generated: bool = False) -> list[str]:
        """An item's hint ladder, ``hints = ["…", "…"]``: one Markdown string per step, each
        rendered like the rest of the item; [] without the key or with a problem."""
        if "hints" not in data:
            return []
        value, line = data["hints"], doc.line_of(*keys, "hints")
        if not isinstance(value, list):
            self.problem(
                doc.path, line, 'hints must be a list of Markdown strings, one per step: hints = ["…", "…"]'
            )
            return []
        if not value:
            self.problem(doc.path, line, "hints = [] has no step: give at least one hint or remove the key")
            return []
        if len(value) > MAX_HINTS:
            self.problem(
                doc.path,
                line,
                f"hints has {len(value)} steps; an item has at most {MAX_HINTS} "
                "(join steps that say the same thing)",
            )
            return []
        rendered, problems = [], len(self.course.problems)
        previous = line  # each step is looked for from the line after the one before it, then on its line
        for step, text in enumerate(value, start=1):
            if not isinstance(text, str):
                self.problem(
                    doc.path, line, f"hint {step} must be a string (Markdown), not {_toml_type(text)}"
                )
                continue
            at = (
                _line_of_text(doc, line, previous + 1, text)
                or _line_of_text(doc, line, previous, text)
                or previous
            )
            previous = at
            if not text.strip():
                self.problem(doc.path, at, f"hint {step} is empty: write the step or remove it")
            elif text.strip() in (
                earlier.strip() for earlier in value[: step - 1] if isinstance(earlier, str)
            ):
                self.problem(doc.path, at, f"hint {step} repeats an earlier step: each step should say more")
            elif generated and "{{" in text:
                self.problem(
                    doc.path,
                    at,
                    f"hint {step} has a placeholder {{{{ … }}}}: hints are the same for every variant "
                    "and are not filled in from the parameters",
                )
            else:
                rendered.append(self.render(doc, doc.path, text, at))
        return rendered if len(self.course.problems) == problems else []

    def load_misconceptions(self, doc: TomlSource, folder: Path) -> list[dict]:
        entries = doc.data.get("misconceptions", [])
        if not isinstance(entries, list):
            self.problem(
                doc.path, doc.line_of("misconceptions"), "misconceptions must be [[misconceptions]] tables"
            )
            return []
        out, tags = [], set()
        for index, entry in enumerate(entries):
            keys = ("misconceptions", index)
            line = doc.line_of(*keys)
            if not isinstance(entry, dict):
                self.problem(doc.path, line, "each misconception must be a table")
                continue
            self.unknown_keys(doc, entry, {"tag", "file", "hint"}, keys)
            tag = self.string(doc, keys + ("tag",), required=True)
            file = self.string(doc, keys + ("file",), required=True)
            hint = self.string(doc, keys + ("hint",), required=True)
            if tag and not SLUG.match(tag):
                # The tag names the folder of the variant's grading data.
                self.problem(
                    doc.path,
                    doc.line_of(*keys, "tag"),
                    f"misconception tag {tag!r} must be lowercase letters and digits joined by hyphens",
                )
            if tag in tags:
                self.problem(doc.path, line, f"duplicate misconception tag {tag!r}")
            tags.add(tag)
            if file and not VARIANT_FILE.match(file):
                self.problem(
                    doc.path,
                    doc.line_of(*keys, "file"),
                    f"variant file {file!r} must be a .py file inside the exercise folder, named with "
                    f'lowercase letters and digits joined by hyphens or underscores ("variants/no-scaling.py")',
                )
                continue
            variant = (folder / file).resolve()
            if not file or folder.resolve() not in variant.parents or not variant.is_file():
                self.problem(
                    doc.path,
                    doc.line_of(*keys, "file"),
                    f"variant file {file!r} is missing (it must be inside the exercise folder)",
                )
                continue
            out.append(
                {
                    "tag": tag,
                    "file": file,
                    "line": line,
                    "source": variant.read_text(encoding="utf-8"),
                    "hint_html": self.render(doc, doc.path, hint, doc.line_of(*keys, "hint")),
                }
            )
        return out

    def check_duplicates(self) -> None:
        lessons: dict[str, str] = {}
        for lesson in self.course.lessons:
            if lesson.slug in lessons:
                self.course.problems.append(
                    Problem(
                        lesson.file,
                        2,
                        f"duplicate lesson slug {lesson.slug!r} (also in {lessons[lesson.slug]})",
                    )
                )
            lessons[lesson.slug] = lesson.file
        items: dict[str, str] = {}
        for question in self.course.all_questions():
            if question.slug in items:
                self.course.problems.append(
                    Problem(
                        question.file,
                        question.line,
                        f"duplicate item slug {question.slug!r} (also in {items[question.slug]})",
                    )
                )
            items[question.slug] = f"{question.file}:{question.line}"
        for exercise in self.course.all_exercises():
            if exercise.slug in items:
                self.course.problems.append(
                    Problem(
                        exercise.file,
                        1,
                        f"duplicate item slug {exercise.slug!r} (also in {items[exercise.slug]})",
                    )
                )
            items[exercise.slug] = exercise.file

    # -- assessments ---------------------------------------------------------------------
    def load_assessments(self) -> None:
        known = {q.slug for q in self.course.all_questions()} | {e.slug for e in self.course.all_exercises()}
        seen: dict[str, str] = {}
        for path in sorted((self.root / "assessments").glob("*.toml")):
            doc = self.read_toml(path)
            if not doc:
                continue
            assessment = self.load_assessment(doc, known)
            if assessment is None:
                continue
            if assessment.slug in seen:
                self.problem(
                    path,
                    doc.line_of("slug"),
                    f"duplicate assessment slug {assessment.slug!r} (also in {seen[assessment.slug]})",
                )
                continue
            seen[assessment.slug] = assessment.file
            self.course.assessments.append(assessment)
        self.course.assessments.sort(key=lambda a: (a.opens, a.slug))

    def load_assessment(self, doc: TomlSource, known: set[str]) -> AssessmentSource | None:
        path, data = doc.path, doc.data
        before = len(self.course.problems)
        self.unknown_keys(doc, data, ASSESSMENT_KEYS)
        slug = self.slug(doc)
        if slug and path.stem != slug:
            self.problem(
                path, doc.line_of("slug"), f"the file of assessment {slug!r} must be named {slug}.toml"
            )
        title = self.string(doc, ("title",), required=True)
        kind = self.string(doc, ("kind",), required=True)
        if kind and kind not in ASSESSMENT_KINDS:
            self.problem(path, doc.line_of("kind"), f"kind must be one of: {', '.join(ASSESSMENT_KINDS)}")
        opens = self.moment(doc, "opens", required=True)
        due = self.moment(doc, "due", required=True)
        late = self.late_windows(doc, due)
        closes = self.moment(doc, "closes")
        if closes is None:  # the end of the last late window, else the due date
            closes = late[-1]["until"] if late else due
        if opens and due and not opens < due:
            self.problem(path, doc.line_of("due"), "due must be after opens")
        if due and closes and closes < due:
            self.problem(path, doc.line_of("closes"), "closes must not be before due")
        if due and closes and late and late[-1]["until"] != closes:
            self.problem(
                path,
                doc.line_of("closes"),
                "closes must be the `until` of the last late window "
                "(work received after due needs a late window that gives its credit)",
            )
        elif due and closes and closes > due and not late:
            self.problem(
                path,
                doc.line_of("closes"),
                "closes is after due but there is no late window: add "
                "late = [{ until = …, credit = 0.5 }] or remove closes",
            )
        time_limit = self.whole_number(doc, "time_limit_minutes")
        if kind == "exam" and time_limit is None and "time_limit_minutes" not in data:
            self.problem(path, 1, "an exam needs time_limit_minutes (the time a student has once started)")
        if kind == "homework" and "time_limit_minutes" in data:
            self.problem(
                path,
                doc.line_of("time_limit_minutes"),
                "time_limit_minutes is for exams only (homework has a due date instead)",
            )
        password = self.string(doc, ("password",))
        if "password" in data and isinstance(data["password"], str) and not password.strip():
            self.problem(path, doc.line_of("password"), "password is empty: remove it or give one")
        feedback = self.string(doc, ("feedback",), default="immediate")
        if feedback not in FEEDBACK_POLICIES:
            self.problem(
                path, doc.line_of("feedback"), f"feedback must be one of: {', '.join(FEEDBACK_POLICIES)}"
            )
        max_attempts = self.whole_number(doc, "max_attempts")
        items = self.assessment_items(doc, known)
        if len(self.course.problems) > before:
            return None
        # Every missing or unreadable time was reported as a problem above.
        assert opens is not None and due is not None and closes is not None
        return AssessmentSource(
            slug=slug,
            title=title,
            kind=kind,
            opens=opens,
            due=due,
            closes=closes,
            late=late,
            time_limit_minutes=time_limit,
            password=password,
            feedback=feedback,
            max_attempts=max_attempts,
            items=items,
            file=self.rel(path),
            line=1,
        )

    def moment(self, doc: TomlSource, key: str, *, required=False, value=None, line=None) -> datetime | None:
        """A date and time with its UTC offset (2026-12-08T23:59:00+03:00)."""
        value = doc.data.get(key) if value is None else value
        line = line or doc.line_of(key)
        if value is None:
            if required:
                self.problem(doc.path, line, f"missing required key {key!r}")
            return None
        if not isinstance(value, datetime) or value.tzinfo is None:
            self.problem(
                doc.path,
                line,
                f"{key} must be a date and time with its offset, "
                f"such as 2026-12-08T23:59:00+03:00 (unquoted)",
            )
            return None
        return value

    def whole_number(self, doc: TomlSource, key: str) -> int | None:
        value = doc.data.get(key)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            self.problem(doc.path, doc.line_of(key), f"{key} must be a whole number ≥ 1")
            return None
        return value

    def late_windows(self, doc: TomlSource, due: datetime | None) -> list[dict]:
        entries = doc.data.get("late", [])
        if not isinstance(entries, list):
            self.problem(
                doc.path, doc.line_of("late"), "late must be a list: [{ until = …, credit = 0.8 }, …]"
            )
            return []
        windows: list[dict] = []
        for index, entry in enumerate(entries):
            line = _nth_line(doc, "late", "until", index)
            if not isinstance(entry, dict):
                self.problem(doc.path, line, "each late window must be a table { until = …, credit = … }")
                continue
            self.unknown_keys(doc, entry, {"until", "credit"}, ("late",))
            until = self.moment(doc, "until", required=True, value=entry.get("until"), line=line)
            credit = entry.get("credit")
            if not isinstance(credit, (int, float)) or isinstance(credit, bool) or not 0 < credit <= 1:
                self.problem(doc.path, line, "a late window's credit must be a number in (0, 1], such as 0.8")
                continue
            if until is None:
                continue
            previous = windows[-1]["until"] if windows else due
            if previous is not None and until <= previous:
                self.problem(
                    doc.path, line, "late windows must end after due and after the window before them"
                )
                continue
            windows.append({"until": until, "credit": float(credit)})
        return windows

    def assessment_items(self, doc: TomlSource, known: set[str]) -> list[dict]:
        entries = doc.data.get("items")
        if not isinstance(entries, list) or not entries:
            self.problem(
                doc.path,
                doc.line_of("items") if "items" in doc.data else 1,
                "items must be a non-empty list of item slugs and pools",
            )
            return []
        items, used = [], set()

        def check(slug, line: int) -> bool:
            if not isinstance(slug, str):
                self.problem(doc.path, line, "an item must be a question or exercise slug (a string)")
                return False
            at = _nth_line(doc, "items", f'"{slug}"', 0)
            if slug not in known:
                self.problem(doc.path, at, f"no question or exercise with slug {slug!r} in this course")
                return False
            if slug in used:
                self.problem(doc.path, at, f"item {slug!r} appears twice in this assessment")
                return False
            used.add(slug)
            return True

        def points_of(entry: dict, line: int) -> float:
            points = entry.get("points", 1)
            if not isinstance(points, (int, float)) or isinstance(points, bool) or points <= 0:
                self.problem(doc.path, line, "points must be a number > 0")
                return 1.0
            return float(points)

        items_line = doc.line_of("items")
        for index, entry in enumerate(entries):
            if isinstance(entry, str):
                if check(entry, items_line):
                    items.append({"item": entry, "points": 1.0})
                continue
            if not isinstance(entry, dict):
                self.problem(
                    doc.path,
                    items_line,
                    'an item must be a slug or a table such as { pool = ["a", "b"], pick = 1 }',
                )
                continue
            line = _nth_line(doc, "items", "{", sum(1 for e in entries[:index] if isinstance(e, dict)))
            self.unknown_keys(doc, entry, {"item", "pool", "pick", "points"}, ("items",))
            points = points_of(entry, line)
            if "item" in entry:
                if check(entry["item"], line):
                    items.append({"item": entry["item"], "points": points})
                continue
            pool, pick = entry.get("pool"), entry.get("pick")
            if not isinstance(pool, list) or not pool:
                self.problem(doc.path, line, 'a pool needs pool = ["slug", …] (or use item = "slug")')
                continue
            if not isinstance(pick, int) or isinstance(pick, bool) or pick < 1:
                self.problem(
                    doc.path, line, "a pool needs pick = how many of its items each student gets (≥ 1)"
                )
                continue
            if pick > len(pool):
                self.problem(doc.path, line, f"the pool has {len(pool)} item(s), too few to pick {pick}")
                continue
            if all(check(slug, line) for slug in pool):
                items.append({"pool": list(pool), "pick": pick, "points": points})
        return items


def _nth_line(doc: TomlSource, key: str, needle: str, n: int) -> int:
    """The file line of the n-th ``needle`` at or after ``key`` (values of inline arrays such as
    items and late, which TomlSource.line_of cannot look into); the key's line if not found."""
    start = doc.line_of(key) - doc.first_line
    seen = -1
    for number, text in enumerate(doc.text.splitlines()[start:], start):
        seen += text.count(needle)
        if seen >= n:
            return number + doc.first_line
    return start + doc.first_line


def _toml_type(value) -> str:
    names = {bool: "true or false", int: "a number", float: "a number", list: "a list", dict: "a table"}
    return names.get(type(value), type(value).__name__)


_NEXT_KEY = re.compile(r"^\s*(\[|[A-Za-z0-9_\"-][\w.\"-]*\s*=)")


def _line_of_text(doc: TomlSource, key_line: int, start: int, text: str) -> int | None:
    """The file line where ``text``, a string of the inline array at ``key_line``, begins: looked
    for from line ``start`` to the array's end (the next key or table); None when not found."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    # Up to the first character TOML may have written escaped (a quote, a backslash).
    first = re.split(r"[\\\"']", first, maxsplit=1)[0].strip()
    lines = doc.text.splitlines()
    end = next(
        (n for n in range(key_line - doc.first_line + 1, len(lines)) if _NEXT_KEY.match(lines[n])),
        len(lines),
    )
    if len(first) >= 4:
        for number in range(start - doc.first_line, end):
            if first in lines[number]:
                return number + doc.first_line
    return None


def _lookup(data, keys: tuple):
    """The value at a key path such as ("questions", 2, "slug"), or None."""
    for key in keys:
        if isinstance(key, int):
            data = data[key] if isinstance(data, list) and key < len(data) else None
        else:
            data = data.get(key) if isinstance(data, dict) else None
    return data


# Files of an exercise folder that students read but that grading never uses.
_READ_ONLY_FILES = frozenset({"exercise.toml", "starter.py"})


def grading_hash(folder: Path, spec: dict, misconceptions: list[dict], variant_count: int) -> str:
    """Content hash of what an exercise's grading depends on: its grader keys, its number of
    variants, its catalogued misconceptions (tags and programs) and every file of its folder
    but exercise.toml and starter.py (solution.py, cases.py, params, data). Its prompt, title,
    hints, reveal rule, starter and the misconceptions' hint texts are what students read, not
    what their code is graded on: editing them keeps the grading data, the students' variants
    and their submissions' standing (a resubmission of the same code is answered at once)."""
    digest = hashlib.sha256()
    keys = {
        "spec": spec,
        "variants": variant_count,
        "misconceptions": [[m["tag"], m["file"], m["source"]] for m in misconceptions],
    }
    digest.update(json.dumps(keys, sort_keys=True, default=str).encode() + b"\0")
    for file in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        relative = file.relative_to(folder)
        if str(relative) in _READ_ONLY_FILES:
            continue
        digest.update(str(relative).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def load_course(root: Path) -> CourseSource:
    """Parse and check a course folder; problems are collected, never raised."""
    return _Loader(Path(root).resolve()).load()
