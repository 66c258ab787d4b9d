"""Control groups for sandbox runs: one fresh child cgroup per run, on cgroup v2 or v1.

A run's cgroup caps every process of the run *together*: ``pids`` (fork and thread
bombs) and ``memory`` (a memory bomb spread over many children), counts its CPU time
(polled by the host against the run's CPU limit) and ends the whole tree at once.

* **cgroup v2** (the only hierarchy on current Debian and Ubuntu): runs live in
  ``<delegated cgroup>/dikkat-grader/<run>`` with ``pids.max``, ``memory.max``,
  ``memory.swap.max = 0`` and ``memory.oom.group = 1``; ``memory.events`` tells an OOM
  kill, ``cpu.stat`` the CPU used and ``cgroup.kill`` ends the tree.  The delegated
  cgroup is ``DIKKAT_GRADER_CGROUP`` when set (a systemd unit with ``Delegate=yes``),
  else the worker's own cgroup; the worker moves itself into a leaf
  (``dikkat-workers``) there, because v2 lets a cgroup hand controllers to its
  children only when it holds no process itself.  As a last resort (root, a cgroup
  that other processes share) the hierarchy's root is used.
* **cgroup v1** (older hosts, and hybrid ones such as the machines this was built on):
  one child per controller under ``<own cgroup>/dikkat-grader`` for ``pids``,
  ``memory`` and ``cpuacct``.

`discover` prefers whichever hierarchy offers both caps, v2 first.  A backend without
them still gives membership, CPU accounting and a reliable kill; whether grading may
go on without caps is the sandbox's decision (it fails closed).

Runs are named ``run-<random>``; who owns a run is told by a lock its owner holds
(see `sandbox.RunLock`), never by a process id, which means nothing across PID
namespaces.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .limits import MIB, Limits

log = logging.getLogger("grader.cgroups")

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "dikkat-grader"
WORKERS_LEAF = "dikkat-workers"
V1_CONTROLLERS = ("pids", "memory", "cpuacct")
V2_CONTROLLERS = ("pids", "memory")
# bwrap itself, its init process inside the PID namespace, the runner.
OVERHEAD_PIDS = 3


def memory_cap_bytes(limits: Limits) -> int:
    """All of a run's memory: its processes plus the tmpfs pages it writes (charged to it)."""
    return limits.memory_mb * MIB + 2 * limits.tmpfs_bytes + limits.output_dir_bytes


def pids_cap(limits: Limits) -> int:
    return limits.processes + OVERHEAD_PIDS


class RunCgroup(Protocol):
    """The cgroup(s) of one run."""

    def add(self, pid: int) -> None: ...
    def cpu_seconds(self) -> float | None: ...
    def oom_killed(self) -> bool: ...
    def members(self) -> list[int]: ...
    def set_caps(self, limits: Limits, caps: set[str] | frozenset[str]) -> None: ...
    def kill_all(self, timeout: float = 3.0) -> bool: ...
    def remove(self) -> None: ...


class Backend(Protocol):
    version: str
    caps: frozenset[str]  # of "pids", "memory", "cpu"
    description: str

    def create(self, name: str, limits: Limits, *, caps: set[str] | frozenset[str] = ...) -> RunCgroup: ...
    def run_names(self) -> list[str]: ...
    def remove_stale(self, name: str) -> None: ...


def _read_ints(path: Path) -> list[int]:
    try:
        return [int(p) for p in path.read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_members(
    members: Callable[[], list[int]], timeout: float, kill: Callable[[], bool] | None = None
) -> bool:
    """SIGKILL every member until none is left (a forking tree may need several rounds)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = members()
        if not pids:
            return True
        if time.monotonic() > deadline:
            log.error("processes survived in a sandbox cgroup: %s", pids)
            return False
        if kill is None or not kill():
            for pid in pids:
                if pid <= 0:
                    continue  # kill(0) or kill(-1) would hit our own group or everything
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        time.sleep(0.001)


def _rmdir(path: Path) -> None:
    for _ in range(300):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)  # the kernel is still tearing members down
    log.error("could not remove cgroup %s", path)


# --- cgroup v2 ---------------------------------------------------------------------


@dataclass
class V2Run:
    path: Path
    has_kill: bool

    def add(self, pid: int) -> None:
        with open(self.path / "cgroup.procs", "w") as f:
            f.write(str(pid))

    def cpu_seconds(self) -> float | None:
        try:
            for line in (self.path / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def oom_killed(self) -> bool:
        try:
            text = (self.path / "memory.events").read_text()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key in ("oom_kill", "oom_group_kill") and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def set_caps(self, limits: Limits, caps: set[str] | frozenset[str]) -> None:
        if "pids" in caps and (self.path / "pids.max").exists():
            (self.path / "pids.max").write_text(str(pids_cap(limits)))
        if "memory" in caps and (self.path / "memory.max").exists():
            (self.path / "memory.max").write_text(str(memory_cap_bytes(limits)))

    def members(self) -> list[int]:
        # 0: a process in a PID namespace we cannot see (never passed to kill: kill(0) is our group).
        return sorted({pid for pid in _read_ints(self.path / "cgroup.procs") if pid > 0})

    def _kill(self) -> bool:
        if not self.has_kill:
            return False
        try:
            (self.path / "cgroup.kill").write_text("1")
            return True
        except OSError:
            return False

    def kill_all(self, timeout: float = 3.0) -> bool:
        # cgroup.kill ends every member at once, including ones forked meanwhile and ones in
        # PID namespaces we cannot see (listed as 0, so `members` leaves them out).
        def members() -> list[int]:
            pids = _read_ints(self.path / "cgroup.procs")
            return sorted(set(pids)) if self.has_kill else [p for p in pids if p > 0]

        return _kill_members(members, timeout, self._kill)

    def remove(self) -> None:
        _rmdir(self.path)


@dataclass
class V2Backend:
    """Runs as children of ``<base>/dikkat-grader``.

    Discovery only reads; the first run prepares the base (`prepare`): the worker moves
    into the ``dikkat-workers`` leaf if it sits in the base itself (a cgroup that holds
    processes cannot hand controllers to its children), then ``pids`` and ``memory`` are
    enabled in the base and in ``dikkat-grader``.
    """

    base: Path
    caps: frozenset[str]
    description: str
    version: str = "v2"
    _prepared: bool = field(default=False, repr=False)

    @property
    def parent(self) -> Path:
        return self.base / GROUP

    def prepare(self) -> None:
        """Make the base able to hand ``pids`` and ``memory`` to the runs (idempotent)."""
        if self._prepared:
            return
        if not _is_root(self.base) and _others(self.base, include_self=True):
            leaf = self.base / WORKERS_LEAF
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
        wanted = set(self.caps) & set(V2_CONTROLLERS)
        _enable(self.base, wanted)
        self.parent.mkdir(exist_ok=True)
        missing = wanted - _enable(self.parent, wanted)
        if missing:
            raise OSError(f"cannot enable {sorted(missing)} for the runs in {self.parent}")
        self._prepared = True

    def create(
        self, name: str, limits: Limits, *, caps: set[str] | frozenset[str] = frozenset(V2_CONTROLLERS)
    ) -> V2Run:
        self.prepare()
        path = self.parent / name
        path.mkdir()
        run = V2Run(path, _has_kill(path))
        try:
            run.set_caps(limits, caps & self.caps)
            if "memory" in caps & self.caps and (path / "memory.swap.max").exists():
                # Like v1's memsw limit: no swap to spill into.  (No memory.oom.group: as on
                # v1 the kernel kills the largest process and the runner reports the rest.)
                (path / "memory.swap.max").write_text("0")
        except OSError:
            run.remove()
            raise
        return run

    def run_names(self) -> list[str]:
        try:
            return [p.name for p in self.parent.iterdir() if p.is_dir() and p.name.startswith("run-")]
        except OSError:
            return []

    def remove_stale(self, name: str) -> None:
        path = self.parent / name
        run = V2Run(path, _has_kill(path))
        run.kill_all(timeout=1.0)
        run.remove()


def _has_kill(path: Path) -> bool:
    return (path / "cgroup.kill").exists()


def _is_root(path: Path) -> bool:
    """The hierarchy's real root (no ``cgroup.type``), not a cgroup namespace's root."""
    return (path / "cgroup.procs").exists() and not (path / "cgroup.type").exists()


def _others(path: Path, include_self: bool = False) -> list[int]:
    """Processes in ``path`` itself, but for us; 0 stands for one in another PID namespace."""
    mine = os.getpid()
    return [pid for pid in _read_ints(path / "cgroup.procs") if include_self or pid != mine]


def cgroup2_mount() -> Path | None:
    """Where the cgroup2 hierarchy is mounted (``/sys/fs/cgroup`` or, on hybrid hosts, ``…/unified``)."""
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return Path(left.split()[4].encode().decode("unicode_escape"))
    except OSError:
        pass
    return None


def own_cgroup_v2(mount: Path) -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return mount / line[3:].lstrip("/")
    except OSError:
        pass
    return None


def _controllers(path: Path, name: str = "cgroup.controllers") -> set[str]:
    try:
        return set((path / name).read_text().split())
    except OSError:
        return set()


def _enable(path: Path, controllers: set[str]) -> set[str]:
    """Enable ``controllers`` for the children of ``path``, one at a time (a write is all or
    nothing); those now enabled."""
    for controller in sorted(controllers & _controllers(path) - _controllers(path, "cgroup.subtree_control")):
        try:
            (path / "cgroup.subtree_control").write_text(f"+{controller}")
        except OSError as exc:
            log.info("cannot enable %s in %s: %s", controller, path, exc)
    return controllers & _controllers(path, "cgroup.subtree_control")


def plan_v2(base: Path) -> V2Backend | None:
    """What ``base`` could offer the runs, without changing anything."""
    if not (base / "cgroup.procs").exists():
        return None
    if not os.access(base / "cgroup.subtree_control", os.W_OK) or not os.access(
        base / "cgroup.procs", os.W_OK
    ):
        return None
    available = _controllers(base) & set(V2_CONTROLLERS)
    note = ""
    if not _is_root(base):
        others = _others(base)
        if others:
            # Moving only ourselves out would leave them: the base could enable nothing.
            note = (
                f"; {base} also holds {len(others)} other process(es), so it cannot pass controllers "
                "to the sandbox: run the grading workers in their own systemd unit with Delegate=yes"
            )
            available = set()
    caps = frozenset(available | {"cpu"})  # cpu.stat is a core file
    return V2Backend(base, caps, f"cgroup v2 at {base / GROUP}{note}")


def discover_v2(base: Path | None = None) -> V2Backend | None:
    """The v2 backend: ``base``, else DIKKAT_GRADER_CGROUP, else our own cgroup (its parent when
    we sit in a ``dikkat-workers`` leaf already, e.g. started by `serve`), else, as root, the
    hierarchy's root (runs then live outside the worker's unit, each still capped)."""
    mount = cgroup2_mount()
    if mount is None:
        return None
    explicit = os.environ.get("DIKKAT_GRADER_CGROUP")
    if base is not None:
        candidates = [base]
    elif explicit:
        candidates = [Path(explicit)]
    else:
        own = own_cgroup_v2(mount)
        if own is not None and own.name == WORKERS_LEAF:
            own = own.parent
        candidates = [own, mount] if own is not None and own != mount else [mount]
    best: V2Backend | None = None
    for candidate in candidates:
        backend = plan_v2(candidate)
        if backend is None:
            continue
        if {"pids", "memory"} <= backend.caps:
            return backend
        best = best or backend
    return best


def prepare_for_workers() -> None:
    """Called by a process that starts grading workers (`serve`): on cgroup v2 it moves
    itself into the ``dikkat-workers`` leaf first, so that the workers it starts are born
    there and their parent cgroup stays free to hand controllers to the runs."""
    backend = discover_v2()
    if backend is not None and {"pids", "memory"} <= backend.caps:
        backend.prepare()


# --- cgroup v1 ---------------------------------------------------------------------


@dataclass
class V1Run:
    paths: dict[str, Path] = field(default_factory=dict)

    def add(self, pid: int) -> None:
        for path in self.paths.values():
            with open(path / "cgroup.procs", "w") as f:
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

    def set_caps(self, limits: Limits, caps: set[str] | frozenset[str]) -> None:
        if "pids" in caps and "pids" in self.paths:
            (self.paths["pids"] / "pids.max").write_text(str(pids_cap(limits)))
        if "memory" in caps and "memory" in self.paths:
            limit = str(memory_cap_bytes(limits))
            memsw = self.paths["memory"] / "memory.memsw.limit_in_bytes"
            # v1 wants memsw >= limit at every moment: lower it after the limit, raise it before.
            order = ["memory.limit_in_bytes", memsw.name]
            if memsw.exists() and int(memsw.read_text()) < int(limit):
                order.reverse()
            for name in order:
                path = self.paths["memory"] / name
                if path.exists():
                    # A failed write (e.g. swap already in use above the new limit) must not leave
                    # the job with the ceiling's memory+swap: the run fails, never runs wider.
                    path.write_text(limit)

    def members(self) -> list[int]:
        pids: set[int] = set()
        for path in self.paths.values():
            pids.update(pid for pid in _read_ints(path / "cgroup.procs") if pid > 0)
        return sorted(pids)

    def kill_all(self, timeout: float = 3.0) -> bool:
        return _kill_members(self.members, timeout)

    def remove(self) -> None:
        for path in self.paths.values():
            _rmdir(path)


@dataclass
class V1Backend:
    parents: dict[str, Path]
    caps: frozenset[str]
    description: str
    version: str = "v1"

    def create(
        self, name: str, limits: Limits, *, caps: set[str] | frozenset[str] = frozenset(V2_CONTROLLERS)
    ) -> V1Run:
        run = V1Run()
        try:
            for controller, parent in self.parents.items():
                path = parent / name
                path.mkdir()
                run.paths[controller] = path
            if "pids" in caps and "pids" in run.paths:
                (run.paths["pids"] / "pids.max").write_text(str(pids_cap(limits)))
            if "memory" in caps and "memory" in run.paths:
                limit = str(memory_cap_bytes(limits))
                mem = run.paths["memory"]
                (mem / "memory.limit_in_bytes").write_text(limit)
                memsw = mem / "memory.memsw.limit_in_bytes"
                if memsw.exists():
                    try:
                        memsw.write_text(limit)
                    except OSError:
                        pass
        except OSError:
            run.remove()
            raise
        return run

    def run_names(self) -> list[str]:
        names: set[str] = set()
        for parent in self.parents.values():
            try:
                names.update(p.name for p in parent.iterdir() if p.is_dir() and p.name.startswith("run-"))
            except OSError:
                pass
        return sorted(names)

    def remove_stale(self, name: str) -> None:
        run = V1Run({c: p / name for c, p in self.parents.items() if (p / name).is_dir()})
        run.kill_all(timeout=1.0)
        run.remove()


def _own_cgroup_v1(controller: str) -> Path | None:
    mount = CGROUP_ROOT / controller
    if not (mount / "cgroup.procs").exists() or (mount / "cgroup.controllers").exists():
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


def discover_v1() -> V1Backend | None:
    if os.geteuid() != 0:
        return None
    parents: dict[str, Path] = {}
    for controller in V1_CONTROLLERS:
        own = _own_cgroup_v1(controller)
        if own is None:
            continue
        parent = own / GROUP
        try:
            parent.mkdir(exist_ok=True)
        except OSError:
            continue
        parents[controller] = parent
    if not parents:
        return None
    caps = {c for c in ("pids", "memory") if c in parents} | ({"cpu"} if "cpuacct" in parents else set())
    where = ", ".join(str(p) for p in parents.values())
    return V1Backend(parents, frozenset(caps), f"cgroup v1 ({where})")


# --- choosing ----------------------------------------------------------------------


def discover() -> Backend | None:
    """The hierarchy that caps processes and memory (v2 first), else the best partial one."""
    found: list[Backend] = []
    for probe in (discover_v2, discover_v1):
        try:
            backend = probe()
        except OSError as exc:
            log.info("cgroup discovery failed: %s", exc)
            continue
        if backend is None:
            continue
        if {"pids", "memory"} <= backend.caps:
            return backend
        found.append(backend)
    return max(found, key=lambda b: len(b.caps), default=None)
