"""Hidden grading data on disk: cases and reference outputs, built by running the
instructor's solution in the sandbox, stored under GRADER_DATA_DIR by content hash.

Never under static or media, never mounted into a student's sandbox.
"""

import hashlib
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from django.conf import settings

from .core import ExerciseSpec, Reference, build_cases, load_bundle, parse_spec, run_reference, save_bundle


def content_hash(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def bundle_path(group: str, course: str, slug: str, digest: str) -> Path:
    return Path(settings.GRADER_DATA_DIR) / group / course / slug / digest


def prepare(grader_spec: dict, solution: str, *, source_dir: Path | None, target: Path | None):
    """Parse the spec, build cases and the reference outputs; store them at ``target``.

    Raises SpecError, ReferenceFailed or SandboxUnavailable. Reuses a stored bundle.
    """
    spec = parse_spec(grader_spec)
    if target is not None and (target / "manifest.json").exists():
        cases, ref = load_bundle(target)
        return spec, cases, ref
    with tempfile.TemporaryDirectory(prefix="dikkat-cases-") as empty:
        cases = build_cases(spec, source_dir or Path(empty))
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
