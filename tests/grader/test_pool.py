"""Pre-spawned single-use sandboxes: faster, with unchanged isolation."""

from __future__ import annotations

import pytest
from grader_testkit import FORK_PROBE, SECRET, dump, indented

from grader.core import Limits, Verdict, disable_pool, enable_pool
from grader.core import messages as M

pytestmark = pytest.mark.sandbox


@pytest.fixture
def pooled(strict, host):
    pool = enable_pool(1)  # the ceiling: every job's limits are applied at hand-off
    assert pool.limits == Limits.ceiling() != strict.spec.limits
    assert pool.wait_ready(20)
    yield pool
    disable_pool()
    host.check()  # closing the pool leaves no process, cgroup or directory behind


def body(strict, text: str) -> str:
    return strict.solution.replace("def attention(", "def _correct(") + "\n" + text


def test_pooled_grading_passes_a_correct_submission(strict, pooled):
    for _ in range(3):
        pooled.wait_ready(20)
        result = strict.grade(strict.solution)
        assert result.verdict == Verdict.PASSED, dump(result)


def test_each_pooled_sandbox_is_used_once(strict, pooled):
    source = body(
        strict,
        """
import os
def attention(Q, K, V, mask=None):
    if os.path.exists("/tmp/seen-by-an-earlier-run") and Q.shape == (4, 2):
        raise AssertionError("sandbox reused")
    open("/tmp/seen-by-an-earlier-run", "w").close()
    return _correct(Q, K, V, mask)
""",
    )
    for _ in range(3):
        pooled.wait_ready(20)
        assert strict.grade(source).verdict == Verdict.PASSED


def test_fork_bomb_in_a_pooled_sandbox_is_contained(strict, pooled):
    result = strict.grade(
        body(
            strict,
            """
import os
def attention(Q, K, V, mask=None):
    while True:
        try:
            os.fork()
        except OSError:
            pass
""",
        )
    )
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    pooled.wait_ready(20)
    assert strict.grade(strict.solution).verdict == Verdict.PASSED


def test_pooled_limits_count_from_the_job_not_from_the_spawn(strict, pooled):
    import time

    time.sleep(strict.spec.limits.wall_seconds + 0.5)  # the warm sandbox waited longer than the limit
    result = strict.grade(strict.solution)
    assert result.verdict == Verdict.PASSED, dump(result)
    pooled.wait_ready(20)
    looping = strict.grade(body(strict, "def attention(Q, K, V, mask=None):\n    while True: pass\n"))
    assert looping.verdict == Verdict.TIMEOUT
    assert looping.message.params["case"] == "ornek"


def test_secrets_stay_unreadable_in_a_pooled_sandbox(strict, pooled):
    result = strict.grade(
        body(
            strict,
            f"""
import os
def attention(Q, K, V, mask=None):
    assert not any({SECRET!r} in v for v in os.environ.values())
    assert not os.path.exists({str(strict.dir / "secret.txt")!r})
    assert sorted(p for p in os.listdir("/proc") if p.isdigit()) == ["1", "2"]
    return _correct(Q, K, V, mask)
""",
        )
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_jobs_with_other_platform_caps_get_a_fresh_sandbox(attention, pooled):
    import dataclasses

    other = dataclasses.replace(
        attention, spec=dataclasses.replace(attention.spec, limits=Limits(output_bytes=1024))
    )
    assert pooled.take(other.spec.limits) is None
    assert other.grade(attention.solution).verdict == Verdict.PASSED
    assert pooled.ready_count() == 1  # untouched


def test_hidden_phase_protocol_works_in_a_pooled_sandbox(strict, pooled):
    result = strict.grade(
        body(
            strict,
            """
import os
def attention(Q, K, V, mask=None):
    if Q.shape == (3, 4):   # 'buyuk', the last hidden case
        raise ValueError("x")
    return _correct(Q, K, V, mask)
""",
        )
    )
    assert result.verdict == Verdict.ERROR
    assert [t.passed for t in result.tests] == [True] * 6 + [False]
    assert result.tests[-1].message.msgid == M.CASE_EXCEPTION_HIDDEN_NO_LINE


# --- a sandbox spawned with the ceiling takes the job's own limits at hand-off ----------


def _taken_from_pool(pooled) -> bool:
    return any(s is not None for s in pooled.handed_out)


@pytest.fixture(autouse=True)
def _record_hand_outs(monkeypatch):
    """Which sandboxes each pool handed out (the refill thread may refill before we look)."""
    from grader.core.pool import SandboxPool

    real = SandboxPool.take

    def take(self, limits):
        sandbox = real(self, limits)
        self.__dict__.setdefault("handed_out", []).append(sandbox)
        return sandbox

    monkeypatch.setattr(SandboxPool, "take", take)


def test_a_job_with_its_own_limits_gets_a_warm_sandbox(strict, pooled):
    result = strict.grade(strict.solution)
    assert result.verdict == Verdict.PASSED, dump(result)
    assert _taken_from_pool(pooled), "the job with the exercise's own limits used the warm sandbox"


def test_the_jobs_memory_limit_holds_in_a_pooled_sandbox(strict, pooled):
    # 400 MiB fit under the ceiling (2 GiB) but not under the job's 256 MiB.
    result = strict.grade(
        body(
            strict,
            """
import numpy as np
def attention(Q, K, V, mask=None):
    block = np.ones(400 * 1024 * 1024, dtype=np.uint8)
    return _correct(Q, K, V, mask)
""",
        )
    )
    assert _taken_from_pool(pooled)
    assert result.verdict == Verdict.MEMORY_LIMIT, dump(result)


def test_the_jobs_process_cap_holds_in_a_pooled_sandbox(strict, pooled):
    cap = strict.spec.limits.processes  # 64; the ceiling would allow 256
    result = strict.grade(
        body(
            strict,
            "import os, time\ndef attention(Q, K, V, mask=None):\n"
            + indented(FORK_PROBE.format(cap=cap))
            + "    return _correct(Q, K, V, mask)\n",
        ),
        only_visible=True,
    )
    assert _taken_from_pool(pooled)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_the_jobs_cpu_limit_holds_in_a_pooled_sandbox(strict, pooled):
    import time

    started = time.monotonic()
    result = strict.grade(body(strict, "def attention(Q, K, V, mask=None):\n    while True:\n        pass\n"))
    assert _taken_from_pool(pooled)
    assert result.verdict == Verdict.TIMEOUT and result.message.msgid in (M.TIMEOUT_CPU, M.TIMEOUT_WALL), (
        dump(result)
    )
    assert time.monotonic() - started < 8, "the job's 1 s / 2 s, not the ceiling's 30 s / 60 s"


def test_the_runner_lowers_its_rlimits_to_the_jobs(strict, pooled):
    result = strict.grade(
        body(
            strict,
            """
import resource
def attention(Q, K, V, mask=None):
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard > (256 + 128) * 1024 * 1024:
        raise AssertionError("RLIMIT_AS still %d" % hard)
    return _correct(Q, K, V, mask)
""",
        ),
        only_visible=True,
    )
    assert _taken_from_pool(pooled)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_limits_fit_under_the_ceiling_but_platform_caps_must_match():
    ceiling = Limits.ceiling()
    assert Limits(cpu_seconds=2, wall_seconds=5, memory_mb=256).fits_under(ceiling)
    assert not Limits(output_bytes=1).fits_under(ceiling)
    assert not ceiling.fits_under(Limits())
