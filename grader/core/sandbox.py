"""Launching one fresh bubblewrap sandbox per run, with limits enforced from outside.

Layers, from the outside in (each can be switched off alone by the test suite's
`layers_off`, never from settings: `make test-layers` proves every one is caught):
* a control group per run (cgroups.py, v2 or v1): ``pids`` (fork and thread
  bombs) and ``memory`` for all of the run's processes together, CPU time
  (polled), and a kill of the whole tree.  Without a process cap and a memory
  cap no grading happens (fail closed) unless DIKKAT_GRADER_ALLOW_UNCAPPED=1;
* rlimits set before bwrap starts: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE,
  RLIMIT_NOFILE, RLIMIT_CORE and, since every run has a host uid of its own,
  RLIMIT_NPROC as a second process cap;
* the host's wall clock: the whole tree is SIGKILLed at the deadline;
* bubblewrap: all namespaces unshared (no network), ``--disable-userns``, no
  capabilities, a minimal read-only filesystem (``/usr``, the interpreter's
  prefix, NumPy), size-limited tmpfs for ``/tmp`` and ``/dev/shm``, the job's
  inputs read-only at ``/job`` and a writable ``/out`` (its own size-limited
  tmpfs on the host when we may mount), read-only ``/proc``, an empty
  environment;
* a seccomp filter (see seccomp.py).

The host never trusts anything the sandbox prints or exits with for a
verdict: callers read the output directory through results.OutputDir.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import fcntl
import functools
import hashlib
import io
import json
import logging
import math
import os
import random
import resource
import secrets
import selectors
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from . import cgroups, seccomp, timeline
from .limits import MIB, Limits
from .results import OutputDir

log = logging.getLogger("grader.sandbox")

RUNNER_PATH = Path(__file__).with_name("runner.py")
SITE_IN_SANDBOX = "/opt/site"
SANDBOX_UID = 65534  # the uid inside the sandbox's user namespace
STATE_ROOT = Path("/run/dikkat-grader")
# Host uids for runs when the grader is root: one per live sandbox, leased with a lock,
# so RLIMIT_NPROC (counted per uid) is one run's own cap.  Override with
# DIKKAT_GRADER_UID_BASE / DIKKAT_GRADER_UID_COUNT if this range is taken on the host.
UID_BASE = 1_900_000_000
UID_COUNT = 512
JOB_TMPFS_BYTES = 512 * MIB
AS_HEADROOM = 128 * MIB
STARTUP_BUDGET = 30.0  # seconds for bwrap + interpreter + NumPy before the runner says "R"
SPAWN_REPORT_TIMEOUT = 10.0  # seconds for bwrap to report its sandbox's pid
NEW_LOCK_GRACE_SECONDS = 60.0  # a lock file younger than this may be between creation and flock
TEARDOWN_BUDGET = 6.0  # killing the tree (3 s at most) and removing its cgroup (3 s at most)
# Bytes we read from the sandbox's pipes before ignoring them (the runner needs a few).
PIPE_BUDGET = {"log": 1 << 20, "status": 4096}
HIDDEN_PROC_FILES = (
    "kpagecount",
    "kpageflags",
    "kpagecgroup",
    "timer_list",
    "slabinfo",
    "vmallocinfo",
    "pagetypeinfo",
    "kallsyms",
    "keys",
    "key-users",
    "sched_debug",
)
ALLOW_UNCAPPED_VAR = "DIKKAT_GRADER_ALLOW_UNCAPPED"


class SandboxUnavailable(RuntimeError):
    """bubblewrap (or another required piece) cannot run here: nothing is executed unsandboxed."""


class SandboxFailed(RuntimeError):
    """The sandbox died before the runner was ready: our fault, never the submission's."""


def max_run_seconds(limits: Limits) -> float:
    """The longest one sandbox run can take: spawning, the start-up budget, the wall limit, teardown.

    A queue's lease on a job must be longer than the runs it makes, or a busy but
    live worker's job is handed out again and again.
    """
    return SPAWN_REPORT_TIMEOUT + STARTUP_BUDGET + limits.wall_seconds + TEARDOWN_BUDGET


# --- layers the test suite may switch off ----------------------------------------

LAYERS = {
    "network": "network namespace",
    "pid": "PID namespace",
    "ipc": "IPC namespace",
    "seccomp": "seccomp filters (bwrap's and the runner's no-exec one)",
    "pids_cap": "cgroup process cap",
    "memory_cap": "cgroup memory cap",
    "cpu_limit": "CPU limit (cgroup CPU time and RLIMIT_CPU)",
    "wall_clock": "wall-clock limit",
    "rlimit_as": "RLIMIT_AS",
    "rlimit_nproc": "RLIMIT_NPROC",
    "rlimit_fsize": "RLIMIT_FSIZE",
    "rlimit_nofile": "RLIMIT_NOFILE",
    "readonly_root": "read-only /",
    "readonly_proc": "read-only /proc",
    "tmpfs_size": "tmpfs size limits",
    "output_size": "the host's output size checks",
    "uid_drop": "unprivileged host uid",
    "clearenv": "bwrap --clearenv",
}
# Not layers of their own, but switches that hide one (an empty environment for bwrap
# itself hides --clearenv).  The mount namespace cannot be switched off: bwrap builds
# the sandbox's whole filesystem in it.
HELPER_SWITCHES = {
    "spawn_env": "an empty environment for the bwrap process",
    "inner_uid": "an unprivileged uid inside the sandbox's user namespace (off: uid 0 there, still without capabilities)",
}
# A switched-off wall clock still ends a run here, so that a test cannot hang forever.
SAFETY_WALL_SECONDS = 20.0

_layers_off: frozenset[str] = frozenset()


@contextlib.contextmanager
def layers_off(*names: str) -> Iterator[None]:
    """TEST ONLY: run without the named protection layers (see LAYERS).

    Reachable from Python code only, never from settings or the environment: the
    test suite uses it to prove each layer on its own.
    """
    global _layers_off
    unknown = set(names) - set(LAYERS) - set(HELPER_SWITCHES)
    if unknown:
        raise ValueError(f"unknown layers {sorted(unknown)}")
    previous = _layers_off
    _layers_off = previous | frozenset(names)
    try:
        yield
    finally:
        _layers_off = previous


def _off(layer: str) -> bool:
    return layer in _layers_off


# --- the host's own directories ---------------------------------------------------


def _private_dir(path: Path, mode: int) -> Path:
    """``path`` as a directory of ours with exactly ``mode``; refuses one someone else made."""
    try:
        path.mkdir(mode=mode)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise SandboxUnavailable(
            f"{path} exists but is not a directory owned by uid {os.geteuid()}; remove it and start again."
        )
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)
    return path


def state_root() -> Path:
    """Where the grader keeps run locks, uid leases, the runner and (by default) job directories.

    Root: ``/run/dikkat-grader`` (root's, 0711: the sandbox's uid may pass through to
    its own job directory but list nothing).  Otherwise a private directory of ours.
    """
    if os.geteuid() == 0:
        return _private_dir(STATE_ROOT, 0o711)
    return _private_dir(Path(tempfile.gettempdir()) / f"dikkat-grader-{os.geteuid()}", 0o700)


def work_root() -> Path:
    """Where per-run job directories are made: $DIKKAT_GRADER_WORK or <state root>/jobs."""
    explicit = os.environ.get("DIKKAT_GRADER_WORK")
    if explicit:
        Path(explicit).parent.mkdir(parents=True, exist_ok=True)
        return _private_dir(Path(explicit), 0o711)
    return _private_dir(state_root() / "jobs", 0o711)


def _locks_dir() -> Path:
    return _private_dir(state_root() / "locks", 0o700)


class RunLock:
    """A run's name and the lock that says its owner is alive.

    The owner holds an exclusive flock on ``locks/<name>.lock`` from before it makes
    anything for the run until after it removed everything; a clean-up deletes a
    run's leftovers only when it can take that lock itself.  Locks work across PID
    namespaces and processes; a dead owner's lock is released by the kernel.
    """

    def __init__(self) -> None:
        for attempt in range(3):
            self.name = f"run-{secrets.token_hex(10)}"
            locks = _locks_dir()
            self.path = locks / f"{self.name}.lock"
            tmp = locks / f".new-{self.name}"
            self.fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
                os.rename(tmp, self.path)  # visible to clean-ups only once it is held
                return
            except FileNotFoundError:
                # Another grader's clean-up took the file between its creation and our lock (it
                # spares young files; a clock jump could still fool it): a new name, a new file.
                os.close(self.fd)
                if attempt == 2:
                    raise
            except BaseException:
                os.close(self.fd)
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self.fd)
        self.fd = -1


@contextlib.contextmanager
def _if_abandoned(name: str) -> Iterator[bool]:
    """Yield True (holding the lock) when run ``name`` has a lock file nobody holds."""
    path = _locks_dir() / f"{name}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield False  # no lock file: not a run of this protocol (or not ours to judge)
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False  # its owner is alive
            return
        yield True
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    finally:
        os.close(fd)


def cleanup_abandoned_runs(backend: cgroups.Backend | None) -> list[str]:
    """Remove cgroups, mounts and job directories of runs whose owner died; the names removed."""
    names = set(backend.run_names() if backend else [])
    root = work_root()
    with contextlib.suppress(OSError):
        names.update(p.name for p in root.iterdir() if p.name.startswith("run-"))
    removed = []
    for name in sorted(names):
        with _if_abandoned(name) as abandoned:
            if not abandoned:
                continue
            if backend is not None:
                backend.remove_stale(name)
            job = root / name
            for mount in (job / "out", job):
                _umount(str(mount))  # EINVAL when not a mount point: harmless
            shutil.rmtree(job, ignore_errors=True)
            removed.append(name)
    # Lock files whose run left nothing (the owner died between its last removal and the unlink),
    # and locks that died before they were renamed into place.
    with contextlib.suppress(OSError):
        for lock in _locks_dir().glob("run-*.lock"):
            name = lock.name[: -len(".lock")]
            if name not in names:
                with _if_abandoned(name):
                    pass
        for new in _locks_dir().glob(".new-run-*"):
            with contextlib.suppress(OSError):
                if time.time() - new.lstat().st_mtime < NEW_LOCK_GRACE_SECONDS:
                    continue  # its creator may be between creating and locking it
                fd = os.open(new, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os.unlink(new)
                except BlockingIOError:
                    pass
                finally:
                    os.close(fd)
    if removed:
        log.warning("removed %d sandbox run(s) left by dead grader processes: %s", len(removed), removed)
    return removed


class UidLease:
    """A host uid used by exactly one live sandbox (root only), held with a lock."""

    def __init__(self) -> None:
        base = int(os.environ.get("DIKKAT_GRADER_UID_BASE", UID_BASE))
        count = int(os.environ.get("DIKKAT_GRADER_UID_COUNT", UID_COUNT))
        slots = _private_dir(state_root() / "uids", 0o700)
        start = random.randrange(count)
        for i in range(count):
            uid = base + (start + i) % count
            fd = os.open(slots / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self.fd = uid, fd
            return
        raise SandboxUnavailable(f"all {count} sandbox uids from {base} are in use")

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


# --- mounts ------------------------------------------------------------------------


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8


def _mount_tmpfs(path: str, size: int | None, uid: int | None = None, mode: int = 0o700) -> bool:
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    sized = f"size={size}," if size is not None else ""
    opts = f"{sized}mode={mode:04o},nr_inodes=4096{owner}".encode()
    res: int = _libc().mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts)
    return res == 0


def _umount(path: str) -> None:
    # Never follow a symlink planted where a mount point was.
    _libc().umount2(path.encode(), MNT_DETACH | UMOUNT_NOFOLLOW)


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
    mount of it under /run/dikkat-grader (needs root).

    bwrap resolves bind sources as the sandbox's uid, so an interpreter under
    /root (pyenv) would otherwise be out of reach.  An existing alias is checked
    against the directory it stands for at every start and mounted again when it
    shows another one (a redeploy replaced the directory): a fix takes effect at
    the next worker start, not at the next reboot.
    """
    if _world_traversable(path):
        return path
    root = state_root()
    digest = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:12]
    alias = root / f"{name}-{digest}"
    # Several grader processes may start at once: one mounts, the others see it.
    with open(root / ".alias.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_mount_point(alias) and not _same_directory(alias, path):
            log.warning("%s showed an older %s; mounting it again", alias, path)
            _umount(str(alias))
        if not _is_mount_point(alias):
            _bind_read_only(path, alias)
    if not _world_traversable(str(alias)):
        raise OSError(f"{alias} is not reachable by an unprivileged uid")
    return str(alias)


def _same_directory(a: Path | str, b: Path | str) -> bool:
    try:
        sa, sb_ = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb_.st_dev, sb_.st_ino)


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


def _runner_for_nobody() -> str:
    """The runner as a root-owned, world-readable file named by its content.

    Copied rather than bind-mounted: a redeploy that changes the runner gives a new
    file at once, and the sandbox never sees the rest of the grader's code.
    """
    data = RUNNER_PATH.read_bytes()
    folder = _private_dir(state_root() / "runner", 0o755)
    target = folder / f"runner-{hashlib.sha256(data).hexdigest()[:16]}.py"
    if not target.exists():
        # A unique temporary name: PIDs repeat across PID namespaces.
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.rename(tmp, target)
    return str(target)


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


# --- what must never be inside the sandbox ----------------------------------------

_protected: tuple[str, ...] = ()


def protect_paths(paths: list[str] | list[str | os.PathLike[str]]) -> None:
    """Refuse to run sandboxes when any of ``paths`` (the database, data directories)
    lies inside a directory the sandbox mounts (``/usr``, the interpreter's prefix, …)."""
    global _protected
    _protected = tuple(os.path.realpath(p) for p in paths if p)
    environment.cache_clear()
    _probe.cache_clear()


def _exposed(binds: list[tuple[str, str]]) -> str | None:
    for source, inside in binds:
        real = os.path.realpath(source)
        for path in _protected:
            if path == real or path.startswith(real.rstrip("/") + "/"):
                return (
                    f"{path} lies inside {source}, which every sandbox mounts read-only at {inside}: "
                    "move the database and Dikkat's data directories (VAR_DIR, GRADER_DATA_DIR) "
                    "out of it."
                )
    return None


# --- discovery ---------------------------------------------------------------------


@dataclass(frozen=True)
class Environment:
    """What the sandbox needs from this host, discovered once per process."""

    bwrap: str
    python: str  # the real interpreter binary (not the venv symlink), same path inside
    binds: tuple[tuple[str, str], ...]  # read-only binds (host source, path inside)
    cgroups: cgroups.Backend | None = field(default=None, hash=False, compare=False)
    can_mount_tmpfs: bool = False
    # Each run gets its own unprivileged host uid (bwrap runs as it via setpriv); False: the caller's uid.
    drop_uid: bool = False
    setpriv: str | None = None
    prlimit: str | None = None  # util-linux prlimit, sets the rlimits before setpriv drops root
    warnings: tuple[str, ...] = ()
    # Why runs would have no process or memory cap for all their processes together (None: capped).
    cap_problem: str | None = None

    @property
    def capped(self) -> bool:
        return self.cap_problem is None


def uncapped_allowed() -> bool:
    return os.environ.get(ALLOW_UNCAPPED_VAR) == "1"


def _cap_problem(backend: cgroups.Backend | None) -> str | None:
    missing = [c for c in ("pids", "memory") if backend is None or c not in backend.caps]
    if not missing:
        return None
    where = backend.description if backend else "no usable cgroup hierarchy"
    return (
        f"no cgroup caps the {' and '.join(missing)} of a run's processes together ({where}). "
        "On cgroup v2 run the grading worker as root in a systemd unit with Delegate=yes "
        "(see docs/deploy.md) or point DIKKAT_GRADER_CGROUP at a delegated cgroup; on cgroup v1 "
        "the pids and memory hierarchies must be mounted. Only for development, "
        f"{ALLOW_UNCAPPED_VAR}=1 grades without them."
    )


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """Discover bwrap, the interpreter, NumPy and the cgroups (cached)."""
    bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
    if not bwrap:
        raise SandboxUnavailable("bubblewrap is not installed; install it with 'apt-get install bubblewrap'.")
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
    system = [
        (f"/{name}", f"/{name}")
        for name in ("usr", "lib", "lib64", "bin", "sbin")
        if os.path.isdir(f"/{name}") and not os.path.islink(f"/{name}")
    ]
    exposed = _exposed(system + binds)
    if exposed:
        raise SandboxUnavailable(exposed)
    runner = str(RUNNER_PATH)

    warnings = []
    drop_uid = False
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
    if os.geteuid() == 0:
        # Run bwrap itself as an unprivileged uid, so that the sandbox's user is
        # unprivileged on the host too, not root behind a user namespace.
        try:
            if not setpriv or not prlimit:
                raise OSError("setpriv or prlimit (util-linux) is not installed")
            binds = [(_source_for_nobody(src, Path(dst).name), dst) for src, dst in binds]
            runner = _runner_for_nobody()
            drop_uid = True
        except OSError as exc:
            warnings.append(
                f"The sandbox runs as the host's root uid behind a user namespace ({exc}); "
                "install util-linux's setpriv and let the grader bind-mount under /run, "
                "or run the grader as an unprivileged user."
            )
    backend = cgroups.discover()
    cap_problem = _cap_problem(backend)
    if backend is not None and "cpu" not in backend.caps:
        warnings.append(
            f"{backend.description} does not count CPU time: the CPU limit is RLIMIT_CPU per process."
        )
    if not drop_uid:
        warnings.append("Runs share the caller's uid, so RLIMIT_NPROC cannot be a per-run process cap.")
    can_mount = _probe_mount()
    cleanup_abandoned_runs(backend)
    if not can_mount:
        warnings.append(
            "Cannot mount a size-limited tmpfs for the output directory (needs "
            "root): a run may fill the disk of the work directory up to its "
            "per-file limit times the number of files."
        )
    if cap_problem:
        if uncapped_allowed():
            log.critical("GRADING WITHOUT CAPS (%s=1, development only): %s", ALLOW_UNCAPPED_VAR, cap_problem)
            warnings.append(f"Grading without caps ({ALLOW_UNCAPPED_VAR}=1): {cap_problem}")
        else:
            log.error("grading refused: %s", cap_problem)
    # Only the runner file, not the rest of the grader's code.
    binds.append((runner, "/grader/runner.py"))
    return Environment(
        bwrap=bwrap,
        python=python,
        binds=tuple(binds),
        cgroups=backend,
        can_mount_tmpfs=can_mount,
        drop_uid=drop_uid,
        setpriv=setpriv if drop_uid else None,
        prlimit=prlimit if drop_uid else None,
        warnings=tuple(warnings),
        cap_problem=cap_problem,
    )


def _usable_environment() -> Environment:
    """The environment, or SandboxUnavailable when runs would not be capped (fail closed)."""
    env = environment()
    if env.cap_problem and not uncapped_allowed():
        raise SandboxUnavailable(env.cap_problem)
    return env


@functools.lru_cache(maxsize=1)
def _probe() -> str | None:
    try:
        env = environment()
        seccomp.filter_bpf()
    except (SandboxUnavailable, seccomp.SeccompUnavailable) as exc:
        return str(exc)[0].upper() + str(exc)[1:]
    with tempfile.TemporaryDirectory(prefix="dikkat-probe-") as d:
        uid = UidLease() if env.drop_uid else None
        try:
            if uid is not None:
                os.chown(d, uid.uid, uid.uid)
            args = _bwrap_args(env, Path(d), Path(d), Limits(), seccomp_fd=None, uid=uid.uid if uid else None)
            argv = args + [
                env.python,
                "-I",
                "-S",
                "-c",
                "import sys; sys.exit(0 if sys.flags.isolated else 3)",
            ]
            try:
                res = subprocess.run(argv, env={}, capture_output=True, timeout=20)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"bubblewrap could not be started ({exc}); check 'apt-get install bubblewrap'."
        finally:
            if uid is not None:
                uid.release()
        if res.returncode != 0:
            err = res.stderr.decode(errors="replace").strip()[:300]
            return (
                f"bubblewrap failed to start a sandbox ({err or res.returncode}). It needs "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) "
                "or root, and 'apt-get install bubblewrap'."
            )
    return None


def sandbox_problem() -> str | None:
    """None when sandboxed grading works on this host, else an English sentence with the fix.

    Runs without a process and memory cap count as not working (fail closed) unless
    DIKKAT_GRADER_ALLOW_UNCAPPED=1.
    """
    problem = _probe()
    if problem:
        return problem
    env = environment()
    if env.cap_problem and not uncapped_allowed():
        return env.cap_problem[0].upper() + env.cap_problem[1:]
    return None


def sandbox_warnings() -> list[str]:
    """Degradations in force (e.g. a missing cgroup controller); empty when fully isolated."""
    try:
        return list(environment().warnings)
    except SandboxUnavailable as exc:
        return [str(exc)]


def reset_environment() -> None:
    """Forget what was discovered (tests that change the host's setup)."""
    environment.cache_clear()
    _probe.cache_clear()


def _bwrap_args(
    env: Environment,
    in_dir: Path,
    out_dir: Path,
    limits: Limits,
    seccomp_fd: int | None,
    extra: tuple[str, ...] = (),
    uid: int | None = None,
    zygote: bool = False,
) -> list[str]:
    """bwrap's command line for a fresh sandbox, or (``zygote``) for a grading zygote: no job
    directories (each child mounts its own), /dev read-only, a /proc without hidden files (a
    child's own /proc needs a fully visible one to be mounted; the child hides them in it) and
    CAP_SYS_ADMIN and CAP_SETPCAP inside the user namespace (for the children's namespaces and
    mounts; every child drops all capabilities before any job code: runner.zygote_runner)."""
    prefix: list[str] = []
    if uid is not None:
        # Limits first (lowering needs no privilege), then drop to the run's own
        # unprivileged uid, then bwrap: two tiny execs instead of a Python preexec_fn.
        assert env.prlimit and env.setpriv
        prefix = [
            env.prlimit,
            *_rlimit_options(limits, nproc=True, zygote=zygote),
            "--",
            env.setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--",
        ]
    namespaces = ["--unshare-user", "--unshare-uts", "--unshare-cgroup-try"]
    namespaces += [] if _off("ipc") else ["--unshare-ipc"]
    namespaces += [] if _off("pid") else ["--unshare-pid"]
    namespaces += [] if _off("network") else ["--unshare-net"]
    a = prefix + [
        env.bwrap,
        *extra,
        *namespaces,
        "--uid",
        "0" if _off("inner_uid") else str(SANDBOX_UID),
        "--gid",
        "0" if _off("inner_uid") else str(SANDBOX_UID),
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        *(["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"] if zygote else ["--cap-drop", "ALL"]),
        "--hostname",
        "sandbox",
        *([] if _off("clearenv") else ["--clearenv"]),
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "OPENBLAS_NUM_THREADS",
        "1",
        "--setenv",
        "OMP_NUM_THREADS",
        "1",
        "--setenv",
        "MKL_NUM_THREADS",
        "1",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in ("lib", "lib64", "bin", "sbin"):
        path = f"/{name}"
        if os.path.islink(path):
            a += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            a += ["--ro-bind", path, path]
    for host, inside in env.binds:
        a += ["--ro-bind", host, inside]
    if zygote:
        a += ["--dir", "/job", "--dir", "/out", "--dir", "/.z", "--proc", "/proc"]
    else:
        a += ["--ro-bind", str(in_dir), "/job", "--bind", str(out_dir), "/out", "--proc", "/proc"]
    # The sandbox user maps to the caller's uid (root when the grader runs as
    # root) and bwrap does not cover /proc/sys then: without this, code inside
    # could write host sysctls such as kernel.core_pattern.  Root-only files
    # giving physical-memory or kernel details are hidden as well.
    for name in () if zygote else HIDDEN_PROC_FILES:
        if os.path.exists(f"/proc/{name}"):
            a += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    sized = [] if _off("tmpfs_size") else ["--size", str(limits.tmpfs_bytes)]
    a += [
        *([] if _off("readonly_proc") else ["--remount-ro", "/proc"]),
        "--dev",
        "/dev",
        *sized,
        "--tmpfs",
        "/tmp",
        *sized,
        "--tmpfs",
        "/dev/shm",
        *(["--remount-ro", "/dev"] if zygote else []),
        "--chdir",
        "/tmp",
        *([] if _off("readonly_root") else ["--remount-ro", "/"]),
    ]
    if seccomp_fd is not None:
        a += ["--seccomp", str(seccomp_fd)]
    return a + ["--"]


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


def _open_readable(path: Path) -> BinaryIO:
    """A new file readable by the sandbox's uid whatever our umask is."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    os.fchmod(fd, 0o644)
    return os.fdopen(fd, "wb")


# The .npy bytes of input arrays, by content: an exercise's cases are the same for every
# submission, so each input is serialised once per grading process, not once per grade.
NPY_CACHE_BYTES = 32 * MIB
NPY_CACHE_ENTRY_BYTES = 1 * MIB
_npy_cache: collections.OrderedDict[tuple[str, tuple[int, ...], bytes], bytes] = collections.OrderedDict()
_npy_cache_lock = threading.Lock()
_npy_cache_size = 0


def _npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` as the bytes of a .npy file (what np.save writes), from the cache when seen before."""
    global _npy_cache_size
    arr = np.asarray(arr, order="C")  # C order, and a 0-d array stays 0-d (not ascontiguousarray)
    # Plain numbers, booleans and strings only: their dtype.str (byte order and size
    # included) names the dtype exactly, which it does not for structured or object dtypes.
    if arr.nbytes > NPY_CACHE_ENTRY_BYTES or arr.dtype.kind not in "biufcSU" or arr.dtype.fields:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, arr, allow_pickle=False)
        return buf.getvalue()
    # dtype, shape and the exact bytes name the file's content.
    key = (arr.dtype.str, tuple(arr.shape), hashlib.sha256(arr.tobytes()).digest())
    with _npy_cache_lock:
        data = _npy_cache.get(key)
        if data is not None:
            _npy_cache.move_to_end(key)
            return data
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    data = buf.getvalue()
    with _npy_cache_lock:
        if key not in _npy_cache:
            _npy_cache[key] = data
            _npy_cache_size += len(data)
            while _npy_cache_size > NPY_CACHE_BYTES:
                _npy_cache_size -= len(_npy_cache.popitem(last=False)[1])
    return data


# The kinds whose dtype.str names the dtype exactly: the runner rebuilds these arrays from
# the raw bytes and the phase's layout (dtype and shape), without parsing a .npy header per
# input. Case inputs are numbers or booleans (spec.py, cases.py); nothing else is staged.
PLAIN_KINDS = "biufcSU"


def _phase_inputs(cases: list[tuple[int, dict[str, np.ndarray]]]) -> tuple[dict[str, Any], list[bytes]]:
    """One phase's inputs as one file's parts (the .npy bytes of every input, one after the
    other) and, per case index, where each input lies in it: the runner opens one file per
    case instead of one per input, and reads plain arrays straight into place."""
    layout: dict[str, Any] = {}
    parts: list[bytes] = []
    offset = 0
    for index, inputs in cases:
        items = []
        for name in sorted(inputs):
            arr = np.asarray(inputs[name], order="C")  # a scalar input stays 0-d
            if arr.dtype.kind not in PLAIN_KINDS or arr.dtype.fields is not None:
                raise ValueError(f"input {name!r} has dtype {arr.dtype}: only numbers, booleans and text")
            data = _npy_bytes(arr)
            # The data follows the .npy header: the file's last nbytes bytes.
            item = {
                "name": name,
                "offset": offset,
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "skip": len(data) - arr.nbytes,
            }
            items.append(item)
            parts.append(data)
            offset += len(data)
        layout[str(index)] = items
    return layout, parts


def _stage_inputs(in_dir: Path, phase: int, cases: list[tuple[int, dict[str, np.ndarray]]]) -> None:
    """The phase's inputs (``inputs.bin``) and where each lies in it (``layout.json``): both
    appear in the sandbox with the phase, so a hidden input's shape and dtype do not exist
    there before its phase does (job.json names the inputs only)."""
    layout, parts = _phase_inputs(cases)
    d = in_dir / f"p{phase}.tmp"
    d.mkdir()
    os.chmod(d, 0o755)
    if parts:  # no files for a phase without inputs (a code blank's visible phase has none)
        with _open_readable(d / "inputs.bin") as f:
            f.writelines(parts)
        with _open_readable(d / "layout.json") as f:
            f.write(json.dumps(layout).encode())
    # Appears in the sandbox all at once.
    d.rename(in_dir / f"p{phase}")


# prlimit(1)'s option names, also the names the runner gets its job's rlimits under.
RLIMIT_NAMES = {
    resource.RLIMIT_CPU: "cpu",
    resource.RLIMIT_AS: "as",
    resource.RLIMIT_FSIZE: "fsize",
    resource.RLIMIT_NOFILE: "nofile",
    resource.RLIMIT_CORE: "core",
    resource.RLIMIT_NPROC: "nproc",
}


def _cgroup_caps() -> set[str]:
    """The cgroup caps in force (all of them, unless the test suite switched one off)."""
    return {c for c, layer in (("pids", "pids_cap"), ("memory", "memory_cap")) if not _off(layer)}


# A zygote's uid is shared by all its children, so its RLIMIT_NPROC caps them together (the
# cgroup caps each run): room for this many runs at their ceiling at once.
ZYGOTE_NPROC_RUNS = 16


def _rlimits(limits: Limits, nproc: bool = False, zygote: bool = False) -> dict[int, tuple[int, int]]:
    # +1 s: the runner's own start (NumPy import) counts against RLIMIT_CPU too.
    cpu = max(1, math.ceil(limits.cpu_seconds)) + 1
    # Address space is not memory: the interpreter, NumPy and OpenBLAS map
    # ~100 MiB they never touch.  The headroom keeps a small memory_mb usable;
    # the memory cgroup caps what is really used.
    memory = limits.memory_mb * MIB + AS_HEADROOM
    values = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (memory, memory),
        resource.RLIMIT_FSIZE: (limits.file_size_bytes, limits.file_size_bytes),
        resource.RLIMIT_NOFILE: (limits.open_files, limits.open_files),
        resource.RLIMIT_CORE: (0, 0),
    }
    if nproc:
        # Counted per host uid: only meaningful because the run's uid is its own.
        values[resource.RLIMIT_NPROC] = (cgroups.pids_cap(limits),) * 2
    if zygote:
        # RLIMIT_CPU counts a process's whole life: a zygote lives for many jobs, and each
        # child starts from zero CPU time and sets the job's own limit (runner.lower_limits).
        del values[resource.RLIMIT_CPU]
        if nproc:
            values[resource.RLIMIT_NPROC] = (cgroups.pids_cap(limits) * ZYGOTE_NPROC_RUNS,) * 2
    switches = {
        resource.RLIMIT_CPU: "cpu_limit",
        resource.RLIMIT_AS: "rlimit_as",
        resource.RLIMIT_FSIZE: "rlimit_fsize",
        resource.RLIMIT_NOFILE: "rlimit_nofile",
        resource.RLIMIT_NPROC: "rlimit_nproc",
    }
    return {r: v for r, v in values.items() if not _off(switches.get(r, ""))}


def _rlimit_options(limits: Limits, nproc: bool = False, zygote: bool = False) -> list[str]:
    return [
        f"--{RLIMIT_NAMES[r]}={soft}:{hard}" for r, (soft, hard) in _rlimits(limits, nproc, zygote).items()
    ]


def _apply_limits(pid: int, limits: Limits, zygote: bool = False) -> None:
    """Set the rlimits of the (still blocked) sandbox process, same uid as ours; descendants inherit them."""
    for res, value in _rlimits(limits, zygote=zygote).items():
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


# Names of the runs this process made lately (the test suite checks none is left behind).
_recent_runs: collections.deque[str] = collections.deque(maxlen=2048)


class Sandbox:
    """One single-use sandbox: spawned (runner started, NumPy imported, waiting),
    then given exactly one job by `run`, then destroyed.

    Spawning and running are split so that a pool can spawn ahead of demand;
    a fresh sandbox is simply spawned and run at once.  The job's files appear
    in the (already bound) ``/job`` directory only at dispatch.
    """

    def __init__(self, limits: Limits):
        env = _usable_environment()
        self.limits = limits
        self.spawned_at = time.monotonic()
        self.cgroups: cgroups.RunCgroup | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.fds: list[int] = []
        self.used = False
        self.warm = False
        self.mounted = self.mounted_job = False
        self.uid_lease: UidLease | None = None
        # The lock first: from now until destroy() ends, no clean-up touches this run.
        self.run_lock = RunLock()
        self.name = self.run_lock.name
        timeline.stamp("host.lock")
        _recent_runs.append(self.name)
        self.job_dir = Path("/nonexistent")  # until work_root() answered
        try:
            self.job_dir = work_root() / self.name
            self._prepare(env)
            timeline.stamp("host.prepare")
            self._spawn(env)
            timeline.stamp("host.spawn")
        except BaseException:
            self.destroy()
            raise

    @property
    def uid(self) -> int | None:
        """The host uid bwrap and the sandbox run as (None: the caller's)."""
        return self.uid_lease.uid if self.uid_lease is not None else None

    def _prepare(self, env: Environment) -> None:
        limits = self.limits
        if env.drop_uid and not _off("uid_drop"):
            self.uid_lease = UidLease()
        uid = self.uid
        # Ours; the sandbox's uid may only pass through it (0711) to in/ and out/.
        mode = 0o711 if uid is not None else 0o700
        self.job_dir.mkdir(mode=mode)
        # The job's files live in RAM: creating and deleting them on disk cost
        # more than the mount.  Inputs are written by us, so the cap is generous.
        self.mounted_job = env.can_mount_tmpfs and _mount_tmpfs(
            str(self.job_dir), JOB_TMPFS_BYTES, None, mode
        )
        os.chmod(self.job_dir, mode)
        self.in_dir, self.out_dir = self.job_dir / "in", self.job_dir / "out"
        self.in_dir.mkdir()
        os.chmod(self.in_dir, 0o755)  # ours, readable (not writable) by the sandbox
        self.out_dir.mkdir(mode=0o700)
        out_size = None if _off("tmpfs_size") else limits.output_dir_bytes
        self.mounted = env.can_mount_tmpfs and _mount_tmpfs(str(self.out_dir), out_size, uid)
        if uid is not None and not self.mounted:
            os.chown(self.out_dir, uid, uid)
        if env.cgroups is not None:
            timeline.stamp("host.jobdir")
            self.cgroups = env.cgroups.create(self.name, limits, caps=_cgroup_caps())

    def _spawn(self, env: Environment) -> None:
        limits = self.limits
        self.ctl_r, self.ctl_w = os.pipe()
        self.status_r, self.status_w = os.pipe()
        seccomp_fd = None if _off("seccomp") else seccomp.filter_fd()
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        self.fds += [self.ctl_r, self.ctl_w, self.status_r, self.status_w, info_r, info_w, block_r, block_w]
        if seccomp_fd is not None:
            self.fds.append(seccomp_fd)
        # bwrap reports the sandbox's pid on --info-fd and then waits on
        # --block-fd before running anything inside: the gap in which we put
        # it into the cgroup and set its rlimits.  No preexec_fn, so the
        # spawn is a cheap vfork even from a large host process.
        sync = ("--info-fd", str(info_w), "--block-fd", str(block_r))
        argv = _bwrap_args(env, self.in_dir, self.out_dir, limits, seccomp_fd, sync, uid=self.uid) + [
            env.python,
            "-I",
            "-S",
            "-B",
            "/grader/runner.py",
            str(self.ctl_r),
            SITE_IN_SANDBOX,
            str(self.status_w),
        ]
        passed = tuple(
            fd for fd in (seccomp_fd, self.ctl_r, self.status_w, info_w, block_r) if fd is not None
        )
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(os.environ) if _off("spawn_env") else {},
            pass_fds=passed,
        )
        for fd in passed:  # the child has its copies
            os.close(fd)
            self.fds.remove(fd)
        child = _read_child_pid(info_r, SPAWN_REPORT_TIMEOUT)
        try:
            if self.cgroups is not None:
                for pid in (self.proc.pid, child):
                    self.cgroups.add(pid)
            if self.uid is None:  # else prlimit(1) set them before bwrap started
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
        timeline.stamp("host.ready")
        return True

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def run(
        self,
        job: dict[str, Any],
        code: str,
        phases: list[list[tuple[int, dict[str, np.ndarray]]]],
        collect: Callable[[OutputDir, int], Any],
        limits: Limits | None = None,
    ) -> RunOutcome:
        """Give the waiting runner its job and supervise it to the end (see `pool.run_sandboxed`).

        ``limits`` are the job's own (default: those the sandbox was spawned with); a pooled
        sandbox spawned with a higher ceiling gets them at hand-off, before the job exists:
        the host lowers the cgroup caps, the runner lowers its rlimits before any student code.
        """
        assert not self.used, "a sandbox runs exactly one job"
        self.used = True
        started = time.monotonic()
        outcome = RunOutcome(exit_code=None)
        try:
            if limits is not None and limits != self.limits:
                if not limits.fits_under(self.limits):
                    raise ValueError("the job's limits exceed what this sandbox was spawned with")
                if self.cgroups is not None:
                    self.cgroups.set_caps(limits, _cgroup_caps())
                self.limits = limits
            # The runner lowers its own to these (a pooled sandbox was spawned with the ceiling's).
            rlimits = {
                RLIMIT_NAMES[r]: list(v)
                for r, v in _rlimits(self.limits, nproc=self.uid is not None).items()
                if r != resource.RLIMIT_CORE
            }
            job = dict(
                job,
                trace=timeline.on(),
                ctl_fd=self.inner_ctl_fd,
                status_fd=self.inner_status_fd,
                no_exec=not _off("seccomp"),
                rlimits=rlimits,
                phases=[[{"index": i, "inputs": sorted(inp)} for i, inp in ph] for ph in phases],
            )
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
            timeline.stamp("host.inputs")
            self._before_job()
            self._publish(0)
            timeline.stamp("host.publish")
            # CPU spent importing NumPy before the job is not the student's.
            cpu_base = self.cgroups.cpu_seconds() if self.cgroups else None
            try:
                os.write(self.ctl_w, b"J")
                timeline.stamp("host.J")
            except BrokenPipeError:
                pass  # the sandbox is already dead: _supervise sees the exit, we report why
            outcome.runner_ready = self.warm
            staged = {0}
            if self.stages_ahead:
                # While phase 0 runs: in/ is out of the sandbox's reach here (see stages_ahead).
                for p in range(1, len(phases)):
                    _stage_inputs(self.in_dir, p, phases[p])
                    staged.add(p)
                timeline.stamp("host.stage.ahead")

            def stage(phase: int) -> None:
                if phase not in staged:
                    _stage_inputs(self.in_dir, phase, phases[phase])
                self._publish(phase)

            exit_fd = self._exit_fd()
            try:
                _supervise(
                    exit_fd,
                    self._log_fd(),
                    self.cgroups,
                    self.limits,
                    started,
                    cpu_base,
                    outcome,
                    self.status_r,
                    self.ctl_w,
                    stage,
                    self.out_path,
                    phases,
                    collect,
                )
            finally:
                self._close_exit_fd(exit_fd)
            timeline.stamp("host.exit")
            self._stop(outcome, cpu_base)
            timeline.stamp("host.stop")
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
                with OutputDir(self.out_path) as out:
                    outcome.collected.append(collect(out, outcome.phases_collected))
                outcome.phases_collected += 1
                timeline.stamp("host.collect.last")
            if timeline.on():
                # The sandbox's own stamps (grader.bench --breakdown): numbers for the bench
                # only, checked and capped by timeline; never part of the outcome.
                with contextlib.suppress(OSError), OutputDir(self.out_path) as out:
                    timeline.add_untrusted(out.read_json("trace.json", cap=timeline.UNTRUSTED_BYTES))
        finally:
            self.destroy()
            outcome.wall_ms = int((time.monotonic() - started) * 1000)
        return outcome

    # Hooks a zygote's child (zygote.ZygoteSandbox) implements otherwise.
    stages_ahead = False
    """May every phase's inputs be written to ``in_dir`` at once, when the job starts?  Not
    here: ``in_dir`` is the sandbox's /job, and a later phase's (hidden) inputs must not exist
    in the sandbox before the host has read the phase before it."""

    @property
    def inner_ctl_fd(self) -> int:
        """The control pipe's fd number as the runner sees it."""
        return self.ctl_r

    @property
    def inner_status_fd(self) -> int:
        return self.status_w

    @property
    def out_path(self) -> str:
        """The output directory as a path the host opens (OutputDir)."""
        return str(self.out_dir)

    def _before_job(self) -> None:
        """Last check before the job's files reach the sandbox (a zygote's child: its cgroup)."""

    def _publish(self, phase: int) -> None:
        """The files staged in ``in_dir`` for ``phase`` are already in the sandbox's /job (a bind)."""

    def _exit_fd(self) -> int:
        """An fd that becomes readable when the sandbox has ended."""
        assert self.proc is not None
        return os.pidfd_open(self.proc.pid)

    def _close_exit_fd(self, fd: int) -> None:
        os.close(fd)

    def _log_fd(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def _stop(self, outcome: RunOutcome, cpu_base: float | None) -> None:
        proc, group = self.proc, self.cgroups
        assert proc is not None
        if proc.poll() is None:
            proc.kill()
        if group is not None:
            group.kill_all()
        proc.wait()
        outcome.exit_code = proc.returncode
        if group is not None:
            outcome.oom_killed = group.oom_killed()
            cpu = group.cpu_seconds()
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
            timeline.stamp("host.kill")
            self.cgroups.remove()
            self.cgroups = None
            timeline.stamp("host.cgroup.remove")
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
            timeline.stamp("host.umount")
        if self.job_dir.name == self.name:
            shutil.rmtree(self.job_dir, ignore_errors=True)
            timeline.stamp("host.rmtree")
        if self.uid_lease is not None:
            self.uid_lease.release()
        self.run_lock.release()  # last: until now a clean-up would have taken us for alive
        timeline.stamp("host.unlock")


def _wall_seconds(limits: Limits) -> float:
    return SAFETY_WALL_SECONDS if _off("wall_clock") else limits.wall_seconds


def _supervise(
    exit_fd: int,
    log_fd: int,
    group: cgroups.RunCgroup | None,
    limits: Limits,
    started: float,
    cpu_base: float | None,
    outcome: RunOutcome,
    status_r: int,
    ctl_w: int,
    stage: Callable[[int], None],
    out_path: str,
    phases: list[list[tuple[int, dict[str, np.ndarray]]]],
    collect: Callable[[OutputDir, int], Any],
) -> None:
    # The wall clock runs from the moment the runner is ready (NumPy imported):
    # a loaded host must not eat the student's time.  Until then a generous
    # start-up budget applies; missing it is our failure, not theirs.
    deadline = started + (_wall_seconds(limits) if outcome.runner_ready else STARTUP_BUDGET)
    cpu_group = None if _off("cpu_limit") else group
    log_buf = bytearray()
    status_buf = bytearray()
    received = {"log": 0, "status": 0}
    sel = selectors.DefaultSelector()
    try:
        sel.register(exit_fd, selectors.EVENT_READ, "exit")
        sel.register(log_fd, selectors.EVENT_READ, "log")
        sel.register(status_r, selectors.EVENT_READ, "status")
        exited = False
        while not exited:
            now = time.monotonic()
            if now >= deadline:
                outcome.timed_out = True
                break
            cpu = cpu_group.cpu_seconds() if cpu_group is not None else None
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
                    timeline.stamp("host.status." + line[:2].decode(errors="replace"))
                    if line == b"S":
                        outcome.secured = True  # written before any student code: cannot be withheld
                    if line == b"R" and not outcome.runner_ready:
                        outcome.runner_ready = True
                        deadline = time.monotonic() + _wall_seconds(limits)
                        cpu_base = group.cpu_seconds() if group else None  # the import is not theirs
                    elif line == b"P%d" % p and p + 1 < len(phases):
                        with OutputDir(out_path) as out:
                            outcome.collected.append(collect(out, p))
                        outcome.phases_collected += 1
                        timeline.stamp("host.collect")
                        stage(p + 1)
                        timeline.stamp("host.stage")
                        try:
                            os.write(ctl_w, b"G")
                        except OSError:
                            pass
                if len(status_buf) > 64:
                    status_buf.clear()
        if exited:
            # Drain what is left of the log without waiting for stragglers.
            try:
                os.set_blocking(log_fd, False)
                chunk = os.read(log_fd, 8192)
                log_buf += chunk[: max(0, 8192 - len(log_buf))]
            except (OSError, ValueError, TypeError):
                pass
    finally:
        sel.close()
    outcome.log_tail = log_buf.decode("utf-8", errors="replace")
