"""Dikkat's grader core: sandboxed, Django-free grading of NumPy exercises.

Public API (the Django side codes against these names)::

    spec = parse_spec(toml_dict)
    cases = build_cases(spec, exercise_dir)
    ref = run_reference(solution_source, spec, cases)
    save_bundle(directory, spec, cases, ref); cases, ref = load_bundle(directory)
    result = grade(source, spec, cases, ref, variants={...}, only_visible=False)
    check_source(source, spec) -> Message | None
    misconception_of(result, {tag: outputs}, spec) -> tag | None
    run_generator(params_source, [(function, seed), ...]) -> [Generated(params | problem)]
    sandbox_problem() -> str | None
"""

from .cases import build_cases
from .grade import (
    CaseResult,
    GradeResult,
    Reference,
    ReferenceFailed,
    Verdict,
    check_source,
    grade,
    misconception_of,
    run_reference,
)
from .limits import Limits
from .messages import Message
from .params import Generated, check_params, run_generator
from .pool import SandboxPool, disable_pool, enable_pool
from .sandbox import SandboxUnavailable, sandbox_problem, sandbox_warnings
from .spec import Case, ExerciseSpec, SpecError, parse_spec
from .store import load_bundle, save_bundle

__all__ = [
    "Case",
    "CaseResult",
    "ExerciseSpec",
    "Generated",
    "GradeResult",
    "Limits",
    "Message",
    "Reference",
    "ReferenceFailed",
    "SandboxPool",
    "SandboxUnavailable",
    "SpecError",
    "Verdict",
    "build_cases",
    "check_params",
    "check_source",
    "disable_pool",
    "enable_pool",
    "grade",
    "load_bundle",
    "misconception_of",
    "parse_spec",
    "run_generator",
    "run_reference",
    "sandbox_problem",
    "sandbox_warnings",
    "save_bundle",
]
