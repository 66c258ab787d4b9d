"""Question kinds: one class and one template each, found through this registry.

A kind validates its part of a question file, builds the context its template renders and
grades an answer. Adding a kind means adding a module here and a template; nothing else.
"""

from .base import REGISTRY, QuestionKind, SpecProblem, get_kind, register  # noqa: F401
from . import choice  # noqa: F401,E402  (modules register their kinds on import)
