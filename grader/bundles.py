"""Hidden grading data on disk: cases and reference outputs, built by running the
instructor's solution in the sandbox, stored under GRADER_DATA_DIR by content hash.

Never under static or media, never mounted into a student's sandbox.
"""

import dataclasses
import hashlib
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from .core import (
    Case,
    ExerciseSpec,
    GradeResult,
    Limits,
    Reference,
    build_cases,
    check_source,
    load_bundle,
    parse_spec,
    run_reference,
    save_bundle,
)
from .core.grade import evaluate, execute


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
        # Write to a sibling then rename, so a half-written bundle is never loaded.
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
        try:
            save_bundle(staging, spec, cases, ref)
            staging.rename(target)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not (target / "manifest.json").exists():
                raise
    return spec, cases, ref


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
    # The run does the work of len(variants) runs: its time limits grow with it (up to the most
    # an exercise may ask for; a run that still hits them is graded variant by variant).
    ceiling, limits = Limits.ceiling(), spec.limits
    scale = max(1, len(variants))
    batch_spec = dataclasses.replace(
        spec,
        limits=dataclasses.replace(
            limits,
            cpu_seconds=min(ceiling.cpu_seconds, limits.cpu_seconds * scale),
            wall_seconds=min(ceiling.wall_seconds, limits.wall_seconds * scale),
        ),
    )
    run = execute(source, batch_spec, every, [list(range(len(every)))])
    outcome = run.outcome
    if outcome.timed_out or outcome.cpu_exceeded or outcome.oom_killed or outcome.signal is not None:
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
