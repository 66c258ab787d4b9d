import hashlib
import random
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

REGISTRY: dict[str, "QuestionKind"] = {}


@dataclass
class SpecProblem(Exception):
    """A problem in a question's specification, at a key path such as ("options", 2)."""

    keys: tuple
    message: str


class AnswerError(Exception):
    """The submitted answer is malformed (tampered form, wrong types): 400, nothing stored."""


class GraderFailed(Exception):
    """The grader failed on its own side (not the student's answer): the answer must not count."""


class NotGradable(Exception):
    """The answer is well-formed but cannot be graded as is (e.g. a blank that is not one
    expression). The student sees the message; no attempt is counted."""


@dataclass
class Grade:
    score: float  # 0..1
    correct: bool
    # Kind-specific, JSON-able: what to say about each part of the answer.
    feedback: list[dict] = field(default_factory=list)
    misconceptions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Choice:
    """One thing students chose, as an instructor reads it on the item page."""

    label: str  # an option's text, "left → right", a wrong expression
    correct: bool = False
    part: str = ""  # which part of the question it answers ("Blank 2"), when there are several


class Answered(Protocol):
    """What the statistics read of one graded answer (an Attempt)."""

    answer: Any
    feedback: Any
    correct: bool


def register[K: type["QuestionKind"]](kind_class: K) -> K:
    REGISTRY[kind_class.name] = kind_class()
    return kind_class


def unregister(name: str) -> None:
    """Forget a kind (a test's toy kind, when the test ends)."""
    REGISTRY.pop(name, None)


def get_kind(name: str) -> "QuestionKind | None":
    return REGISTRY.get(name)


def stable_shuffle(items: list, *seed_parts) -> list:
    """Shuffle ``items`` the same way every time for the same seed (student + question)."""
    seed = hashlib.sha256("/".join(map(str, seed_parts)).encode()).hexdigest()
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return shuffled


class QuestionKind:
    """One kind of question: validate its spec, build its context, clean and grade answers.

    Subclasses set ``name``, ``keys`` and ``required`` and implement the methods below. The
    template ``courses/kinds/<name>.html`` renders the question with the context.
    """

    name: str = ""
    label: Any = ""  # what instructors read for the kind ("single choice"), translated (lazily)
    # Keys of a question table that every kind shares; the rest belong to the kind.
    COMMON_KEYS = {
        "slug",
        "kind",
        "order",
        "prompt",
        "explanation",
        "reveal",
        "max_attempts",
        "params",
        "variants",
    }
    keys: set[str] = set()
    required: set[str] = set()
    # Keys whose strings are code or literal text, not Markdown: a parameter goes into them as
    # its Python literal (courses.variants.fill_table).
    code_keys: frozenset[str] = frozenset()
    # Keys whose strings are Markdown (given to ``render`` by validate): a parameter goes into
    # them as text, numbers written the Turkish way and lists as a matrix.
    markdown_keys: frozenset[str] = frozenset(
        {"prompt", "explanation", "text", "hint", "left", "right", "distractors", "label", "unit"}
    )

    @property
    def template(self) -> str:
        return f"courses/kinds/{self.name}.html"

    # -- authoring -------------------------------------------------------------------------
    def validate(self, data: dict, render: Callable[[str, tuple], str]) -> dict:
        """Check the kind's keys of ``data`` and return the spec to store.

        ``render(markdown, keys)`` turns author Markdown into HTML, reporting problems at
        ``keys``. Raise SpecProblem for the first problem that makes the spec unusable.
        """
        raise NotImplementedError

    def check_keys(self, data: dict) -> None:
        for key in data:
            if key not in self.COMMON_KEYS | self.keys:
                raise SpecProblem((key,), f"unknown key {key!r} for kind {self.name!r}")
        for key in sorted(self.required):
            if key not in data:
                raise SpecProblem((), f"kind {self.name!r} needs the key {key!r}")

    def authoring_form(self) -> type | None:
        """The studio's form for a question of this kind (courses.kinds.forms), with
        ``initial_from_spec(table)`` and ``spec_from_form()``; None: edited as a file only."""
        return None

    # -- answering -------------------------------------------------------------------------
    def context(self, spec: dict, seed: tuple) -> dict:
        """What the template needs to ask the question; never the correct answer."""
        return {}

    def answer_from_post(self, spec: dict, post) -> dict:
        """Turn the form fields into the kind's answer JSON (not yet checked)."""
        raise NotImplementedError

    def clean_answer(self, spec: dict, answer) -> dict:
        """Check an answer's shape and ids; raise AnswerError with a reason."""
        raise NotImplementedError

    def grade(self, spec: dict, answer: dict) -> Grade:
        raise NotImplementedError

    def code_runs(self, spec: dict) -> int:
        """How many sandbox runs grading one answer may take; 0 when it runs no code. Answers
        that run code go through the grading queue (a worker grades them), never inside the
        web request."""
        return 0

    def feedback_items(self, spec: dict, answer: dict, grade_feedback: list[dict]) -> list[dict]:
        """Feedback ready for display: [{"correct", "label_html", "html", "hint_html"}]."""
        return []

    def wrong_parts(self, spec: dict, answer: dict, grade_feedback: list[dict]) -> int:
        """How many parts of a graded answer are not right, for feedback that says how many
        and never which (an assessment's score-only feedback). By default: the feedback items
        that are not right; a kind whose one item sums up many parts counts those parts."""
        return sum(1 for item in self.feedback_items(spec, answer, grade_feedback) if not item.get("correct"))

    def withheld_feedback(self, spec: dict, answer: dict, grade_feedback: list[dict]) -> list[dict] | None:
        """What shows instead of feedback_items while attempts are left and the answer is not
        shown, for a kind whose marks per part would give the answer key away (how many parts
        are wrong, not which); None: feedback_items give nothing away."""
        return None

    def solution_items(self, spec: dict) -> list[dict]:
        """The correct answer for display after a reveal: [{"label_html", "html"}]."""
        return []

    def prepare_grading(self, spec: dict) -> None:
        """Build what grading answers needs, when the course is validated or imported (a code
        blank's reference runs in the sandbox here); raise grader.core's ReferenceFailed or
        SpecError when it cannot be built. Most kinds need nothing."""

    # -- statistics (the instructor's item page) ---------------------------------------------
    # The template that draws what students answered, from the context answer_stats returns.
    # The default is a bar chart of what they chose; a kind may name its own template.
    stats_template: str = "instructors/kinds/chosen.html"

    def choice_keys(self, spec: dict, answered: Answered) -> list[Hashable]:
        """What one graded answer chose, as keys counted over every answer to the question (an
        option id, a left-right pair, a wrong text). Nothing by default: no chart."""
        return []

    def describe(self, spec: dict, key: Hashable) -> Choice:
        """How an instructor reads one key of ``choice_keys``."""
        return Choice(str(key))

    def shown_keys(self, spec: dict, counts: Counter[Hashable]) -> list[Hashable]:
        """The keys the chart shows, in order: the twelve most common by default."""
        return [key for key, _count in counts.most_common(12)]

    def answer_stats(self, spec: dict, answers: Iterable[Answered]) -> dict:
        """Everything answered to one question, aggregated into the context of
        ``stats_template``: ``rows`` of (Choice, count)."""
        counts: Counter[Hashable] = Counter()
        for answered in answers:
            counts.update(self.choice_keys(spec, answered))
        return {"rows": [(self.describe(spec, key), counts[key]) for key in self.shown_keys(spec, counts)]}

    def misconception_hints(self, spec: dict) -> dict[str, str]:
        """Each misconception tag of a question with the hint its author wrote for it (HTML).
        By default found wherever the spec keeps a ``misconception`` next to a ``hint_html``."""
        return dict(_spec_hints(spec))


def _spec_hints(spec: object) -> Iterator[tuple[str, str]]:
    if isinstance(spec, dict):
        if spec.get("misconception") and spec.get("hint_html"):
            yield spec["misconception"], spec["hint_html"]
        for value in spec.values():
            yield from _spec_hints(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _spec_hints(value)


def expect(value, kind: type | tuple, keys: tuple, what: str):
    if not isinstance(value, kind) or (isinstance(value, bool) and kind not in (bool, (bool,))):
        raise SpecProblem(keys, f"{what} must be {_type_name(kind)}")
    return value


def _type_name(kind) -> str:
    names = {
        str: "a string",
        bool: "true or false",
        int: "an integer",
        list: "a list",
        dict: "a table",
        float: "a number",
    }
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def check_table_keys(table: dict, allowed: set, keys: tuple, what: str) -> None:
    for key in table:
        if key not in allowed:
            raise SpecProblem(
                keys + (key,), f"unknown {what} key {key!r} (allowed: {', '.join(sorted(allowed))})"
            )


def optional_text(table: dict, key: str, keys: tuple, render) -> str:
    value = expect(table.get(key, ""), str, keys + (key,), key)
    return render(value, keys + (key,)) if value else ""
