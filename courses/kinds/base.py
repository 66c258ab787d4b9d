from collections.abc import Callable
from dataclasses import dataclass

REGISTRY: dict[str, "QuestionKind"] = {}


@dataclass
class SpecProblem(Exception):
    """A problem in a question's specification, at a key path such as ("options", 2)."""

    keys: tuple
    message: str


def register(kind_class: type["QuestionKind"]) -> type["QuestionKind"]:
    REGISTRY[kind_class.name] = kind_class()
    return kind_class


def get_kind(name: str) -> "QuestionKind | None":
    return REGISTRY.get(name)


class QuestionKind:
    """One kind of question. Subclasses set ``name`` and implement the methods below."""

    name: str = ""
    # Keys of a question table that every kind shares; the rest belong to the kind.
    COMMON_KEYS = {"slug", "kind", "order", "prompt", "explanation", "reveal", "max_attempts"}
    keys: set[str] = set()
    required: set[str] = set()

    @property
    def template(self) -> str:
        return f"courses/kinds/{self.name}.html"

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


def expect(value, kind: type | tuple, keys: tuple, what: str):
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise SpecProblem(keys, f"{what} must be {_type_name(kind)}")
    return value


def _type_name(kind) -> str:
    names = {str: "a string", bool: "true or false", int: "an integer", list: "a list",
             dict: "a table", float: "a number"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)
