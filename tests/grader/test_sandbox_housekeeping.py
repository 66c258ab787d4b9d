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


def test_leftovers_of_dead_owners_are_removed_but_live_runs_kept_whatever_their_pid():
    """Ownership is a lock the owner holds, not a PID (which means nothing in another PID namespace)."""
    env = sb.environment()
    backend = env.cgroups
    live, dead = sb.RunLock(), sb.RunLock()
    made = []
    try:
        for lock in (live, dead):
            job = sb.work_root() / lock.name
            (job / "in").mkdir(parents=True)
            made.append(job)
            if backend is not None:
                backend.create(lock.name, sb.Limits())
        # A dead owner: its lock file stays, nobody holds it any more.
        import os

        os.close(dead.fd)
        dead.fd = -1
        removed = sb.cleanup_abandoned_runs(backend)
        assert dead.name in removed and live.name not in removed
        assert not (sb.work_root() / dead.name).exists()
        assert (sb.work_root() / live.name).exists()
        if backend is not None:
            assert dead.name not in backend.run_names()
            assert live.name in backend.run_names()
        assert not dead.path.exists()
    finally:
        if backend is not None and live.name in backend.run_names():
            backend.remove_stale(live.name)
        for job in made:
            sb.shutil.rmtree(job, ignore_errors=True)
        live.release()


def test_directories_without_a_lock_are_not_judged():
    """A run of another grader (another lock directory, or still being made) is never deleted."""
    job = sb.work_root() / "run-notours0000"
    (job / "in").mkdir(parents=True)
    try:
        assert "run-notours0000" not in sb.cleanup_abandoned_runs(sb.environment().cgroups)
        assert job.exists()
    finally:
        sb.shutil.rmtree(job)


def test_run_with_no_visible_cases_is_not_reported_as_passed(attention):
    hidden_only = dataclasses.replace(
        attention, cases=[dataclasses.replace(c, hidden=True) for c in attention.cases]
    )
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


@pytest.mark.fresh_sandbox  # with GRADER_ZYGOTE=1: the running zygote would take the job
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
    if not env.drop_uid:
        pytest.skip("this host runs the sandbox as the caller's uid: " + " ".join(env.warnings))
    sandbox = sb.Sandbox(attention.spec.limits)
    try:
        assert sandbox.wait_warm(20)
        members = sandbox.cgroups.members()
        assert members, "the sandbox is in its cgroups"
        for pid in members:
            status = open(f"/proc/{pid}/status").read()
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            assert set(uid_line.split()[1:]) == {str(sandbox.uid)}, uid_line
            assert "CapEff:\t0000000000000000" in status
        limits = open(f"/proc/{members[-1]}/limits").read()
        assert "Max file size             16777216" in limits
        assert "Max open files            256" in limits
    finally:
        sandbox.destroy()
    assert sandbox.cgroups is None and not sandbox.job_dir.exists()


def test_the_interpreter_alias_mount_is_made_once():
    env = sb.environment()
    aliased = [src for src, _ in env.binds if src.startswith(str(sb.STATE_ROOT)) and not src.endswith(".py")]
    if not aliased:
        pytest.skip("nothing needed an alias on this host")
    original = next(dst for src, dst in env.binds if src == aliased[0])
    for _ in range(3):  # as if three more grader processes started
        assert sb._source_for_nobody(original, sb.Path(original).name) == aliased[0]
    with open("/proc/self/mountinfo") as f:
        assert sum(1 for line in f if line.split()[4] == aliased[0]) == 1


def test_an_alias_shows_a_redeployed_directory_at_the_next_start(tmp_path):
    """A release directory replaced by a new one (a redeploy) is mounted again, not served stale."""
    import os

    if os.geteuid() != 0:
        pytest.skip("aliases are made only by a root grader")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)  # not reachable by the sandbox's uid: needs an alias
    release = private / "release"
    release.mkdir(mode=0o755)
    (release / "version.txt").write_text("old")
    alias = sb._source_for_nobody(str(release), "test-release")
    try:
        assert sb.Path(alias, "version.txt").read_text() == "old"
        release.rename(private / "release-old")
        fresh = private / "release"
        fresh.mkdir(mode=0o755)
        (fresh / "version.txt").write_text("new")
        assert sb._source_for_nobody(str(fresh), "test-release") == alias
        assert sb.Path(alias, "version.txt").read_text() == "new"
    finally:
        sb._umount(alias)
        os.rmdir(alias)


def test_a_changed_runner_is_used_at_once(tmp_path, monkeypatch):
    import os

    if os.geteuid() != 0:
        pytest.skip("the runner is copied only by a root grader")
    current = sb._runner_for_nobody()
    assert sb.Path(current).read_bytes() == sb.RUNNER_PATH.read_bytes()
    changed = tmp_path / "runner.py"
    changed.write_bytes(sb.RUNNER_PATH.read_bytes() + b"\n# security fix\n")
    monkeypatch.setattr(sb, "RUNNER_PATH", changed)
    fixed = sb._runner_for_nobody()
    try:
        assert fixed != current
        assert sb.Path(fixed).read_bytes().endswith(b"# security fix\n")
        assert sb.Path(fixed).stat().st_mode & 0o777 == 0o644
    finally:
        os.unlink(fixed)


def test_a_lock_being_created_is_not_taken_by_another_graders_clean_up():
    """Between creating its lock file and locking it, a grader's file is not yet held: another
    grader's clean-up spares it while it is young (it took it once in a deadline rush, and the
    student got "grader failed"), and removes it when it is old (its creator died)."""
    import os
    import time

    locks = sb._locks_dir()
    young = locks / ".new-run-0123456789abcdefabcd"
    old = locks / ".new-run-abcdefabcdef01234567"
    for path in (young, old):
        path.write_bytes(b"")
    stale = time.time() - sb.NEW_LOCK_GRACE_SECONDS - 5
    os.utime(old, (stale, stale))
    try:
        sb.cleanup_abandoned_runs(None)
        assert young.exists()
        assert not old.exists()
    finally:
        for path in (young, old):
            path.unlink(missing_ok=True)
