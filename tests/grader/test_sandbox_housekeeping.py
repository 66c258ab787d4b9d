"""Diagnostics and cleanup of what a crashed grader process might leave behind."""

from __future__ import annotations

import dataclasses

import pytest

from grader.core import Verdict, sandbox_problem, sandbox_warnings
from grader.core import sandbox as sb

pytestmark = pytest.mark.sandbox


def test_sandbox_is_available_and_fully_isolated_here():
    assert sandbox_problem() is None
    # On this project's machines every cgroup controller and the tmpfs mount work.
    assert sandbox_warnings() == []


def test_leftovers_of_dead_processes_are_removed_but_live_ones_kept(tmp_path):
    env = sb.environment()
    parent = env.cgroup_parents.get("pids")
    if parent is None:
        pytest.skip("no pids cgroup")
    dead = parent / "run-999999999-deadbeef"
    alive = parent / f"run-{__import__('os').getpid()}-live"
    dead.mkdir()
    alive.mkdir()
    try:
        sb._cleanup_stale_cgroups(parent)
        assert not dead.exists()
        assert alive.exists()
    finally:
        for p in (dead, alive):
            if p.exists():
                p.rmdir()
    job = sb.work_root() / "job-999999999-x"
    (job / "in").mkdir(parents=True)
    sb._cleanup_stale_jobs(sb.work_root())
    assert not job.exists()


def test_run_with_no_visible_cases_is_not_reported_as_passed(attention):
    hidden_only = dataclasses.replace(attention, cases=[dataclasses.replace(c, hidden=True) for c in attention.cases])
    result = hidden_only.grade(attention.solution, only_visible=True)
    assert result.verdict == Verdict.FAILED
    assert result.tests == []
    broken = hidden_only.grade("def attention(:\n", only_visible=True)
    assert broken.verdict == Verdict.ERROR  # a syntax error still shows on the Run button


def test_smallest_allowed_memory_limit_still_runs_numpy(attention):
    from grader.core import Limits

    low, _ = Limits.AUTHOR_RANGES["memory_mb"]
    small = attention.with_limits(memory_mb=low)
    assert small.grade(attention.solution).verdict == Verdict.PASSED
    bomb = "import numpy as np\ndef attention(Q, K, V, mask=None):\n    return np.ones((4096, 4096, 2))\n"
    assert small.grade(bomb).verdict == Verdict.MEMORY_LIMIT


def test_a_sandbox_that_fails_to_start_is_an_internal_error_not_the_students(attention, monkeypatch, caplog):
    real = sb._bwrap_args

    def broken(*args, **kwargs):
        return real(*args, **kwargs)[:-1] + ["--ro-bind", "/nonexistent-dikkat", "/x", "--"]

    monkeypatch.setattr(sb, "_bwrap_args", broken)
    result = attention.grade(attention.solution)
    assert result.verdict == Verdict.INTERNAL_ERROR
    assert not result.counts_as_attempt
    assert "bubblewrap exited during setup" in caplog.text or "before its runner was ready" in caplog.text
    assert "nonexistent-dikkat" in caplog.text  # bwrap's own complaint reaches the server log


def test_sandbox_processes_are_an_unprivileged_host_user_with_limits(attention):
    env = sb.environment()
    if env.host_uid is None:
        pytest.skip("this host runs the sandbox as the caller's uid: " + " ".join(env.warnings))
    sandbox = sb.Sandbox(attention.spec.limits)
    try:
        assert sandbox.wait_warm(20)
        members = sandbox.cgroups.members()
        assert members, "the sandbox is in its cgroups"
        for pid in members:
            status = open(f"/proc/{pid}/status").read()
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            assert set(uid_line.split()[1:]) == {str(env.host_uid)}, uid_line
            assert "CapEff:\t0000000000000000" in status
        limits = open(f"/proc/{members[-1]}/limits").read()
        assert "Max file size             16777216" in limits
        assert "Max open files            256" in limits
    finally:
        sandbox.destroy()
    assert sandbox.cgroups is None and not sandbox.job_dir.exists()


def test_the_interpreter_alias_mount_is_made_once():
    env = sb.environment()
    aliased = [src for src, _ in env.binds if src.startswith(str(sb.ALIAS_ROOT))]
    if not aliased:
        pytest.skip("nothing needed an alias on this host")
    original = next(dst for src, dst in env.binds if src == aliased[0])
    for _ in range(3):  # as if three more grader processes started
        assert sb._source_for_nobody(original, sb.Path(original).name) == aliased[0]
    with open("/proc/self/mountinfo") as f:
        assert sum(1 for line in f if line.split()[4] == aliased[0]) == 1
