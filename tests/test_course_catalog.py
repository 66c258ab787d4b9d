"""The built-in course's misconception catalog works as students will meet it."""

import tomllib
from pathlib import Path

import pytest

from grader.core import Verdict, build_cases, grade, parse_spec, run_reference
from grader.core.compare import outputs_match

pytestmark = [pytest.mark.sandbox]

COURSE = Path(__file__).resolve().parent.parent / "courses" / "content" / "attention"
EXERCISES = sorted(p.parent for p in COURSE.glob("*/*/exercise.toml"))


@pytest.mark.parametrize("folder", EXERCISES, ids=lambda p: p.name)
def test_every_variant_that_returns_wrong_values_is_recognised(folder):
    """A student who makes a catalogued mistake (and gets arrays back, not an exception)
    gets that mistake's hint: the variant's own outputs are recognised as it."""
    data = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8"))
    spec = parse_spec(data)
    cases = build_cases(spec, folder)
    ref = run_reference((folder / "solution.py").read_text(encoding="utf-8"), spec, cases)
    sources = {
        m["tag"]: (folder / m["file"]).read_text(encoding="utf-8") for m in data.get("misconceptions", [])
    }
    variants = {
        tag: run_reference(source, spec, cases, allow_failures=True) for tag, source in sources.items()
    }
    for tag, source in sources.items():
        result = grade(source, spec, cases, ref, variants=variants)
        assert result.verdict != Verdict.PASSED, tag
        if result.verdict == Verdict.FAILED:
            mine = variants[tag].outputs
            twins = {
                other
                for other, theirs in variants.items()
                if all(
                    name in theirs.outputs and outputs_match(out, theirs.outputs[name], spec)
                    for name, out in mine.items()
                )
            }
            assert result.misconception == tag or result.misconception in twins, (tag, result.misconception)
