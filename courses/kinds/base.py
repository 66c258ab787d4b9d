import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

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


def register(kind_class: type["QuestionKind"]) -> type["QuestionKind"]:
    REGISTRY[kind_class.name] = kind_class()
    return kind_class


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
    label: str = ""  # what instructors read for the kind ("single choice"), translated
    # Keys of a question table that every kind shares; the rest belong to the kind.
    COMMON_KEYS = {"slug", "kind", "order", "prompt", "explanation", "reveal", "max_attempts"}
    keys: set[str] = set()
    required: set[str] = set()

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

    def solution_items(self, spec: dict) -> list[dict]:
        """The correct answer for display after a reveal: [{"label_html", "html"}]."""
        return []


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
