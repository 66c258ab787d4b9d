"""'Test this item' for instructors: grade an exercise's reference solution and every
catalogued misconception variant through the grading queue, and keep the verdicts.

The programs are read from the course files when the check is asked for, so the worker
needs only the database and the grading data. Checks run below students' submissions.

An exercise with per-student variants is checked on one of them (``variant``: an index,
default 0, the exercise's own cases) or on ``"all"``: every program against every variant's
hidden cases. Each program and each run names its variant (``"variant"``).
"""

import logging
import tomllib
from collections import defaultdict
from pathlib import Path

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from . import bundles
from .core import GradeResult, Verdict, grade, misconception_of
from .grading import exercise_bundle
from .models import CHECK_FAILED, ItemCheck

log = logging.getLogger("grader")

NO_GRADING_DATA = gettext_noop(
    "This exercise has no grading data on this machine yet: import the course again."
)


def programs_of(exercise) -> list[dict]:
    """The reference solution, then each catalogued variant whose file can be read."""
    programs = [{"label": "", "file": "", "code": exercise.solution_code}]
    folder = Path(exercise.course.source_path).parent / exercise.source_dir
    try:
        declared = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8")).get(
            "misconceptions", []
        )
    except (OSError, tomllib.TOMLDecodeError):
        declared = []
    for entry in declared:
        try:
            programs.append(
                {
                    "label": entry["tag"],
                    "file": entry["file"],
                    "code": (folder / entry["file"]).read_text(encoding="utf-8"),
                }
            )
        except (OSError, KeyError, TypeError):
            continue
    return programs


ALL_VARIANTS = "all"


def checked_variants(exercise, variant: int | str = 0) -> list[int]:
    """The variant indices a check on ``variant`` (an index, or "all") grades against; raises
    ValueError for an index the exercise does not have."""
    count = max(1, exercise.variant_count)
    if variant == ALL_VARIANTS:
        return list(range(count))
    try:
        index = int(variant)
    except (TypeError, ValueError):
        raise ValueError(f"variant must be a number from 0 to {count - 1} or {ALL_VARIANTS!r}") from None
    if not 0 <= index < count:
        raise ValueError(f"variant must be a number from 0 to {count - 1} or {ALL_VARIANTS!r}")
    return [index]


def _variants_asked(check: ItemCheck) -> list[int]:
    return sorted({program.get("variant", 0) for program in check.programs})


def start(exercise, user, variant: int | str = 0) -> ItemCheck:
    """A new check, queued when stored; an earlier one of the same variants still on its way is
    returned instead. ``variant``: the variant index to grade against, or "all" (each program
    against every variant); ValueError for an index the exercise does not have."""
    indices = checked_variants(exercise, variant)
    with transaction.atomic():
        pending = [
            c
            for c in ItemCheck.objects.filter(exercise=exercise).pending()
            if not c.is_lost and _variants_asked(c) == indices
        ]
        if pending:
            return pending[0]
        programs = programs_of(exercise)
        check = ItemCheck.objects.create(
            exercise=exercise,
            requested_by=user,
            programs=[{**program, "variant": index} for index in indices for program in programs],
            enqueued_at=timezone.now(),
        )
        ItemCheck.objects.enqueue(check.pk, stamped=True)
    return check


def run(check_id: int) -> str:
    """The task body: claim the check, grade every program, store the verdicts (if the lease
    still holds: a check whose worker died was given to another one by the sweeper)."""
    taken = ItemCheck.objects.select_related("exercise__course").take(check_id, ItemCheck.lease_duration)
    if taken is None:
        return "skipped"
    check, token = taken
    exercise = check.exercise
    try:
        runs = _grade_programs(exercise, check.programs)
    except OSError as exc:
        stored = ItemCheck.objects.give_up(check_id, token, repr(exc), message=NO_GRADING_DATA)
        return ItemCheck.Status.FAILED if stored else "stale"
    except Exception as exc:
        log.exception("item check %s failed", check_id)
        stored = ItemCheck.objects.give_up(check_id, token, repr(exc), message=CHECK_FAILED)
        return ItemCheck.Status.FAILED if stored else "stale"
    stored = ItemCheck.objects.finish(check_id, token, runs=runs)
    return ItemCheck.Status.DONE if stored else "stale"


def _grade_programs(exercise, programs: list[dict]) -> list[dict]:
    """Each program's verdict against its variant's cases, in the order asked. A program asked
    against several variants ("all") runs once on their cases together, in one sandbox
    (``bundles.run_on_variants``, as the import does): 11 programs × 20 variants are 11 runs,
    not 220. A variant the shared run cannot stand for (it was stopped) is graded on its own."""
    bundle = exercise_bundle(exercise)
    loaded: dict[int, tuple] = {}

    def data(index: int) -> tuple:
        if index not in loaded:
            directory = bundles.variant_dir(bundle, index)
            spec, cases, ref = bundles.load(exercise.spec, directory)
            loaded[index] = (spec, cases, ref, bundles.load_variants(directory))
        return loaded[index]

    results: dict[int, GradeResult] = {}
    same_program: dict[tuple[str, str], list[int]] = defaultdict(list)
    for at, program in enumerate(programs):
        same_program[(program["file"], program["code"])].append(at)
    for (file, code), places in same_program.items():
        indices = [programs[at].get("variant", 0) for at in places]
        if len(places) > 1:
            shared = bundles.run_on_variants(code, data(indices[0])[0], [data(i)[1:3] for i in indices])
            for at, index, found in zip(places, indices, shared, strict=True):
                if found is None:
                    continue
                result = found[0]
                spec, _cases, _ref, catalogue = data(index)
                if file and result.verdict != Verdict.PASSED:
                    result.misconception = misconception_of(result, catalogue, spec)
                results[at] = result
        for at, index in zip(places, indices, strict=True):
            if at not in results:
                spec, cases, ref, catalogue = data(index)
                results[at] = grade(code, spec, cases, ref, variants=catalogue if file else None)
    return [
        {
            "label": program["label"],
            "file": program["file"],
            "variant": program.get("variant", 0),
            "verdict": str(results[at].verdict),
            "score": results[at].score,
            "misconception": results[at].misconception or "",
            "hidden_failed": [t.name for t in results[at].tests if t.hidden and not t.passed],
        }
        for at, program in enumerate(programs)
    ]
