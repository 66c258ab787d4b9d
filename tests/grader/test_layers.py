"""Every protection layer proven on its own.

Each test switches off the *other* layers that would hide a failure of the one it is
about (`sandbox.layers_off`, a test-only switch), then attacks.  `make test-layers`
switches off each layer alone and checks that at least one test here or in the
adversarial suite fails: no layer can silently stop working behind another one.

A probe raises ``AssertionError("BREACH …")`` from inside the sandbox when it got
through; the visible cases show exception details, so a breach is in the feedback.
The mount namespace has no switch: bwrap builds the sandbox's whole filesystem in it.
"""

from __future__ import annotations

import os
import time

import pytest
from grader_testkit import FORK_PROBE, SECRET, assert_next_run_passes, dump

from grader.core import Verdict
from grader.core import messages as M
from grader.core import sandbox as sb

pytestmark = pytest.mark.sandbox


def probe(ex, host, body: str, **kwargs):
    """Grade ``body`` (indented code run in each visible case before a correct answer)."""
    source = (
        ex.solution.replace("def attention(", "def _correct(")
        + "\n"
        + (
            "import os, sys, time\nimport numpy as np\n"
            "def attention(Q, K, V, mask=None):\n"
            + "".join(f"    {line}\n" for line in body.strip("\n").splitlines())
            + "    return _correct(Q, K, V, mask)\n"
        )
    )
    result = ex.grade(source, only_visible=True, **kwargs)
    host.check()
    return result


def assert_held(result):
    text = dump(result)
    assert "BREACH" not in text, text
    assert result.verdict == Verdict.PASSED, text


# --- namespaces ----------------------------------------------------------------------


def test_network_namespace_alone_keeps_the_host_unreachable(strict, host):
    with sb.layers_off("seccomp"):  # the filter refuses socket() before the namespace matters
        result = probe(
            strict,
            host,
            f"""
import socket
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("127.0.0.1", {host.port}))
except OSError:
    pass
else:
    raise AssertionError("BREACH: connected to the host")
""",
        )
    assert_held(result)


def test_pid_namespace_alone_hides_host_processes(strict, host):
    result = probe(
        strict,
        host,
        f"""
pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
if len(pids) > 20 or {os.getpid()} in pids:
    raise AssertionError("BREACH: host processes visible " + str(len(pids)))
""",
    )
    assert_held(result)


SHM_KEY = 0x5EED0000 + os.getpid() % 0xFFFF


def _host_has_shm(key: int) -> bool:
    with open("/proc/sysvipc/shm") as f:
        return any(line.split()[0] == str(key) for line in f.readlines()[1:] if line.split())


def test_ipc_namespace_alone_keeps_shared_memory_off_the_host(strict, host):
    try:
        result = probe(
            strict,
            host,
            f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget({SHM_KEY}, 4096, 0o1000 | 0o600)
""",
        )
        assert result.verdict == Verdict.PASSED, dump(result)
        assert not _host_has_shm(SHM_KEY), "BREACH: the sandbox's segment exists on the host"
    finally:
        if _host_has_shm(SHM_KEY):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            shmid = libc.shmget(SHM_KEY, 0, 0)
            libc.shmctl(shmid, 0, None)  # IPC_RMID


# --- seccomp ---------------------------------------------------------------------------


def test_seccomp_alone_refuses_sockets_and_new_programs(strict, host):
    result = probe(
        strict,
        host,
        """
import socket
try:
    socket.socket(socket.AF_UNIX)
except OSError:
    pass
else:
    raise AssertionError("BREACH: socket() allowed")
try:
    os.posix_spawn("/usr/bin/true", ["true"], {})
except OSError:
    pass
else:
    raise AssertionError("BREACH: started another program")
""",
    )
    assert_held(result)


# --- process caps ------------------------------------------------------------------------


def test_pids_cap_alone_stops_a_fork_bomb(strict, host):
    if sb.environment().cgroups is None or "pids" not in sb.environment().cgroups.caps:
        pytest.skip("no pids cgroup here")
    with sb.layers_off("rlimit_nproc"):
        result = probe(strict, host, FORK_PROBE.format(cap=strict.spec.limits.processes))
    assert_held(result)


def test_rlimit_nproc_alone_stops_a_fork_bomb(strict, host):
    if not sb.environment().drop_uid:
        pytest.skip("runs share the caller's uid here, RLIMIT_NPROC is not set")
    with sb.layers_off("pids_cap"):
        result = probe(strict, host, FORK_PROBE.format(cap=strict.spec.limits.processes))
    assert_held(result)


# --- memory ----------------------------------------------------------------------------------

BIG_ALLOCATION = """
block = np.ones(100 * 1024 * 1024, dtype=np.uint8)  # 100 MiB, touched
blocks = [block]
for _ in range(6):
    blocks.append(np.ones(100 * 1024 * 1024, dtype=np.uint8))
raise AssertionError("BREACH: allocated 700 MiB")
"""


def test_memory_cgroup_alone_stops_a_large_allocation(attention, host):
    if sb.environment().cgroups is None or "memory" not in sb.environment().cgroups.caps:
        pytest.skip("no memory cgroup here")
    # Room on the clock: the kernel's reclaim at the cap is charged to the program's CPU time
    # (a loaded CI host once took more than a second of it), and this test is about memory.
    roomy = attention.with_limits(cpu_seconds=5, wall_seconds=10, memory_mb=256)
    with sb.layers_off("rlimit_as"):
        result = probe(roomy, host, BIG_ALLOCATION)
    assert "BREACH" not in dump(result)
    assert result.verdict == Verdict.MEMORY_LIMIT, dump(result)


def test_rlimit_as_alone_stops_a_large_allocation(strict, host):
    with sb.layers_off("memory_cap"):
        result = probe(strict, host, BIG_ALLOCATION)
    assert "BREACH" not in dump(result)
    assert result.verdict == Verdict.MEMORY_LIMIT, dump(result)


# --- time ------------------------------------------------------------------------------------


def test_cpu_limit_alone_stops_a_busy_loop(strict, host):
    with sb.layers_off("wall_clock"):
        started = time.monotonic()
        result = probe(strict, host, "while True:\n    pass")
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert result.message.msgid == M.TIMEOUT_CPU, dump(result)
    assert time.monotonic() - started < 10


def test_wall_clock_alone_stops_a_sleeping_program(strict, host):
    started = time.monotonic()
    result = probe(strict, host, "time.sleep(1000)")
    assert result.verdict == Verdict.TIMEOUT, dump(result)
    assert time.monotonic() - started < strict.spec.limits.wall_seconds + 8


# --- files -------------------------------------------------------------------------------------


def test_rlimit_fsize_alone_caps_one_file(strict, host):
    with sb.layers_off("tmpfs_size", "memory_cap"):
        result = probe(
            strict,
            host,
            """
written = 0
block = b"x" * (1 << 20)
try:
    with open("/tmp/big", "wb", buffering=0) as f:
        for _ in range(40):
            written += f.write(block)
except OSError:
    pass
os.unlink("/tmp/big")
if written > 17 * (1 << 20):
    raise AssertionError("BREACH: one file of %d bytes" % written)
""",
        )
    assert_held(result)


def test_rlimit_nofile_alone_caps_open_files(strict, host):
    result = probe(
        strict,
        host,
        """
fds = []
try:
    for _ in range(3000):
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
for fd in fds:
    os.close(fd)
if len(fds) > 300:
    raise AssertionError("BREACH: %d files open" % len(fds))
""",
    )
    assert_held(result)


def test_tmpfs_sizes_alone_cap_tmp_and_shm(strict, host):
    with sb.layers_off("memory_cap", "rlimit_fsize"):
        result = probe(
            strict,
            host,
            """
for directory in ("/tmp", "/dev/shm"):
    total = 0
    try:
        for i in range(12):
            with open(f"{directory}/fill{i}", "wb", buffering=0) as f:
                total += f.write(b"x" * (8 << 20))
    except OSError:
        pass
    for i in range(12):
        try:
            os.unlink(f"{directory}/fill{i}")
        except OSError:
            pass
    if total > 40 << 20:
        raise AssertionError("BREACH: %s took %d bytes" % (directory, total))
""",
        )
    assert_held(result)


def test_read_only_root_alone_refuses_new_files_at_the_top(strict, host):
    with sb.layers_off("inner_uid"):  # uid 0 inside owns the sandbox's root directory
        result = probe(
            strict,
            host,
            """
for path in ("/planted", "/usr/planted"):
    try:
        open(path, "w").close()
    except OSError:
        continue
    raise AssertionError("BREACH: created " + path)
""",
        )
    assert_held(result)


def test_read_only_proc_alone_refuses_sysctl_writes(strict, host):
    # The probe writes the sandbox's own UTS hostname: harmless even when it gets through.
    with sb.layers_off("uid_drop", "inner_uid"):
        result = probe(
            strict,
            host,
            """
try:
    with open("/proc/sys/kernel/hostname", "w") as f:
        f.write("sandbox")
except OSError:
    pass
else:
    raise AssertionError("BREACH: wrote a sysctl")
""",
        )
    assert_held(result)


def test_output_size_checks_alone_stop_a_flood(strict, host):
    result = probe(strict, host, "sys.stdout.write('x' * (2 << 20))")
    assert result.verdict == Verdict.OUTPUT_LIMIT, dump(result)[:500]


# --- identity and environment ----------------------------------------------------------------


def test_the_sandbox_is_never_root_on_the_host(strict):
    """Seen from the host (inside, nested user namespaces make every uid look mapped from 0)."""
    if not sb.environment().drop_uid:
        pytest.skip("the grader is not root here: the sandbox has the caller's uid")
    sandbox = sb.Sandbox(strict.spec.limits)
    try:
        assert sandbox.wait_warm(20)
        uids = set()
        for pid in sandbox.cgroups.members():
            with open(f"/proc/{pid}/status") as f:
                line = next(x for x in f if x.startswith("Uid:"))
            uids.update(int(u) for u in line.split()[1:])
        assert uids and 0 not in uids, f"BREACH: sandbox processes with host uids {uids}"
    finally:
        sandbox.destroy()


def test_clearenv_alone_keeps_the_hosts_environment_out(strict, host):
    assert os.environ.get("DIKKAT_TEST_SECRET") == SECRET
    with sb.layers_off("spawn_env"):  # bwrap itself now inherits our environment
        result = probe(
            strict,
            host,
            f"""
if any("{SECRET}" in value for value in os.environ.values()):
    raise AssertionError("BREACH: the host's environment is inside")
""",
        )
    assert_held(result)


def test_a_correct_run_after_the_layer_probes_still_passes(strict):
    assert_next_run_passes(strict)
