"""The grading zygote's security gates (grader/core/zygote.py, README.md's threat model):
what only a zygote could get wrong.  Every test grades through a real zygote (bwrap,
namespaces, cgroups) and asserts that the job really ran in one of its children."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

import pytest
from grader_testkit import dump, indented

from grader.core import Verdict, zygote

pytestmark = pytest.mark.sandbox


@pytest.fixture
def zyg(host):
    previous = zygote.manager()  # GRADER_ZYGOTE=1 runs: the suite's own zygote
    manager = zygote.enable_zygote()
    assert manager.wait_ready(60)
    yield manager
    zygote.disable_zygote()
    host.check()  # nothing of the zygote or its children is left behind
    if previous is not None:  # give the rest of the suite a zygote again
        assert zygote.enable_zygote().wait_ready(60)


def served(manager, ex, source, **kwargs):
    """Grade ``source`` and check that a child of the zygote ran it (no fallback)."""
    z = manager.current
    jobs, fallbacks = z.jobs, manager.fallbacks
    result = ex.grade(source, **kwargs)
    assert manager.fallbacks == fallbacks, "the job fell back to a fresh sandbox"
    assert z.jobs == jobs + 1, "the job did not run in the zygote"
    return result


def body(ex, text: str) -> str:
    return ex.solution.replace("def attention(", "def _correct(") + "\n" + text


# What a submission inside a child sees of processes: pids in its own /proc.
SEE_PIDS = """
def _pids():
    import os
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
"""


def test_a_correct_submission_passes_in_a_child(attention, zyg):
    for _ in range(3):
        result = served(zyg, attention, attention.solution)
        assert result.verdict == Verdict.PASSED, dump(result)


def test_concurrent_children_cannot_see_each_others_files_processes_or_outputs(attention, zyg):
    # Two jobs at once, each leaving its token in every writable place and, for a second,
    # looking for any other token, any process but its own init (1) and itself (2), and
    # planting outputs for the other's case files.
    def source(token: str) -> str:
        return body(
            attention,
            SEE_PIDS
            + f"""
import glob, os, time
TOKEN = {token!r}
for d in ("/tmp", "/dev/shm", "/out"):
    with open(os.path.join(d, "token-" + TOKEN), "w") as f:
        f.write(TOKEN)
def attention(Q, K, V, mask=None):
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        for d in ("/tmp", "/dev/shm", "/out", "/job"):
            others = [p for p in glob.glob(d + "/token-*") if not p.endswith(TOKEN)]
            if others:
                raise AssertionError("BREACH saw " + repr(others))
        if _pids() != [1, 2]:
            raise AssertionError("BREACH pids " + repr(_pids()))
        time.sleep(0.02)
    return _correct(Q, K, V, mask)
""",
        )

    results, windows = {}, {}

    def run(token: str) -> None:
        start = time.monotonic()
        results[token] = attention.grade(source(token), only_visible=True)
        windows[token] = (start, time.monotonic())

    z = zyg.current
    jobs = z.jobs
    threads = [threading.Thread(target=run, args=(t,)) for t in ("aaaa", "bbbb")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert z.jobs == jobs + 2 and zyg.fallbacks == 0
    for token, result in results.items():
        assert result.verdict == Verdict.PASSED, (token, dump(result))
        assert "BREACH" not in dump(result)
    (a0, a1), (b0, b1) = windows.values()
    assert min(a1, b1) - max(a0, b0) > 0.5, "the two jobs did not run at the same time"


def test_a_child_cannot_trace_signal_or_read_the_zygote_or_a_sibling(attention, zyg):
    # A sibling runs for 1.5 s while the attacker signals every pid it can name, tries
    # ptrace, process_vm_readv, pidfd_open and /proc/<pid>/mem on all of them: the
    # sibling still passes and the zygote is still the same, alive process.
    victim = body(
        attention,
        """
import time
def attention(Q, K, V, mask=None):
    time.sleep(1.5)
    return _correct(Q, K, V, mask)
""",
    )
    attack = body(
        attention,
        """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
def attention(Q, K, V, mask=None):
    me = os.getpid()
    for pid in range(1, 4096):
        if pid == me:
            continue
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if libc.ptrace(16, pid, None, None) == 0:           # PTRACE_ATTACH
            raise AssertionError("BREACH ptrace %d" % pid)
        buf = ctypes.create_string_buffer(8)
        local = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
        remote = (ctypes.c_void_p * 2)(0x400000, 8)
        if libc.syscall(310, pid, local, 1, remote, 1, 0) > 0:   # process_vm_readv
            raise AssertionError("BREACH process_vm_readv %d" % pid)
        if pid != 1 and libc.syscall(434, pid, 0) >= 0:       # pidfd_open
            raise AssertionError("BREACH pidfd %d" % pid)
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != me:
            try:
                with open("/proc/%s/mem" % pid, "rb") as f:
                    f.read(1)
                raise AssertionError("BREACH mem " + pid)
            except OSError:
                pass
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    return _correct(Q, K, V, mask)
""",
    )
    z = zyg.current
    pids = set(z.pids)
    results = {}
    t = threading.Thread(target=lambda: results.update(victim=attention.grade(victim, only_visible=True)))
    t.start()
    time.sleep(0.3)
    results["attack"] = served(zyg, attention, attack, only_visible=True)
    t.join()
    assert results["attack"].verdict == Verdict.PASSED, dump(results["attack"])
    assert results["victim"].verdict == Verdict.PASSED, dump(results["victim"])
    assert zyg.current is z and z.alive() and z.pids == pids
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            assert "\nState:\tT" not in f.read(), "a zygote process was stopped"


def test_a_child_has_no_capability_namespace_or_mount_power(strict, zyg):
    source = body(
        strict,
        """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attention(Q, K, V, mask=None):
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        if int(status[cap], 16):
            raise AssertionError("BREACH %s %s" % (cap, status[cap]))
    if status["NoNewPrivs"].strip() != "1" or status["Seccomp"].strip() != "2":
        raise AssertionError("BREACH " + status["NoNewPrivs"] + status["Seccomp"])
    for flags in (0x20000, 0x20000000, 0x10000000, 0x40000000):   # mount, pid, user, net
        if libc.unshare(flags) == 0:
            raise AssertionError("BREACH unshare %x" % flags)
    if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None) == 0:
        raise AssertionError("BREACH mount")
    if libc.umount2(b"/job", 2) == 0 or libc.umount2(b"/proc", 2) == 0:
        raise AssertionError("BREACH umount")
    for path in ("/job/code.py", "/dev/planted-for-a-sibling", "/planted", "/.z/planted", "/proc/planted"):
        try:
            open(path, "a").close()
            raise AssertionError("BREACH wrote " + path)
        except OSError:
            pass
    return _correct(Q, K, V, mask)
""",
    )
    result = served(zyg, strict, source)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_only_the_jobs_own_pipes_are_open_in_a_child(strict, zyg):
    source = body(
        strict,
        """
import os
def attention(Q, K, V, mask=None):
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[int(fd)] = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            pass
    # (the fd os.listdir itself had open is closed by now: readlink fails on it)
    kinds = sorted((fd, t.split(":")[0] if ":" in t else t) for fd, t in fds.items())
    expected_pipes = [(3, "pipe"), (4, "pipe")]
    if sorted(fds) != [0, 1, 2, 3, 4] or kinds[3:] != expected_pipes or fds[0] != "/dev/null":
        raise AssertionError("BREACH fds " + repr(fds))
    return _correct(Q, K, V, mask)
""",
    )
    result = served(zyg, strict, source)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_leftover_threads_daemons_files_and_ipc_are_gone_for_the_next_job(strict, zyg):
    leaver = body(
        strict,
        """
import ctypes, os, threading, time
libc = ctypes.CDLL(None, use_errno=True)
for d in ("/tmp", "/dev/shm", "/out"):
    open(d + "/left-behind", "w").close()
libc.shmget(0x5eed, 4096, 0o1666)                      # IPC_CREAT | 0666
def _forever():
    while True:
        for d in ("/tmp", "/dev/shm"):
            try:
                open(d + "/left-by-thread", "w").close()
            except OSError:
                pass
        time.sleep(0.01)
threading.Thread(target=_forever, daemon=True).start()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _forever()
    os._exit(0)
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    checker = body(
        strict,
        SEE_PIDS
        + """
import glob, os, time
def attention(Q, K, V, mask=None):
    time.sleep(0.1)
    left = [p for d in ("/tmp", "/dev/shm", "/out") for p in glob.glob(d + "/left*")]
    if left:
        raise AssertionError("BREACH " + repr(left))
    if _pids() != [1, 2]:
        raise AssertionError("BREACH pids " + repr(_pids()))
    with open("/proc/sysvipc/shm") as f:
        if len(f.read().splitlines()) > 1:
            raise AssertionError("BREACH shm")
    return _correct(Q, K, V, mask)
""",
    )
    assert served(zyg, strict, leaver).verdict == Verdict.PASSED
    result = served(zyg, strict, checker)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_hidden_inputs_of_one_job_are_not_readable_by_the_next(attention, script_exercise, zyg):
    # Job N grades the attention exercise, hidden cases included; job N+1 (the script
    # exercise, other inputs) searches every file it can reach for the bytes of N's
    # hidden inputs.
    hidden = [c for c in attention.cases if c.hidden]
    assert hidden
    needles = [arr.tobytes() for c in hidden for arr in c.inputs.values() if arr.nbytes >= 16]
    assert served(zyg, attention, attention.solution).verdict == Verdict.PASSED
    search = f"""
import os
NEEDLES = {needles!r}
found = []
for top in ("/job", "/tmp", "/dev/shm", "/out", "/proc/self/cwd"):
    for root, dirs, files in os.walk(top):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if any(n in data for n in NEEDLES):
                found.append(os.path.join(root, name))
if found:
    raise AssertionError("BREACH " + repr(found))
"""
    source = search + "\n" + script_exercise.solution
    result = served(zyg, script_exercise, source)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_a_monkeypatched_numpy_and_the_rng_do_not_reach_the_next_job(strict, zyg):
    patcher = body(
        strict,
        """
import numpy, sys, json
numpy.dot = lambda *a, **k: 0
numpy.PATCHED_BY_AN_EARLIER_JOB = True
numpy.random.seed(12345)
sys.modules["json"].dumps = lambda *a, **k: "{}"
sys.modules["planted_module"] = sys
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    checker = body(
        strict,
        """
import numpy, sys, json, random
if hasattr(numpy, "PATCHED_BY_AN_EARLIER_JOB") or "planted_module" in sys.modules:
    raise AssertionError("BREACH module state leaked")
if numpy.dot(numpy.ones(2), numpy.ones(2)) != 2 or json.dumps([1]) != "[1]":
    raise AssertionError("BREACH patched function leaked")
print("RNG", numpy.random.randint(1 << 62), random.getrandbits(62))
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    assert served(zyg, strict, patcher).verdict == Verdict.PASSED
    draws = set()
    for _ in range(3):
        result = served(zyg, strict, checker, only_visible=True)
        assert result.verdict == Verdict.PASSED, dump(result)
        line = next(line for line in result.stdout.splitlines() if line.startswith("RNG"))
        draws.add(line)
    assert len(draws) == 3, f"NumPy's or Python's global RNG repeats across children: {draws}"


def test_a_dead_zygote_falls_back_to_a_fresh_sandbox_and_is_restarted(strict, zyg):
    z = zyg.current
    for pid in sorted(z.pids, reverse=True):
        os.kill(pid, signal.SIGKILL)
    z.proc.wait(5)
    fallbacks = zyg.fallbacks
    result = strict.grade(strict.solution)  # no zygote: a fresh sandbox grades it
    assert result.verdict == Verdict.PASSED, dump(result)
    assert zyg.fallbacks == fallbacks + 1
    assert zyg.wait_ready(60) and zyg.current is not z
    assert served(zyg, strict, strict.solution).verdict == Verdict.PASSED


def test_a_stuck_zygote_falls_back_and_is_replaced(strict, zyg):
    z = zyg.current
    zygote_pid = z.zygote_pid
    assert zygote_pid in z.pids
    os.kill(zygote_pid, signal.SIGSTOP)
    try:
        fallbacks = zyg.fallbacks
        result = strict.grade(strict.solution)
        assert result.verdict == Verdict.PASSED, dump(result)
        assert zyg.fallbacks == fallbacks + 1
    finally:
        with contextlib.suppress(ProcessLookupError):  # ended as it should be
            os.kill(zygote_pid, signal.SIGCONT)
    assert zyg.wait_ready(60) and zyg.current is not z
    assert z.proc.poll() is not None, "the stuck zygote was not ended"
    assert served(zyg, strict, strict.solution).verdict == Verdict.PASSED


def test_a_zygote_is_recycled_after_its_jobs(strict, host):
    manager = zygote.enable_zygote(max_jobs=2)
    try:
        assert manager.wait_ready(60)
        first = manager.current
        for _ in range(2):
            assert served(manager, strict, strict.solution).verdict == Verdict.PASSED
        assert first.due()
        # Its successor was started ahead (at 90 %): the next job needs no fresh sandbox.
        assert manager.wait_ready(60) and manager.current is not first
        assert served(manager, strict, strict.solution).verdict == Verdict.PASSED
        first.proc.wait(10)  # retired with no job running: it ends
    finally:
        zygote.disable_zygote()
    host.check()


def test_limits_hold_in_a_child(strict, zyg):
    # The job's own limits apply in a child exactly as in a fresh sandbox.
    from grader_testkit import FORK_PROBE

    cap = strict.spec.limits.processes
    bomb = body(
        strict, "import os, time\ndef attention(Q, K, V, mask=None):\n" + indented(FORK_PROBE.format(cap=cap))
    )
    result = served(zyg, strict, bomb)
    assert "BREACH" not in dump(result)
    spin = body(strict, "def attention(Q, K, V, mask=None):\n    while True:\n        pass\n")
    assert served(zyg, strict, spin).verdict == Verdict.TIMEOUT
    hog = body(strict, "def attention(Q, K, V, mask=None):\n    x = bytearray(1 << 30)\n    return x\n")
    assert served(zyg, strict, hog).verdict != Verdict.PASSED


def test_a_zygote_is_recycled_after_its_time(strict, host):
    manager = zygote.enable_zygote(max_age=1.0)
    try:
        assert manager.wait_ready(60)
        first = manager.current
        assert served(manager, strict, strict.solution).verdict == Verdict.PASSED
        time.sleep(1.1)
        assert first.due()
        assert strict.grade(strict.solution).verdict == Verdict.PASSED  # a fresh sandbox; it retires
        deadline = time.monotonic() + 60
        while (manager.current is first or manager.current is None) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert manager.current is not first and first.proc.poll() is not None
    finally:
        zygote.disable_zygote()
    host.check()


def test_each_child_is_in_its_own_cgroup_and_pid_namespace(strict, zyg):
    # Host side: the child, its init and its runner are in the run's own cgroup (none of
    # them in the zygote's), and init and runner are pids 1 and 2 of a PID namespace nested
    # in the zygote's.
    boxes = [zyg.take(strict.spec.limits) for _ in range(2)]
    try:
        members = []
        for box in boxes:
            assert isinstance(box, zygote.ZygoteSandbox)
            pids = box.cgroups.members()
            assert len(pids) == 3, pids  # child, init, runner
            nspids = sorted(
                next(line for line in open(f"/proc/{pid}/status") if line.startswith("NSpid:")).split()[1:]
                for pid in pids
            )
            inner = sorted(ns[-1] for ns in nspids if len(ns) == 3)  # host, the zygote's, the job's
            assert inner == ["1", "2"] and sum(len(ns) == 2 for ns in nspids) == 1, nspids  # + the child
            members.append(set(pids))
        assert not members[0] & members[1]
        assert not (members[0] | members[1]) & set(zyg.current.cgroup.members())
    finally:
        for box in boxes:
            box.destroy()


def test_a_pool_hands_out_pre_forked_children_of_the_zygote(strict, zyg):
    from grader.core import disable_pool, enable_pool

    pool = enable_pool(1)
    try:
        assert pool.wait_ready(20)
        assert all(isinstance(box, zygote.ZygoteSandbox) for box in pool._ready)
        jobs = zyg.current.jobs
        for _ in range(3):
            pool.wait_ready(20)
            assert strict.grade(strict.solution).verdict == Verdict.PASSED
        assert zyg.current.jobs >= jobs + 3 and zyg.fallbacks == 0
    finally:
        disable_pool()


def test_a_job_outlives_the_recycling_of_its_zygote(attention, host):
    # With one job per zygote, its successor starts and it is retired while the job still
    # runs: the job ends normally, then the old zygote.
    slow = body(
        attention,
        "import time\ndef attention(Q, K, V, mask=None):\n    time.sleep(0.2)\n    return _correct(Q, K, V, mask)\n",
    )
    manager = zygote.enable_zygote(max_jobs=1)
    real_before_job = zygote.ZygoteSandbox._before_job

    def after_the_successor(box):
        # The job starts only once its zygote has been replaced and retired (however long the
        # successor takes to start on a busy host): the retirement happens during the job.
        deadline = time.monotonic() + 60
        while manager.current is box.zygote and time.monotonic() < deadline:
            time.sleep(0.01)
        assert box.zygote.retired and box.zygote.proc.poll() is None
        real_before_job(box)

    try:
        assert manager.wait_ready(60)
        first = manager.current
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(zygote.ZygoteSandbox, "_before_job", after_the_successor)
            result = served(manager, attention, slow, only_visible=True)
        assert result.verdict == Verdict.PASSED, dump(result)
        assert first.retired and manager.current is not first
        assert manager.wait_ready(60)
        first.proc.wait(10)
    finally:
        zygote.disable_zygote()
    host.check()


def test_a_reported_pid_that_is_no_child_of_the_zygote_is_never_signalled(strict, zyg, monkeypatch):
    # As if the job's child had died and its pid been given to another process before the host
    # looked: the host must check who has that pid before it holds, signals or moves it. The job
    # goes to a fresh sandbox; the stranger is untouched (alive, in none of the runs' cgroups).
    stranger = subprocess.Popen(["sleep", "30"])
    real_recv = zygote._recv_exactly

    def recycled(sock, timeout):
        msg, fds, _pid = real_recv(sock, timeout)
        return msg, fds, stranger.pid

    monkeypatch.setattr(zygote, "_recv_exactly", recycled)
    signalled = []
    real_signal = signal.pidfd_send_signal
    monkeypatch.setattr(
        signal, "pidfd_send_signal", lambda fd, sig, *a: (signalled.append(sig), real_signal(fd, sig, *a))
    )
    try:
        fallbacks = zyg.fallbacks
        result = strict.grade(strict.solution)
        assert result.verdict == Verdict.PASSED, dump(result)
        assert zyg.fallbacks == fallbacks + 1, "the job did not fall back to a fresh sandbox"
        assert stranger.poll() is None, "the process that had the reported pid was killed"
        assert signalled == []
        with open(f"/proc/{stranger.pid}/cgroup") as f:
            assert "dikkat-grader/run-" not in f.read(), "the stranger was moved into a run's cgroup"
    finally:
        stranger.kill()
        stranger.wait()
    monkeypatch.undo()
    assert zyg.wait_ready(60)
    assert served(zyg, strict, strict.solution).verdict == Verdict.PASSED


def _cgroup_lines(pid: int) -> list[str]:
    """The process's cgroup in every hierarchy that caps or counts it (v2: its one line)."""
    with open(f"/proc/{pid}/cgroup") as f:
        lines = f.read().splitlines()
    wanted = ("pids", "memory", "cpuacct")
    v1 = [line for line in lines if any(c in line.split(":")[1].split(",") for c in wanted)]
    return v1 or [line for line in lines if line.startswith("0::")]


def test_processes_forked_before_the_childs_cgroup_move_are_placed_before_its_job(strict, zyg, monkeypatch):
    # The host moves the child into the run's cgroup while the child goes on; here the move
    # waits until the child has already forked its init and runner (the widest window), so
    # both start outside the run's cgroup. Before the job may start, every one of the three
    # is in the run's cgroup in every hierarchy, and a fork bomb at the first line of the
    # submission is held by the job's own process cap.
    from grader.core import cgroups

    seen_at_move: list[int] = []

    def slow_add(real):
        def add(self, pid):
            # A job's cgroup, as the test's own thread (not the manager's, which starts zygotes)
            # moves its first process: the child.
            if threading.current_thread() is threading.main_thread() and not getattr(
                self, "_child_moved", False
            ):
                self._child_moved = True
                deadline = time.monotonic() + 5
                while len(zygote._descendants(pid)) < 2 and time.monotonic() < deadline:
                    time.sleep(0.002)
                seen_at_move.append(len(zygote._descendants(pid)))
            real(self, pid)

        return add

    for cls in (cgroups.V1Run, cgroups.V2Run):
        monkeypatch.setattr(cls, "add", slow_add(cls.add))

    box = zyg.take(strict.spec.limits)
    try:
        assert isinstance(box, zygote.ZygoteSandbox) and seen_at_move == [2]
        processes = [box.child_pid, *zygote._descendants(box.child_pid)]
        assert len(processes) == 3
        for pid in processes:
            lines = _cgroup_lines(pid)
            assert lines and all(f"/{box.name}" in line for line in lines), (pid, lines)
    finally:
        box.destroy()

    from grader_testkit import FORK_PROBE

    cap = strict.spec.limits.processes
    first_line = "import os, time\n" + FORK_PROBE.format(cap=cap) + "\n" + strict.solution
    result = served(zyg, strict, first_line)
    assert seen_at_move[1:] == [2]
    assert result.verdict == Verdict.PASSED, dump(result)


def test_a_child_not_placed_in_its_cgroup_never_gets_its_job(strict, zyg, monkeypatch):
    # The job's "J" waits for the placement of every process of the child (_before_job): a
    # child whose init and runner were not moved gets no job, and the run is our failure.
    monkeypatch.setattr(zygote.ZygoteSandbox, "_place_descendants", lambda box: None)
    result = served(zyg, strict, strict.solution)
    assert result.verdict == Verdict.INTERNAL_ERROR, dump(result)
