"""make test-layers: switch off each protection layer of the sandbox alone and show which tests catch it.

A layer caught by no test could stop working unnoticed behind another one: then this
exits with status 1.  Runs the adversarial, layer, housekeeping and cgroup tests of
tests/grader once per layer (about a minute each on two cores).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.core.sandbox import LAYERS  # noqa: E402

TESTS = [
    "tests/grader/test_layers.py",
    "tests/grader/test_adversarial.py",
    "tests/grader/test_sandbox_housekeeping.py",
    "tests/grader/test_cgroups.py",
]


def run(layer: str | None, report: Path) -> tuple[list[str], int]:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *TESTS,
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "sandbox",
        f"--junitxml={report}",
        "-o",
        "addopts=",
    ]
    if layer:
        cmd.append(f"--layer-off={layer}")
    report.unlink(missing_ok=True)  # never read an earlier layer's report
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1) or not report.exists():
        raise SystemExit(
            f"pytest could not run with {layer or 'every layer on'} (exit {done.returncode}):\n"
            f"{done.stderr[-2000:]}"
        )
    tree = ET.parse(report)
    failed, total = [], 0
    for case in tree.iter("testcase"):
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{Path(case.get('classname', '').replace('.', '/')).name}::{case.get('name')}")
    return failed, total


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        started = time.monotonic()
        failed, total = run(None, report)
        if failed:
            print(f"With every layer on, {len(failed)} test(s) fail already: {failed}")
            return 2
        print(f"All layers on: {total} tests pass ({time.monotonic() - started:.0f} s).\n")
        uncaught = []
        for layer, what in LAYERS.items():
            started = time.monotonic()
            failed, _ = run(layer, report)
            print(
                f"{layer} ({what}) off: caught by {len(failed)} test(s) [{time.monotonic() - started:.0f} s]"
            )
            for name in failed:
                print(f"    {name}")
            if not failed:
                uncaught.append(layer)
        print()
        if uncaught:
            print(f"NOT CAUGHT by any test: {', '.join(uncaught)}")
            return 1
        print(f"Every one of the {len(LAYERS)} layers is caught by at least one test.")
        print("(The mount namespace has no switch: bwrap builds the sandbox's filesystem in it.)")
        return 0


if __name__ == "__main__":
    sys.exit(main())
