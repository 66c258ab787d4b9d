"""The trusted runner: executed INSIDE the sandbox, never imported by the host.

It is started as ``python -I -S -B /grader/runner.py CTL_FD SITE_DIR STATUS_FD`` and must be
self-contained (standard library plus NumPy, found through the ``site`` path in
the job file).  Everything it writes lands in ``/out`` and is treated by the
host as untrusted data: the student's code runs in this very process and can
rewrite any of it.  The host therefore never takes a verdict from here; it
loads the result arrays with strict checks and compares them itself.

Protocol (see sandbox.py for the host side):
* the runner imports NumPy, then waits for ``J`` on the control pipe; only
  then does ``/job/job.json`` exist (a pooled sandbox waits here, warm);
* inputs of phase p are in ``/job/p{p}/inputs.bin`` (.npy files one after another;
  ``/job/p{p}/layout.json`` says where each case's inputs lie, their dtype and
  shape); phase 0 is there at start, later phases appear only after
  the host answers ``G`` on the control pipe (so hidden inputs, their shapes
  included, do not exist while visible cases run; the job file names them only);
* for every case: ``case-NNN.start`` (before), ``case-NNN.stdout`` and
  ``case-NNN.stderr`` (student output), ``case-NNN.<result>.npy`` and
  ``case-NNN.status`` (after);
* at the end of each phase but the last: ``P<p>\\n`` on the status pipe, then
  wait for one byte on the control pipe (``G`` go on, anything else stop).
"""

from __future__ import annotations

import builtins
import json
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np_types

OUT = "/out"
CODE_NAME = "submission.py"
FLAGS_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
NUMERIC_KINDS = "biufc"
# Time stamps of this process's stages (and, in a zygote's child, of its ancestors' since the
# fork), written to /out/trace.json when the job asks ("trace": grader.bench --breakdown).
STAMPS: list[tuple[str, float]] = []


def _stamp(name: str) -> None:
    STAMPS.append((name, time.monotonic()))


def _create(path: str) -> int:
    """A file this runner creates itself: whatever the student's code left at ``path``
    (a planted status, a symlink, a FIFO) is unlinked first, and O_EXCL refuses to
    open anything that reappears in between."""
    try:
        os.unlink(path)
    except OSError:
        pass
    return os.open(path, FLAGS_NEW, 0o600)


def _open_new(path: str) -> int:
    try:
        return _create(path)
    except OSError:
        return os.open("/dev/null", os.O_WRONLY)


def redirect_stdio(path: str, err_path: str | None = None) -> None:
    """Point fd 1 (and 2, to ``err_path`` or the same file) at fresh files; the Python objects follow the fds."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            pass
    fd = _open_new(path)
    os.dup2(fd, 1)
    if err_path is None:
        os.dup2(fd, 2)
    else:
        err = _open_new(err_path)
        os.dup2(err, 2)
        os.close(err)
    os.close(fd)


def write_new(path: str, data: bytes) -> bool:
    try:
        fd = _create(path)
    except OSError:
        return False
    try:
        os.write(fd, data)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _type_name(exc: BaseException) -> object:
    return type(exc).__name__


def _traceback_text(exc: BaseException) -> object:
    return "".join(traceback.format_exception(exc))


def safe_text(fn: Callable[[], object], limit: int) -> str:
    """Run ``fn`` (which may call student code, e.g. ``__str__``) and cap the text."""
    try:
        text = fn()
        if not isinstance(text, str):
            return ""
        return text[:limit]
    except BaseException:
        return ""


def forbid_exec(path: str) -> None:
    """Install the host-made seccomp program at ``path`` (no execve from here on).

    bwrap already set no_new_privs, so an unprivileged process may add filters;
    filters only ever add restrictions.
    """
    with open(path, "rb") as f:
        install_filter(f.read())


def install_filter(program: bytes) -> None:
    """Load a compiled seccomp BPF program (bytes from pyseccomp's export_bpf) on this thread."""
    import ctypes

    if not program or len(program) % 8:
        raise RuntimeError("bad seccomp program")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def lower_limits(rlimits: dict[str, list[int]]) -> None:
    """Apply the job's rlimits (a pooled sandbox was spawned with the ceiling): only ever lower.

    RLIMIT_CPU counts this process's whole life, so the CPU already spent importing NumPy
    is added to the job's allowance.
    """
    import resource

    infinity = resource.RLIM_INFINITY
    for name, (soft, hard) in rlimits.items():
        res = getattr(resource, "RLIMIT_" + name.upper())
        if name == "cpu":
            usage = resource.getrusage(resource.RUSAGE_SELF)
            spent = int(usage.ru_utime + usage.ru_stime)
            soft, hard = soft + spent, hard + spent
        cur_soft, cur_hard = resource.getrlimit(res)
        if cur_hard != infinity:
            hard = min(hard, cur_hard)
        if cur_soft != infinity:
            soft = min(soft, cur_soft)
        resource.setrlimit(res, (min(soft, hard), hard))


def describe_exception(exc: BaseException, source_lines: list[str]) -> dict[str, Any]:
    """Exception type, the student's own line and a traceback trimmed to it."""
    frames = []
    try:
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == CODE_NAME and frame.lineno:
                text = ""
                if 0 < frame.lineno <= len(source_lines):
                    text = source_lines[frame.lineno - 1].strip()[:200]
                frames.append([frame.lineno, str(frame.name)[:100], text])
    except BaseException:
        frames = []
    line = frames[-1][0] if frames else None
    offset = None
    detail = safe_text(lambda: str(exc), 500)
    if isinstance(exc, SyntaxError) and getattr(exc, "filename", None) == CODE_NAME:
        line = exc.lineno if isinstance(exc.lineno, int) else line
        offset = exc.offset if isinstance(exc.offset, int) else None
        detail = safe_text(lambda: exc.msg, 500)  # without "(submission.py, line 3)"
    return {
        "exc_type": safe_text(lambda: type(exc).__name__, 100),
        "line": line,
        "offset": offset,
        "detail": detail,
        "traceback": frames[-10:],
    }


class Runner:
    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        self.mode = job["mode"]
        import numpy

        self.np = numpy
        with open("/job/code.py", "rb") as f:
            self.source = f.read().decode("utf-8")
        self.source_lines = self.source.splitlines()
        self.max_bytes = int(job["max_result_bytes"])
        self.layouts: dict[int, dict[str, Any]] = {}  # each phase's layout.json, once read

    # -- results ---------------------------------------------------------------
    def to_array(self, value: object) -> tuple[np_types.ndarray | None, dict[str, Any]]:
        np = self.np
        arr: np_types.ndarray
        if isinstance(value, np.ndarray) and type(value) is np.ndarray:
            arr = value
        elif isinstance(value, np.ndarray):
            return None, {"problem": "subclass", "type": safe_text(lambda: type(value).__name__, 60)}
        elif value is None:
            return None, {"problem": "none"}
        elif type(value) in (int, float, bool, list, tuple) or (
            isinstance(value, np.generic) and type(value).__module__ == "numpy"
        ):
            try:
                arr = np.asarray(value)
            except BaseException:
                return None, {"problem": "convert", "type": safe_text(lambda: type(value).__name__, 60)}
            if type(arr) is not np.ndarray:
                return None, {"problem": "type", "type": safe_text(lambda: type(value).__name__, 60)}
        else:
            return None, {"problem": "type", "type": safe_text(lambda: type(value).__name__, 60)}
        dtype = arr.dtype
        if dtype.hasobject:
            return None, {"problem": "object"}
        if dtype.fields is not None or dtype.subdtype is not None or dtype.kind not in NUMERIC_KINDS:
            return None, {"problem": "dtype", "dtype": safe_text(lambda: dtype.kind, 2)}
        if arr.nbytes > self.max_bytes:
            return None, {"problem": "too_large", "size": int(arr.nbytes)}
        return arr, {"ok": True}

    def save_array(self, path: str, arr: np_types.ndarray) -> None:
        np = self.np
        fd = _create(path)
        with os.fdopen(fd, "wb") as f:
            np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)

    def save_results(self, prefix: str, values: dict[str, object]) -> dict[str, dict[str, Any]]:
        report = {}
        for name, value in values.items():
            arr, info = self.to_array(value)
            if arr is not None:
                try:
                    self.save_array(f"{prefix}.{name}.npy", arr)
                except BaseException as exc:
                    info = {"problem": "write", "type": safe_text(partial(_type_name, exc), 60)}
            report[name] = info
        return report

    # -- running ---------------------------------------------------------------
    def load_inputs(self, phase: int, case: dict[str, Any]) -> dict[str, np_types.ndarray]:
        """The case's input arrays, fresh and writable, from its phase's one inputs file."""
        np = self.np
        inputs: dict[str, np_types.ndarray] = {}
        if not case["inputs"]:
            return inputs
        if phase not in self.layouts:
            with open(f"/job/p{phase}/layout.json", "rb") as f:
                self.layouts[phase] = json.load(f)
        fd = os.open(f"/job/p{phase}/inputs.bin", os.O_RDONLY | os.O_CLOEXEC)
        try:
            for item in self.layouts[phase][str(case["index"])]:
                # The data straight into a new array (the host stages plain dtypes only).
                arr = np.empty(item["shape"], dtype=np.dtype(item["dtype"]))
                into = arr.reshape(-1).view(np.uint8)
                if arr.nbytes and os.preadv(fd, [into], item["offset"] + item["skip"]) != arr.nbytes:
                    raise OSError("short input file")
                inputs[item["name"]] = arr
        finally:
            os.close(fd)
        return inputs

    def prepare(self) -> dict[str, Any] | None:
        """Compile and (function kind) import the code; None when it may run."""
        try:
            self.code = compile(self.source, CODE_NAME, "exec", dont_inherit=True)
        except BaseException as exc:  # SyntaxError, ValueError, RecursionError, MemoryError
            info = describe_exception(exc, self.source_lines)
            info["status"] = "syntax"
            return info
        if self.mode == "script":
            return None
        module = types.ModuleType("submission")
        module.__file__ = CODE_NAME
        sys.modules["submission"] = module
        try:
            exec(self.code, module.__dict__)
        except MemoryError as exc:
            info = describe_exception(exc, self.source_lines)
            info["status"] = "memory"
            return info
        except BaseException as exc:
            info = describe_exception(exc, self.source_lines)
            info["status"] = "exit" if isinstance(exc, SystemExit) else "exception"
            return info
        self.module = module
        if self.mode in ("make_cases", "generate"):
            return None
        name = self.job["function"]
        fn = module.__dict__.get(name)
        if fn is None:
            return {"status": "missing_function"}
        if not callable(fn):
            return {"status": "not_callable"}
        self.fn = fn
        return None

    def run_case(self, phase: int, case: dict[str, Any]) -> None:
        prefix = f"{OUT}/case-{case['index']:03d}"
        write_new(prefix + ".start", b"")
        # stderr apart: warnings must not spoil a printed-output comparison.
        redirect_stdio(prefix + ".stdout", prefix + ".stderr")
        _stamp("case.files")
        status: dict[str, Any] = {"status": "ok"}
        values: dict[str, object] = {}
        try:
            inputs = self.load_inputs(phase, case)
            _stamp("case.load")
            if self.mode == "function":
                values = {"return": self.fn(**inputs)}
            else:
                namespace = {"__name__": "__main__", "__builtins__": builtins, "np": self.np}
                namespace.update(inputs)
                exec(self.code, namespace)
                values = {name: namespace[name] for name in self.job["results"] if name in namespace}
        except MemoryError as exc:
            status = describe_exception(exc, self.source_lines)
            status["status"] = "memory"
        except BaseException as exc:  # includes SystemExit and custom BaseExceptions
            status = describe_exception(exc, self.source_lines)
            status["status"] = "exit" if isinstance(exc, SystemExit) else "exception"
        _stamp("case.code")
        redirect_stdio(prefix + ".log")  # our own output from here on
        if status["status"] == "ok":
            status["results"] = self.save_results(prefix, values)
        write_new(prefix + ".status", json.dumps(status).encode())
        _stamp("case.save")

    def make_cases(self) -> None:
        np = self.np
        prefix = f"{OUT}/mc"
        redirect_stdio(prefix + ".stdout")
        made = self.module.make_cases(np.random.default_rng(int(self.job["seed"])))
        manifest = []
        for i, case in enumerate(made):
            inputs = case.get("inputs", {})
            entry = {
                "name": case.get("name"),
                "hidden": case.get("hidden", True),
                "weight": case.get("weight", 1.0),
                "inputs": {},
            }
            for name, value in inputs.items():
                if not isinstance(name, str) or not name.isidentifier():
                    raise ValueError(f"case {i}: bad input name {name!r}")
                entry["inputs"][name] = self.save_results(f"{prefix}-{i:03d}", {name: value})[name]
            manifest.append(entry)
        write_new(f"{OUT}/cases.json", json.dumps(manifest).encode())

    def generate(self) -> None:
        """Call each (function, seed) of the job once; one JSON line per call in params.jsonl.
        NumPy arrays and scalars become lists and numbers; anything else JSON cannot hold is
        reported for that call (the host validates every value again)."""
        np = self.np
        redirect_stdio(f"{OUT}/params.stdout")

        def plain(value: object) -> object:
            if isinstance(value, np.ndarray):
                return plain(value.tolist())
            if isinstance(value, np.generic):
                return plain(value.item())
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [plain(v) for v in value]
            return value

        fd = _create(f"{OUT}/params.jsonl")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for name, seed in self.job["calls"]:
                try:
                    fn = self.module.__dict__.get(name)
                    if not callable(fn):
                        raise NameError(f"params.py has no function {name}(rng)")
                    made = plain(fn(np.random.default_rng(int(seed))))
                    line = json.dumps({"params": made}, allow_nan=False)
                except BaseException as exc:
                    line = json.dumps({"error": describe_exception(exc, self.source_lines)})
                if len(line) > self.max_bytes:
                    line = json.dumps({"error": {"status": "too_large", "size": len(line)}})
                out.write(line + "\n")
                out.flush()


def main() -> None:
    if sys.argv[1] == "--zygote":
        zygote_main(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        return
    ctl_fd, site = int(sys.argv[1]), sys.argv[2]
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    redirect_stdio(f"{OUT}/module.stdout")
    _line_buffered_stdio()
    sys.path.append(site)
    import numpy  # noqa: F401  (before the job exists: a pooled sandbox waits here warm)

    serve_job(ctl_fd, int(sys.argv[3]))


def _line_buffered_stdio() -> None:
    # Line buffering so that output written just before a crash is in the file.
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)


def serve_job(ctl_fd: int, status_fd: int) -> None:
    """Say ``R``, wait for one job and run it (the same in a fresh sandbox and in a zygote's child)."""
    os.write(status_fd, b"R\n")  # warm: the host's pool may now hand out this sandbox
    _stamp("ready")

    # Wait for exactly one job; anything but "J" (or EOF: the host gave up) ends the run.
    if os.read(ctl_fd, 1) != b"J":
        return
    _stamp("job.wait")
    with open("/job/job.json", "rb") as f:
        job = json.load(f)
    _stamp("job.read")
    try:
        _run_job(job, status_fd)
    finally:
        if job.get("trace"):  # grader.bench --breakdown only; the host caps and checks it
            _stamp("end")
            try:
                write_new(f"{OUT}/trace.json", json.dumps({"stamps": STAMPS[-500:]}).encode())
            except Exception:  # stamps the job's code spoiled: no trace, the same outcome
                pass


def _run_job(job: dict[str, Any], status_fd: int) -> None:
    try:
        lower_limits(job.get("rlimits") or {})
    except BaseException:
        return  # never run student code with wider limits than the job's (no "S": our failure)
    if job.get("no_exec"):
        try:
            forbid_exec("/job/no-exec.bpf")
        except BaseException:
            # Never run student code with less protection than promised; without
            # "S" the host counts the run as its own failure, not the student's.
            return
    os.write(status_fd, b"S\n")  # secured: student code may run from here on
    _stamp("secured")
    runner = Runner(job)
    problem = runner.prepare()
    _stamp("module")
    if problem is not None:
        redirect_stdio(f"{OUT}/module.log")
        write_new(f"{OUT}/module.status", json.dumps(problem).encode())
        return
    if job["mode"] in ("make_cases", "generate"):
        try:
            runner.make_cases() if job["mode"] == "make_cases" else runner.generate()
        except BaseException as exc:
            info = describe_exception(exc, runner.source_lines)
            info["status"] = "exception"
            info["detail"] = safe_text(partial(_traceback_text, exc), 4000)
            redirect_stdio(f"{OUT}/module.log")
            write_new(f"{OUT}/module.status", json.dumps(info).encode())
        return
    phases = job["phases"]
    for p, cases in enumerate(phases):
        for case in cases:
            runner.run_case(p, case)
        if p + 1 < len(phases):
            os.write(job["status_fd"], b"P%d\n" % p)
            answer = os.read(job["ctl_fd"], 1)
            _stamp("phase.wait")
            if answer != b"G":
                return


# --- the zygote (GRADER_ZYGOTE, see zygote.py and README.md's threat model) ----------------
#
# ``runner.py --zygote SOCK_FD SITE FILTER_FD`` imports NumPy once and never runs anything a
# student wrote.  For every job the host sends (on the control socket, with the job's own
# fds) it forks a child that builds a fresh sandbox of its own before the runner starts:
#
#   child (in the zygote's PID namespace; the job's supervisor, never runs job code)
#     unshare(mount, PID, IPC, UTS[, network]); fresh tmpfs on /tmp, /dev/shm, /out and a
#     read-only /job whose writable copy only the child keeps (a detached mount); reports
#     itself on the job socket (the host reads its pid from SCM_CREDENTIALS and puts it into
#     the run's cgroup), copies the job's inputs from the host when asked, reports the exit
#     status.
#   init (pid 1 of the new PID namespace): a fresh /proc, drops every capability, reaps.
#   runner (pid 2): closes every fd but its pipes, drops every capability, the full seccomp
#     filter, reseeds NumPy, then exactly what a fresh sandbox's runner does (serve_job).

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE, MNT_DETACH = 16384, 1 << 18, 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 4, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
STAGING = "/.z"  # a mount point the zygote's bwrap makes; a child's /job is written through it
CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


class Sys:
    """The few system calls the zygote's children need (ctypes, no third-party code)."""

    def __init__(self) -> None:
        import ctypes

        self.ctypes = ctypes
        self.libc = ctypes.CDLL(None, use_errno=True)

    def _check(self, res: int, what: str) -> None:
        if res != 0:
            err = self.ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    def unshare(self, flags: int) -> None:
        self._check(self.libc.unshare(flags), "unshare")

    def mount(
        self, source: str | None, target: str, fstype: str | None, flags: int, data: str | None
    ) -> None:
        def enc(v: str | None) -> bytes | None:
            return None if v is None else v.encode()

        c_ulong = self.ctypes.c_ulong
        res = self.libc.mount(enc(source), target.encode(), enc(fstype), c_ulong(flags), enc(data))
        self._check(res, f"mount {target}")

    def umount(self, target: str, flags: int) -> None:
        self._check(self.libc.umount2(target.encode(), flags), f"umount {target}")

    def prctl(self, option: int, arg: int = 0, arg3: int = 0) -> None:
        c_ulong = self.ctypes.c_ulong
        res = self.libc.prctl(option, c_ulong(arg), c_ulong(arg3), c_ulong(0), c_ulong(0))
        self._check(res, f"prctl {option}")

    def drop_capabilities(self) -> None:
        """Bounding set, ambient set, then effective, permitted and inheritable: all empty."""
        for cap in range(64):
            try:
                self.prctl(PR_CAPBSET_DROP, cap)
            except OSError:
                break  # EINVAL: past the kernel's last capability
        self.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        u32 = self.ctypes.c_uint32
        header = (u32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
        data = (u32 * 6)()
        self._check(self.libc.capset(header, data), "capset")
        with open("/proc/self/status") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name in CAP_FIELDS and int(value, 16) != 0:
                    raise RuntimeError(f"{name} is not empty after dropping every capability")


def _move_fds(fds: list[int]) -> None:
    """Make ``fds`` (in order) the process's fds 0, 1, 2, ... and close every other one."""
    import fcntl

    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, len(fds)) for fd in fds]  # above every target
    for target, fd in enumerate(high):
        os.dup2(fd, target, inheritable=False)
    os.closerange(len(fds), 1 << 20)


def _copy_file(src_dir: int, dst_dir: int, name: str) -> None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_dir)
    with open(fd, "rb") as f:
        out = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dst_dir
        )
        with open(out, "wb") as g:
            # A MiB at a time: a phase's inputs are one file; the child's memory stays small.
            while chunk := f.read(1 << 20):
                g.write(chunk)


def copy_inputs(src: int, dst: int, phase: int) -> None:
    """Copy the host's staged files of ``phase`` (phase 0: also job.json, code.py, ...) into
    the child's own /job (through its detached writable mount); a phase appears at once."""
    import stat

    if phase == 0:
        for name in sorted(os.listdir(src)):
            if stat.S_ISREG(os.stat(name, dir_fd=src, follow_symlinks=False).st_mode):
                _copy_file(src, dst, name)
    name = f"p{phase}"
    try:
        s = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src)
    except FileNotFoundError:
        return
    try:
        os.mkdir(name + ".tmp", 0o755, dir_fd=dst)
        d = os.open(name + ".tmp", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dst)
        try:
            for entry in sorted(os.listdir(s)):
                _copy_file(s, d, entry)
        finally:
            os.close(d)
        os.rename(name + ".tmp", name, src_dir_fd=dst, dst_dir_fd=dst)
    finally:
        os.close(s)


def zygote_main(sock_fd: int, site: str, filter_fd: int) -> None:
    import signal
    import socket
    import traceback as tb

    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.path.append(site)
    import ctypes  # noqa: F401  (once, for every child: what the children use)
    import fcntl  # noqa: F401
    import io
    import random  # noqa: F401
    import resource  # noqa: F401
    import select  # noqa: F401
    import stat  # noqa: F401

    import numpy

    numpy.random.seed()  # the first seeding imports what it needs (~10 ms): once here, not per child
    # What a job's first case loads lazily (NumPy's .npy reader and writer), once here too.
    buf = io.BytesIO()
    numpy.lib.format.write_array(buf, numpy.zeros(2), allow_pickle=False)
    buf.seek(0)
    numpy.load(buf, allow_pickle=False)
    with open(filter_fd, "rb") as f:
        full_filter = f.read()  # bwrap's filter for the zygote lacks mount/unshare: the runner adds it
    sysc = Sys()
    sysc.prctl(PR_SET_DUMPABLE, 0)  # no sibling may read or trace us, even by uid
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps our children
    sock = socket.socket(fileno=sock_fd)
    import gc

    # Everything allocated so far is left alone by the collector in every child (it would
    # otherwise write to, and so copy, the pages of the zygote's objects it walks).
    gc.collect()
    gc.freeze()
    sock.send(b"R")
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 4096, 8)
        except OSError:
            return
        if not msg:
            return  # the host closed the control socket: retire
        STAMPS.clear()
        _stamp("zygote.recv")
        pid = -1
        try:
            pid = os.fork()
        except OSError:
            pass
        if pid == 0:
            _stamp("zygote.fork")
            try:
                zygote_child(json.loads(msg), fds, full_filter, sysc)
            except BaseException:
                tb.print_exc()
                os._exit(70)
            os._exit(0)
        for fd in fds:
            os.close(fd)


def zygote_child(params: dict[str, Any], fds: list[int], full_filter: bytes, sysc: Sys) -> None:
    import select
    import signal
    import socket

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sysc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.umask(0o022)
    if len(fds) != 5:
        raise RuntimeError("a job needs exactly five fds")
    # fds 0-2 stay (/dev/null and the zygote's log); then the job's socket, ctl, status, log, in/.
    _move_fds([0, 1, 2, *fds])
    job_sock, ctl_r, status_w, log_w, in_dir = 3, 4, 5, 6, 7
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if params.get("new_net"):
        flags |= CLONE_NEWNET
    _stamp("child.fds")
    # The host moves us into the run's cgroup from this report on (the kernel adds our pid, as
    # the host sees it, with SO_PASSCRED), while we unshare and mount; "M" follows.
    os.write(job_sock, b"m")
    sysc.unshare(flags)
    _stamp("child.unshare")
    sysc.mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    plain = MS_NOSUID | MS_NODEV
    tmp_size = params.get("tmpfs_bytes")
    sized = f"size={tmp_size}," if tmp_size else ""
    sysc.mount("tmpfs", "/tmp", "tmpfs", plain, f"{sized}mode=0755")
    sysc.mount("tmpfs", "/dev/shm", "tmpfs", plain, f"{sized}mode=0755")
    out_size = params.get("out_bytes")
    sized = f"size={out_size}," if out_size else ""
    sysc.mount("tmpfs", "/out", "tmpfs", plain | MS_NOEXEC, f"{sized}mode=0700,nr_inodes=4096")
    sysc.mount("tmpfs", STAGING, "tmpfs", plain | MS_NOEXEC, f"size={int(params['job_bytes'])},mode=0755")
    staging = os.open(STAGING, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    sysc.mount(STAGING, "/job", None, MS_BIND, None)
    sysc.mount(None, "/job", None, MS_REMOUNT | MS_BIND | MS_RDONLY | plain | MS_NOEXEC, None)
    sysc.umount(STAGING, MNT_DETACH)  # from now on only this process can write the job's inputs
    _stamp("child.mounts")
    sock = socket.socket(fileno=job_sock)
    out = os.open("/out", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    socket.send_fds(sock, [b"M"], [out])  # the kernel adds our pid for the host (SO_PASSCRED)
    os.close(out)
    # No waiting for the host: it moves us, then (after the runner's "R", before "J") every
    # process we started, into the run's cgroup; nothing here runs job code before "J".
    init = os.fork()
    if init == 0:
        try:
            zygote_init(params, full_filter, sysc, ctl_r, status_w, log_w, close=(job_sock, staging, in_dir))
        finally:
            os._exit(71)
    for fd in (ctl_r, status_w, log_w):
        os.close(fd)
    pidfd = os.pidfd_open(init)
    while True:
        ready, _, _ = select.select([sock.fileno(), pidfd], [], [])
        if pidfd in ready:
            _, status = os.waitpid(init, 0)
            code = os.waitstatus_to_exitcode(status)
            sock.send(b"E%d" % (code if code >= 0 else 128 - code))
            return
        msg = sock.recv(64)
        if not msg:  # the host is gone or gave up: so is the job
            os.kill(init, signal.SIGKILL)
            return
        if msg[:1] == b"C":
            phase = int(msg[1:])
            copy_inputs(in_dir, staging, phase)
            sock.send(b"c%d" % phase)


def zygote_init(
    params: dict[str, Any],
    full_filter: bytes,
    sysc: Sys,
    ctl_r: int,
    status_w: int,
    log_w: int,
    close: tuple[int, ...],
) -> None:
    import signal

    sysc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1: no signal from inside its namespace reaches it
    for fd in close:
        os.close(fd)
    _stamp("init.fork")
    sysc.mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, None)
    for name in params.get("hidden_proc", []):
        path = f"/proc/{name}"
        if os.path.exists(path):
            sysc.mount("/dev/null", path, None, MS_BIND, None)
    _stamp("init.proc")
    runner = os.fork()
    if runner == 0:
        try:
            zygote_runner(full_filter, sysc, ctl_r, status_w, log_w)
        finally:
            os._exit(72)
    for fd in (ctl_r, status_w, log_w):
        os.close(fd)
    sysc.drop_capabilities()
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(73)
        if pid == runner:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


def zygote_runner(full_filter: bytes, sysc: Sys, ctl_r: int, status_w: int, log_w: int) -> None:
    import random
    import signal

    sysc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _stamp("runner.fork")
    devnull = os.open("/dev/null", os.O_RDONLY)
    _move_fds([devnull, log_w, log_w, ctl_r, status_w])  # every other fd of the zygote is closed
    _stamp("runner.fds")
    sysc.drop_capabilities()
    _stamp("runner.caps")
    sysc.prctl(PR_SET_DUMPABLE, 1)  # as in a fresh sandbox (only for itself and its own children)
    install_filter(full_filter)  # the zygote's own filter lacked mount, umount2 and unshare
    _stamp("runner.seccomp")
    os.chdir("/tmp")
    import numpy

    numpy.random.seed()  # the legacy global RNG: fresh OS entropy, not the zygote's state
    random.seed()
    _stamp("runner.reseed")
    redirect_stdio(f"{OUT}/module.stdout")
    _line_buffered_stdio()
    serve_job(3, 4)
    os._exit(0)


if __name__ == "__main__":
    main()
    # Do not run interpreter shutdown (atexit hooks, __del__ of student objects).
    os._exit(0)
