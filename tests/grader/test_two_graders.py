"""Two graders on one host never break each other's runs, even in different PID namespaces.

The other grader lives in a PID namespace of its own (``unshare --pid --fork --mount-proc``)
and keeps starting fresh grading processes, each of which cleans up what dead graders left
behind when it starts; meanwhile this process grades the hostile set.  A clean-up that judged
ownership by PID (which means nothing across namespaces) deleted live runs here before.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest
from grader_testkit import PROJECT_ROOT, dump

from grader.core import Verdict, save_bundle

pytestmark = pytest.mark.sandbox

CHILD = textwrap.dedent("""
    import json, sys, tomllib
    sys.path.insert(0, {root!r})
    from grader.core import grade, load_bundle, parse_spec
    exdir, bundle, source = sys.argv[1], sys.argv[2], sys.argv[3]
    spec = parse_spec(tomllib.loads(open(exdir + "/exercise.toml").read()))
    cases, ref = load_bundle(bundle)
    result = grade(open(source).read(), spec, cases, ref)
    print(json.dumps({{"verdict": result.verdict.value}}))
""")

ATTACKS = {
    "cpu_loop": "def attention(Q, K, V, mask=None):\n    while True:\n        pass\n",
    "memory_bomb": "import numpy as np\ndef attention(Q, K, V, mask=None):\n    x = [np.ones(1 << 26) for _ in range(50)]\n",
    "threads_cpu": (
        "import threading\n"
        "def spin():\n    while True:\n        pass\n"
        "def attention(Q, K, V, mask=None):\n"
        "    for _ in range(2):\n        threading.Thread(target=spin, daemon=True).start()\n"
        "    spin()\n"
    ),
    "fork_bomb": "import os\ndef attention(Q, K, V, mask=None):\n    while True:\n        os.fork()\n",
}


def test_graders_in_different_pid_namespaces_do_not_break_each_others_runs(strict, tmp_path, host):
    if not shutil.which("unshare"):
        pytest.skip("util-linux unshare is missing")
    bundle = tmp_path / "bundle"
    save_bundle(bundle, strict.spec, strict.cases, strict.ref)
    child_script = tmp_path / "child.py"
    child_script.write_text(CHILD.format(root=str(PROJECT_ROOT)))
    (tmp_path / "solution.py").write_text(strict.solution)
    # The other grader: 30 fresh processes in a row, in a PID namespace of their own.
    loop = (
        f"for i in $(seq 30); do {sys.executable} {child_script} {strict.dir} {bundle} {tmp_path / 'solution.py'}"
        ' || echo \'{"verdict": "crashed"}\'; done'
    )
    # The exercise's strict limits live in the fixture's spec only; the child uses the file's.
    other = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", loop],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ours = []
    try:
        while other.poll() is None and len(ours) < 200:
            for name, source in ATTACKS.items():
                ours.append((name, strict.grade(source)))
            ours.append(("correct", strict.grade(strict.solution)))
    finally:
        out, err = other.communicate(timeout=300)
    theirs = [json.loads(line)["verdict"] for line in out.splitlines() if line.startswith("{")]
    assert theirs == ["passed"] * 30, (theirs, err[-3000:])
    internal = [(name, dump(r)) for name, r in ours if r.verdict == Verdict.INTERNAL_ERROR]
    assert internal == [], internal
    assert all(r.verdict == Verdict.PASSED for name, r in ours if name == "correct")
    assert all(r.verdict == Verdict.TIMEOUT for name, r in ours if name == "cpu_loop")
    assert all(r.verdict == Verdict.MEMORY_LIMIT for name, r in ours if name == "memory_bomb")
    host.check()


def test_a_grader_starting_in_another_pid_namespace_leaves_a_live_run_alone(strict, tmp_path, host):
    """Deterministic: our sandbox is live (warm, waiting for its job) while another grader starts."""
    from grader.core import sandbox as sb
    from grader.core.grade import execute

    if not shutil.which("unshare"):
        pytest.skip("util-linux unshare is missing")
    live = sb.Sandbox(strict.spec.limits)
    try:
        assert live.wait_warm(20)
        script = f"import sys; sys.path.insert(0, {str(PROJECT_ROOT)!r}); from grader.core import sandbox; sandbox.environment()"
        started = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert started.returncode == 0, started.stderr[-2000:]
        assert live.name not in started.stderr, "the other grader took our live run for abandoned"
        assert live.alive() and live.job_dir.exists()
    except BaseException:
        live.destroy()
        raise
    # The live run still grades normally.
    from grader.core import pool

    real_take = pool.take
    pool.take = lambda limits: live
    try:
        run = execute(strict.solution, strict.spec, strict.cases, [[0, 1]])
    finally:
        pool.take = real_take
    assert all(r.finished for r in run.cases.values()), run.outcome.log_tail
    host.check()
