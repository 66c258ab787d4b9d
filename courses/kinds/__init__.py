"""Question kinds: one class and one template each, found through this registry.

A kind validates its part of a question file, builds the context its template renders and
grades an answer. Adding a kind means adding a module here (imported below) and a template
``templates/courses/kinds/<name>.html``; nothing else changes.
"""

from . import choice, fill_in, matching, numeric  # noqa: F401  (modules register on import)
from .base import (  # noqa: F401
    REGISTRY,
    AnswerError,
    Grade,
    GraderFailed,
    NotGradable,
    QuestionKind,
    SpecProblem,
    get_kind,
    register,
)
