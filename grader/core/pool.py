"""An optional pool of pre-spawned, single-use sandboxes.

Enable it in the process that grades (after any fork: the refill thread does
not survive a fork), e.g. in the grading worker's start-up.

Each pooled sandbox is an ordinary `Sandbox`: the same namespaces, seccomp
filter, cgroups and rlimits; its runner has imported NumPy and waits for
exactly one job, after which it is destroyed.  Nothing is reused between
submissions, so isolation is unchanged; only the start-up cost moves off the
critical path.  A background thread keeps ``size`` sandboxes ready.

Enable it with ``enable_pool(size)`` (or the environment variable
``DIKKAT_GRADER_POOL=N`` read by `enable_from_env`).  Pooled sandboxes are
spawned with the highest limits a job may ask for (`Limits.ceiling`); at
hand-off the host lowers the cgroup caps to the job's and the runner lowers
its rlimits before any student code runs, so every job, whatever its own
limits, can take a warm sandbox.  Idle sandboxes older than ``max_idle_seconds`` are
replaced so that a long-idle one does not sit on memory forever.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import zygote
from .limits import Limits
from .results import OutputDir
from .sandbox import RunOutcome, Sandbox

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("grader.pool")


class SandboxPool:
    def __init__(self, size: int, limits: Limits | None = None, max_idle_seconds: float = 300.0):
        if size < 1:
            raise ValueError("pool size must be at least 1")
        self.size = size
        # Spawned with the most any job may ask for; each job's own limits are applied at hand-off.
        self.limits = limits or Limits.ceiling()
        self.max_idle_seconds = max_idle_seconds
        self._ready: list[Sandbox] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._refill_loop, name="grader-pool", daemon=True)
        self._thread.start()

    def take(self, limits: Limits) -> Sandbox | None:
        """A ready sandbox for these limits, or None (the caller then spawns one)."""
        if not limits.fits_under(self.limits) or self._closed:
            return None
        with self._lock:
            while self._ready:
                sandbox = self._ready.pop(0)
                if sandbox.alive():
                    self._wake.set()
                    return sandbox
                sandbox.destroy()
        self._wake.set()
        return None

    def _refill_loop(self) -> None:
        while not self._closed:
            with self._lock:
                missing = self.size - len(self._ready)
                stale = [s for s in self._ready if time.monotonic() - s.spawned_at > self.max_idle_seconds]
                for s in stale:
                    self._ready.remove(s)
            for s in stale:
                s.destroy()
            if missing + len(stale) > 0:
                try:
                    # With the grading zygote on, a child of it (already warm), else a fresh one.
                    sandbox = zygote.take(self.limits) or Sandbox(self.limits)
                    if not sandbox.warm and not sandbox.wait_warm():
                        sandbox.destroy()
                        raise RuntimeError("a pre-spawned sandbox did not get ready")
                except Exception:
                    log.exception("could not pre-spawn a sandbox")
                    self._wake.wait(1.0)
                    self._wake.clear()
                    continue
                with self._lock:
                    if self._closed:  # set by close() in another thread meanwhile
                        sandbox.destroy()  # type: ignore[unreachable]  # mypy cannot see that thread
                        return
                    self._ready.append(sandbox)
                continue
            self._wake.wait(min(30.0, self.max_idle_seconds))
            self._wake.clear()

    def close(self) -> None:
        """Stop refilling and destroy every idle sandbox."""
        self._closed = True
        self._wake.set()
        self._thread.join(timeout=15)
        with self._lock:
            ready, self._ready = self._ready, []
        for sandbox in ready:
            sandbox.destroy()

    def ready_count(self) -> int:
        with self._lock:
            return len(self._ready)

    def wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready_count() >= self.size:
                return True
            time.sleep(0.005)
        return False


_pool: SandboxPool | None = None


def enable_pool(size: int, limits: Limits | None = None) -> SandboxPool:
    """Start (or replace) the process-wide pool used by grade()/run_reference()."""
    global _pool
    disable_pool()
    _pool = SandboxPool(size, limits)
    # Idle sandboxes die with this process anyway (--die-with-parent); this also
    # removes their cgroups and directories at once instead of at the next start.
    atexit.register(disable_pool)
    return _pool


def disable_pool() -> None:
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.close()


def enable_from_env() -> SandboxPool | None:
    """Enable the pool when ``DIKKAT_GRADER_POOL`` holds a positive size, and the grading
    zygote when ``GRADER_ZYGOTE`` is on (zygote.py; off by default)."""
    zygote.enable_from_env()
    try:
        size = int(os.environ.get("DIKKAT_GRADER_POOL", "0"))
    except ValueError:
        size = 0
    return enable_pool(size) if size > 0 else None


def take(limits: Limits) -> Sandbox | None:
    pool = _pool
    return pool.take(limits) if pool is not None else None


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
    The sandbox comes from the pool when one is enabled (see below; the job's limits are
    applied at hand-off), else from the grading zygote when it is enabled and well (a child
    that builds its own fresh sandbox: zygote.py), else it is spawned now with them.
    """
    sandbox = take(limits) or zygote.take(limits) or Sandbox(limits)
    return sandbox.run(job, code, phases, collect, limits=limits)
