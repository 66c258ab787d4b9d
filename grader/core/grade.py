"""Grading: run a program on the cases in a sandbox, then judge on the host.

The verdict is decided only from what the host itself observed (its clock,
its cgroup counters) and from result arrays loaded with strict checks and
compared with the host's own NumPy.  Status files written by the runner are
hints used to choose a message (exception type and line), never to pass.
"""

from __future__ import annotations

import ast
import builtins
import enum
import logging
import re
import signal as signal_module
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import messages as M
from . import timeline
from .compare import compare_result, compare_stdout, outputs_match
from .messages import Message
from .pool import run_sandboxed
from .probes import ProbeReport, attach_probes
from .properties import PropertyResult, attach_properties, reference_problems
from .results import LoadProblem, OutputDir
from .sandbox import SandboxUnavailable
from .sandbox import _off as sandbox_layer_off
from .spec import Case, ExerciseSpec
from .traces import shape_trace

log = logging.getLogger("grader")


class Verdict(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    REJECTED = "rejected"
    INTERNAL_ERROR = "internal_error"

    @property
    def counts_as_attempt(self) -> bool:
        """Rejected sources and the grader's own failures do not use up an attempt."""
        return self not in (Verdict.REJECTED, Verdict.INTERNAL_ERROR)

    def __str__(self) -> str:
        return self.value


@dataclass
class CaseResult:
    name: str
    passed: bool
    hidden: bool
    weight: float = 1.0
    message: Message | None = None
    # The student's arrays (host-validated); not part of to_dict, never shown for hidden cases.
    outputs: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    # What the case's weight probe and property cases found (probes.py, properties.py).
    probe: ProbeReport | None = None
    properties: list[PropertyResult] = field(default_factory=list)

    def to_dict(self, translate: Callable[[str], str] = lambda s: s) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "passed": self.passed,
            "hidden": self.hidden,
            "message": self.message.render(translate) if self.message else None,
        }
        data.update(self.feedback_fields(translate))
        return data

    def feedback_fields(self, translate: Callable[[str], str] | None = None) -> dict[str, Any]:
        """``probe`` and ``properties`` when the case has them; language-neutral (stored by
        the Django side next to the case) unless ``translate`` is given."""
        data: dict[str, Any] = {}
        if self.probe is not None:
            data["probe"] = self.probe.to_dict(translate)
        if self.properties:
            data["properties"] = [p.to_dict(translate) for p in self.properties]
        return data


@dataclass
class GradeResult:
    verdict: Verdict
    score: float = 0.0
    tests: list[CaseResult] = field(default_factory=list)
    stdout: str = (
        ""  # only from visible cases (and top-level code, which runs before any hidden input exists)
    )
    duration_ms: int = 0
    message: Message | None = None
    misconception: str | None = None
    cpu_ms: int | None = None  # CPU used inside the sandbox (cgroup cpuacct), when measurable

    @property
    def counts_as_attempt(self) -> bool:
        return self.verdict.counts_as_attempt

    def to_dict(self, translate: Callable[[str], str] = lambda s: s) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "score": self.score,
            "tests": [t.to_dict(translate) for t in self.tests],
            "stdout": self.stdout,
            "duration_ms": self.duration_ms,
            "misconception": self.misconception,
            "message": self.message.render(translate) if self.message else None,
        }


@dataclass
class Reference:
    """Expected outputs (case name -> result name -> array) and printed output per case."""

    outputs: dict[str, dict[str, np.ndarray]]
    stdout: dict[str, str] = field(default_factory=dict)


class ReferenceFailed(Exception):
    """The instructor's solution did not run cleanly on every case; ``result`` says how."""

    def __init__(self, result: GradeResult):
        super().__init__(f"reference solution failed: {result.verdict.value}")
        self.result = result


# --- the rejected rules ------------------------------------------------------


def check_source(source: str | bytes, spec: ExerciseSpec) -> Message | None:
    """The 'rejected' rules (size, NUL, UTF-8, empty), without running anything."""
    if isinstance(source, str):
        try:
            raw = source.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates from a bad decode
            return Message(M.SOURCE_NOT_UTF8)
    else:
        raw = bytes(source)
    limit = spec.limits.source_bytes
    if len(raw) > limit:
        return Message(M.SOURCE_TOO_LARGE, {"size": len(raw), "limit": limit})
    if b"\x00" in raw:
        return Message(M.SOURCE_NUL)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Message(M.SOURCE_NOT_UTF8)
    if not text.strip():
        return Message(M.SOURCE_EMPTY)
    return None


# --- running -----------------------------------------------------------------

STATUSES = {"ok", "exception", "memory", "exit", "syntax", "missing_function", "not_callable"}
PROBLEMS = {"none", "subclass", "object", "dtype", "type", "convert", "too_large", "write"}


def _text(value: Any, cap: int) -> str:
    return value[:cap] if isinstance(value, str) else ""


def _int(value: Any, low: int, high: int) -> int | None:
    return value if type(value) is int and low <= value <= high else None


def parse_status(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """Strictly rebuild a runner status from untrusted JSON; unknown fields are dropped."""
    if not isinstance(data, dict) or data.get("status") not in STATUSES:
        return None
    out: dict[str, Any] = {
        "status": data["status"],
        "exc_type": _text(data.get("exc_type"), 100),
        "line": _int(data.get("line"), 1, 10**6),
        "offset": _int(data.get("offset"), 1, 10**6),
        "detail": _text(data.get("detail"), 4000),
        "traceback": [],
        "results": {},
    }
    tb = data.get("traceback")
    if isinstance(tb, list):
        for item in tb[:10]:
            if isinstance(item, list) and len(item) == 3 and _int(item[0], 1, 10**6):
                out["traceback"].append((item[0], _text(item[1], 100), _text(item[2], 200)))
    results = data.get("results")
    if isinstance(results, dict):
        for name, info in list(results.items())[:64]:
            if isinstance(name, str) and isinstance(info, dict) and info.get("problem") in PROBLEMS:
                out["results"][name[:64]] = {
                    "problem": info["problem"],
                    "type": _text(info.get("type"), 60),
                    "size": _int(info.get("size"), 0, 2**62),
                }
    return out


@dataclass
class CaseRun:
    index: int
    started: bool = False
    status: dict[str, Any] | None = None
    outputs: dict[str, np.ndarray | LoadProblem] = field(default_factory=dict)
    stdout: str = ""
    stdout_size: int = 0
    stderr: str = ""
    stderr_size: int = 0

    @property
    def finished(self) -> bool:
        return self.status is not None or any(isinstance(v, np.ndarray) for v in self.outputs.values())


@dataclass
class ProgramRun:
    outcome: Any
    module_status: dict[str, Any] | None
    module_stdout: str
    module_stdout_size: int
    cases: dict[int, CaseRun]
    order: list[int]  # case indices in the order they ran


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def execute(
    code: str,
    spec: ExerciseSpec,
    cases: list[Case],
    phase_indices: list[list[int]],
    *,
    mode: str | None = None,
) -> ProgramRun:
    """Run ``code`` on the given cases in one sandbox; phases run in order (see pool.run_sandboxed)."""
    limits = spec.limits
    mode = mode or spec.kind
    result_names = list(spec.results)
    max_bytes = limits.file_size_bytes - 4096
    cap = limits.output_bytes
    module: dict[str, Any] = {"status": None, "stdout": "", "size": 0, "read": False}

    def collect(out: OutputDir, phase: int) -> dict[int, CaseRun]:
        if not module["read"]:
            module["status"] = parse_status(out.read_json("module.status"))
            got = out.read_bytes("module.stdout", cap + 1)
            if not isinstance(got, LoadProblem):
                module["stdout"], module["size"] = _decode(got[0][:cap]), got[1]
            module["read"] = True
        runs = {}
        for index in phase_indices[phase]:
            prefix = f"case-{index:03d}"
            run = CaseRun(index=index, started=out.exists(prefix + ".start"))
            run.status = parse_status(out.read_json(prefix + ".status"))
            got = out.read_bytes(prefix + ".stdout", cap + 1)
            if not isinstance(got, LoadProblem):
                run.stdout, run.stdout_size = _decode(got[0][:cap]), got[1]
            got = out.read_bytes(prefix + ".stderr", cap + 1)
            if not isinstance(got, LoadProblem):
                run.stderr, run.stderr_size = _decode(got[0][:cap]), got[1]
            for name in result_names:
                run.outputs[name] = out.load_array(f"{prefix}.{name}.npy", max_bytes)
            runs[index] = run
        return runs

    phases = [[(i, cases[i].inputs) for i in indices] for indices in phase_indices]
    job = {
        "mode": mode,
        "function": spec.function,
        "results": result_names,
        "max_result_bytes": max_bytes,
        "seed": spec.seed,
    }
    outcome = run_sandboxed(job=job, code=code, phases=phases, limits=limits, collect=collect)
    case_runs: dict[int, CaseRun] = {}
    for runs in outcome.collected:
        case_runs.update(runs)
    order = [i for indices in phase_indices for i in indices]
    return ProgramRun(outcome, module["status"], module["stdout"], module["size"], case_runs, order)


# --- judging -----------------------------------------------------------------

# Exception names a hidden case may show: Python's and NumPy's own (fixed texts, whoever raised them).
BUILTIN_EXCEPTIONS = {
    name
    for module in (builtins, np.exceptions, np.linalg)
    for name, obj in vars(module).items()
    if isinstance(obj, type) and issubclass(obj, BaseException)
}


def _signal_name(signum: int) -> str:
    try:
        return signal_module.Signals(signum).name
    except ValueError:
        return str(signum)


def _line_ok(line: int | None, source_lines: int) -> int | None:
    return line if line is not None and 1 <= line <= source_lines else None


def exception_message(
    status: dict[str, Any],
    hidden: bool,
    source_lines: int,
    case: Case | None = None,
    spec: ExerciseSpec | None = None,
) -> Message:
    """Exception feedback; for hidden cases only Python's or NumPy's name for the exception
    and, for a shape error, a trace built from the case's own shapes (traces.py).

    Not even the line: code can pad itself and raise on a line chosen by a hidden input.
    """
    line = _line_ok(status.get("line"), source_lines)
    exc_type = status.get("exc_type") or "Exception"
    trace = None
    if exc_type == "ValueError" and case is not None and spec is not None:
        frames = status.get("traceback") or []
        trace = shape_trace(
            status.get("detail", ""), case.inputs, spec.shape_names, frames[-1][2] if frames else ""
        )
    if hidden:
        # A custom exception's name or text could carry hidden inputs out.
        if exc_type not in BUILTIN_EXCEPTIONS:
            exc_type = "Exception"
        if trace is not None:
            return Message(M.CASE_SHAPE_ERROR_HIDDEN, {"exc_type": exc_type, "trace": trace})
        return Message(M.CASE_EXCEPTION_HIDDEN_NO_LINE, {"exc_type": exc_type})
    if trace is not None:
        if line is None:
            return Message(M.CASE_EXCEPTION_NO_LINE, {"exc_type": exc_type, "detail": trace})
        tb = "\n".join(f"  {n} | {text}" for n, fn, text in status.get("traceback", []))
        return Message(
            M.CASE_EXCEPTION, {"exc_type": exc_type, "line": line, "detail": trace, "traceback": tb}
        )
    detail = status.get("detail", "")[:300]
    if line is None:
        return Message(M.CASE_EXCEPTION_NO_LINE, {"exc_type": exc_type, "detail": detail})
    # Language-neutral, like a code listing: "  4 | return np.dot(Q, V)".
    tb = "\n".join(f"  {n} | {text}" for n, fn, text in status.get("traceback", []))
    return Message(M.CASE_EXCEPTION, {"exc_type": exc_type, "line": line, "detail": detail, "traceback": tb})


def _result_problem_message(
    name: str, problem: dict[str, Any] | LoadProblem | None, spec: ExerciseSpec, limit: int, hidden: bool
) -> Message:
    kind = spec.kind
    if isinstance(problem, dict):
        code = problem["problem"]
        if code == "none" and kind == "function":
            return Message(M.CASE_RETURNED_NONE)
        if code == "subclass":
            if hidden:
                return Message(M.CASE_SUBCLASS_HIDDEN, {"result": name})
            return Message(M.CASE_SUBCLASS, {"result": name, "type": problem["type"] or "?"})
        if code == "object":
            return Message(M.CASE_OBJECT_DTYPE, {"result": name})
        if code == "too_large":
            if hidden:
                return Message(M.CASE_TOO_LARGE_HIDDEN, {"result": name, "limit": limit})
            return Message(M.CASE_TOO_LARGE, {"result": name, "size": problem["size"] or "?", "limit": limit})
        if code in ("type", "convert", "none"):
            if hidden:
                return Message(M.CASE_NOT_ARRAY_HIDDEN, {"result": name})
            if problem["type"] == "ellipsis":
                return Message(M.CASE_PLACEHOLDER, {"result": name})
            return Message(M.CASE_NOT_ARRAY, {"result": name, "type": problem["type"] or "None"})
        if code == "dtype":
            return Message(M.CASE_NOT_NUMERIC, {"result": name, "dtype": "?"})
    if kind == "script":
        return Message(M.CASE_UNDEFINED, {"result": name})
    return Message(M.CASE_UNREADABLE, {"result": name, "reason": getattr(problem, "code", "missing")})


def _result_display_name(spec: ExerciseSpec, name: str) -> str:
    return f"{spec.function}(...)" if name == "return" and spec.function else name


def evaluate(
    run: ProgramRun,
    code: str,
    spec: ExerciseSpec,
    cases: list[Case],
    ref: Reference | None,
    *,
    author: bool = False,
) -> GradeResult:
    """Turn a ProgramRun into a GradeResult. With ``ref=None`` every readable result passes (reference runs)."""
    outcome = run.outcome
    limits = spec.limits
    source_lines = len(code.splitlines())
    tests: dict[int, CaseResult] = {}
    module = run.module_status
    stopped_at: int | None = None  # the case during which the program stopped
    signum = outcome.signal

    kinds: dict[int, str] = {}  # what went wrong per case: memory | timeout | output | error
    for index in run.order:
        case = cases[index]
        hidden = case.hidden and not author
        if module is not None:
            continue  # the program never reached the cases: one message says why, no list of "not run"
        cr = CaseResult(name=case.name, passed=False, hidden=case.hidden, weight=case.weight)
        tests[index] = cr
        crun = run.cases.get(index)
        if crun is None or not crun.finished:  # None: its phase was never reached
            if stopped_at is None:  # the first unfinished case is where the program stopped
                stopped_at = index
                if outcome.timed_out or outcome.cpu_exceeded or signum == signal_module.SIGXCPU:
                    cr.message, kinds[index] = Message(M.CASE_TIMEOUT), "timeout"
                elif outcome.oom_killed:
                    cr.message, kinds[index] = Message(M.CASE_MEMORY), "memory"
                elif signum == signal_module.SIGXFSZ:
                    cr.message = Message(M.CASE_OUTPUT_LIMIT, {"limit": limits.output_bytes})
                    kinds[index] = "output"
                else:
                    cr.message, kinds[index] = Message(M.CASE_STOPPED), "error"
            else:
                cr.message = Message(M.CASE_NOT_RUN)
            continue
        if crun.stdout_size + crun.stderr_size > limits.output_bytes and not sandbox_layer_off("output_size"):
            cr.message = Message(M.CASE_OUTPUT_LIMIT, {"limit": limits.output_bytes})
            kinds[index] = "output"
            continue
        status = crun.status or {}
        if status.get("status") in ("exception", "exit", "memory"):
            if status["status"] == "memory":
                cr.message, kinds[index] = Message(M.CASE_MEMORY), "memory"
            elif status["status"] == "exit":
                cr.message, kinds[index] = Message(M.CASE_SYSTEM_EXIT), "error"
            else:
                cr.message, kinds[index] = (
                    exception_message(status, hidden, source_lines, case, spec),
                    "error",
                )
            continue
        # Judge the arrays themselves.
        message = None
        good: dict[str, np.ndarray] = {}
        # The first problem is what the student reads; every valid array is still kept, so
        # the misconception matcher sees all of a case's results, not only those before it.
        for name in spec.results:
            got = crun.outputs.get(name)
            shown = _result_display_name(spec, name)
            if not isinstance(got, np.ndarray):
                if message is None:
                    message = _result_problem_message(
                        shown,
                        status.get("results", {}).get(name) or got,
                        spec,
                        limits.file_size_bytes,
                        hidden,
                    )
                continue
            good[name] = got
            if ref is not None and message is None:
                expected = ref.outputs.get(case.name, {}).get(name)
                if expected is None:
                    raise RuntimeError(f"reference has no {name!r} for case {case.name!r}")
                message = compare_result(shown, got, expected, spec, hidden, key=name)
        if message is None and ref is not None and spec.compare_stdout:
            message = compare_stdout(crun.stdout, ref.stdout.get(case.name, ""), hidden)
        cr.outputs = good
        cr.message = message
        cr.passed = message is None

    ordered = [tests[i] for i in sorted(tests)]
    total_weight = sum(t.weight for t in ordered) or 1.0
    score = sum(t.weight for t in ordered if t.passed) / total_weight
    visible_stdout = _visible_stdout(run, cases, limits.output_bytes, author)
    result = GradeResult(
        verdict=Verdict.FAILED,
        score=round(score, 6),
        tests=ordered,
        stdout=visible_stdout,
        duration_ms=outcome.wall_ms,
        cpu_ms=outcome.cpu_ms,
    )

    # The verdict is the first thing that went wrong, in the order the cases ran.
    first: tuple[int | None, str] | None = next(((i, kinds[i]) for i in run.order if i in kinds), None)
    if (
        module is None
        and first is None
        and run.module_stdout_size > limits.output_bytes
        and not sandbox_layer_off("output_size")
    ):
        first = (None, "output")
    if module is None and first is None and not ordered and (outcome.timed_out or outcome.cpu_exceeded):
        first = (None, "timeout")
    # Stopped before the first case even started: top-level code hung or died.
    in_setup = first is not None and (
        first[0] is None
        or (first[0] == run.order[0] and not getattr(run.cases.get(first[0]), "started", False))
    )
    case_name = cases[first[0]].name if first and first[0] is not None else "?"

    if ordered and all(t.passed for t in ordered):
        result.verdict = Verdict.PASSED
        result.message = Message(M.ALL_PASSED, {"count": len(ordered)})
    elif module is not None:
        if module.get("status") == "memory" or outcome.oom_killed:
            result.verdict = Verdict.MEMORY_LIMIT
            result.message = Message(M.MEMORY_LIMIT, {"mb": limits.memory_mb})
        else:
            result.verdict = Verdict.ERROR
            result.message = _module_message(module, spec, code)
    elif first is not None and first[1] == "timeout" and in_setup:
        result.verdict = Verdict.TIMEOUT
        seconds = limits.cpu_seconds if outcome.cpu_exceeded else limits.wall_seconds
        result.message = Message(M.TIMEOUT_SETUP, {"seconds": _num(seconds)})
    elif first is None:
        result.message = Message(
            M.SOME_FAILED, {"passed": sum(t.passed for t in ordered), "total": len(ordered)}
        )
    elif first[1] == "timeout":
        result.verdict = Verdict.TIMEOUT
        cpu = outcome.cpu_exceeded or (signum == signal_module.SIGXCPU and not outcome.timed_out)
        seconds = limits.cpu_seconds if cpu else limits.wall_seconds
        result.message = Message(
            M.TIMEOUT_CPU if cpu else M.TIMEOUT_WALL, {"seconds": _num(seconds), "case": case_name}
        )
    elif first[1] == "memory":
        result.verdict = Verdict.MEMORY_LIMIT
        result.message = Message(M.MEMORY_LIMIT, {"mb": limits.memory_mb})
    elif first[1] == "output":
        result.verdict = Verdict.OUTPUT_LIMIT
        result.message = Message(M.OUTPUT_LIMIT, {"limit": limits.output_bytes})
    else:
        result.verdict = Verdict.ERROR
        if first[0] is not None and first[0] == stopped_at:
            if signum is not None and cases[first[0]].hidden and not author:
                # The code can pick the signal that ends it: not shown on a hidden case.
                result.message = Message(M.KILLED_BY_SIGNAL_HIDDEN, {"case": case_name})
            elif signum is not None:
                result.message = Message(
                    M.KILLED_BY_SIGNAL, {"signal": _signal_name(signum), "case": case_name}
                )
            else:
                result.message = Message(M.EXITED_EARLY, {"case": case_name})
        else:
            errors = sum(1 for k in kinds.values() if k == "error")
            result.message = Message(M.ERROR_IN_CASES, {"count": errors, "total": len(ordered)})
    return result


def _num(x: float) -> str:
    return f"{x:g}"


SYNTAX_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"'(?P<bracket>[(\[{])' was never closed"), M.SYNTAX_UNCLOSED),
    (re.compile(r"unmatched '(?P<bracket>[)\]}])'"), M.SYNTAX_UNMATCHED),
    (re.compile(r"closing parenthesis '(?P<bracket>[)\]}])' does not match"), M.SYNTAX_UNMATCHED),
    (re.compile(r"expected ':'"), M.SYNTAX_COLON),
    (re.compile(r"unterminated (triple-quoted )?string literal"), M.SYNTAX_STRING),
    (re.compile(r"indent|unindent"), M.SYNTAX_INDENT),
    (
        re.compile(r"invalid (non-printable )?character '?(?P<char>[^' ]*)'? ?\((?P<code>U\+[0-9A-F]+)\)"),
        M.SYNTAX_CHARACTER,
    ),
    (re.compile(r"invalid non-printable character (?P<code>U\+[0-9A-F]+)"), M.SYNTAX_CHARACTER),
    (re.compile(r"Perhaps you forgot a comma"), M.SYNTAX_COMMA),
]


SYNTAX_MSGIDS = {msgid for _, msgid in SYNTAX_PATTERNS} | {M.SYNTAX_GENERIC}


def syntax_message(detail: str, line: int | str, source: str, offset: int | None) -> Message:
    """A syntax error in plain words, with the line (and the one before) shown as ``context``."""
    params: dict[str, Any] = {"line": line}
    msgid = M.SYNTAX_GENERIC
    for pattern, candidate in SYNTAX_PATTERNS:
        found = pattern.search(detail)
        if found:
            msgid = candidate
            groups = found.groupdict()
            if "bracket" in groups:
                params["bracket"] = groups["bracket"]
            if "code" in groups:
                params["char"] = groups["code"]
            break
    if msgid == M.SYNTAX_GENERIC:
        params["detail"] = detail[:200]
    params["context"] = code_context(source, line, offset)
    return Message(msgid, params)


def code_context(source: str, line: int | str, offset: int | None = None) -> str:
    """``  3 | code`` for the line before and the line itself, a caret under ``offset``."""
    if not isinstance(line, int):
        return ""
    lines = source.splitlines()
    width = len(str(line))
    shown = []
    for number in (line - 1, line):
        if 1 <= number <= len(lines):
            shown.append(f"{number:>{width}} | {lines[number - 1][:200]}")
    if offset and 1 <= line <= len(lines) and offset <= len(lines[line - 1]) + 1 and offset <= 200:
        shown.append(" " * width + " | " + " " * (offset - 1) + "^")
    return "\n".join(shown)


def placeholder_lines(source: str) -> list[int]:
    """Lines where the starter's ``...`` placeholder is still an expression of the code."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    # ``s[..., 0]`` is NumPy, not a placeholder: an ellipsis inside an index does not count.
    in_index = {
        id(node) for sub in ast.walk(tree) if isinstance(sub, ast.Subscript) for node in ast.walk(sub.slice)
    }
    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value is Ellipsis and id(node) not in in_index
        }
    )


def _module_message(module: dict[str, Any], spec: ExerciseSpec, source: str) -> Message:
    status = module["status"]
    source_lines = len(source.splitlines())
    if status == "syntax":
        line = _line_ok(module.get("line"), source_lines) or "?"
        return syntax_message(module.get("detail", ""), line, source, module.get("offset"))
    if status == "missing_function":
        return Message(M.MISSING_FUNCTION, {"function": spec.function})
    if status == "not_callable":
        return Message(M.NOT_CALLABLE, {"function": spec.function})
    # Top-level code runs before any hidden input exists, so details are safe to show.
    return Message(
        M.MODULE_EXCEPTION,
        {
            "exc_type": module.get("exc_type") or "Exception",
            "line": _line_ok(module.get("line"), source_lines) or "?",
            "detail": module.get("detail", "")[:300],
        },
    )


def _visible_stdout(run: ProgramRun, cases: list[Case], cap: int, author: bool) -> str:
    parts = []
    if run.module_stdout:
        parts.append(run.module_stdout)
    shown = [i for i in run.order if author or not cases[i].hidden]
    for index in shown:
        crun = run.cases.get(index)
        text = crun.stdout + (crun.stderr if crun and crun.stderr else "") if crun else ""
        if text:
            parts.append(f"[{cases[index].name}]\n{text}" if len(shown) > 1 else text)
    text = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
    return text[:cap]


def _phases(cases: list[Case], only_visible: bool) -> list[list[int]]:
    """Visible cases first, hidden ones in a later phase.

    Phase 0 is never hidden, even when there is no visible case (every code fill-in
    blank): it is then empty, so the program's top-level code, and whatever it reports
    about itself (module status and output, read once at the end of phase 0), runs
    before any hidden input exists.
    """
    # Within a phase the author's cases run first, then the probe and property cases derived
    # from them: time they take, or a hang in them, never costs a real case its result (the
    # verdict and score come from the author's cases alone).
    order = sorted(range(len(cases)), key=lambda i: cases[i].base is not None)
    visible = [i for i in order if not cases[i].hidden]
    hidden = [i for i in order if cases[i].hidden]
    if only_visible or not hidden:
        return [visible]
    return [visible, hidden]


def _internal_error(started: float, what: str) -> GradeResult:
    log.exception("grader internal error while %s", what)
    return GradeResult(
        verdict=Verdict.INTERNAL_ERROR,
        message=Message(M.INTERNAL_ERROR),
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def grade(
    source: str | bytes,
    spec: ExerciseSpec,
    cases: list[Case],
    ref: Reference,
    *,
    variants: dict[str, Reference] | None = None,
    only_visible: bool = False,
) -> GradeResult:
    """Grade a student's source in a fresh sandbox.

    Visible cases run first; hidden inputs only reach the sandbox after the
    visible outputs were read.  ``only_visible`` runs the visible cases only
    (the "Run" button).  ``variants`` maps a misconception tag to the outputs of
    a known-wrong solution; when the student's outputs equal one of them on all
    failing cases, ``misconception`` is set.  Raises `SandboxUnavailable` when
    no sandbox can be started.
    """
    started = time.monotonic()
    timeline.stamp("grade.start")
    problem = check_source(source, spec)
    timeline.stamp("grade.check")
    if problem is not None:
        return GradeResult(
            verdict=Verdict.REJECTED, message=problem, duration_ms=int((time.monotonic() - started) * 1000)
        )
    if isinstance(source, bytes):  # raw bytes (the CLI): check_source has proved them UTF-8
        source = source.decode("utf-8")
    cases = list(cases)
    try:
        run = execute(source, spec, cases, _phases(cases, only_visible))
        timeline.stamp("grade.run")
        result = evaluate(_only(run, cases, derived=False), source, spec, cases, ref)
        timeline.stamp("grade.evaluate")
        if result.verdict in _RUN_STOPPERS and any(case.base is not None for case in cases):
            # A hang or a blow-up in a derived case (they run in the visible phase, before any
            # hidden input exists) must not cost the author's cases their results: those are
            # graded again in a run of their own, and nothing is taught from the first.
            cases = [case for case in cases if case.base is None]
            run = execute(source, spec, cases, _phases(cases, only_visible))
            result = evaluate(run, source, spec, cases, ref)
        else:
            _teach(run, source, spec, cases, ref, result)
            timeline.stamp("grade.teach")
    except SandboxUnavailable:
        raise
    except Exception:  # noqa: BLE001 -- any fault of ours is an internal error, never the student's
        return _internal_error(started, "grading")
    if variants and result.verdict != Verdict.PASSED:
        result.misconception = misconception_of(result, variants, spec)
    _point_at_placeholders(result, source)
    if result.verdict == Verdict.INTERNAL_ERROR:
        log.error("internal error: %s", run.outcome.log_tail)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    timeline.stamp("grade.end")
    return result


# Verdicts that end the whole run, so that cases after the one running get no result.
_RUN_STOPPERS = (Verdict.TIMEOUT, Verdict.MEMORY_LIMIT, Verdict.OUTPUT_LIMIT)


def _only(run: ProgramRun, cases: list[Case], *, derived: bool) -> ProgramRun:
    """The run seen through the author's cases only (the verdict and score), or through the
    derived probe and property cases only."""
    return replace(run, order=[i for i in run.order if (cases[i].base is not None) == derived])


def _teach(
    run: ProgramRun, source: str, spec: ExerciseSpec, cases: list[Case], ref: Reference, result: GradeResult
) -> None:
    """Weight probes and property checks on the student's own outputs, attached to the
    results of their base cases; they never change the verdict or the score."""
    if not spec.probes and not spec.properties:
        return
    derived = evaluate(_only(run, cases, derived=True), source, spec, cases, None).tests
    attach_probes(spec, cases, ref, result.tests, derived)
    attach_properties(spec, cases, result.tests, derived)


def _point_at_placeholders(result: GradeResult, source: str) -> None:
    """An untouched starter fails for a plain reason: its ``...`` are still there. Say that."""
    if result.verdict not in (Verdict.FAILED, Verdict.ERROR):
        return
    if result.message is not None and result.message.msgid in SYNTAX_MSGIDS:
        return  # a syntax error says more
    lines = placeholder_lines(source)
    if lines:
        result.message = Message(
            M.PLACEHOLDERS_LEFT,
            {
                "lines": ", ".join(map(str, lines[:5])) + (" …" if len(lines) > 5 else ""),
                "context": code_context(source, lines[0]),
            },
        )


def misconception_of(result: GradeResult, variants: dict[str, Reference], spec: ExerciseSpec) -> str | None:
    """The tag of the catalogued misconception whose outputs ``result``'s failing cases equal
    (all of them), or None."""
    failing = [t for t in result.tests if not t.passed]
    if not failing or any(not t.outputs for t in failing):
        return None
    for tag, variant in variants.items():
        if all(
            t.name in variant.outputs and outputs_match(t.outputs, variant.outputs[t.name], spec)
            for t in failing
        ):
            return tag
    return None


def run_reference(
    solution_source: str, spec: ExerciseSpec, cases: list[Case], *, allow_failures: bool = False
) -> Reference:
    """Run the instructor's solution on every case (sandboxed) and keep its outputs.

    Raises `ReferenceFailed` (carrying a GradeResult with full, author-facing
    messages) unless every case produced valid results; with
    ``allow_failures=True`` (used for misconception variants) failing cases are
    simply left out.
    """
    started = time.monotonic()
    cases = list(cases)
    problem = check_source(solution_source, spec)
    if problem is not None:
        raise ReferenceFailed(GradeResult(verdict=Verdict.REJECTED, message=problem))
    run = execute(solution_source, spec, cases, [list(range(len(cases)))])
    result = evaluate(run, solution_source, spec, cases, None, author=True)
    result.duration_ms = int((time.monotonic() - started) * 1000)
    if result.verdict != Verdict.PASSED and not allow_failures:
        raise ReferenceFailed(result)
    outputs: dict[str, dict[str, np.ndarray]] = {}
    stdout: dict[str, str] = {}
    for index, case in enumerate(cases):
        crun = run.cases.get(index)
        test = result.tests[index] if index < len(result.tests) else None
        if crun is None or test is None or not test.passed:
            continue
        outputs[case.name] = dict(test.outputs)
        stdout[case.name] = crun.stdout
    reference = Reference(outputs=outputs, stdout=stdout)
    # A relation the solution itself breaks does not fit the exercise: the author's error.
    broken = [] if allow_failures else reference_problems(spec, cases, reference)
    if broken:
        result.verdict = Verdict.FAILED
        result.message = Message(M.REFERENCE_BREAKS_PROPERTY, {"problems": "; ".join(broken[:3])})
        raise ReferenceFailed(result)
    return reference
