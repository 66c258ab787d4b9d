"""CLI: ``python -m grader.core EXERCISE_DIR SUBMISSION.py [--json] [--visible]``.

Builds the cases, runs ``solution.py`` as the reference and grades the
submission, printing a summary (or the GradeResult as JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

from . import (
    ReferenceFailed,
    SpecError,
    build_cases,
    grade,
    parse_spec,
    run_reference,
    sandbox_problem,
    sandbox_warnings,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.core", description=__doc__)
    parser.add_argument("exercise_dir", type=Path)
    parser.add_argument("submission", type=Path)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--visible", action="store_true", help="run only the visible cases")
    args = parser.parse_args(argv)

    problem = sandbox_problem()
    if problem:
        print(f"sandbox unavailable: {problem}", file=sys.stderr)
        return 2
    for warning in sandbox_warnings():
        print(f"warning: {warning}", file=sys.stderr)
    try:
        spec = parse_spec(tomllib.loads((args.exercise_dir / "exercise.toml").read_text(encoding="utf-8")))
        cases = build_cases(spec, args.exercise_dir)
        ref = run_reference((args.exercise_dir / "solution.py").read_text(encoding="utf-8"), spec, cases)
    except SpecError as exc:
        print(f"exercise error at {exc.key or '?'}: {exc.message}", file=sys.stderr)
        return 2
    except ReferenceFailed as exc:
        print("the reference solution failed:", file=sys.stderr)
        print(json.dumps(exc.result.to_dict(), indent=2, ensure_ascii=False), file=sys.stderr)
        return 2
    variants = {}
    vdir = args.exercise_dir / "variants"
    if vdir.is_dir():
        for path in sorted(vdir.glob("*.py")):
            variants[path.stem] = run_reference(
                path.read_text(encoding="utf-8"), spec, cases, allow_failures=True
            )
    result = grade(
        args.submission.read_bytes(), spec, cases, ref, variants=variants, only_visible=args.visible
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(f"{result.verdict.value}  score={result.score:.3f}  {result.duration_ms} ms")
        if result.message:
            print(result.message.render())
        for t in result.tests:
            mark = "ok " if t.passed else "FAIL"
            print(
                f"  {mark} {t.name}{' (hidden)' if t.hidden else ''}"
                + (f": {t.message.render()}" if t.message else "")
            )
        if result.misconception:
            print(f"misconception: {result.misconception}")
        if result.stdout:
            print("--- stdout ---\n" + result.stdout)
    return 0 if result.verdict.value == "passed" else 1


if __name__ == "__main__":
    sys.exit(main())
