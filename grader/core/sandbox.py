"""Launching one fresh bubblewrap sandbox per run, with limits enforced from outside.

Layers, from the outside in:
* cgroup v1 ``pids`` (fork/thread bombs), ``memory`` (all processes together)
  and ``cpuacct`` (total CPU, polled) — one fresh child cgroup per run under
  ``<this process's cgroup>/dikkat-grader/``, removed afterwards;
* rlimits set between fork and exec: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE,
  RLIMIT_NOFILE, RLIMIT_CORE;
* the host's wall clock: the whole tree is SIGKILLed at the deadline (bwrap's
  ``--die-with-parent`` and the PID namespace take every descendant with it,
  and the cgroup's remaining members are killed one by one);
* bubblewrap: all namespaces unshared (no network), ``--disable-userns``, no
  capabilities, a minimal read-only filesystem (``/usr``, the interpreter's
  prefix, NumPy), size-limited tmpfs for ``/tmp`` and ``/dev/shm``, the job's
  inputs read-only at ``/job`` and a writable ``/out`` (its own size-limited
  tmpfs on the host when we may mount);
* a seccomp filter (see seccomp.py).

The host never trusts anything the sandbox prints or exits with for a
verdict: callers read the output directory through results.OutputDir.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import hashlib
import json
import logging
import math
import os
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import seccomp
from .limits import MIB, Limits
from .results import OutputDir

log = logging.getLogger("grader.sandbox")

RUNNER_PATH = Path(__file__).with_name("runner.py")
SITE_IN_SANDBOX = "/opt/site"
SANDBOX_UID = 65534
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_GROUP = "dikkat-grader"
CONTROLLERS = ("pids", "memory", "cpuacct")
# bwrap itself, its init process inside the PID namespace, the runner.
OVERHEAD_PIDS = 3
JOB_TMPFS_BYTES = 512 * MIB
AS_HEADROOM = 128 * MIB
STARTUP_BUDGET = 30.0  # seconds for bwrap + interpreter + NumPy before the runner says "R"
# Bytes we read from the sandbox's pipes before ignoring them (the runner needs a few).
PIPE_BUDGET = {"log": 1 << 20, "status": 4096}
HIDDEN_PROC_FILES = (
    "kpagecount", "kpageflags", "kpagecgroup", "timer_list", "slabinfo",
    "vmallocinfo", "pagetypeinfo", "kallsyms", "keys", "key-users", "sched_debug",
)


class SandboxUnavailable(RuntimeError):
    """bubblewrap (or another required piece) cannot run here: nothing is executed unsandboxed."""


class SandboxFailed(RuntimeError):
    """The sandbox died before the runner was ready: our fault, never the submission's."""


@dataclass(frozen=True)
class Environment:
    """What the sandbox needs from this host, discovered once per process."""

    bwrap: str
    python: str  # the real interpreter binary (not the venv symlink), same path inside
    binds: tuple[tuple[str, str], ...]  # read-only binds (host source, path inside)
    cgroup_parents: dict[str, Path] = field(hash=False)
    can_mount_tmpfs: bool = False
    # The unprivileged host uid bwrap runs as (via setpriv); None: the caller's uid.
    host_uid: int | None = None
    setpriv: str | None = None
    prlimit: str | None = None  # util-linux prlimit, sets the rlimits before setpriv drops root
    warnings: tuple[str, ...] = ()


def _own_cgroup(controller: str) -> Path | None:
    mount = CGROUP_ROOT / controller
    if not (mount / "cgroup.procs").exists():
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and controller in parts[1].split(","):
            return mount / parts[2].lstrip("/")
    return mount


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MNT_DETACH = 2


def _mount_tmpfs(path: str, size: int, uid: int | None = None, mode: int = 0o700) -> bool:
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    opts = f"size={size},mode={mode:04o},nr_inodes=4096{owner}".encode()
    res = _libc().mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)
    return res == 0


def _umount(path: str) -> None:
    _libc().umount2(path.encode(), MNT_DETACH)


MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
ALIAS_ROOT = Path("/run/dikkat-grader")


def _world_traversable(path: str) -> bool:
    """Can any uid reach ``path`` (search permission on it and every ancestor)?"""
    current = Path(path)
    for directory in [current, *current.parents]:
        try:
            if not os.stat(directory).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _source_for_nobody(path: str, name: str) -> str:
    """``path`` itself when an unprivileged uid can reach it, else a read-only bind
    mount of it under /run/dikkat-grader (made once per boot; needs root).

    bwrap resolves bind sources as the uid it runs as, so an interpreter under
    /root (pyenv) would otherwise be out of reach for the sandbox's uid.
    """
    if _world_traversable(path):
        return path
    digest = hashlib.sha256(path.encode()).hexdigest()[:12]
    alias = ALIAS_ROOT / f"{name}-{digest}"
    ALIAS_ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(ALIAS_ROOT, 0o755)
    # Several grader processes may start at once: one mounts, the others see it.
    with open(ALIAS_ROOT / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _is_mount_point(alias):
            _bind_read_only(path, alias)
    if not _world_traversable(str(alias)):
        raise OSError(f"{alias} is not reachable by an unprivileged uid")
    return str(alias)


def _is_mount_point(path: Path) -> bool:
    """From mountinfo: os.path.ismount misses a bind mount from the same filesystem."""
    target = str(path)
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                # Field 5 is the mount point, with spaces etc. octal-escaped.
                if len(fields) > 4 and fields[4].encode().decode("unicode_escape") == target:
                    return True
    except OSError:
        pass
    return False


def _bind_read_only(path: str, alias: Path) -> None:
    alias.mkdir(mode=0o755, exist_ok=True)
    libc = _libc()
    if libc.mount(path.encode(), str(alias).encode(), None, MS_BIND, None) != 0:
        raise OSError(ctypes.get_errno(), f"cannot bind-mount {path} at {alias}")
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    if libc.mount(None, str(alias).encode(), None, flags, None) != 0:
        _umount(str(alias))
        raise OSError(ctypes.get_errno(), f"cannot make {alias} read-only")


def _probe_mount() -> bool:
    if os.geteuid() != 0:
        return False
    d = tempfile.mkdtemp(prefix="dikkat-probe-")
    try:
        if _mount_tmpfs(d, MIB):
            _umount(d)
            return True
        return False
    finally:
        os.rmdir(d)


def _owner_dead(name: str) -> bool:
    """For ``run-<pid>-...``/``job-<pid>-...`` names: is the process that made it gone?"""
    parts = name.split("-")
    if len(parts) < 3 or not parts[1].isdigit():
        return False
    return not os.path.exists(f"/proc/{parts[1]}")


def _cleanup_stale_cgroups(parent: Path) -> None:
    """Remove leftovers of runs whose host process died mid-run (never a live process's)."""
    try:
        children = [p for p in parent.iterdir() if p.is_dir() and _owner_dead(p.name)]
    except OSError:
        return
    for child in children:
        try:
            for pid in (child / "cgroup.procs").read_text().split():
                os.kill(int(pid), signal.SIGKILL)
            child.rmdir()
        except (OSError, ValueError):
            pass


def _cleanup_stale_jobs(root: Path) -> None:
    try:
        stale = [p for p in root.iterdir() if p.name.startswith("job-") and _owner_dead(p.name)]
    except OSError:
        return
    for job in stale:
        for mount in (job / "out", job):
            _umount(str(mount))  # EINVAL when not a mount point: harmless
        shutil.rmtree(job, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """Discover bwrap, the interpreter, NumPy and the cgroups (cached)."""
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if not bwrap:
        raise SandboxUnavailable(
            "bubblewrap is not installed; install it with 'apt-get install bubblewrap'."
        )
    python = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    if not python.startswith(prefix + os.sep) and not python.startswith("/usr/"):
        raise SandboxUnavailable(
            f"the interpreter {python} is not inside its prefix {prefix}; "
            "run the grader from a normal CPython installation or venv."
        )
    numpy_dir = os.path.dirname(os.path.realpath(np.__file__))
    binds = [] if prefix.startswith("/usr/") else [(prefix, prefix)]
    binds.append((numpy_dir, f"{SITE_IN_SANDBOX}/numpy"))
    libs = os.path.join(os.path.dirname(numpy_dir), "numpy.libs")
    if os.path.isdir(libs):
        binds.append((libs, f"{SITE_IN_SANDBOX}/numpy.libs"))
    runner_dir = str(RUNNER_PATH.parent)

    warnings = []
    host_uid = None
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
    if os.geteuid() == 0:
        # Run bwrap itself as an unprivileged uid, so that the sandbox's user is
        # "nobody" on the host too, not root behind a user namespace.
        try:
            if not setpriv or not prlimit:
                raise OSError("setpriv or prlimit (util-linux) is not installed")
            binds = [(_source_for_nobody(src, Path(dst).name), dst) for src, dst in binds]
            runner_dir = _source_for_nobody(runner_dir, "grader-core")
            host_uid = SANDBOX_UID
        except OSError as exc:
            warnings.append(
                f"The sandbox runs as the host's root uid behind a user namespace ({exc}); "
                "install util-linux's setpriv and let the grader bind-mount under /run, "
                "or run the grader as an unprivileged user."
            )
    parents: dict[str, Path] = {}
    if os.geteuid() == 0:
        for controller in CONTROLLERS:
            own = _own_cgroup(controller)
            if own is None:
                continue
            parent = own / CGROUP_GROUP
            try:
                parent.mkdir(exist_ok=True)
            except OSError:
                continue
            _cleanup_stale_cgroups(parent)
            parents[controller] = parent
    missing = [c for c in CONTROLLERS if c not in parents]
    if "pids" in missing:
        warnings.append(
            "The cgroup v1 'pids' controller is not usable (needs root and "
            "/sys/fs/cgroup/pids): fork bombs are limited only by the wall-clock "
            "limit and RLIMIT_AS."
        )
    if "memory" in missing:
        warnings.append(
            "The cgroup v1 'memory' controller is not usable: memory is limited "
            "per process by RLIMIT_AS only."
        )
    if "cpuacct" in missing:
        warnings.append(
            "The cgroup v1 'cpuacct' controller is not usable: CPU time is limited "
            "per process by RLIMIT_CPU only."
        )
    can_mount = _probe_mount()
    if can_mount:
        _cleanup_stale_jobs(work_root())
    if not can_mount:
        warnings.append(
            "Cannot mount a size-limited tmpfs for the output directory (needs "
            "root): a run may fill the disk of the work directory up to its "
            "per-file limit times the number of files."
        )
    # Only the runner file, not the rest of the grader's code.
    binds.append((os.path.join(runner_dir, RUNNER_PATH.name), "/grader/runner.py"))
    return Environment(
        bwrap=bwrap,
        python=python,
        binds=tuple(binds),
        cgroup_parents=parents,
        can_mount_tmpfs=can_mount,
        host_uid=host_uid,
        setpriv=setpriv if host_uid is not None else None,
        prlimit=prlimit if host_uid is not None else None,
        warnings=tuple(warnings),
    )


@functools.lru_cache(maxsize=1)
def _probe() -> str | None:
    try:
        env = environment()
        seccomp.filter_bpf()
    except (SandboxUnavailable, seccomp.SeccompUnavailable) as exc:
        return str(exc)[0].upper() + str(exc)[1:]
    with tempfile.TemporaryDirectory(prefix="dikkat-probe-") as d:
        if env.host_uid is not None:
            os.chown(d, env.host_uid, env.host_uid)
        args = _bwrap_args(env, Path(d), Path(d), Limits(), seccomp_fd=None)
        argv = args + [env.python, "-I", "-S", "-c", "import sys; sys.exit(0 if sys.flags.isolated else 3)"]
        try:
            res = subprocess.run(argv, env={}, capture_output=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not be started ({exc}); check 'apt-get install bubblewrap'."
        if res.returncode != 0:
            err = res.stderr.decode(errors="replace").strip()[:300]
            return (
                f"bubblewrap failed to start a sandbox ({err or res.returncode}). It needs "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) "
                "or root, and 'apt-get install bubblewrap'."
            )
    return None


def sandbox_problem() -> str | None:
    """None when sandboxed grading works on this host, else an English sentence with the fix."""
    return _probe()


def sandbox_warnings() -> list[str]:
    """Degradations in force (e.g. a missing cgroup controller); empty when fully isolated."""
    try:
        return list(environment().warnings)
    except SandboxUnavailable as exc:
        return [str(exc)]


def _bwrap_args(env: Environment, in_dir: Path, out_dir: Path, limits: Limits, seccomp_fd: int | None,
                extra: tuple[str, ...] = ()) -> list[str]:
    prefix = []
    if env.host_uid is not None:
        # Limits first (lowering needs no privilege), then drop to the unprivileged
        # uid, then bwrap: two tiny execs instead of a Python preexec_fn.
        prefix = [env.prlimit, *_rlimit_options(limits), "--",
                  env.setpriv, f"--reuid={env.host_uid}", f"--regid={env.host_uid}", "--clear-groups", "--"]
    a = prefix + [
        env.bwrap,
        *extra,
        "--unshare-all", "--unshare-user",  # user, ipc, pid, net, uts, cgroup
        "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
        "--disable-userns",
        "--die-with-parent", "--new-session",
        "--cap-drop", "ALL",
        "--hostname", "sandbox",
        "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "OPENBLAS_NUM_THREADS", "1",
        "--setenv", "OMP_NUM_THREADS", "1",
        "--setenv", "MKL_NUM_THREADS", "1",
        "--ro-bind", "/usr", "/usr",
    ]
    for name in ("lib", "lib64", "bin", "sbin"):
        path = f"/{name}"
        if os.path.islink(path):
            a += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            a += ["--ro-bind", path, path]
    for host, inside in env.binds:
        a += ["--ro-bind", host, inside]
    a += [
        "--ro-bind", str(in_dir), "/job",
        "--bind", str(out_dir), "/out",
        "--proc", "/proc",
    ]
    # The sandbox user maps to the caller's uid (root when the grader runs as
    # root) and bwrap does not cover /proc/sys then: without this, code inside
    # could write host sysctls such as kernel.core_pattern.  Root-only files
    # giving physical-memory or kernel details are hidden as well.
    for name in HIDDEN_PROC_FILES:
        if os.path.exists(f"/proc/{name}"):
            a += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    a += [
        "--remount-ro", "/proc",
        "--dev", "/dev",
        "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp",
        "--size", str(limits.tmpfs_bytes), "--tmpfs", "/dev/shm",
        "--chdir", "/tmp",
        "--remount-ro", "/",
    ]
    if seccomp_fd is not None:
        a += ["--seccomp", str(seccomp_fd)]
    return a + ["--"]


class _Cgroups:
    """One child cgroup per controller for one run."""

    def __init__(self, env: Environment, limits: Limits):
        self.paths: dict[str, Path] = {}
        name = f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            for controller, parent in env.cgroup_parents.items():
                path = parent / name
                path.mkdir()
                self.paths[controller] = path
            if "pids" in self.paths:
                (self.paths["pids"] / "pids.max").write_text(str(limits.processes + OVERHEAD_PIDS))
            if "memory" in self.paths:
                # tmpfs pages written by the sandbox are charged here too.
                limit = limits.memory_mb * MIB + 2 * limits.tmpfs_bytes + limits.output_dir_bytes
                mem = self.paths["memory"]
                (mem / "memory.limit_in_bytes").write_text(str(limit))
                memsw = mem / "memory.memsw.limit_in_bytes"
                if memsw.exists():
                    try:
                        memsw.write_text(str(limit))
                    except OSError:
                        pass
        except OSError:
            self.remove()
            raise
        self.procs_files = [str(p / "cgroup.procs") for p in self.paths.values()]

    def add(self, pid: int) -> None:
        for path in self.procs_files:
            with open(path, "w") as f:
                f.write(str(pid))

    def cpu_seconds(self) -> float | None:
        path = self.paths.get("cpuacct")
        if path is None:
            return None
        try:
            return int((path / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return None

    def oom_killed(self) -> bool:
        path = self.paths.get("memory")
        if path is None:
            return False
        try:
            text = (path / "memory.oom_control").read_text()
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
            return int((path / "memory.failcnt").read_text()) > 0 and "under_oom 1" in text
        except (OSError, ValueError):
            return False

    def members(self) -> list[int]:
        pids: set[int] = set()
        for path in self.paths.values():
            try:
                pids.update(int(p) for p in (path / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(pids)

    def kill_all(self, timeout: float = 3.0) -> bool:
        """SIGKILL every member until none is left (a forking tree may need several rounds)."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.members()
            if not pids:
                return True
            if time.monotonic() > deadline:
                log.error("processes survived in sandbox cgroup: %s", pids)
                return False
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)

    def remove(self) -> None:
        for path in self.paths.values():
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)  # the kernel is still tearing members down
            else:
                log.error("could not remove cgroup %s", path)


@dataclass
class RunOutcome:
    """What the host observed itself (trustworthy) plus the exit code (a hint only)."""

    exit_code: int | None
    timed_out: bool = False
    cpu_exceeded: bool = False
    oom_killed: bool = False
    wall_ms: int = 0
    cpu_ms: int | None = None
    phases_collected: int = 0
    collected: list[Any] = field(default_factory=list)
    log_tail: str = ""
    runner_ready: bool = False  # the runner said "R" (it had imported NumPy; no student code yet)
    secured: bool = False  # the runner installed its no-exec filter and may run student code ("S")

    @property
    def signal(self) -> int | None:
        """Signal that ended the sandboxed program, as bwrap reports it (128 + n)."""
        if self.exit_code is not None and self.exit_code > 128:
            return self.exit_code - 128
        if self.exit_code is not None and self.exit_code < 0:
            return -self.exit_code
        return None


def _open_readable(path: Path):
    """A new file readable by the sandbox's uid whatever our umask is."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    os.fchmod(fd, 0o644)
    return os.fdopen(fd, "wb")


def _save_npy(path: Path, arr: np.ndarray) -> None:
    with _open_readable(path) as f:
        np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)


def _stage_inputs(in_dir: Path, phase: int, cases: list[tuple[int, dict[str, np.ndarray]]]) -> None:
    d = in_dir / f"p{phase}.tmp"
    d.mkdir()
    os.chmod(d, 0o755)
    for index, inputs in cases:
        for name, arr in inputs.items():
            _save_npy(d / f"{index:03d}.{name}.npy", arr)
    # Appears in the sandbox all at once.
    d.rename(in_dir / f"p{phase}")


def _rlimits(limits: Limits) -> dict[int, tuple[int, int]]:
    # +1 s: the runner's own start (NumPy import) counts against RLIMIT_CPU too.
    cpu = max(1, math.ceil(limits.cpu_seconds)) + 1
    # Address space is not memory: the interpreter, NumPy and OpenBLAS map
    # ~100 MiB they never touch.  The headroom keeps a small memory_mb usable;
    # the memory cgroup caps what is really used.
    memory = limits.memory_mb * MIB + AS_HEADROOM
    return {
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (memory, memory),
        resource.RLIMIT_FSIZE: (limits.file_size_bytes, limits.file_size_bytes),
        resource.RLIMIT_NOFILE: (limits.open_files, limits.open_files),
        resource.RLIMIT_CORE: (0, 0),
    }


def _rlimit_options(limits: Limits) -> list[str]:
    names = {resource.RLIMIT_CPU: "cpu", resource.RLIMIT_AS: "as", resource.RLIMIT_FSIZE: "fsize",
             resource.RLIMIT_NOFILE: "nofile", resource.RLIMIT_CORE: "core"}
    return [f"--{names[r]}={soft}:{hard}" for r, (soft, hard) in _rlimits(limits).items()]


def _apply_limits(pid: int, limits: Limits) -> None:
    """Set the rlimits of the (still blocked) sandbox process, same uid as ours; descendants inherit them."""
    for res, value in _rlimits(limits).items():
        resource.prlimit(pid, res, value)


def _read_child_pid(fd: int, timeout: float) -> int:
    """The sandbox's pid from bwrap's ``--info-fd`` JSON (bwrap is trusted; the sandbox has not started)."""
    deadline = time.monotonic() + timeout
    data = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"}" not in data:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise SandboxUnavailable("bubblewrap did not report its sandbox in time")
            chunk = os.read(fd, 4096)
            if not chunk:
                raise SandboxUnavailable("bubblewrap exited before starting the sandbox")
            data += chunk
    return int(json.loads(data)["child-pid"])


def work_root() -> Path:
    """Where per-run job directories are made: $DIKKAT_GRADER_WORK or <tmp>/dikkat-grader."""
    root = Path(os.environ.get("DIKKAT_GRADER_WORK") or Path(tempfile.gettempdir()) / "dikkat-grader")
    root.mkdir(mode=0o711, parents=True, exist_ok=True)
    # Traversable but not listable: the sandbox's uid must reach its own job directory.
    if root.stat().st_uid == os.geteuid() and root.stat().st_mode & 0o777 != 0o711:
        os.chmod(root, 0o711)
    return root


class Sandbox:
    """One single-use sandbox: spawned (runner started, NumPy imported, waiting),
    then given exactly one job by `run`, then destroyed.

    Spawning and running are split so that a pool can spawn ahead of demand;
    a fresh sandbox is simply spawned and run at once.  The job's files appear
    in the (already bound) ``/job`` directory only at dispatch.
    """

    def __init__(self, limits: Limits):
        env = environment()
        self.limits = limits
        self.spawned_at = time.monotonic()
        uid = env.host_uid
        self.job_dir = Path(tempfile.mkdtemp(prefix=f"job-{os.getpid()}-", dir=work_root()))
        # The job's files live in RAM: creating and deleting them on disk cost
        # more than the mount.  Inputs are written by us, so the cap is generous.
        # Ours; the sandbox's uid may only pass through it (0711) to in/ and out/.
        mode = 0o711 if uid is not None else 0o700
        self.mounted_job = env.can_mount_tmpfs and _mount_tmpfs(str(self.job_dir), JOB_TMPFS_BYTES, None, mode)
        os.chmod(self.job_dir, mode)
        self.in_dir, self.out_dir = self.job_dir / "in", self.job_dir / "out"
        self.in_dir.mkdir()
        os.chmod(self.in_dir, 0o755)  # ours, readable (not writable) by the sandbox
        self.out_dir.mkdir(mode=0o700)
        self.mounted = env.can_mount_tmpfs and _mount_tmpfs(str(self.out_dir), limits.output_dir_bytes, uid)
        if uid is not None and not self.mounted:
            os.chown(self.out_dir, uid, uid)
        self.cgroups: _Cgroups | None = None
        self.proc: subprocess.Popen | None = None
        self.fds: list[int] = []
        self.used = False
        self.warm = False
        try:
            self._spawn(env)
        except BaseException:
            self.destroy()
            raise

    def _spawn(self, env: Environment) -> None:
        limits = self.limits
        self.ctl_r, self.ctl_w = os.pipe()
        self.status_r, self.status_w = os.pipe()
        seccomp_fd = seccomp.filter_fd()
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        self.fds += [self.ctl_r, self.ctl_w, self.status_r, self.status_w, seccomp_fd, info_r, info_w, block_r, block_w]
        self.cgroups = _Cgroups(env, limits)
        # bwrap reports the sandbox's pid on --info-fd and then waits on
        # --block-fd before running anything inside: the gap in which we put
        # it into the cgroups and set its rlimits.  No preexec_fn, so the
        # spawn is a cheap vfork even from a large host process.
        sync = ("--info-fd", str(info_w), "--block-fd", str(block_r))
        argv = _bwrap_args(env, self.in_dir, self.out_dir, limits, seccomp_fd, sync) + [
            env.python, "-I", "-S", "-B", "/grader/runner.py", str(self.ctl_r), SITE_IN_SANDBOX, str(self.status_w),
        ]
        passed = (seccomp_fd, self.ctl_r, self.status_w, info_w, block_r)
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={}, pass_fds=passed,
        )
        for fd in passed:  # the child has its copies
            os.close(fd)
            self.fds.remove(fd)
        child = _read_child_pid(info_r, 10.0)
        try:
            for pid in (self.proc.pid, child):
                self.cgroups.add(pid)
            if env.host_uid is None:  # else prlimit(1) set them before bwrap started
                _apply_limits(child, limits)
            os.write(block_w, b"g")
        except (ProcessLookupError, BrokenPipeError) as exc:
            self.proc.wait()
            err = self.proc.stdout.read(4000).decode(errors="replace") if self.proc.stdout else ""
            raise SandboxFailed(f"bubblewrap exited during setup ({exc}): {err}") from None

    def wait_warm(self, timeout: float = 10.0) -> bool:
        """Block until the runner has imported NumPy (it says ``R``); False on timeout or death."""
        deadline = time.monotonic() + timeout
        data = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.status_r, selectors.EVENT_READ)
            while b"R\n" not in data:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return False
                # One byte at a time: nothing after "R\n" may be consumed here.
                chunk = os.read(self.status_r, 1)
                if not chunk:
                    return False
                data += chunk
        self.warm = True
        return True

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(
        self,
        job: dict[str, Any],
        code: str,
        phases: list[list[tuple[int, dict[str, np.ndarray]]]],
        collect: Callable[[OutputDir, int], Any],
    ) -> RunOutcome:
        """Give the waiting runner its job and supervise it to the end (see `run_sandboxed`)."""
        assert not self.used, "a sandbox runs exactly one job"
        self.used = True
        started = time.monotonic()
        outcome = RunOutcome(exit_code=None)
        try:
            job = dict(job, ctl_fd=self.ctl_r, status_fd=self.status_w, no_exec=True,
                       phases=[[{"index": i, "inputs": sorted(inp)} for i, inp in ph] for ph in phases])
            with _open_readable(self.in_dir / "code.py") as f:
                f.write(code.encode("utf-8"))
            with _open_readable(self.in_dir / "no-exec.bpf") as f:
                f.write(seccomp.no_exec_bpf())
            if phases:
                _stage_inputs(self.in_dir, 0, phases[0])
            tmp = self.in_dir / "job.json.tmp"
            with _open_readable(tmp) as f:
                f.write(json.dumps(job).encode())
            tmp.rename(self.in_dir / "job.json")
            # CPU spent importing NumPy before the job is not the student's.
            cpu_base = self.cgroups.cpu_seconds() if self.cgroups else None
            try:
                os.write(self.ctl_w, b"J")
            except BrokenPipeError:
                pass  # the sandbox is already dead: _supervise sees the exit, we report why
            outcome.runner_ready = self.warm
            _supervise(self.proc, self.cgroups, self.limits, started, cpu_base, outcome, self.status_r,
                       self.ctl_w, self.in_dir, self.out_dir, phases, collect)
            self._stop(outcome, cpu_base)
            outcome.runner_ready = outcome.runner_ready or self.warm
            if outcome.runner_ready and not outcome.secured and not outcome.timed_out:
                raise SandboxFailed("the runner did not install its no-exec seccomp filter")
            if not outcome.runner_ready:
                raise SandboxFailed(
                    f"the sandbox ended before its runner was ready (exit {outcome.exit_code}): "
                    f"{outcome.log_tail[-2000:]}"
                )
            # Every process is gone: the outputs can no longer change under us.
            if outcome.phases_collected < len(phases):
                with OutputDir(str(self.out_dir)) as out:
                    outcome.collected.append(collect(out, outcome.phases_collected))
                outcome.phases_collected += 1
        finally:
            self.destroy()
            outcome.wall_ms = int((time.monotonic() - started) * 1000)
        return outcome

    def _stop(self, outcome: RunOutcome, cpu_base: float | None) -> None:
        proc, cgroups = self.proc, self.cgroups
        if proc.poll() is None:
            proc.kill()
        if cgroups is not None:
            cgroups.kill_all()
        proc.wait()
        outcome.exit_code = proc.returncode
        if cgroups is not None:
            outcome.oom_killed = cgroups.oom_killed()
            cpu = cgroups.cpu_seconds()
            outcome.cpu_ms = None if cpu is None else int((cpu - (cpu_base or 0)) * 1000)

    def destroy(self) -> None:
        """Kill everything, remove the cgroups, unmount and delete the job directory (idempotent)."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            if self.cgroups is not None:
                self.cgroups.kill_all()
            self.proc.wait()
            if self.proc.stdout:
                self.proc.stdout.close()
        if self.cgroups is not None:
            self.cgroups.remove()
            self.cgroups = None
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []
        if self.mounted:
            _umount(str(self.out_dir))
            self.mounted = False
        if self.mounted_job:
            _umount(str(self.job_dir))
            self.mounted_job = False
        shutil.rmtree(self.job_dir, ignore_errors=True)


def run_sandboxed(
    *,
    job: dict[str, Any],
    code: str,
    phases: list[list[tuple[int, dict[str, np.ndarray]]]],
    limits: Limits,
    collect: Callable[[OutputDir, int], Any],
) -> RunOutcome:
    """Run the trusted runner on ``code`` in a single-use sandbox.

    ``phases`` lists, per phase, the cases (index, inputs) to run.  Only phase 0's
    inputs exist when the program starts; each later phase's inputs are written
    after ``collect(out, p)`` has snapshotted phase p's outputs, so output of
    visible cases can never contain hidden inputs.  ``collect`` is called once per
    phase that started, the last time after every process of the run is dead.
    The sandbox comes from the pool when one is enabled for these limits
    (see pool.py), else it is spawned now.
    """
    from . import pool

    sandbox = pool.take(limits) or Sandbox(limits)
    return sandbox.run(job, code, phases, collect)


def _supervise(proc, cgroups, limits, started, cpu_base, outcome, status_r, ctl_w, in_dir, out_dir, phases, collect) -> None:
    # The wall clock runs from the moment the runner is ready (NumPy imported):
    # a loaded host must not eat the student's time.  Until then a generous
    # start-up budget applies; missing it is our failure, not theirs.
    deadline = started + (limits.wall_seconds if outcome.runner_ready else STARTUP_BUDGET)
    log_buf = bytearray()
    status_buf = bytearray()
    received = {"log": 0, "status": 0}
    sel = selectors.DefaultSelector()
    pidfd = os.pidfd_open(proc.pid)
    try:
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        sel.register(proc.stdout, selectors.EVENT_READ, "log")
        sel.register(status_r, selectors.EVENT_READ, "status")
        exited = False
        while not exited:
            now = time.monotonic()
            if now >= deadline:
                outcome.timed_out = True
                break
            cpu = cgroups.cpu_seconds() if cgroups else None
            if cpu is not None and cpu - (cpu_base or 0) > limits.cpu_seconds:
                outcome.cpu_exceeded = True
                break
            for key, _ in sel.select(timeout=min(0.1, deadline - now)):
                if key.data == "exit":
                    exited = True
                    continue
                fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
                chunk = os.read(fd, 65536)
                received[key.data] += len(chunk)
                if not chunk or received[key.data] > PIPE_BUDGET[key.data]:
                    # EOF, or a flood meant to keep us busy: stop listening after
                    # this chunk.  A sandbox that keeps writing then blocks.
                    sel.unregister(key.fileobj)
                if key.data == "log":
                    # Kept only for the server log, capped; never shown or trusted.
                    log_buf += chunk[: max(0, 8192 - len(log_buf))]
                    continue
                status_buf += chunk[:64]
                while b"\n" in status_buf:
                    line, _, rest = bytes(status_buf).partition(b"\n")
                    status_buf[:] = rest
                    p = outcome.phases_collected
                    if line == b"S":
                        outcome.secured = True  # written before any student code: cannot be withheld
                    if line == b"R" and not outcome.runner_ready:
                        outcome.runner_ready = True
                        deadline = time.monotonic() + limits.wall_seconds
                        cpu_base = cgroups.cpu_seconds() if cgroups else None  # the import is not theirs
                    elif line == b"P%d" % p and p + 1 < len(phases):
                        with OutputDir(str(out_dir)) as out:
                            outcome.collected.append(collect(out, p))
                        outcome.phases_collected += 1
                        _stage_inputs(in_dir, p + 1, phases[p + 1])
                        try:
                            os.write(ctl_w, b"G")
                        except OSError:
                            pass
                if len(status_buf) > 64:
                    status_buf.clear()
        if exited:
            # Drain what is left of the log without waiting for stragglers.
            try:
                os.set_blocking(proc.stdout.fileno(), False)
                chunk = proc.stdout.read(8192) or b""
                log_buf += chunk[: max(0, 8192 - len(log_buf))]
            except (OSError, ValueError, TypeError):
                pass
    finally:
        sel.close()
        os.close(pidfd)
    outcome.log_tail = log_buf.decode("utf-8", errors="replace")
