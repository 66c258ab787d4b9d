"""Building the list of cases: literal ``[[cases]]`` plus ``cases.py`` (run sandboxed)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .limits import Limits
from .pool import run_sandboxed
from .probes import derive_probe_cases
from .properties import derive_property_cases
from .results import LoadProblem, OutputDir
from .spec import (
    AUTHOR_CASE_NAME_RE,
    MAX_CASES,
    MAX_DERIVED_CASES,
    MAX_INPUT_ELEMENTS,
    Case,
    ExerciseSpec,
    SpecError,
    is_identifier,
)

CASES_FILE = "cases.py"


def build_cases(spec: ExerciseSpec, exercise_dir: Path, *, seed: int | None = None) -> list[Case]:
    """Literal cases from the spec followed by those made by ``cases.py``'s ``make_cases(rng)``,
    then the weight-probe and property cases derived from them (``<base>~<what>``, made on
    the host: probes.py, properties.py).

    ``cases.py`` runs inside the sandbox with ``rng = np.random.default_rng(seed)`` (``seed``
    defaults to ``spec.seed``; a per-student variant passes its own, the literal cases stay);
    its arrays come back as ``.npy`` files validated like student outputs.
    Problems raise `SpecError` with key ``"cases.py"`` (or ``"cases"``).
    """
    cases = list(spec.cases)
    path = Path(exercise_dir) / CASES_FILE
    if path.is_file():
        cases += _run_cases_py(path.read_text(encoding="utf-8"), spec, spec.seed if seed is None else seed)
    return _complete(spec, cases)


def _complete(spec: ExerciseSpec, cases: list[Case]) -> list[Case]:
    """The author's cases checked, followed by the probe and property cases derived from them."""
    if not cases:
        raise SpecError("the exercise has no cases: add [[cases]] or a cases.py", "cases")
    if len(cases) > MAX_CASES:
        raise SpecError(f"at most {MAX_CASES} cases are allowed", "cases")
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise SpecError(f"duplicate case name {case.name!r}", "cases")
        seen.add(case.name)
    # A misspelt name would silently name nothing: every key is a result or some case's input.
    inputs = {name for case in cases for name in case.inputs}
    for name in spec.shape_names:
        if name not in spec.results and name not in inputs:
            raise SpecError(
                f"{name!r} is neither a result {list(spec.results)} nor an input {sorted(inputs)}",
                f"shape_names.{name}",
            )
    derived = derive_probe_cases(spec, cases) + derive_property_cases(spec, cases)
    if len(derived) > MAX_DERIVED_CASES:
        raise SpecError(f"probes and properties make more than {MAX_DERIVED_CASES} cases", "properties")
    for case in derived:
        if case.name in seen:
            raise SpecError(f"two probes or properties of one kind on case {case.base!r}", "properties")
        seen.add(case.name)
    return cases + derived


# How many seeds' make_cases calls share one sandbox in build_cases_for_seeds.
SEEDS_PER_RUN = 20

# Appended to cases.py for build_cases_for_seeds: make_cases is called once per seed, each time
# with a generator of its own (as a run of its own would), its case names marked "v<n>-".
_SEEDS_WRAPPER = """


def _dikkat_for_seeds(make_cases, seeds):
    import numpy

    def make_all(rng):
        made = []
        for number, seed in enumerate(seeds):
            for case in make_cases(numpy.random.default_rng(seed)):
                if isinstance(case, dict) and isinstance(case.get("name"), str):
                    case = {**case, "name": "v%d-%s" % (number, case["name"])}
                made.append(case)
        return made

    return make_all


make_cases = _dikkat_for_seeds(make_cases, SEEDS)
"""


def build_cases_for_seeds(
    spec: ExerciseSpec, exercise_dir: Path, seeds: list[int]
) -> list[list[Case] | SpecError]:
    """`build_cases` for each of ``seeds`` (an exercise's per-student variants), with cases.py's
    ``make_cases`` called for up to SEEDS_PER_RUN seeds in one sandbox instead of one sandbox per
    seed. A seed whose shared run had any problem is built on its own, so that its error is the
    one `build_cases` gives. Returns each seed's cases, or its SpecError."""
    path = Path(exercise_dir) / CASES_FILE
    made: dict[int, list[Case]] = {}
    if path.is_file() and len(seeds) > 1:
        source = path.read_text(encoding="utf-8")
        for start in range(0, len(seeds), SEEDS_PER_RUN):
            chunk = seeds[start : start + SEEDS_PER_RUN]
            try:
                cases = _run_cases_py(
                    source + _SEEDS_WRAPPER.replace("SEEDS)", f"{list(chunk)!r})"),
                    scaled_for(spec, len(chunk)),
                    0,
                )
            except SpecError:
                continue  # each of these seeds on its own below
            parts: dict[int, list[Case]] = {number: [] for number in range(len(chunk))}
            for case in cases:
                mark, _, name = case.name.partition("-")
                parts[int(mark[1:])].append(replace(case, name=name))
            made.update({start + number: part for number, part in parts.items()})
    built: list[list[Case] | SpecError] = []
    for at, seed in enumerate(seeds):
        try:
            if at in made:
                built.append(_complete(spec, list(spec.cases) + made[at]))
            else:
                built.append(build_cases(spec, exercise_dir, seed=seed))
        except SpecError as exc:
            built.append(exc)
    return built


def scaled_for(spec: ExerciseSpec, runs: int) -> ExerciseSpec:
    """The spec for one run doing the work of ``runs``: its time limits grow with it, up to the
    most an exercise may ask for."""
    ceiling, limits = Limits.ceiling(), spec.limits
    return replace(
        spec,
        limits=replace(
            limits,
            cpu_seconds=min(ceiling.cpu_seconds, limits.cpu_seconds * max(1, runs)),
            wall_seconds=min(ceiling.wall_seconds, limits.wall_seconds * max(1, runs)),
        ),
    )


def _run_cases_py(source: str, spec: ExerciseSpec, seed: int) -> list[Case]:
    key = CASES_FILE
    limits = spec.limits
    max_bytes = limits.file_size_bytes - 4096
    found: dict[str, Any] = {}

    def collect(out: OutputDir, phase: int) -> None:
        found["module"] = out.read_json("module.status", 65536)
        found["manifest"] = out.read_bytes("cases.json", 1_000_001)
        found["out"] = out
        manifest = found["manifest"]
        if isinstance(manifest, LoadProblem) or manifest[1] > 1_000_000:
            return
        import json

        try:
            entries = json.loads(manifest[0])
        except ValueError:
            return
        if not isinstance(entries, list):
            return
        found["entries"] = entries
        arrays = {}
        for i, entry in enumerate(entries[: MAX_CASES + 1]):
            if not isinstance(entry, dict) or not isinstance(entry.get("inputs"), dict):
                continue
            for name in list(entry["inputs"])[:64]:
                if is_identifier(name):
                    arrays[(i, name)] = out.load_array(f"mc-{i:03d}.{name}.npy", max_bytes)
        found["arrays"] = arrays

    job: dict[str, Any] = {
        "mode": "make_cases",
        "function": None,
        "results": [],
        "max_result_bytes": max_bytes,
        "seed": seed,
    }
    outcome = run_sandboxed(job=job, code=source, phases=[[]], limits=limits, collect=collect)
    if outcome.timed_out or outcome.cpu_exceeded:
        raise SpecError("make_cases(rng) did not finish within the time limit", key)
    module = found.get("module")
    if isinstance(module, dict) and module.get("status"):
        detail = module["detail"] if isinstance(module.get("detail"), str) else ""
        raise SpecError(f"cases.py failed ({module.get('status')}): {detail[:2000]}", key)
    entries = found.get("entries")
    if entries is None:
        raise SpecError(
            "cases.py must define make_cases(rng) returning a list of dicts "
            f"(the run ended with exit code {outcome.exit_code})",
            key,
        )
    if len(entries) > MAX_CASES:
        raise SpecError(f"make_cases returned more than {MAX_CASES} cases", key)
    cases = []
    for i, entry in enumerate(entries):
        name = entry.get("name")
        if not isinstance(name, str) or not AUTHOR_CASE_NAME_RE.match(name):
            raise SpecError(f"case {i}: name must be 1-64 characters from a-z, 0-9, '_' and '-'", key)
        hidden = entry.get("hidden", True)
        if not isinstance(hidden, bool):
            raise SpecError(f"{name}: hidden must be True or False", key)
        weight = entry.get("weight", 1.0)
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not math.isfinite(weight)
            or weight <= 0
        ):
            raise SpecError(f"{name}: weight must be a positive number", key)
        inputs = {}
        for input_name, info in entry["inputs"].items():
            if not is_identifier(input_name):
                raise SpecError(f"{name}: input name {input_name!r} is not a valid variable name", key)
            arr = found["arrays"].get((i, input_name))
            if not isinstance(arr, np.ndarray):
                why = info.get("problem") if isinstance(info, dict) else None
                raise SpecError(f"{name}: input {input_name} is not a numeric array ({why or arr})", key)
            if arr.size > MAX_INPUT_ELEMENTS or arr.dtype.kind == "c":
                raise SpecError(f"{name}: input {input_name} is too large or complex", key)
            inputs[input_name] = arr
        cases.append(Case(name=name, inputs=inputs, hidden=hidden, weight=float(weight)))
    return cases
