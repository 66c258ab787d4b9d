"""The bridge from course files to the grader: run every reference in the sandbox, prove
every misconception variant is caught, and store the hidden grading data."""

import hashlib
import json
import re
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from grader.bundles import bundle_path, prepare, prepare_variants, run_on_variants, variant_dir
from grader.core import (
    ExerciseSpec,
    Reference,
    ReferenceFailed,
    SandboxUnavailable,
    SpecError,
    Verdict,
    grade,
    run_generator,
    run_reference,
    save_bundle,
)

from . import catalogue
from .authoring import MAX_SOURCE_BYTES, CourseSource, Problem, QuestionSource, VariantProblem
from .kinds import get_kind
from .variants import question_seed_base, shared_answers, variant_seed


def _spec_line(exercise, key: str) -> int:
    from .tomlsource import TomlSource

    doc = TomlSource.read(exercise.directory / "exercise.toml")
    parts = tuple(
        int(p) if p.isdigit() else p for p in key.replace("[", ".").replace("]", "").split(".") if p
    )
    return doc.line_of(*parts) if parts else 1


def _failure_text(result) -> str:
    failing = [t for t in result.tests if not t.passed]
    detail = result.message or (failing[0].message if failing else None)
    return f"{result.verdict}: {detail.render() if detail else 'no detail'}"


def check_exercises(source: CourseSource, *, build: bool) -> list[Problem]:
    """Problems with the course's graded items; with ``build``, keep their grading data."""
    problems: list[Problem] = []
    try:
        problems.extend(check_generated_questions(source))
        for question in source.all_questions():
            if not question.generator:
                problems.extend(_prepare_question(question, question.spec))
        for exercise in source.all_exercises():
            problems.extend(_check_exercise(source, exercise, build=build))
    except SandboxUnavailable as exc:
        problems.append(Problem("(host)", 0, f"cannot run reference solutions: {exc}"))
    return problems


def _prepare_question(question: QuestionSource, spec: dict, what: str = "") -> list[Problem]:
    """Build what grading needs (a code blank's reference runs in the sandbox)."""
    kind = get_kind(question.kind)
    if kind is None:
        return []
    try:
        kind.prepare_grading(spec)
    except ReferenceFailed as failed:
        return [
            Problem(
                question.file,
                question.line,
                f"{question.slug}{what}: the reference filling does not run cleanly ({_failure_text(failed.result)})",
            )
        ]
    except SpecError as exc:
        return [Problem(question.file, question.line, f"{question.slug}{what}: {exc}")]
    return []


def _def_line(code: str, function: str) -> int:
    match = re.search(rf"^def\s+{re.escape(function)}\s*\(", code, re.MULTILINE)
    return code.count("\n", 0, match.start()) + 1 if match else 1


def _digest(variant: dict) -> str:
    content = {k: variant[k] for k in ("params", "prompt_html", "explanation_html", "spec")}
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()


def check_generated_questions(source: CourseSource, *, prepare: bool = True) -> list[Problem]:
    """Run every question generator for each of its variants' seeds (twice, in two sandboxes: a
    generator must be deterministic), build each variant and (``prepare``) its grading data (a
    code blank's reference run per variant); fill in ``question.variants`` and, from variant 0,
    the question's own prompt and spec. Without ``prepare`` a code blank's data is built when
    it is first graded."""
    problems: list[Problem] = []
    by_file: dict[Path, list[QuestionSource]] = defaultdict(list)
    for question in source.all_questions():
        if question.generator and question.params_path is not None:
            by_file[question.params_path].append(question)
    for path, questions in by_file.items():
        rel = (
            str(path.relative_to(source.root.parent))
            if path.is_relative_to(source.root.parent)
            else str(path)
        )
        try:
            code = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(rel, 1, f"cannot read the generator file: {exc}"))
            continue
        if len(code.encode()) > MAX_SOURCE_BYTES:
            problems.append(Problem(rel, 1, f"the generator file is larger than {MAX_SOURCE_BYTES} bytes"))
            continue
        calls = [
            (q.generator, variant_seed(question_seed_base(q.slug), i))
            for q in questions
            for i in range(q.variant_count)
        ]
        first, second = _generate(code, tuple(calls))
        at = 0
        for question in questions:
            runs = list(zip(calls[at : at + question.variant_count], first[at:], second[at:]))
            at += question.variant_count
            problems.extend(_build_variants(question, runs, code, rel, source, prepare=prepare))
    return problems


@lru_cache(maxsize=64)
def _generate(code: str, calls: tuple) -> tuple[list, list]:
    """Two runs of a generator file (remembered per process: a generator is deterministic, or the
    first look said it is not): the second run proves each call deterministic; a first run with a
    problem says enough."""
    first = run_generator(code, list(calls))
    second = first if any(g.problem for g in first) else run_generator(code, list(calls))
    return first, second


def _build_variants(
    question: QuestionSource, runs: list, code: str, rel: str, source: CourseSource, *, prepare: bool
) -> list[Problem]:
    assert question.build is not None
    variants = []
    for index, ((function, seed), one, two) in enumerate(runs):
        where = f"{question.slug}: variant {index} (seed {seed})"
        if one.problem or two.problem:
            failed = one if one.problem else two
            return [
                Problem(
                    rel,
                    failed.line or _def_line(code, function),
                    f"{where}: {function}(rng): {failed.problem}",
                )
            ]
        if one.params != two.params:
            return [
                Problem(
                    rel,
                    _def_line(code, function),
                    f"{where}: {function}(rng) is not deterministic: the same seed gave different "
                    "parameters on two runs (draw every random number from rng)",
                )
            ]
        try:
            prompt_html, explanation_html, spec, render_problems = question.build(one.params)
        except VariantProblem as problem:
            return [Problem(question.file, problem.line, f"{where}: {problem.message}")]
        if render_problems:
            return [Problem(p.file, p.line, f"{where}: {p.message}") for p in render_problems]
        prepared = _prepare_question(question, spec, f" (variant {index})") if prepare else []
        if prepared:
            return prepared
        variant = {
            "index": index,
            "seed": seed,
            "params": one.params,
            "prompt_html": prompt_html,
            "explanation_html": explanation_html,
            "spec": spec,
        }
        variant["digest"] = _digest(variant)
        variants.append(variant)
    for group in shared_answers([variant["spec"] for variant in variants]):
        answers = sorted({f"{variants[i]['spec']['answer']:g}" for i in group})
        source.warnings.append(
            Problem(
                question.file,
                question.line,
                f"{question.slug}: variants {', '.join(map(str, group))} have answers one number gets right "
                f"({', '.join(answers)}, within the tolerance); students who get them can share it",
            )
        )
    question.variants = variants
    first = variants[0]
    question.prompt_html, question.explanation_html, question.spec = (
        first["prompt_html"],
        first["explanation_html"],
        first["spec"],
    )
    return []


def _check_exercise(source: CourseSource, exercise, *, build: bool) -> list[Problem]:
    problems = []
    target = bundle_path("exercises", source.slug, exercise.slug, exercise.content_hash) if build else None
    try:
        spec, cases, ref = prepare(
            exercise.spec, exercise.solution_code, source_dir=exercise.directory, target=target
        )
    except SpecError as exc:
        return [Problem(exercise.file, _spec_line(exercise, exc.key), f"{exercise.slug}: {exc.message}")]
    except ReferenceFailed as failed:
        return [
            Problem(
                str(Path(exercise.file).with_name("solution.py")),
                1,
                f"{exercise.slug}: the reference solution does not pass ({_failure_text(failed.result)})",
            )
        ]
    if not any(case.hidden for case in cases):
        problems.append(
            Problem(exercise.file, 1, f"{exercise.slug}: an exercise needs at least one hidden case")
        )
    of_variant = f" of variant 0 (seed {variant_seed(spec.seed, 0)})" if exercise.variant_count > 1 else ""
    for variant in exercise.misconceptions:
        result = grade(variant["source"], spec, cases, ref)
        catalogue.record(exercise, variant["tag"], result)  # for validate_course's report
        caught = any(t.hidden and not t.passed for t in result.tests)
        if result.verdict == Verdict.PASSED or not caught:
            problems.append(
                Problem(
                    exercise.file,
                    variant["line"],
                    f"{exercise.slug}: misconception {variant['tag']!r} ({variant['file']}) passes every hidden case{of_variant}; add a case that catches it",
                )
            )
        elif target is not None:
            # The variant's own outputs let the grader recognise a student making the same mistake.
            variant_dir = target / "variants" / variant["tag"]
            if not (variant_dir / "manifest.json").exists():
                save_bundle(
                    variant_dir,
                    spec,
                    cases,
                    run_reference(variant["source"], spec, cases, allow_failures=True),
                )
    if exercise.variant_count > 1:
        problems.extend(_check_variants(exercise, spec, target))
    return problems


# Variants are built two at a time (each in its own sandbox): what a 2-core host does best.
VARIANT_WORKERS = 2
CHECKED_FILE = "checked.json"  # in a variant's bundle: every misconception was caught in it


def _check_variants(exercise, spec: ExerciseSpec, target: Path | None) -> list[Problem]:
    """Variants 1 … N-1 of an exercise (variant 0 is the exercise's own bundle, checked above):
    cases.py's cases from each variant's seed, the reference passing them, and every catalogued
    misconception failing some hidden case of each. With ``target``, each variant's grading data
    and its misconceptions' outputs are stored at ``variant_dir(target, i)``; a variant stored and
    proved before (the folder is keyed by its content hash) is not run again."""
    indices = range(1, exercise.variant_count)
    seeds = {i: variant_seed(spec.seed, i) for i in indices}
    where = {i: f"variant {i} (seed {seeds[i]})" for i in indices}
    problems: list[Problem] = []
    built: dict[int, tuple[list, Reference]] = {}
    prepared = prepare_variants(
        exercise.spec,
        exercise.solution_code,
        source_dir=exercise.directory,
        variants=[(seeds[i], variant_dir(target, i) if target is not None else None) for i in indices],
        workers=VARIANT_WORKERS,
    )
    for index, outcome in zip(indices, prepared, strict=True):
        if isinstance(outcome, SpecError):
            problems.append(
                Problem(
                    exercise.file,
                    _spec_line(exercise, outcome.key),
                    f"{exercise.slug}: {where[index]}: {outcome.message}",
                )
            )
        elif isinstance(outcome, ReferenceFailed):
            problems.append(
                Problem(
                    str(Path(exercise.file).with_name("solution.py")),
                    1,
                    f"{exercise.slug}: the reference solution does not pass {where[index]} "
                    f"({_failure_text(outcome.result)})",
                )
            )
        elif not any(case.hidden for case in outcome[0]):
            problems.append(Problem(exercise.file, 1, f"{exercise.slug}: {where[index]} has no hidden case"))
        else:
            built[index] = outcome
    if problems:
        return problems
    unproved = [i for i in built if target is None or not (variant_dir(target, i) / CHECKED_FILE).exists()]
    if not unproved or not exercise.misconceptions:
        _mark_checked(target, unproved, seeds)
        return []

    def check(variant: dict) -> list:
        # One run of the misconception over every variant's cases (see run_on_variants).
        runs = run_on_variants(variant["source"], spec, [built[i] for i in unproved])
        for at, run in enumerate(runs):
            if run is None:  # the shared run was stopped: this variant in a run of its own
                cases, ref = built[unproved[at]]
                runs[at] = (
                    grade(variant["source"], spec, cases, ref),
                    run_reference(variant["source"], spec, cases, allow_failures=True),
                )
        return runs

    with ThreadPoolExecutor(VARIANT_WORKERS) as workers:
        results = list(workers.map(check, exercise.misconceptions))
    caught_everywhere = set(unproved)
    for variant, runs in zip(exercise.misconceptions, results, strict=True):
        for index, (result, outputs) in zip(unproved, runs, strict=True):
            caught = any(t.hidden and not t.passed for t in result.tests)
            if result.verdict == Verdict.PASSED or not caught:
                caught_everywhere.discard(index)
                problems.append(
                    Problem(
                        exercise.file,
                        variant["line"],
                        f"{exercise.slug}: misconception {variant['tag']!r} ({variant['file']}) passes "
                        f"every hidden case of {where[index]}; make cases.py catch it in every variant",
                    )
                )
            elif target is not None:
                folder = variant_dir(target, index) / "variants" / variant["tag"]
                if not (folder / "manifest.json").exists():
                    save_bundle(folder, spec, built[index][0], outputs)
    _mark_checked(target, sorted(caught_everywhere), seeds)
    return problems


def _mark_checked(target: Path | None, indices, seeds: dict[int, int]) -> None:
    if target is None:
        return
    for index in indices:
        marker = variant_dir(target, index) / CHECKED_FILE
        marker.write_text(json.dumps({"index": index, "seed": seeds[index]}), encoding="utf-8")
