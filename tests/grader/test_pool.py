"""Pre-spawned single-use sandboxes: faster, with unchanged isolation."""

from __future__ import annotations

import pytest

from grader.core import Limits, Verdict, disable_pool, enable_pool
from grader.core import messages as M
from grader_testkit import SECRET, dump

pytestmark = pytest.mark.sandbox


@pytest.fixture
def pooled(strict, host):
    pool = enable_pool(1, strict.spec.limits)
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
    source = body(strict, """
import os
def attention(Q, K, V, mask=None):
    if os.path.exists("/tmp/seen-by-an-earlier-run") and Q.shape == (4, 2):
        raise AssertionError("sandbox reused")
    open("/tmp/seen-by-an-earlier-run", "w").close()
    return _correct(Q, K, V, mask)
""")
    for _ in range(3):
        pooled.wait_ready(20)
        assert strict.grade(source).verdict == Verdict.PASSED


def test_fork_bomb_in_a_pooled_sandbox_is_contained(strict, pooled):
    result = strict.grade(body(strict, """
import os
def attention(Q, K, V, mask=None):
    while True:
        try:
            os.fork()
        except OSError:
            pass
"""))
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
    result = strict.grade(body(strict, f"""
import os
def attention(Q, K, V, mask=None):
    assert not any({SECRET!r} in v for v in os.environ.values())
    assert not os.path.exists({str(strict.dir / "secret.txt")!r})
    assert sorted(p for p in os.listdir("/proc") if p.isdigit()) == ["1", "2"]
    return _correct(Q, K, V, mask)
"""))
    assert result.verdict == Verdict.PASSED, dump(result)


def test_jobs_with_other_limits_get_a_fresh_sandbox(attention, pooled):
    assert attention.spec.limits == Limits() != pooled.limits
    assert pooled.take(attention.spec.limits) is None
    assert attention.grade(attention.solution).verdict == Verdict.PASSED
    assert pooled.ready_count() == 1  # untouched


def test_hidden_phase_protocol_works_in_a_pooled_sandbox(strict, pooled):
    result = strict.grade(body(strict, """
import os
def attention(Q, K, V, mask=None):
    if Q.shape == (3, 4):   # 'buyuk', the last hidden case
        raise ValueError("x")
    return _correct(Q, K, V, mask)
"""))
    assert result.verdict == Verdict.ERROR
    assert [t.passed for t in result.tests] == [True] * 6 + [False]
    assert result.tests[-1].message.msgid == M.CASE_EXCEPTION_HIDDEN_NO_LINE
