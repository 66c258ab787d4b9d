"""The grading zygote (``GRADER_ZYGOTE=1``; off by default): one warm process per grading
process that has imported the runner and NumPy, never runs student code, and forks one
child per job that builds its own fresh sandbox before the job's code runs.

The zygote itself is an ordinary sandbox (`sandbox._bwrap_args` with ``zygote=True``): the
same read-only filesystem, no network, an unprivileged host uid of its own, its own cgroup,
bwrap's seccomp filter minus mount/umount2/unshare, and CAP_SYS_ADMIN and CAP_SETPCAP inside
its user namespace only (for its children's namespaces and mounts).  What a child does is in
runner.py (``zygote_child``, ``zygote_init``, ``zygote_runner``); the threat model is in
README.md.

Host side, per job (`ZygoteSandbox`, a `Sandbox` with the same protocol and supervision):
a job directory with ``in/`` (the host stages inputs there as for a fresh sandbox) and a
cgroup of its own; a socketpair, the control and status pipes, a log pipe and an fd of
``in/`` go to the zygote; the child reports itself at once ("m"; the kernel adds its pid as
the host sees it, SCM_CREDENTIALS), and the host moves that pid into the run's cgroup while
the child unshares, mounts, sends "M" with the fd of its fresh ``/out`` and forks its init and
runner.  At the runner's "R" (`ZygoteSandbox.wait_warm`) the host moves init and runner too,
which were forked before or during the child's move; only then may the job start ("J":
`_before_job` refuses it otherwise), so no job code ever runs outside the run's cgroup.  From
then on `Sandbox.run` drives the job; the child copies each staged phase into its read-only
``/job`` when asked ("C<p>"/"c<p>") and reports its init's exit status ("E<code>"), when every
process of the job is already gone.

`ZygoteManager` keeps one zygote: it retires a zygote after ``max_jobs`` jobs or
``max_age`` seconds (it ends once its last child has), and whenever a zygote is dead or
misbehaves (a child not reporting, not ready in time) the job gets a fresh sandbox and a
new zygote starts in the background.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from . import sandbox as sb
from . import seccomp, timeline
from .cgroups import RunCgroup
from .limits import Limits

log = logging.getLogger("grader.zygote")

ENV_VAR = "GRADER_ZYGOTE"
CHILD_REPORT_TIMEOUT = 5.0  # seconds for a child to build its sandbox and report itself
CHILD_READY_TIMEOUT = 5.0  # then for its runner to say "R" (NumPy is already imported)
COPY_TIMEOUT = 10.0  # seconds for a child to copy one phase's inputs into its /job
INNER_CTL_FD, INNER_STATUS_FD = 3, 4  # the runner's pipes inside a child (runner.zygote_runner)
# A zygote's successor is started when it is this far towards its recycling (jobs or age), so
# that jobs rarely find no zygote ready.
NEARLY_DUE = 0.9


# Since this process started: jobs handed to a zygote's child, and jobs that fell back to a
# fresh sandbox because no zygote was ready or it failed (the test suite reports both).
# child_cpu: CPU seconds of the children's cgroups, set-up included (grader.bench).
totals = {"children": 0, "fallbacks": 0, "child_cpu": 0.0}


class ZygoteBroken(RuntimeError):
    """The zygote is dead or misbehaved: the job goes to a fresh sandbox, the zygote is replaced."""


def _recv_exactly(sock: socket.socket, timeout: float) -> tuple[bytes, list[int], int | None]:
    """One message with its fds and the sender's pid (SCM_CREDENTIALS, in our PID namespace)."""
    ready, _, _ = select.select([sock], [], [], timeout)
    if not ready:
        raise ZygoteBroken("no answer from the zygote's child in time")
    fds = array.array("i")
    ucred = struct.calcsize("3i")
    msg, ancdata, _flags, _addr = sock.recvmsg(
        64, socket.CMSG_SPACE(ucred) + socket.CMSG_SPACE(4 * fds.itemsize)
    )
    pid = None
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
        elif level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("3i", data[:ucred])[0]
    return msg, list(fds), pid


def _parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _descendants(pid: int) -> list[int]:
    """Every descendant of ``pid`` (host pids, from /proc's children lists of each thread)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    todo.append(child)
    return found


def _exited(pidfd: int) -> bool:
    return bool(select.select([pidfd], [], [], 0)[0])


def _child_pidfd(pid: int, zygote_pid: int) -> int:
    """A pidfd on ``pid`` once it is proven to be a live child of the zygote; nothing of ours
    ever refers to (let alone signals) a process that is not.

    The kernel vouches for the pid (a process may only name itself, or with privilege one it
    sees in its own PID namespace), but the child may have died and its pid been given to
    another process since.  So: open the pidfd, check the parent of whatever now has that
    pid, then check the pidfd's process is still alive: a live process keeps its pid, so the
    parent checked was that of the pidfd's process.  On any doubt the pidfd is closed unused.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as exc:
        raise ZygoteBroken(f"pid {pid} reported by the zygote's child is gone ({exc})") from exc
    if _parent_of(pid) != zygote_pid or _exited(pidfd):
        os.close(pidfd)
        raise ZygoteBroken(f"pid {pid} reported by the zygote's child is not a live child of the zygote")
    return pidfd


class Zygote:
    """One zygote process (bwrap + runner.py --zygote), with its own uid, cgroup and run lock."""

    def __init__(self, limits: Limits, max_jobs: int, max_age: float) -> None:
        env = sb._usable_environment()
        self.limits = limits
        self.max_jobs, self.max_age = max_jobs, max_age
        self.started_at = time.monotonic()
        self.jobs = self.active = 0
        self.retired = self.broken = self.closed = False
        self._lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.cgroup: RunCgroup | None = None
        self.uid_lease: sb.UidLease | None = None
        self.pids: set[int] = set()
        self.zygote_pid = 0  # the zygote itself, as the host sees it
        self.on_nearly_due: Callable[[], None] | None = None
        self.run_lock = sb.RunLock()
        self.name = self.run_lock.name
        self.sock: socket.socket | None = None
        try:
            self._start(env)
        except BaseException:
            self.close()
            raise

    def _start(self, env: sb.Environment) -> None:
        if env.drop_uid:
            self.uid_lease = sb.UidLease()
        uid = self.uid_lease.uid if self.uid_lease is not None else None
        if env.cgroups is not None:
            self.cgroup = env.cgroups.create(self.name, self.limits, caps=sb._cgroup_caps())
        host, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = host
        zygote_filter = seccomp.filter_fd(zygote=True)
        full_filter = seccomp.filter_fd(data=seccomp.filter_bpf())
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        passed = (zygote_filter, full_filter, inner.fileno(), info_w, block_r)
        try:
            sync = ("--info-fd", str(info_w), "--block-fd", str(block_r))
            nowhere = Path("/nonexistent")
            argv = sb._bwrap_args(
                env, nowhere, nowhere, self.limits, zygote_filter, sync, uid=uid, zygote=True
            ) + [
                env.python,
                "-I",
                "-S",
                "-B",
                "/grader/runner.py",
                "--zygote",
                str(inner.fileno()),
                sb.SITE_IN_SANDBOX,
                str(full_filter),
            ]
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={},
                pass_fds=passed,
            )
            for fd in passed:
                if fd != inner.fileno():
                    os.close(fd)
            inner.close()
            child = sb._read_child_pid(info_r, sb.SPAWN_REPORT_TIMEOUT)
            if self.cgroup is not None:
                for pid in (self.proc.pid, child):
                    self.cgroup.add(pid)
            if uid is None:
                sb._apply_limits(child, self.limits, zygote=True)
            os.write(block_w, b"g")
        finally:
            os.close(info_r)
            os.close(block_w)
        threading.Thread(target=self._drain_log, name="grader-zygote-log", daemon=True).start()
        ready, _, _ = select.select([host], [], [], sb.STARTUP_BUDGET)
        if not ready or host.recv(16) != b"R":
            raise ZygoteBroken("the zygote did not get ready")
        # bwrap, its pid 1 and the zygote itself (the test suite's host guard spares them).
        self.pids = {self.proc.pid, child}
        try:
            self.zygote_pid = int(Path(f"/proc/{child}/task/{child}/children").read_text().split()[0])
        except (OSError, ValueError, IndexError) as exc:
            raise ZygoteBroken(f"cannot find the zygote's process ({exc})") from exc
        self.pids.add(self.zygote_pid)

    def _drain_log(self) -> None:
        """The zygote's own output (a child's traceback before its job's pipes took over): logged."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            log.warning("zygote %s: %s", self.name, line.decode(errors="replace").rstrip()[:500])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None and not self.broken

    def due(self, share: float = 1.0) -> bool:
        """Should it take no more jobs (recycled after max_jobs jobs or max_age seconds)?
        ``share`` < 1: is it that far towards that (its successor is started ahead)."""
        age = time.monotonic() - self.started_at
        return self.jobs >= self.max_jobs * share or age > self.max_age * share

    def fork_child(self, params: dict[str, object], fds: list[int]) -> None:
        """Ask the zygote for one child with these fds (socket, ctl, status, log, in/)."""
        with self._lock:
            if self.sock is None or self.retired or not self.alive():
                raise ZygoteBroken("the zygote is not running")
            try:
                socket.send_fds(self.sock, [json.dumps(params).encode()], fds)
            except OSError as exc:
                self.broken = True
                raise ZygoteBroken(f"cannot reach the zygote ({exc})") from exc
            self.jobs += 1
            self.active += 1
            totals["children"] += 1
            if self.on_nearly_due is not None and self.due(NEARLY_DUE):
                self.on_nearly_due()

    def job_done(self) -> None:
        with self._lock:
            self.active -= 1
            last = self.retired and self.active == 0
        if last:
            self.close()

    def retire(self) -> None:
        """Take no more jobs; end once the last running child has ended."""
        with self._lock:
            self.retired = True
            idle = self.active == 0
        if idle:
            self.close()

    def close(self) -> None:
        """End the zygote (its children die with its PID namespace) and remove what it had."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self.sock is not None:
            self.sock.close()  # the zygote reads EOF and returns
        if self.proc is not None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            if self.cgroup is not None:
                self.cgroup.kill_all()
            self.proc.wait()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self.uid_lease is not None:
            self.uid_lease.release()
        self.run_lock.release()


class ZygoteSandbox(sb.Sandbox):
    """One job in a child of a zygote: driven exactly like a fresh `Sandbox` (run, wait_warm)."""

    def __init__(self, zygote: Zygote, limits: Limits) -> None:
        self.zygote = zygote
        self.pidfd = -1
        self.child_pid = 0
        self.out_fd = -1
        self.log_r = -1
        self.exit_status: int | None = None
        self.counted = False
        self.job_sock: socket.socket | None = None
        self.placed = False
        super().__init__(limits)

    def _prepare(self, env: sb.Environment) -> None:
        # The host's side only: in/ where inputs are staged (the child copies them into its
        # own /job), no out/ (the child's /out is a tmpfs of its own, reached through an fd).
        self.job_dir.mkdir(mode=0o711)
        self.mounted_job = env.can_mount_tmpfs and sb._mount_tmpfs(
            str(self.job_dir), sb.JOB_TMPFS_BYTES, None, 0o711
        )
        os.chmod(self.job_dir, 0o711)
        self.in_dir = self.job_dir / "in"
        self.out_dir = Path("/nonexistent")
        self.in_dir.mkdir()
        os.chmod(self.in_dir, 0o755)
        if env.cgroups is not None:
            timeline.stamp("host.jobdir")
            self.cgroups = env.cgroups.create(self.name, self.limits, caps=sb._cgroup_caps())

    def _spawn(self, env: sb.Environment) -> None:
        limits = self.limits
        self.ctl_r, self.ctl_w = os.pipe()
        self.status_r, self.status_w = os.pipe()
        self.log_r, log_w = os.pipe()
        host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        host.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.job_sock = host
        in_fd = os.open(self.in_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.fds += [self.ctl_w, self.status_r, self.log_r]
        params = {
            "tmpfs_bytes": limits.tmpfs_bytes,
            "out_bytes": limits.output_dir_bytes,
            "job_bytes": sb.JOB_TMPFS_BYTES,
            "hidden_proc": list(sb.HIDDEN_PROC_FILES),
            "new_net": True,
        }
        try:
            self.zygote.fork_child(params, [child.fileno(), self.ctl_r, self.status_w, log_w, in_fd])
            self.counted = True
        finally:
            for fd in (self.ctl_r, self.status_w, log_w, in_fd):
                os.close(fd)
            child.close()
        timeline.stamp("host.fork.request")
        msg, fds, pid = _recv_exactly(host, CHILD_REPORT_TIMEOUT)
        timeline.stamp("host.child.reported")
        for fd in fds:
            os.close(fd)
        if msg != b"m" or fds or not pid:
            raise ZygoteBroken(f"the zygote's child reported {msg[:20]!r} with {len(fds)} fds, pid {pid}")
        self.pidfd = _child_pidfd(pid, self.zygote.zygote_pid)
        self.child_pid = pid
        timeline.stamp("host.pid.check")
        if self.cgroups is not None:
            # The child goes on meanwhile (namespaces, mounts, init, runner, their set-up) as
            # the kernel moves it (cgroup v1 waits for an RCU grace period here); what it forked
            # before the move is moved after "R" (wait_warm), still before the job exists.
            self.cgroups.add(pid)
        timeline.stamp("host.cgroup.place")
        msg, fds, pid = _recv_exactly(host, CHILD_REPORT_TIMEOUT)
        if msg != b"M" or len(fds) != 1 or pid != self.child_pid:
            for fd in fds:
                os.close(fd)
            raise ZygoteBroken(f"the zygote's child reported {msg[:20]!r} with {len(fds)} fds, pid {pid}")
        self.out_fd = fds[0]
        timeline.stamp("host.child.mounted")

    def wait_warm(self, timeout: float = 10.0) -> bool:
        """Wait for the runner's "R", then put every process of the child into the run's cgroup."""
        if not super().wait_warm(timeout):
            return False
        self._place_descendants()
        timeline.stamp("host.cgroup.rest")
        return True

    def _place_descendants(self) -> None:
        """Move the child's init and runner (forked before or while the child itself was moved)
        into the run's cgroup.  At "R" they are our code alone, waiting: the runner for "J",
        init for the runner, and none forks again before "J"; processes forked later inherit
        the cgroup."""
        if self.cgroups is None:
            self.placed = True
            return
        found = _descendants(self.child_pid)
        if _exited(self.pidfd) or len(found) != 2:
            raise ZygoteBroken(f"the zygote's child has {len(found)} processes at 'R', not init and runner")
        init, runner = found  # init's children are listed after it (depth first)
        pidfds: list[int] = []
        try:
            # As for the child itself (_child_pidfd): each pid is held by a pidfd, proven to be
            # the expected process (its parent), moved, and still alive after the move, so the
            # pid moved was that process's, never one given to another since.
            for pid, parent in ((init, self.child_pid), (runner, init)):
                try:
                    pidfds.append(os.pidfd_open(pid))
                except OSError as exc:
                    raise ZygoteBroken(f"the child's process {pid} ended before it was placed") from exc
                if _parent_of(pid) != parent or _exited(pidfds[-1]):
                    raise ZygoteBroken(
                        f"process {pid} is not the child's {'init' if pid == init else 'runner'}"
                    )
            for pid in (init, runner):
                self.cgroups.add(pid)
            if any(_exited(fd) for fd in (self.pidfd, *pidfds)):
                raise ZygoteBroken("a process of the zygote's child ended while it was placed")
        finally:
            for fd in pidfds:
                os.close(fd)
        self.placed = True

    def _before_job(self) -> None:
        if not self.placed:
            raise sb.SandboxFailed("the zygote's child was not placed in its cgroup before its job")

    # -- the hooks of Sandbox.run --------------------------------------------------------------
    # in/ is not in the child's filesystem (nor the zygote's): the child reaches it through an
    # fd and copies a phase into its /job only when asked (C<p>), after the host has read the
    # phase before.  So the host writes every phase's inputs while phase 0 runs.
    stages_ahead = True

    @property
    def inner_ctl_fd(self) -> int:
        return INNER_CTL_FD

    @property
    def inner_status_fd(self) -> int:
        return INNER_STATUS_FD

    @property
    def out_path(self) -> str:
        # "/." keeps the magic link an inner component: OutputDir's O_NOFOLLOW applies to ".".
        return f"/proc/self/fd/{self.out_fd}/."

    def _publish(self, phase: int) -> None:
        sock = self.job_sock
        if sock is None or self.exit_status is not None:
            return
        try:
            sock.send(b"C%d" % phase)
        except OSError:
            return  # the child is gone: the run ends without this phase
        deadline = time.monotonic() + COPY_TIMEOUT
        while True:
            ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise sb.SandboxFailed(f"the zygote's child did not copy phase {phase} in time")
            msg = sock.recv(64, socket.MSG_PEEK)
            if msg[:1] == b"E" or not msg:
                return  # left for the supervisor: the socket stays readable, the run has ended
            sock.recv(64)
            if msg == b"c%d" % phase:
                return

    def _exit_message(self, msg: bytes) -> None:
        if msg[:1] == b"E":
            with contextlib.suppress(ValueError):
                self.exit_status = int(msg[1:])

    def _exit_fd(self) -> int:
        # Readable once the child reports its init's exit ("E"), or is gone (EOF). At "E" every
        # process of the job is dead: when a PID namespace's init exits, the kernel kills every
        # other process in it and reaps them before that exit completes. The child itself (not
        # the job's) may still be exiting; _stop does not wait for it, destroy() does.
        assert self.job_sock is not None
        return self.job_sock.fileno()

    def _close_exit_fd(self, fd: int) -> None:
        pass  # ours until destroy()

    def _log_fd(self) -> int:
        return self.log_r

    def alive(self) -> bool:
        return self.pidfd >= 0 and not select.select([self.pidfd], [], [], 0)[0]

    def _kill_child(self) -> None:
        if self.pidfd >= 0 and self.alive():
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        if self.cgroups is not None:
            self.cgroups.kill_all()
        if self.pidfd >= 0:
            select.select([self.pidfd], [], [], 3.0)

    def _read_exit(self) -> None:
        while self.exit_status is None and self.job_sock is not None:
            if not select.select([self.job_sock], [], [], 0)[0]:
                return
            msg = self.job_sock.recv(64)
            if not msg:
                return
            self._exit_message(msg)

    def _stop(self, outcome: sb.RunOutcome, cpu_base: float | None) -> None:
        self._read_exit()
        killed = False
        if self.exit_status is None:
            # A deadline, a limit, or the child died: end every process of the run now.
            killed = self.alive()
            self._kill_child()
            self._read_exit()
        outcome.exit_code = -signal.SIGKILL if killed or self.exit_status is None else self.exit_status
        group = self.cgroups
        if group is not None:
            outcome.oom_killed = group.oom_killed()
            cpu = group.cpu_seconds()
            outcome.cpu_ms = None if cpu is None else int((cpu - (cpu_base or 0)) * 1000)
            totals["child_cpu"] += cpu or 0.0

    def destroy(self) -> None:
        self._kill_child()
        timeline.stamp("host.kill")
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        if self.out_fd >= 0:
            os.close(self.out_fd)  # the last reference to the child's /out
            self.out_fd = -1
        if self.job_sock is not None:
            self.job_sock.close()
            self.job_sock = None
        super().destroy()
        if self.counted:
            self.counted = False
            self.zygote.job_done()


class ZygoteManager:
    """Keeps one zygote for this process; hands out a child per job or None (fresh sandbox)."""

    def __init__(self, limits: Limits | None = None, max_jobs: int = 500, max_age: float = 600.0) -> None:
        self.limits = limits or Limits.ceiling()
        self.max_jobs, self.max_age = max_jobs, max_age
        self.current: Zygote | None = None
        self.fallbacks = 0  # jobs that got a fresh sandbox because no zygote was ready
        self.restarts = 0
        self.failed_starts = 0  # in a row
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._closed = False
        # bwrap runs with --die-with-parent, which follows the *thread* that started it:
        # zygotes are started by this one long-lived thread.
        self._thread = threading.Thread(target=self._loop, name="grader-zygote", daemon=True)
        self._thread.start()

    def _start_soon(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._closed:
            current = self.current
            if current is None or not current.alive() or current.due(NEARLY_DUE):
                self._start()
            self._wake.wait(1.0)
            self._wake.clear()

    def _start(self) -> None:
        try:
            zygote = Zygote(self.limits, self.max_jobs, self.max_age)
            zygote.on_nearly_due = self._start_soon
        except Exception:
            self.failed_starts += 1
            log.exception("could not start a grading zygote; grading uses fresh sandboxes")
            # Not in a tight loop, and less often the longer it keeps failing (at most every 5 min).
            self._closing.wait(min(300.0, 5.0 * 2 ** min(self.failed_starts - 1, 6)))
            return
        self.failed_starts = 0
        with self._lock:
            old, self.current = self.current, zygote
            closed = self._closed
            self.restarts += 1
        if old is not None:
            old.retire()
        if closed:
            zygote.retire()

    def wait_ready(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            z = self.current
            if z is not None and z.alive() and not z.due():
                return True
            time.sleep(0.01)
        return False

    def take(self, limits: Limits) -> ZygoteSandbox | None:
        """A child of the zygote, its runner ready for this job; None: use a fresh sandbox."""
        if sb._layers_off or self._closed or not limits.fits_under(self.limits):
            # A switched-off layer is proven on fresh sandboxes (test_layers): the zygote
            # always has every layer.
            return None
        zygote = self.current
        if zygote is None or not zygote.alive() or zygote.due():
            if zygote is not None and (not zygote.alive() or zygote.due()):
                with self._lock:
                    if self.current is zygote:
                        self.current = None
                dead = zygote.proc is None or zygote.proc.poll() is not None
                zygote.close() if dead else zygote.retire()
            self.fallbacks += 1
            totals["fallbacks"] += 1
            self._start_soon()
            return None
        box: ZygoteSandbox | None = None
        try:
            box = ZygoteSandbox(zygote, limits)
            if not box.wait_warm(CHILD_READY_TIMEOUT):
                raise ZygoteBroken("the zygote's child did not get ready")
            return box
        except (ZygoteBroken, sb.SandboxFailed, OSError) as exc:
            log.warning("grading zygote %s failed (%s); a fresh sandbox takes the job", zygote.name, exc)
            if box is not None:
                box.destroy()
            zygote.broken = True
            with self._lock:
                if self.current is zygote:
                    self.current = None
            # No new job goes to it; it ends at once unless other jobs still run in its children
            # (they do not need it, but ending it would end them: its PID namespace holds them).
            zygote.retire()
            self.fallbacks += 1
            totals["fallbacks"] += 1
            self._start_soon()
            return None

    def live_pids(self) -> set[int]:
        z = self.current
        return set(z.pids) if z is not None and z.alive() else set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout=sb.STARTUP_BUDGET)
        with self._lock:
            zygote, self.current = self.current, None
        if zygote is not None:
            zygote.close()


_manager: ZygoteManager | None = None


def enable_zygote(max_jobs: int = 500, max_age: float = 600.0, limits: Limits | None = None) -> ZygoteManager:
    """Grade in children of a zygote from now on in this process (starts it in the background)."""
    global _manager
    disable_zygote()
    _manager = ZygoteManager(limits, max_jobs, max_age)
    atexit.register(disable_zygote)
    return _manager


def disable_zygote() -> None:
    global _manager
    manager, _manager = _manager, None
    if manager is not None:
        manager.close()


def manager() -> ZygoteManager | None:
    return _manager


def enabled_in_env() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def enable_from_env() -> ZygoteManager | None:
    """Enable the zygote when ``GRADER_ZYGOTE`` is 1/true/yes/on (off by default)."""
    return enable_zygote() if enabled_in_env() else None


def take(limits: Limits) -> ZygoteSandbox | None:
    m = _manager
    return m.take(limits) if m is not None else None
