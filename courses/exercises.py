"""The bridge from course files to the grader: run every reference in the sandbox, prove
every misconception variant is caught, and store the hidden grading data."""

from pathlib import Path

from grader.bundles import bundle_path, prepare
from grader.core import (
    ReferenceFailed,
    SandboxUnavailable,
    SpecError,
    Verdict,
    grade,
    run_reference,
    save_bundle,
)

from . import catalogue
from .authoring import CourseSource, Problem
from .kinds import get_kind


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
        for question in source.all_questions():
            kind = get_kind(question.kind)
            if kind is not None:
                try:
                    kind.prepare_grading(question.spec)
                except ReferenceFailed as failed:
                    problems.append(
                        Problem(
                            question.file,
                            question.line,
                            f"{question.slug}: the reference filling does not run cleanly ({_failure_text(failed.result)})",
                        )
                    )
                except SpecError as exc:
                    problems.append(Problem(question.file, question.line, f"{question.slug}: {exc}"))
        for exercise in source.all_exercises():
            problems.extend(_check_exercise(source, exercise, build=build))
    except SandboxUnavailable as exc:
        problems.append(Problem("(host)", 0, f"cannot run reference solutions: {exc}"))
    return problems


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
    for variant in exercise.misconceptions:
        result = grade(variant["source"], spec, cases, ref)
        catalogue.record(exercise, variant["tag"], result)  # for validate_course's report
        caught = any(t.hidden and not t.passed for t in result.tests)
        if result.verdict == Verdict.PASSED or not caught:
            problems.append(
                Problem(
                    exercise.file,
                    variant["line"],
                    f"{exercise.slug}: misconception {variant['tag']!r} ({variant['file']}) passes every hidden case; add a case that catches it",
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
    return problems
