"""Question kinds: one class and one template each, found through this registry.

A kind validates its part of a question file, builds the context its template renders and
grades an answer; it also says what an answer chose and how the instructor's item page counts
and draws the answers (``choice_keys``, ``describe``, ``answer_stats``, ``stats_template``, with
a bar chart of the choices by default). Adding a kind means adding a module to this package
(every module here is imported below, and registers its class with ``@register``) and a
template ``templates/courses/kinds/<name>.html``; nothing else changes, and no code outside
this package asks for a kind by its name (tests/test_kind_registry.py adds a toy kind).
"""

import importlib
import pkgutil

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

for _module in sorted(info.name for info in pkgutil.iter_modules(__path__)):
    if _module != "base":
        importlib.import_module(f"{__name__}.{_module}")
