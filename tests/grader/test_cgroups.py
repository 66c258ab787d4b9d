"""Control groups for sandbox runs: cgroup v2 on the real mount of this host, and failing closed.

These machines boot hybrid: the v1 hierarchies hold every controller and the cgroup2 mount
(``/sys/fs/cgroup/unified``) has only core files.  So membership, ``cgroup.kill``, ``cpu.stat``
and clean-up of the v2 backend are tested for real here; ``pids.max``/``memory.max`` only
where the v2 controllers exist (production Debian/Ubuntu), and skipped with the reason otherwise.
"""

from __future__ import annotations

import dataclasses
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
import os, time
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
    proc = subprocess.Popen([sys.executable, "-c", BUSY_TREE])
    try:
        run.add(proc.pid)
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
    proc = subprocess.Popen([sys.executable, "-c", BUSY_TREE])
    run.add(proc.pid)
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


def test_a_real_run_on_cgroup_v2_is_timed_by_cpu_stat_and_ends_by_cgroup_kill(attention, v2_only_core, caplog):
    strict = attention.with_limits(cpu_seconds=1, wall_seconds=20)
    loop = "import os\nos.fork()\nos.fork()\ndef attention(Q, K, V, mask=None):\n    while True:\n        pass\n"
    started = time.monotonic()
    result = strict.grade(loop)
    assert result.verdict == Verdict.TIMEOUT, result.to_dict()
    assert "CPU" in result.message.render(), "the CPU budget (cpu.stat), not the wall clock, stopped it"
    assert time.monotonic() - started < 10
    assert [n for n in v2_only_core.run_names() if n in sb._recent_runs] == [], "its cgroup was removed"
    assert strict.grade(attention.solution).verdict == Verdict.PASSED


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


def test_grading_uncapped_needs_the_explicit_switch_and_says_so_loudly(attention, no_cgroups, monkeypatch, caplog):
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
