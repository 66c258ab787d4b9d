"""Running an item's parameter generator (``params.py``) in the sandbox.

``generate(rng) -> dict`` is author code: it runs like a student's, in a fresh sandbox with the
item's limits, and what it returns is validated here on the host as untrusted JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .limits import Limits
from .pool import run_sandboxed
from .results import LoadProblem, OutputDir

PARAMS_FILE = "params.py"
MAX_PARAMS_BYTES = 64 * 1024  # one variant's parameters as JSON
# Calls per sandbox run: their output stays well under the run's file size limit (16 MiB).
CALLS_PER_RUN = 200
MAX_DEPTH = 4  # a matrix of rows is depth 2
# A generator is small work; a loop or a huge allocation ends at these limits.
GENERATOR_LIMITS = Limits(cpu_seconds=4.0, wall_seconds=10.0, memory_mb=512)


@dataclass(frozen=True)
class Generated:
    """One call's outcome: ``params`` when it returned a valid dict, else ``problem`` (and the
    line of params.py the exception came from, when it raised)."""

    params: dict[str, Any] | None = None
    problem: str = ""
    line: int | None = None


def check_params(value: object) -> str:
    """Why ``value`` cannot be an item's parameters ('' when it can): a dict of identifiers to
    finite numbers, strings, booleans and (nested) lists of them."""
    if not isinstance(value, dict):
        return f"generate(rng) must return a dict, not {type(value).__name__}"
    if not value:
        return "generate(rng) returned an empty dict"
    for key, item in value.items():
        if not isinstance(key, str) or not key.isidentifier():
            return f"parameter name {key!r} is not an identifier"
        why = _check_value(item, 0)
        if why:
            return f"parameter {key!r}: {why}"
    return ""


def _check_value(value: object, depth: int) -> str:
    if isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return "" if len(value) <= 2000 else "a string longer than 2000 characters"
    if isinstance(value, int):
        return "" if abs(value) < 2**53 else "an integer too large to store exactly"
    if isinstance(value, float):
        return "" if math.isfinite(value) else "not a finite number"
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return f"lists nested deeper than {MAX_DEPTH}"
        for item in value:
            why = _check_value(item, depth + 1)
            if why:
                return why
        return ""
    return f"{type(value).__name__} is not a number, string, boolean or list"


def run_generator(
    source: str, calls: list[tuple[str, int]], *, limits: Limits = GENERATOR_LIMITS
) -> list[Generated]:
    """Run ``params.py`` once in a sandbox and call ``function(np.random.default_rng(seed))``
    for each of ``calls``; one `Generated` per call, in order. A run that does not finish
    (time, memory) or whose module fails to load makes every call a problem."""
    if not calls:
        return []
    if len(calls) > CALLS_PER_RUN:
        return [
            generated
            for start in range(0, len(calls), CALLS_PER_RUN)
            for generated in run_generator(source, calls[start : start + CALLS_PER_RUN], limits=limits)
        ]
    found: dict[str, Any] = {}

    def collect(out: OutputDir, phase: int) -> None:
        found["module"] = out.read_json("module.status", 65536)
        found["lines"] = out.read_bytes("params.jsonl", len(calls) * (MAX_PARAMS_BYTES + 256) + 1)

    job: dict[str, Any] = {
        "mode": "generate",
        "function": None,
        "results": [],
        "max_result_bytes": MAX_PARAMS_BYTES,
        "calls": [[name, int(seed)] for name, seed in calls],
    }
    outcome = run_sandboxed(job=job, code=source, phases=[[]], limits=limits, collect=collect)
    module = found.get("module")
    if isinstance(module, dict) and module.get("status"):
        line = module.get("line") if isinstance(module.get("line"), int) else None
        detail = module["detail"] if isinstance(module.get("detail"), str) else module["status"]
        exc = module.get("exc_type") if isinstance(module.get("exc_type"), str) else ""
        return [Generated(problem=f"params.py failed to load: {exc}: {detail}"[:500], line=line)] * len(calls)
    got = found.get("lines")
    entries: list[Any] = []
    if got is not None and not isinstance(got, LoadProblem):
        for raw in got[0].decode("utf-8", "replace").splitlines()[: len(calls)]:
            try:
                entries.append(json.loads(raw))
            except (ValueError, RecursionError):
                entries.append(None)
    if outcome.timed_out or outcome.cpu_exceeded:
        stopped = "did not finish within the time limit"
    elif outcome.oom_killed:
        stopped = "ran out of memory"
    else:
        stopped = f"stopped before returning (exit code {outcome.exit_code})"
    results = []
    for i in range(len(calls)):
        entry = entries[i] if i < len(entries) else None
        if not isinstance(entry, dict):
            results.append(Generated(problem=f"generate(rng) {stopped}"))
        elif "error" in entry:
            error = entry["error"] if isinstance(entry["error"], dict) else {}
            line = error.get("line") if isinstance(error.get("line"), int) else None
            if error.get("status") == "too_large":
                results.append(
                    Generated(problem=f"the parameters are larger than {MAX_PARAMS_BYTES} bytes as JSON")
                )
                continue
            exc = error.get("exc_type") if isinstance(error.get("exc_type"), str) else "error"
            detail = error.get("detail") if isinstance(error.get("detail"), str) else ""
            results.append(Generated(problem=f"{exc}: {detail}"[:500], line=line))
        else:
            params = entry.get("params")
            why = check_params(params)
            results.append(Generated(problem=why) if why else Generated(params=params))
    return results
