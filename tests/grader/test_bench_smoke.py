"""The benchmark runs end to end (its numbers are not asserted: not a timed test)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.sandbox


def test_bench_runs_and_reports_ratios_to_the_floor():
    out = subprocess.run(
        [sys.executable, "-m", "grader.bench", "--runs", "2", "--workers", "1", "--pool", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    for fragment in (
        "floor  python -c 'import numpy'",
        "grade  (fresh sandbox)",
        "x floor",
        "grades/s",
        "pool of 1",
    ):
        assert fragment in out.stdout
