"""Hidden grading data on disk: cases and reference outputs, built by running the
instructor's solution in the sandbox, stored under GRADER_DATA_DIR by content hash.

Never under static or media, never mounted into a student's sandbox.
"""

import dataclasses
import hashlib
import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from .core import (
    Case,
    ExerciseSpec,
    GradeResult,
    Reference,
    ReferenceFailed,
    SpecError,
    Verdict,
    build_cases,
    check_source,
    load_bundle,
    parse_spec,
    run_reference,
    save_bundle,
)
from .core.cases import build_cases_for_seeds, scaled_for
from .core.grade import evaluate, execute
from .core.properties import reference_problems


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def bundle_path(group: str, course: str, slug: str, digest: str) -> Path:
    return Path(settings.GRADER_DATA_DIR) / group / course / slug / digest


def prepare(
    grader_spec: dict,
    solution: str,
    *,
    source_dir: Path | None,
    target: Path | None,
    seed: int | None = None,
):
    """Parse the spec, build cases and the reference outputs; store them at ``target``.
    ``seed`` is the rng's seed for cases.py (a variant's; default the spec's own).

    Raises SpecError, ReferenceFailed or SandboxUnavailable. Reuses a stored bundle.
    """
    spec = parse_spec(grader_spec)
    if target is not None and (target / "manifest.json").exists():
        cases, ref = load_bundle(target)
        return spec, cases, ref
    with tempfile.TemporaryDirectory(prefix="dikkat-cases-") as empty:
        cases = build_cases(spec, source_dir or Path(empty), seed=seed)
    ref = run_reference(solution, spec, cases)
    if target is not None:
        store(target, spec, cases, ref)
    return spec, cases, ref


def store(target: Path, spec: ExerciseSpec, cases: list[Case], ref: Reference) -> None:
    """Keep a bundle at ``target``: written to a sibling then renamed, so a half-written
    bundle is never loaded."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    try:
        save_bundle(staging, spec, cases, ref)
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "manifest.json").exists():
            raise


def prepare_variants(
    grader_spec: dict,
    solution: str,
    *,
    source_dir: Path,
    variants: list[tuple[int, Path | None]],
    workers: int = 2,
) -> list[tuple[list[Case], Reference] | SpecError | ReferenceFailed]:
    """`prepare` for many variants of an exercise at once: ``variants`` lists (cases.py's seed,
    where to store the bundle or None). cases.py's make_cases runs for many seeds in one sandbox
    (`build_cases_for_seeds`); the reference then runs once on every variant's cases together,
    and on its own (``workers`` at a time) only for a variant where that shared run does not
    pass, so that its failure is told as `prepare` tells it.
    Stored bundles are reused. Returns each variant's (cases, reference) or its error."""
    spec = parse_spec(grader_spec)
    made: list = [
        load_bundle(target) if target is not None and (target / "manifest.json").exists() else None
        for _, target in variants
    ]
    fresh = [i for i, m in enumerate(made) if m is None]
    for index, cases in zip(
        fresh, build_cases_for_seeds(spec, source_dir, [variants[i][0] for i in fresh]), strict=True
    ):
        made[index] = cases
    with ThreadPoolExecutor(workers) as pool:
        pending = [i for i, m in enumerate(made) if isinstance(m, list)]
        shared = reference_on_variants(solution, spec, [made[i] for i in pending]) if pending else []
        alone = [i for i, ref in zip(pending, shared, strict=True) if ref is None]

        def reference(index: int):
            try:
                return run_reference(solution, spec, made[index])
            except ReferenceFailed as failed:
                return failed

        refs = dict(zip(pending, shared, strict=True)) | dict(
            zip(alone, pool.map(reference, alone), strict=True)
        )
    found: list = []
    for index, ((_, target), m) in enumerate(zip(variants, made, strict=True)):
        if not isinstance(m, list):
            found.append(m)  # a stored bundle's (cases, reference), or cases.py's SpecError
            continue
        ref = refs[index]
        if isinstance(ref, Reference) and target is not None:
            store(target, spec, m, ref)
        found.append((m, ref) if isinstance(ref, Reference) else ref)
    return found


def _stopped(run) -> bool:
    outcome = run.outcome
    return bool(outcome.timed_out or outcome.cpu_exceeded or outcome.oom_killed or outcome.signal is not None)


def reference_on_variants(
    solution: str, spec: ExerciseSpec, variants: list[list[Case]]
) -> list[Reference | None]:
    """The reference's outputs on several variants' cases (probe and property cases included),
    from one sandbox run over all of them; None for a variant where it did not pass every case
    or breaks a property there (`run_reference` on that variant alone then says why)."""
    if check_source(solution, spec) is not None:
        return [None] * len(variants)
    every: list[Case] = []
    spans: list[range] = []
    original: dict[str, str] = {}
    for number, cases in enumerate(variants):
        start = len(every)
        for case in cases:
            name = f"v{number}-{case.name}"  # a derived case's base is renamed with it
            original[name] = case.name
            every.append(dataclasses.replace(case, name=name))
        spans.append(range(start, len(every)))
    run = execute(solution, scaled_for(spec, len(variants)), every, [list(range(len(every)))])
    if _stopped(run):
        return [None] * len(variants)
    found: list[Reference | None] = []
    for span, cases in zip(spans, variants, strict=True):
        result = evaluate(
            dataclasses.replace(run, order=list(span)), solution, spec, every, None, author=True
        )
        if result.verdict != Verdict.PASSED or len(result.tests) != len(cases):
            found.append(None)
            continue
        ref = Reference(
            outputs={original[t.name]: dict(t.outputs) for t in result.tests},
            stdout={original[every[i].name]: run.cases[i].stdout for i in span},
        )
        found.append(None if reference_problems(spec, cases, ref) else ref)
    return found


@lru_cache(maxsize=256)
def _load(spec_json: str, target: str):
    cases, ref = load_bundle(Path(target))
    return parse_spec(json.loads(spec_json)), cases, ref


def load(grader_spec: dict, target: Path) -> tuple[ExerciseSpec, list, Reference]:
    """The stored (spec, cases, reference) for grading; cached per process."""
    return _load(json.dumps(grader_spec, sort_keys=True, default=str), str(target))


@lru_cache(maxsize=256)
def _load_variants(target: str) -> dict:
    folder = Path(target) / "variants"
    if not folder.is_dir():
        return {}
    return {d.name: load_bundle(d)[1] for d in sorted(folder.iterdir()) if (d / "manifest.json").exists()}


def load_variants(target: Path) -> dict:
    """Reference outputs of the exercise's misconception variants, by tag; cached per process."""
    return _load_variants(str(target))


def variant_dir(target: Path, index: int) -> Path:
    """Where variant ``index`` of an exercise's grading data lives (its cases made by cases.py
    from the variant's seed): variant 0 is the bundle itself, as before exercises had variants."""
    return target if index == 0 else target / "seeds" / f"{index:03d}"


def run_on_variants(
    source: str, spec: ExerciseSpec, variants: list[tuple[list[Case], Reference]]
) -> list[tuple[GradeResult, Reference] | None]:
    """Run ``source`` once on the author cases of several variants together: one sandbox
    instead of one per variant (checking a catalogued misconception against every variant of
    an exercise at import). For each variant: its result against that variant's reference
    (author cases only: the verdict's cases) and the program's own readable outputs, as
    ``run_reference(..., allow_failures=True)`` keeps them; None where the shared run cannot
    stand for the variant's own (the run was stopped: time, memory, a signal), so the caller
    grades that variant on its own."""
    if check_source(source, spec) is not None:
        return [None] * len(variants)
    every: list[Case] = []
    spans: list[range] = []
    combined = Reference(outputs={}, stdout={})
    original: dict[str, str] = {}  # the shared run's case name -> the variant's own
    position: dict[str, int] = {}
    for number, (cases, ref) in enumerate(variants):
        start = len(every)
        for case in cases:
            if case.base is not None:
                continue  # probe and property cases never decide a verdict
            name = f"v{number}-{case.name}"
            original[name], position[name] = case.name, len(every)
            every.append(dataclasses.replace(case, name=name))
            combined.outputs[name] = ref.outputs.get(case.name, {})
            if case.name in ref.stdout:
                combined.stdout[name] = ref.stdout[case.name]
        spans.append(range(start, len(every)))
    run = execute(source, scaled_for(spec, len(variants)), every, [list(range(len(every)))])
    if _stopped(run):
        return [None] * len(variants)
    found: list[tuple[GradeResult, Reference] | None] = []
    for span in spans:
        if run.module_status is None and any(
            run.cases.get(i) is None or not run.cases[i].finished for i in span
        ):
            found.append(None)
            continue
        view = dataclasses.replace(run, order=list(span))
        result = evaluate(view, source, spec, every, combined)
        own = evaluate(view, source, spec, every, None, author=True)
        for test in result.tests:
            test.name = original[test.name]
        outputs = Reference(outputs={}, stdout={})
        for test in own.tests:
            if test.passed:
                outputs.outputs[original[test.name]] = dict(test.outputs)
                outputs.stdout[original[test.name]] = run.cases[position[test.name]].stdout
        found.append((result, outputs))
    return found
