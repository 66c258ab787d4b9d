"""Helpers shared by the grader tests (plain module: importable from every test file)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import tomllib
from pathlib import Path

import pytest

from grader.core import (
    GradeResult,
    Limits,
    Verdict,
    build_cases,
    grade,
    parse_spec,
    run_reference,
)
from grader.core import sandbox as sandbox_module

FIXTURES = Path(__file__).parent / "fixtures"
SECRET = "s3cr3t-dikkat-7f1c"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Files an attack tries to create on the host; none may ever exist.
MARKERS = [PROJECT_ROOT / "PWNED-by-grader-test", Path("/tmp/PWNED-by-grader-test")]


@dataclasses.dataclass
class Exercise:
    dir: Path
    spec: object
    cases: list
    ref: object
    solution: str

    def grade(self, source, **kwargs) -> GradeResult:
        return grade(source, self.spec, self.cases, self.ref, **kwargs)

    def with_limits(self, **limits) -> Exercise:
        spec = dataclasses.replace(self.spec, limits=Limits(**limits))
        return dataclasses.replace(self, spec=spec)

    def case(self, name):
        return next(c for c in self.cases if c.name == name)


def load_exercise(tmp_root: Path, name: str) -> Exercise:
    os.environ["DIKKAT_TEST_SECRET"] = SECRET
    # A private copy with a secret planted next to the solution: the sandbox must not see it.
    exdir = tmp_root / name
    shutil.copytree(FIXTURES / name, exdir)
    (exdir / "secret.txt").write_text(SECRET)
    spec = parse_spec(tomllib.loads((exdir / "exercise.toml").read_text()))
    cases = build_cases(spec, exdir)
    solution = (exdir / "solution.py").read_text()
    ref = run_reference(solution, spec, cases)
    return Exercise(exdir, spec, cases, ref, solution)


def _run_exists(name: str) -> bool:
    env = sandbox_module.environment()
    backend = env.cgroups
    return (
        (backend is not None and name in backend.run_names())
        or (sandbox_module.work_root() / name).exists()
        or (sandbox_module.state_root() / "locks" / f"{name}.lock").exists()
    )


def _ours(pid: str) -> bool:
    """Started by this test process: a descendant, or in one of its run cgroups."""
    me = os.getpid()
    try:
        cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        if any(f"/{name}" in cgroup for name in list(sandbox_module._recent_runs)[-50:]):
            return True
        while pid not in ("0", "1"):
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = stat.rsplit(")", 1)[1].split()[1]
            if pid == str(me):
                return True
    except OSError:
        pass
    return False


def _zygote_pids() -> set[int]:
    """With GRADER_ZYGOTE on, the zygote itself (bwrap, its pid 1, the zygote) lives on by
    design; its children, one per job, are counted like any sandbox process."""
    from grader.core import zygote

    manager = zygote.manager()
    return manager.live_pids() if manager is not None else set()


def _runner_processes() -> list[int]:
    # Other developers may grade concurrently on this machine: only count ours.
    pids = []
    spared = _zygote_pids()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if (
                (b"/grader/runner.py" in cmdline or b"bwrap" in cmdline)
                and _ours(entry)
                and int(entry) not in spared
            ):
                pids.append(int(entry))
    return pids


def _children() -> list[int]:
    spared = _zygote_pids()
    kids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            kids += [int(p) for p in (task / "children").read_text().split() if int(p) not in spared]
        except OSError:
            pass
    return kids


def _snapshot(paths) -> dict:
    state = {}
    for root in paths:
        if root.is_dir():
            for p in root.iterdir():
                st = p.lstat()
                state[str(p)] = (st.st_mtime_ns, st.st_size)
    return state


class HostGuard:
    """Watches the host around an attack: network, processes, cgroups, files."""

    def __init__(self, watch: list[Path]):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.watch = watch
        self.before = _snapshot(watch)

    def check(self) -> None:
        with pytest.raises(BlockingIOError):
            conn, _ = self.listener.accept()
            conn.close()
        assert _runner_processes() == [], "sandbox processes survived"
        assert _children() == [], "the grader left child processes (or zombies)"
        leftovers = [name for name in sandbox_module._recent_runs if _run_exists(name)]
        assert leftovers == [], f"cgroup, job directory or lock of a finished run left behind: {leftovers}"
        assert _snapshot(self.watch) == self.before, "host files changed"
        for name in ("numpy.py", "sitecustomize.py", "usercustomize.py"):
            assert not (Path("/tmp") / name).exists()
            assert not (Path.cwd() / name).exists()
        assert os.environ.get("DIKKAT_TEST_SECRET") == SECRET
        for marker in MARKERS:
            assert not marker.exists(), f"{marker} was written from inside the sandbox"

    def close(self) -> None:
        self.listener.close()


def dump(result: GradeResult) -> str:
    return json.dumps(result.to_dict(), ensure_ascii=False)


def assert_next_run_passes(ex: Exercise) -> None:
    result = ex.grade(ex.solution)
    assert result.verdict == Verdict.PASSED, dump(result)


# A submission body that forks as many sleeping children as it may (up to 400) and raises
# "BREACH" when more than {cap} succeeded (indent it into a function with `indented`).
FORK_PROBE = """
children = []
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(10)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
if len(children) > {cap}:
    raise AssertionError("BREACH: forked %d processes" % len(children))
"""


def indented(code: str, spaces: int = 4) -> str:
    return "".join(" " * spaces + line + "\n" for line in code.strip("\n").splitlines())
