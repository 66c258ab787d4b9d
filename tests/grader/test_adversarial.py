"""Hostile submissions: each must get the right verdict, leave the host untouched,
and a correct submission graded right after must still pass."""

from __future__ import annotations

import os

import pytest
from grader_testkit import MARKERS, PROJECT_ROOT, SECRET, assert_next_run_passes, dump

from grader.core import Verdict
from grader.core import messages as M
from grader.core.sandbox import environment

pytestmark = pytest.mark.sandbox


def correct_as(name: str, solution: str) -> str:
    """The reference solution renamed, so that an attack can delegate to it."""
    return solution.replace("def attention(", f"def {name}(")


def attack(ex, body: str) -> str:
    """A submission: the correct helper, then ``body`` (which defines attention)."""
    return correct_as("_correct", ex.solution) + "\n" + body


def run_attack(ex, host, body, **kwargs):
    result = ex.grade(attack(ex, body), **kwargs)
    host.check()
    assert_next_run_passes(ex)
    host.check()
    return result


# --- processes ---------------------------------------------------------------


def test_fork_bomb_is_contained_and_next_run_passes(strict, host):
    result = run_attack(
        strict,
        host,
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
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert result.message.params["case"] == "ornek"


def test_thread_bomb_is_contained_and_next_run_passes(strict, host):
    result = run_attack(
        strict,
        host,
        """
import threading, time
def attention(Q, K, V, mask=None):
    while True:
        threading.Thread(target=time.sleep, args=(100,)).start()
""",
    )
    assert result.verdict in (Verdict.ERROR, Verdict.MEMORY_LIMIT), dump(result)
    assert not result.tests[0].passed


def test_python_memory_bomb_gives_memory_limit(strict, host):
    result = run_attack(
        strict,
        host,
        """
def attention(Q, K, V, mask=None):
    hoard = []
    while True:
        hoard.append(bytearray(10_000_000))
""",
    )
    assert result.verdict == Verdict.MEMORY_LIMIT, dump(result)
    assert result.message.msgid == M.MEMORY_LIMIT
    assert result.message.params["mb"] == 256


def test_numpy_memory_bomb_gives_memory_limit(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
def attention(Q, K, V, mask=None):
    return np.ones((1 << 31,)) @ np.ones((1 << 31,))
""",
    )
    assert result.verdict == Verdict.MEMORY_LIMIT, dump(result)


def test_memory_spread_over_forked_children_is_stopped_by_the_cgroup(strict, host):
    if environment().cgroups is None or "memory" not in environment().cgroups.caps:
        pytest.skip("no memory cgroup on this host")
    result = run_attack(
        strict,
        host,
        """
import os, numpy as np
def attention(Q, K, V, mask=None):
    for _ in range(6):
        if os.fork() == 0:
            block = np.ones(200 * 1024 * 1024 // 8)  # touched pages, below RLIMIT_AS
            import time; time.sleep(30)
    block = np.ones(200 * 1024 * 1024 // 8)
    os.wait()
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict in (Verdict.MEMORY_LIMIT, Verdict.TIMEOUT), dump(result)


def test_infinite_loop_times_out_and_names_the_case(strict, host):
    result = run_attack(
        strict,
        host,
        """
def attention(Q, K, V, mask=None):
    while True:
        pass
""",
    )
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert result.message.msgid in (M.TIMEOUT_CPU, M.TIMEOUT_WALL)
    assert result.message.params["case"] == "ornek"
    assert result.tests[0].message.msgid == M.CASE_TIMEOUT
    assert all(t.message.msgid == M.CASE_NOT_RUN for t in result.tests[1:])


def test_sleeping_forever_is_killed_at_the_wall_limit(strict, host):
    result = run_attack(
        strict,
        host,
        """
import time
def attention(Q, K, V, mask=None):
    time.sleep(3600)
""",
    )
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert result.message.msgid == M.TIMEOUT_WALL
    assert result.duration_ms < 10_000  # killed at the 2 s limit (plus start-up on a busy host)


def test_code_ignoring_signals_is_still_killed(strict, host):
    result = run_attack(
        strict,
        host,
        """
import signal, time
for s in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT, signal.SIGHUP, signal.SIGXFSZ):
    signal.signal(s, signal.SIG_IGN)
def attention(Q, K, V, mask=None):
    while True:
        time.sleep(0.001)
""",
    )
    assert result.verdict == Verdict.TIMEOUT, dump(result)


def test_hanging_hidden_case_is_named_and_earlier_cases_keep_results(strict, host):
    result = run_attack(
        strict,
        host,
        """
def attention(Q, K, V, mask=None):
    if mask is not None and Q.shape == (4, 3):   # only the hidden 'maskeli' case
        while True:
            pass
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert result.message.params["case"] == "maskeli"
    by_name = {t.name: t for t in result.tests}
    for name in ("ornek", "maskeli-ornek", "rastgele", "kare", "toplu"):
        assert by_name[name].passed, name
    assert by_name["maskeli"].message.msgid == M.CASE_TIMEOUT
    assert by_name["buyuk"].message.msgid == M.CASE_NOT_RUN
    assert 0 < result.score < 1


def test_killing_parent_pid_1_and_the_host_fails_harmlessly(strict, host):
    # Inside its PID namespace the sandbox's init ignores signals from its own
    # namespace and host processes do not exist, so every kill is a no-op.
    result = run_attack(
        strict,
        host,
        f"""
import os, signal
def attention(Q, K, V, mask=None):
    for pid in (os.getppid(), 1, -1, {os.getpid()}, {os.getppid()}):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_daemonized_orphan_does_not_survive(strict, host):
    result = run_attack(
        strict,
        host,
        """
import os, time
def attention(Q, K, V, mask=None):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(0.05)
        os._exit(0)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_lingering_threads_do_not_hold_the_run(strict, host):
    result = run_attack(
        strict,
        host,
        """
import threading, time
def attention(Q, K, V, mask=None):
    threading.Thread(target=time.sleep, args=(3600,)).start()
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    assert result.duration_ms < 10_000  # not held until the thread's hour is over


def test_ctypes_segfault_is_an_error_naming_the_signal(strict, host):
    result = run_attack(
        strict,
        host,
        """
import ctypes
def attention(Q, K, V, mask=None):
    ctypes.string_at(0)
""",
    )
    assert result.verdict == Verdict.ERROR, dump(result)
    assert result.message.msgid == M.KILLED_BY_SIGNAL
    assert result.message.params == {"signal": "SIGSEGV", "case": "ornek"}


BODY_RECURSION = """
def attention(Q, K, V, mask=None):
    return attention(Q, K, V, mask)
"""


def test_unbounded_recursion_is_an_error_with_the_line(strict, host):
    result = run_attack(strict, host, BODY_RECURSION)
    assert result.verdict == Verdict.ERROR, dump(result)
    first = result.tests[0].message
    assert first.params["exc_type"] == "RecursionError"
    lines = attack(strict, BODY_RECURSION).splitlines()
    assert first.params["line"] == lines.index("    return attention(Q, K, V, mask)") + 1


# --- output and disk ---------------------------------------------------------


def test_output_flood_gives_output_limit(strict, host):
    result = run_attack(
        strict,
        host,
        """
import sys
def attention(Q, K, V, mask=None):
    while True:
        sys.stdout.write("x" * 65536)
""",
    )
    assert result.verdict == Verdict.OUTPUT_LIMIT, dump(result)
    assert len(result.stdout) <= strict.spec.limits.output_bytes


def test_filling_tmp_shm_and_cwd_is_contained(strict, host):
    result = run_attack(
        strict,
        host,
        """
import os
def fill(directory):
    block = b"x" * (1 << 20)
    try:
        for i in range(1000):
            with open(os.path.join(directory, f"fill{i}"), "wb") as f:
                f.write(block)
    except OSError:
        return
    raise AssertionError(f"{directory} took 1000 MiB")
def attention(Q, K, V, mask=None):
    for d in ("/tmp", "/dev/shm", os.getcwd()):
        fill(d)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_writing_into_the_project_or_site_packages_fails(strict, host):
    targets = [str(MARKERS[0]), str(PROJECT_ROOT / "grader" / "core" / "grade.py")]
    result = run_attack(
        strict,
        host,
        f"""
import os, numpy
def attention(Q, K, V, mask=None):
    targets = {targets!r} + [numpy.__file__, os.path.join(os.path.dirname(numpy.__file__), "evil.py"),
                              "/grader/runner.py", "/job/code.py", "/usr/lib/evil"]
    for path in targets:
        try:
            with open(path, "a") as f:
                f.write("pwned")
        except OSError:
            continue
        raise AssertionError("wrote " + path)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_planted_numpy_and_sitecustomize_do_not_reach_the_next_run(strict, host):
    plant = """
import os
def attention(Q, K, V, mask=None):
    for d in ("/tmp", os.getcwd(), os.path.expanduser("~")):
        for name in ("numpy.py", "sitecustomize.py", "usercustomize.py"):
            with open(os.path.join(d, name), "w") as f:
                f.write("raise SystemExit('hijacked')")
    return _correct(Q, K, V, mask)
"""
    assert run_attack(strict, host, plant).verdict == Verdict.PASSED
    check = """
import os
def attention(Q, K, V, mask=None):
    for d in ("/tmp", os.getcwd()):
        for name in ("numpy.py", "sitecustomize.py"):
            assert not os.path.exists(os.path.join(d, name)), "leftover from the last run"
    return _correct(Q, K, V, mask)
"""
    result = run_attack(strict, host, check)
    assert result.verdict == Verdict.PASSED, dump(result)


def test_writing_host_sysctls_through_proc_is_refused(strict, host):
    result = run_attack(
        strict,
        host,
        """
def attention(Q, K, V, mask=None):
    for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger"):
        try:
            with open(path, "w") as f:
                f.write("|/bin/false")
        except OSError:
            continue
        raise AssertionError("wrote " + path)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


# --- isolation ---------------------------------------------------------------


def test_network_connect_fails_and_listener_receives_nothing(strict, host):
    result = run_attack(
        strict,
        host,
        f"""
import socket
def attention(Q, K, V, mask=None):
    for family, addr in ((socket.AF_INET, ("127.0.0.1", {host.port})), (socket.AF_UNIX, "/tmp/x")):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
            s.settimeout(0.5)
            s.connect(addr)
        except OSError:
            continue
        raise AssertionError("connected")
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_secrets_environment_database_and_solution_are_not_readable(strict, host):
    paths = [
        str(strict.dir / "secret.txt"),
        str(strict.dir / "solution.py"),
        str(strict.dir),
        str(PROJECT_ROOT / "config" / "settings.py"),
        str(PROJECT_ROOT / "db.sqlite3"),
        str(PROJECT_ROOT / "var"),
        str(PROJECT_ROOT / ".secret_key"),
        str(PROJECT_ROOT),
        str(PROJECT_ROOT / "tests" / "grader" / "fixtures" / "attention" / "solution.py"),
        "/root/.bash_history",
        "/root/.ssh",
        "/etc/passwd",
        "/etc/shadow",
        "/home",
    ]
    result = run_attack(
        strict,
        host,
        f"""
import os, glob
def attention(Q, K, V, mask=None):
    found = []
    if any({SECRET!r} in v for v in os.environ.values()):
        found.append("environ")
    for path in {paths!r}:
        try:
            if os.path.isdir(path):
                found.append(path + ":" + ",".join(os.listdir(path)))
            else:
                with open(path, "rb") as f:
                    found.append(path + ":" + f.read(200).decode(errors="replace"))
        except OSError:
            pass
    for env in glob.glob("/proc/*/environ"):
        try:
            if {SECRET!r}.encode() in open(env, "rb").read():
                found.append(env)
        except OSError:
            pass
    if found:
        print(found)
        raise RuntimeError(repr(found))
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    assert SECRET not in dump(result)


def test_other_processes_are_invisible_in_proc(strict, host):
    result = run_attack(
        strict,
        host,
        """
import os
def attention(Q, K, V, mask=None):
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    assert pids == [1, 2], pids
    for pid in pids:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        assert b"pytest" not in cmd, cmd
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


def test_raising_rlimits_and_dangerous_syscalls_are_refused(strict, host):
    result = run_attack(
        strict,
        host,
        """
import ctypes, os, resource
libc = ctypes.CDLL(None, use_errno=True)
def attention(Q, K, V, mask=None):
    for limit in (resource.RLIMIT_CPU, resource.RLIMIT_AS, resource.RLIMIT_FSIZE):
        soft, hard = resource.getrlimit(limit)
        try:
            resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        except (ValueError, OSError):
            pass
        else:
            raise AssertionError(f"raised rlimit {limit}")
    assert libc.ptrace(16, 1, 0, 0) == -1          # PTRACE_ATTACH to pid 1
    assert libc.unshare(0x10000000) == -1          # CLONE_NEWUSER
    assert libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == -1
    assert libc.syscall(321, 0, 0, 0) == -1        # bpf
    assert libc.syscall(425, 1, 0) == -1           # io_uring_setup
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


# --- lying about results -----------------------------------------------------


def test_monkeypatching_numpy_comparisons_does_not_pass_wrong_answers(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np, numpy.testing
for name in ("allclose", "isclose", "array_equal", "array_equiv", "equal", "isfinite", "all"):
    setattr(np, name, lambda *a, **k: True)
np.testing.assert_allclose = lambda *a, **k: None
def attention(Q, K, V, mask=None):
    return np.zeros((Q.shape[0], V.shape[-1]))
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert result.score == 0


def test_ndarray_subclass_with_lying_eq_fails(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
class Liar(np.ndarray):
    def __eq__(self, other): return True
    def __array__(self, *a, **k): return self
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask).view(Liar)
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert result.tests[0].message.msgid == M.CASE_SUBCLASS


def test_object_dtype_result_fails_with_a_message(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
def attention(Q, K, V, mask=None):
    return np.array(_correct(Q, K, V, mask), dtype=object)
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert result.tests[0].message.msgid == M.CASE_OBJECT_DTYPE


def test_pickle_payload_in_the_output_directory_is_never_unpickled(strict, host):
    marker = MARKERS[1]
    result = run_attack(
        strict,
        host,
        f"""
import os, numpy as np
class Evil:
    def __reduce__(self):
        return (os.system, ("touch {marker}",))
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    for i in range(10):  # ahead of the runner (it replaces them) and behind it (results it wrote)
        if i != len(calls) - 1:
            try:
                np.save(f"/out/case-{{i:03d}}.return.npy", np.array([Evil()], dtype=object), allow_pickle=True)
            except OSError:
                pass
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict in (Verdict.FAILED, Verdict.ERROR), dump(result)
    assert not marker.exists()
    # Every result overwritten after the runner wrote it fails (the visible ones before their snapshot).
    assert [t.passed for t in result.tests] == [False, True, False, False, False, False, True], dump(result)


def test_symlinks_planted_in_the_output_directory_are_not_followed(strict, host):
    """Planted ahead, they are replaced by the runner's own files; swapped in after the runner
    wrote a result, the host refuses to follow them."""
    result = run_attack(
        strict,
        host,
        """
import os
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    for i in range(len(calls), 10):            # ahead: the runner unlinks and creates its own
        try:
            os.symlink("/out/case-000.return.npy", f"/out/case-{i:03d}.return.npy")
        except OSError:
            pass
    if len(calls) >= 4:                         # behind: replace the previous case's real result
        previous = f"/out/case-{len(calls) - 2:03d}.return.npy"
        os.unlink(previous)
        os.symlink("/out/case-000.return.npy", previous)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert [t.passed for t in result.tests] == [True, True, False, False, False, False, True], dump(result)
    assert "symlink" in result.tests[2].message.render()


def test_nan_and_inf_results_fail_with_a_message(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
def attention(Q, K, V, mask=None):
    out = _correct(Q, K, V, mask)
    out.flat[0] = np.nan if Q.shape[0] == 4 else np.inf
    return out
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert result.tests[0].message.msgid == M.CASE_NONFINITE
    assert result.tests[0].message.params["index"] == "[0, 0]"
    assert result.tests[2].message.msgid == M.CASE_NONFINITE_HIDDEN


def test_fake_verdicts_on_stdout_fds_and_status_files_are_ignored(strict, host):
    result = run_attack(
        strict,
        host,
        """
import json, os, numpy as np
fake = json.dumps({"verdict": "passed", "score": 1.0, "status": "ok"}).encode()
def attention(Q, K, V, mask=None):
    print(fake.decode())
    for fd in range(0, 64):
        try:
            os.write(fd, fake + b"\\nP0\\nP1\\n")
        except OSError:
            pass
    for i in range(10):
        for name in (f"case-{i:03d}.status", "verdict.json", "result.json", "module.status"):
            try:
                with open("/out/" + name, "w") as f:
                    f.write(fake.decode())
            except OSError:
                pass
    return np.zeros((Q.shape[0], V.shape[-1]))
""",
    )
    assert result.verdict != Verdict.PASSED, dump(result)
    assert result.score == 0


def test_os_exit_zero_is_an_error_not_a_pass(strict, host):
    result = run_attack(
        strict,
        host,
        """
import os
def attention(Q, K, V, mask=None):
    os._exit(0)
""",
    )
    assert result.verdict == Verdict.ERROR, dump(result)
    assert result.message.msgid == M.EXITED_EARLY
    assert result.message.params["case"] == "ornek"


def test_sys_exit_is_an_error(strict, host):
    result = run_attack(
        strict,
        host,
        """
import sys
def attention(Q, K, V, mask=None):
    sys.exit(0)
""",
    )
    assert result.verdict == Verdict.ERROR, dump(result)
    assert result.tests[0].message.msgid == M.CASE_SYSTEM_EXIT


def test_custom_base_exception_is_an_error(strict, host):
    result = run_attack(
        strict,
        host,
        """
class Escape(BaseException):
    pass
def attention(Q, K, V, mask=None):
    raise Escape("out")
""",
    )
    assert result.verdict == Verdict.ERROR, dump(result)
    assert result.tests[0].message.params["exc_type"] == "Escape"
    hidden = [t for t in result.tests if t.hidden]
    assert all(t.message.params["exc_type"] == "Exception" for t in hidden)


def test_huge_result_array_fails_without_being_loaded(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
def attention(Q, K, V, mask=None):
    return np.zeros(40_000_000 // 8 * 1)
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert result.tests[0].message.msgid == M.CASE_TOO_LARGE


def test_wrong_shape_names_the_axes(strict, host):
    result = run_attack(
        strict,
        host,
        """
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask).T
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    msg = result.tests[0].message
    assert msg.msgid == M.CASE_SHAPE_NAMED
    assert msg.render() == "attention(...) has the wrong shape: expected (n_q, d_v) = (4, 3), got (3, 4)."
    hidden = next(t for t in result.tests if t.name == "rastgele").message
    assert hidden.msgid == M.CASE_SHAPE_HIDDEN_AXIS
    assert not any(ch.isdigit() for ch in hidden.render())


def test_complex_and_bool_results_fail_with_messages(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
def attention(Q, K, V, mask=None):
    out = _correct(Q, K, V, mask)
    return out.astype(complex) if Q.shape[0] == 4 else out > 0
""",
    )
    assert result.verdict == Verdict.FAILED, dump(result)
    assert result.tests[0].message.msgid == M.CASE_COMPLEX
    assert result.tests[1].message.msgid == M.CASE_BOOL


# --- hidden cases stay hidden ------------------------------------------------


def test_hidden_inputs_cannot_be_exfiltrated(strict, host):
    """Exception text, custom exception names, prints and late writes to the visible
    case's files must not carry hidden inputs into the feedback."""
    result = run_attack(
        strict,
        host,
        """
import os, threading, time
calls = []
box = []
def leak(text):
    for path in ("/out/case-000.stdout", "/out/module.stdout"):
        try:
            with open(path, "a") as f:
                f.write(text)
        except OSError:
            pass
def attention(Q, K, V, mask=None):
    calls.append(1)
    if len(calls) <= 2:                      # the visible cases run first
        if len(calls) == 1:                  # a thread that keeps appending to the visible files
            def late():
                for _ in range(300):
                    if box:                  # hidden data has arrived: smuggle it into visible files
                        leak("LEAK-late" + repr(box))
                    time.sleep(0.005)
            threading.Thread(target=late, daemon=True).start()
        return _correct(Q, K, V, mask)
    text = "LEAK" + repr(Q.tolist())
    box.append(text)
    time.sleep(0.05)
    print(text)
    leak(text)
    if os.path.exists("/job"):
        for root, dirs, files in os.walk("/job"):
            leak("LEAK" + repr(files))
    raise type("LEAK" + str(Q.shape[0]), (Exception,), {})(text)
""",
    )
    assert result.verdict == Verdict.ERROR, dump(result)
    assert "LEAK" not in dump(result)
    assert [t.passed for t in result.tests[:2]] == [True, True]


def test_hidden_inputs_are_absent_while_visible_cases_run(strict, host):
    # The two visible cases run first and see the visible phase's files only; the third call
    # (the first hidden case) sees its phase: the check looks where the inputs are.
    result = run_attack(
        strict,
        host,
        """
import os
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    files = sorted(os.path.relpath(os.path.join(root, f), "/job") for root, dirs, fs in os.walk("/job") for f in fs)
    inputs = [f for f in files if f.startswith("p")]
    if len(calls) <= 2 and inputs != ["p0/inputs.bin", "p0/layout.json"]:
        raise AssertionError(files)
    if len(calls) == 3 and "p1/inputs.bin" not in inputs:
        raise AssertionError(files)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    assert [t.name for t in result.tests[:2]] == ["ornek", "maskeli-ornek"]


def test_the_job_file_names_hidden_inputs_but_tells_nothing_about_them(strict, host):
    # Top-level code prints the job file (shown: it runs before any hidden case): the hidden
    # cases' inputs are named there, their shapes, types and sizes are not.
    result = run_attack(
        strict,
        host,
        """
import json
with open("/job/job.json") as f:
    job = json.load(f)
print("JOB", json.dumps(job["phases"]))
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    shown = result.stdout
    assert "JOB" in shown and '"inputs": ["K", "Q", "V"' in shown, shown
    for word in ("shape", "dtype", "offset", "skip", "<f8"):
        assert word not in shown, word


# --- rejected sources --------------------------------------------------------


@pytest.mark.parametrize(
    "source, msgid",
    [
        ("def attention(Q, K, V, mask=None):\x00\n    return Q\n", M.SOURCE_NUL),
        (b"def attention(Q, K, V, mask=None):\n    return '\xff'\n", M.SOURCE_NOT_UTF8),
        ("x = 1\n" * 20000, M.SOURCE_TOO_LARGE),
        ("   \n\t\n", M.SOURCE_EMPTY),
    ],
)
def test_bad_sources_are_rejected_without_counting(strict, source, msgid):
    result = strict.grade(source)
    assert result.verdict == Verdict.REJECTED
    assert result.message.msgid == msgid
    assert not result.counts_as_attempt
    assert result.tests == []


def test_syntax_error_is_an_error_with_the_line_shown_in_context(strict):
    result = strict.grade("import numpy as np\n\ndef attention(Q, K, V, mask=None)\n    return Q\n")
    assert result.verdict == Verdict.ERROR
    assert result.message.msgid == M.SYNTAX_COLON
    assert result.message.params["line"] == 3
    assert result.message.params["context"].splitlines() == [
        "2 | ",
        "3 | def attention(Q, K, V, mask=None)",
        "  |                                  ^",
    ]
    assert result.tests == [], "one explanation, not a 'not run' line per case"
    assert result.counts_as_attempt


@pytest.mark.parametrize(
    "source, msgid, param",
    [
        ("def attention(Q, K, V, mask=None):\n    return (Q @ K.T\n", M.SYNTAX_UNCLOSED, ("bracket", "(")),
        ("def attention(Q, K, V, mask=None):\n    return Q @ K.T)\n", M.SYNTAX_UNMATCHED, ("bracket", ")")),
        ("def attention(Q, K, V, mask=None):\n    return 'Q\n", M.SYNTAX_STRING, None),
        ("def attention(Q, K, V, mask=None):\nreturn Q\n", M.SYNTAX_INDENT, None),
        (
            "def attention(Q, K, V, mask=None):\n    return Q \u2026 K\n",
            M.SYNTAX_CHARACTER,
            ("char", "U+2026"),
        ),
        ("def attention(Q, K, V, mask=None):\n    return f(Q K)\n", M.SYNTAX_COMMA, None),
    ],
)
def test_syntax_errors_are_explained_in_plain_words(strict, source, msgid, param):
    result = strict.grade(source)
    assert result.message.msgid == msgid, result.message
    if param:
        assert result.message.params[param[0]] == param[1]
    assert "2 | " in result.message.params["context"]


def test_an_untouched_starter_is_told_that_its_placeholders_are_still_there(strict):
    starter = "import numpy as np\n\ndef attention(Q, K, V, mask=None):\n    scores = ...\n    return ...\n"
    result = strict.grade(starter)
    assert result.message.msgid == M.PLACEHOLDERS_LEFT, result.message
    assert result.message.params["lines"] == "4, 5"
    visible = result.tests[0].message
    assert visible.msgid == M.CASE_PLACEHOLDER and "ellipsis" not in visible.render()


def test_hanging_top_level_code_is_a_setup_timeout(strict, host):
    result = run_attack(
        strict,
        host,
        """
while True:
    pass
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert result.message.msgid == M.TIMEOUT_SETUP
    assert all(not t.passed for t in result.tests)


def test_top_level_exception_shows_details_because_no_hidden_input_exists_yet(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
W = np.ones((2, 3)) @ np.ones((2, 3))
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.ERROR, dump(result)
    assert result.message.msgid == M.MODULE_EXCEPTION
    assert result.message.params["exc_type"] == "ValueError"
    assert "matmul" in result.message.params["detail"]
    assert result.tests == []


def test_flooding_the_status_pipe_does_not_keep_the_host_busy(strict, host):
    import time

    cpu0 = time.process_time()
    result = run_attack(
        strict,
        host,
        """
import os, threading
def flood():
    junk = b"P0\\nP1\\nR\\n" * 4096
    for fd in range(3, 64):
        try:
            while True:
                os.write(fd, junk)
        except OSError:
            pass
def attention(Q, K, V, mask=None):
    threading.Thread(target=flood, daemon=True).start()
    import time; time.sleep(0.5)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict in (Verdict.PASSED, Verdict.TIMEOUT), dump(result)
    assert time.process_time() - cpu0 < 2.0


def test_running_other_programs_is_refused(strict, host):
    result = run_attack(
        strict,
        host,
        """
import os, subprocess
def attention(Q, K, V, mask=None):
    try:
        subprocess.run(["/bin/sh", "-c", "echo hi"], check=True)
    except OSError:
        pass
    else:
        raise AssertionError("ran /bin/sh")
    assert os.system("true") != 0
    with open("/tmp/a.out", "wb") as f:
        f.write(b"\\x7fELF")
    os.chmod("/tmp/a.out", 0o755)
    try:
        os.execv("/tmp/a.out", ["a.out"])
    except OSError:
        pass
    pid = os.fork()            # fork (without exec) still works
    if pid == 0:
        os._exit(7)
    assert os.waitpid(pid, 0)[1] >> 8 == 7
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)


# --- hidden inputs and what the sandbox chooses to say about itself ------------------


def test_type_names_and_sizes_chosen_by_the_code_never_show_hidden_inputs(strict, host):
    """A class *name* or an array *size* built from hidden inputs is a channel too: hidden
    cases get fixed texts (the host's own numbers only)."""
    result = run_attack(
        strict,
        host,
        """
import numpy as np
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    n = len(calls)
    tag = "LEAK" + "_".join(str(x) for x in Q.ravel()[:3])
    if n <= 2:
        return _correct(Q, K, V, mask)
    if n == 3:
        return _correct(Q, K, V, mask).view(type(tag, (np.ndarray,), {}))
    if n == 4:
        return type(tag, (), {})()
    if n == 5:
        return np.zeros(3_000_000 + int(abs(Q.ravel()[0]) * 1000), dtype=np.float64)
    return _correct(Q, K, V, mask)
""",
    )
    text = dump(result)
    assert "LEAK" not in text, text
    hidden = [t for t in result.tests if t.hidden]
    assert [t.message.msgid for t in hidden[:3]] == [
        M.CASE_SUBCLASS_HIDDEN,
        M.CASE_NOT_ARRAY_HIDDEN,
        M.CASE_TOO_LARGE_HIDDEN,
    ], text
    assert "3000" not in text and "2400" not in text, "no size the code chose"


def test_statuses_planted_for_later_cases_are_not_trusted(strict, host):
    result = run_attack(
        strict,
        host,
        """
import json
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    if len(calls) == 3:
        fake = {"status": "exception", "exc_type": "LEAK" + str(Q.ravel()[0]), "line": 1,
                "detail": "LEAK", "results": {"return": {"problem": "subclass", "type": "LEAK"}}}
        for i in range(3, 12):
            with open("/out/case-%03d.status" % i, "w") as f:
                json.dump(fake, f)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    assert "LEAK" not in dump(result)


@pytest.fixture
def hidden_only(strict):
    """Every case hidden, as in a code fill-in blank."""
    import dataclasses

    return dataclasses.replace(strict, cases=[dataclasses.replace(c, hidden=True) for c in strict.cases])


def test_hidden_only_runs_ignore_a_module_status_written_during_a_case(hidden_only, host):
    result = run_attack(
        hidden_only,
        host,
        """
import json
def attention(Q, K, V, mask=None):
    text = "LEAK" + repr(Q.tolist())
    with open("/out/module.status", "w") as f:
        json.dump({"status": "exception", "exc_type": "ValueError", "line": 1, "detail": text}, f)
    with open("/out/module.stdout", "a") as f:
        f.write(text)
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    assert "LEAK" not in dump(result)


def test_hidden_only_runs_start_the_program_before_any_hidden_input_exists(hidden_only, host):
    """Top-level code may show its details (it runs before hidden inputs exist): then they must not exist."""
    result = run_attack(
        hidden_only,
        host,
        """
import os
import numpy as np
found = [os.path.join(r, f) for r, ds, fs in os.walk("/job") for f in fs if f.endswith((".npy", ".bin"))]
if found:
    raise RuntimeError("LEAK" + repr([open(p, "rb").read()[-24:] for p in found]))
def attention(Q, K, V, mask=None):
    return _correct(Q, K, V, mask)
""",
    )
    assert result.verdict == Verdict.PASSED, dump(result)
    assert "LEAK" not in dump(result)


def test_numpy_exception_names_are_shown_on_hidden_cases_but_made_up_ones_are_not(strict, host):
    result = run_attack(
        strict,
        host,
        """
import numpy as np
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    if len(calls) == 3:
        raise np.linalg.LinAlgError("LEAK")
    if len(calls) == 4:
        raise type("LEAK" + str(Q.ravel()[0]), (ValueError,), {})("LEAK")
    return _correct(Q, K, V, mask)
""",
    )
    text = dump(result)
    assert "LEAK" not in text
    hidden = [t for t in result.tests if t.hidden]
    assert "LinAlgError" in hidden[0].message.render()
    assert "Exception" in hidden[1].message.render()


def test_numbers_the_code_chooses_on_hidden_cases_do_not_reach_the_feedback(strict, host):
    """A line number, a number of axes, a dtype or a signal picked from a hidden input would
    each carry it out: the feedback of a hidden case is the same whatever the inputs were."""
    body = """
import os, signal
import numpy as np
calls = []
def attention(Q, K, V, mask=None):
    calls.append(1)
    n = len(calls)
    v = int(abs(Q.ravel()[0]) * 1000) % 900 + 20
    if n <= 2:
        return _correct(Q, K, V, mask)
    if n == 3:
        exec(compile("\\n" * v + "raise ValueError('x')", "submission.py", "exec"))
    if n == 4:
        return np.zeros((1,) * (v % 20 + 3))
    os.kill(os.getpid(), [signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE][v % 4])
"""
    padding = "\n" * 2000  # room for the chosen line numbers
    result = run_attack(strict, host, padding + body)
    hidden = [t.message.render() if t.message else "" for t in result.tests if t.hidden]
    shown = dump(result)
    assert "line" not in hidden[0], hidden[0]
    assert "expected 2" in hidden[1] and "got" not in hidden[1], hidden[1]
    assert "SIG" not in shown, shown
