"""Control groups for sandbox runs: cgroup v2 on the real mount of this host, and failing closed.

These machines boot hybrid: the v1 hierarchies hold every controller and the cgroup2 mount
(``/sys/fs/cgroup/unified``) has only core files.  So membership, ``cgroup.kill``, ``cpu.stat``
and clean-up of the v2 backend are tested for real here; ``pids.max``/``memory.max`` only
where the v2 controllers exist (production Debian/Ubuntu), and skipped with the reason otherwise.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.core import Limits, SandboxUnavailable, Verdict, cgroups, sandbox_problem
from grader.core import sandbox as sb

pytestmark = pytest.mark.sandbox

BUSY_TREE = """
import os, sys, time
sys.stdin.readline()  # forks only after the test put it into the cgroup
for _ in range(3):
    if os.fork() == 0:
        break
end = time.time() + 30
while time.time() < end:
    pass
"""


def _v2_backend() -> cgroups.V2Backend:
    mount = cgroups.cgroup2_mount()
    if mount is None or os.geteuid() != 0:
        pytest.skip("no cgroup2 mount writable by this process")
    backend = cgroups.discover_v2(base=mount)
    assert backend is not None
    return backend


@pytest.fixture
def v2_run():
    backend = _v2_backend()
    lock = sb.RunLock()
    run = backend.create(lock.name, Limits())
    yield backend, run, lock
    run.kill_all()
    run.remove()
    lock.release()


def test_v2_membership_cpu_accounting_and_cgroup_kill_on_the_real_mount(v2_run):
    backend, run, lock = v2_run
    proc = subprocess.Popen([sys.executable, "-c", BUSY_TREE], stdin=subprocess.PIPE)
    try:
        run.add(proc.pid)
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 5
        while len(run.members()) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        members = run.members()
        assert proc.pid in members and len(members) == 4, "children forked after joining are members too"
        deadline = time.monotonic() + 10
        while run.cpu_seconds() < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert run.cpu_seconds() >= 0.5, "cpu.stat counts the whole tree's CPU"
        assert run.has_kill, "kernel 5.14+ has cgroup.kill"
        assert run.kill_all(timeout=2)
        assert proc.wait(timeout=2) == -9
        assert run.members() == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run.remove()
    assert lock.name not in backend.run_names()
    assert not (backend.parent / lock.name).exists()


def test_v2_abandoned_runs_are_killed_and_removed(v2_run):
    backend, run, lock = v2_run
    proc = subprocess.Popen([sys.executable, "-c", BUSY_TREE], stdin=subprocess.PIPE)
    run.add(proc.pid)
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    os.close(lock.fd)  # the owner "dies": its lock is released
    lock.fd = -1
    try:
        removed = sb.cleanup_abandoned_runs(backend)
        assert lock.name in removed
        assert proc.wait(timeout=3) == -9
        assert lock.name not in backend.run_names()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_v2_caps_are_written_where_the_controllers_exist():
    mount = cgroups.cgroup2_mount()
    available = set((mount / "cgroup.controllers").read_text().split()) if mount else set()
    if not {"pids", "memory"} <= available:
        pytest.skip(
            f"the cgroup2 mount here offers only {sorted(available) or 'no'} controllers: pids and memory "
            "are bound to cgroup v1 on this hybrid host, so pids.max/memory.max cannot be written"
        )
    backend = cgroups.discover_v2(base=mount)
    assert {"pids", "memory"} <= backend.caps
    lock = sb.RunLock()
    limits = Limits(processes=20, memory_mb=200)
    run = backend.create(lock.name, limits)
    try:
        assert (run.path / "pids.max").read_text().strip() == str(cgroups.pids_cap(limits))
        assert (run.path / "memory.max").read_text().strip() == str(cgroups.memory_cap_bytes(limits))
        assert (run.path / "memory.swap.max").read_text().strip() == "0"
    finally:
        run.remove()
        lock.release()


@pytest.fixture
def v2_only_core(monkeypatch, caplog):
    """The sandbox as it runs with this host's real cgroup2 mount (core files, no caps)."""
    backend = _v2_backend()
    monkeypatch.setattr(cgroups, "discover", lambda: backend)
    monkeypatch.setenv(sb.ALLOW_UNCAPPED_VAR, "1")
    sb.reset_environment()
    yield backend
    sb.reset_environment()


def test_a_real_run_on_cgroup_v2_is_timed_by_cpu_stat_and_ends_by_cgroup_kill(
    attention, v2_only_core, monkeypatch
):
    from grader.core.grade import execute

    strict = attention.with_limits(cpu_seconds=1, wall_seconds=20)
    kills = []
    real_kill = cgroups.V2Run._kill
    monkeypatch.setattr(cgroups.V2Run, "_kill", lambda self: kills.append(self.path.name) or real_kill(self))
    loop = (
        "import os\nos.fork()\nos.fork()\ndef attention(Q, K, V, mask=None):\n    while True:\n        pass\n"
    )
    started = time.monotonic()
    run = execute(loop, strict.spec, strict.cases, [[0]])
    assert run.outcome.cpu_exceeded, (
        "the four processes' CPU in cpu.stat, not RLIMIT_CPU or the clock, stopped it"
    )
    assert time.monotonic() - started < 10
    assert kills, "the tree was ended with cgroup.kill"
    assert [n for n in v2_only_core.run_names() if n in sb._recent_runs] == [], "its cgroup was removed"
    assert strict.grade(attention.solution).verdict == Verdict.PASSED


DELEGATED_CHILD = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
unit = Path(sys.argv[1])
if sys.argv[2] == "in-unit":
    (unit / "cgroup.procs").write_text(str(os.getpid()))
if sys.argv[2] == "in-leaf":
    (unit / "dikkat-workers" / "cgroup.procs").write_text(str(os.getpid()))
from grader.core import cgroups
backend = cgroups.discover_v2()
backend.prepare()
own = cgroups.own_cgroup_v2(cgroups.cgroup2_mount())
print(json.dumps({{"own": str(own), "parent": str(backend.parent), "note": backend.description}}))
"""


@pytest.fixture
def unit(tmp_path):
    """A cgroup standing in for a systemd unit with Delegate=yes, on the real v2 mount."""
    mount = cgroups.cgroup2_mount()
    if mount is None or os.geteuid() != 0:
        pytest.skip("no cgroup2 mount writable by this process")
    path = mount / f"dikkat-test-unit-{os.getpid()}"
    path.mkdir()
    yield path
    for child in (path / "dikkat-workers", path / cgroups.GROUP, path):
        for pid in cgroups._read_ints(child / "cgroup.procs"):
            (mount / "cgroup.procs").write_text(str(pid))
        if child.exists():
            child.rmdir()


def _delegated_child(tmp_path, unit, how):
    script = tmp_path / "child.py"
    script.write_text(DELEGATED_CHILD.format(root=str(Path(__file__).resolve().parents[2])))
    env = {k: v for k, v in os.environ.items() if k != "DIKKAT_GRADER_CGROUP"}
    if how == "explicit":
        env["DIKKAT_GRADER_CGROUP"] = str(unit)
    where = {"own": "in-unit", "leaf": "in-leaf", "explicit": "-"}[how]
    out = subprocess.run(
        [sys.executable, str(script), str(unit), where], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_worker_alone_in_its_delegated_cgroup_moves_into_a_leaf_and_hosts_the_runs_beside_it(
    tmp_path, unit
):
    seen = _delegated_child(tmp_path, unit, "own")
    assert seen["own"] == str(unit / "dikkat-workers"), "no process left in the unit: it may pass controllers"
    assert seen["parent"] == str(unit / cgroups.GROUP)
    assert (unit / cgroups.GROUP).is_dir()


def test_workers_started_in_the_leaf_use_the_unit_not_a_nested_leaf(tmp_path, unit):
    (unit / "dikkat-workers").mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # serve moved itself (here: a sleeper) into the leaf before starting the worker
        (unit / "dikkat-workers" / "cgroup.procs").write_text(str(sleeper.pid))
        seen = _delegated_child(tmp_path, unit, "leaf")  # a worker serve started: born in the leaf
    finally:
        sleeper.kill()
        sleeper.wait()
    assert seen["parent"] == str(unit / cgroups.GROUP)
    assert seen["own"] == str(unit / "dikkat-workers")


def test_a_shared_cgroup_is_not_taken_over(tmp_path, unit):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (unit / "cgroup.procs").write_text(str(sleeper.pid))  # e.g. a web server in the same unit
        backend = cgroups.plan_v2(unit)
        assert "other process" in backend.description and not {"pids", "memory"} & backend.caps
        assert str(sleeper.pid) in (unit / "cgroup.procs").read_text(), "nothing was moved"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_discovery_changes_nothing_until_a_run_needs_it(unit):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (unit / "cgroup.procs").write_text(str(sleeper.pid))
        os.environ["DIKKAT_GRADER_CGROUP"] = str(unit)
        try:
            cgroups.discover_v2()
        finally:
            del os.environ["DIKKAT_GRADER_CGROUP"]
        assert not (unit / "dikkat-workers").exists() and not (unit / cgroups.GROUP).exists()
    finally:
        sleeper.kill()
        sleeper.wait()


# --- failing closed ------------------------------------------------------------------


@pytest.fixture
def no_cgroups(monkeypatch):
    monkeypatch.setattr(cgroups, "discover", lambda: None)
    monkeypatch.delenv(sb.ALLOW_UNCAPPED_VAR, raising=False)
    sb.reset_environment()
    yield
    sb.reset_environment()


def test_without_process_and_memory_caps_nothing_is_graded(attention, no_cgroups):
    problem = sandbox_problem()
    assert problem and "Delegate=yes" in problem and sb.ALLOW_UNCAPPED_VAR in problem
    with pytest.raises(SandboxUnavailable):
        attention.grade(attention.solution)


def test_the_system_check_reports_missing_caps_as_an_error(no_cgroups):
    from grader.checks import sandbox_check

    errors = sandbox_check(None)
    assert [e.id for e in errors] == ["grader.E002"]
    assert "docs/deploy.md" in errors[0].hint


def test_grading_uncapped_needs_the_explicit_switch_and_says_so_loudly(
    attention, no_cgroups, monkeypatch, caplog
):
    monkeypatch.setenv(sb.ALLOW_UNCAPPED_VAR, "1")
    sb.reset_environment()
    with caplog.at_level(logging.CRITICAL, logger="grader.sandbox"):
        assert sandbox_problem() is None
    assert "GRADING WITHOUT CAPS" in caplog.text
    assert any(sb.ALLOW_UNCAPPED_VAR in w for w in sb.sandbox_warnings())
    assert attention.grade(attention.solution).verdict == Verdict.PASSED


def test_a_worker_refuses_to_start_without_caps(no_cgroups):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="cannot grade safely"):
        call_command("grading_worker", "--max-tasks", "1")


def test_refuses_to_run_when_the_database_lies_inside_a_mounted_directory(monkeypatch):
    prefix = os.path.realpath(sys.base_prefix)
    before = list(sb._protected)
    sb.protect_paths([*before, os.path.join(prefix, "var", "db.sqlite3")])
    try:
        problem = sandbox_problem()
        assert problem and "db.sqlite3" in problem and "move the database" in problem
        with pytest.raises(SandboxUnavailable):
            sb.Sandbox(Limits())
    finally:
        sb.protect_paths(before)
    assert sandbox_problem() is None
