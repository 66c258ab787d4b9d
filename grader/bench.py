"""Benchmark: ``python -m grader.bench [--runs N] [--exercise DIR]``.

Grades a sample exercise repeatedly and prints latency (p50/p95) and
throughput next to the floor measured in the same run: a bare
``python -c "import numpy"`` process.  Not a timed test: the numbers depend
on the machine and on what else runs on it.

Targets (2 cores): p50 <= 1.3 x floor with fresh sandboxes; throughput
>= 0.8 x cores / (CPU seconds of one fresh NumPy process).  With ``--zygote``
(issue 18, the grading zygote): p50 <= 0.25 x floor for attention-function at
low load and at saturation, <= 0.2 x floor for a code fill-in blank, and
throughput >= 3 x the rate of bare NumPy processes on the same cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import resource
import statistics
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from grader.core import (
    Verdict,
    build_cases,
    disable_pool,
    enable_pool,
    grade,
    parse_spec,
    run_reference,
    timeline,
    zygote,
)

SAMPLE_TOML = """
kind = "function"
function = "attention"
[shape_names]
return = ["n_q", "d_v"]
[[cases]]
name = "ornek"
hidden = false
[cases.inputs]
Q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
K = [[1.0, 0.0], [0.0, 1.0]]
V = [[1.0, 2.0], [3.0, 4.0]]
[[cases]]
name = "gizli-1"
[cases.inputs]
Q = [[0.5, -1.0], [2.0, 0.1]]
K = [[1.0, 1.0], [0.0, -1.0], [3.0, 0.5]]
V = [[1.0], [2.0], [3.0]]
[[cases]]
name = "gizli-2"
[cases.inputs]
Q = [[40.0, -30.0], [25.0, 60.0]]
K = [[50.0, 10.0], [-20.0, 45.0]]
V = [[1.0, 0.0], [0.0, 1.0]]
"""

SAMPLE_SOLUTION = """
import numpy as np

def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    return (w / w.sum(axis=-1, keepdims=True)) @ V
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


FLOOR_ENV = {"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def floor_once() -> tuple[float, float]:
    """Wall and CPU seconds of one bare ``python -c "import numpy"``."""
    cpu0 = _children_cpu()
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy"], env=FLOOR_ENV, check=True)
    return time.perf_counter() - t, _children_cpu() - cpu0


def load_exercise(folder: Path | None):
    """(spec, solution, cases) of an exercise folder, or of the built-in sample."""
    if folder is None:
        spec = parse_spec(tomllib.loads(SAMPLE_TOML))
        return spec, SAMPLE_SOLUTION, list(spec.cases)
    spec = parse_spec(tomllib.loads((folder / "exercise.toml").read_text()))
    return spec, (folder / "solution.py").read_text(), build_cases(spec, folder)


def throughput(solution: str, spec, cases, ref, workers: int, n: int) -> float:
    """Grades per second with ``workers`` graders in parallel, fresh sandboxes."""
    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        verdicts = list(pool.map(lambda _: grade(solution, spec, cases, ref).verdict, range(n)))
    elapsed = time.perf_counter() - t
    assert all(v == Verdict.PASSED for v in verdicts)
    return n / elapsed


# A code fill-in blank as the course grades one: a short script, hidden cases only, the
# fill-in limits (courses/kinds/fill_in.py FILL_IN_LIMITS).
BLANK_TOML = """
kind = "script"
results = ["S"]
[limits]
cpu_seconds = 2
wall_seconds = 5
memory_mb = 256
[[cases]]
name = "gizli-1"
[cases.inputs]
Q = [[1.0, 0.0, 2.0], [0.5, 1.0, -1.0]]
K = [[1.0, 1.0, 0.0], [0.0, -1.0, 3.0], [2.0, 0.5, 1.0], [1.0, 0.0, 0.0]]
[[cases]]
name = "gizli-2"
[cases.inputs]
Q = [[3.0, -2.0], [0.1, 0.2]]
K = [[1.0, 0.0], [0.0, 1.0]]
"""
BLANK_SOLUTION = "import numpy as np\nS = (Q @ K.T) / np.sqrt(Q.shape[-1])\n"


def pooled_p50(solution: str, spec, cases, ref, runs: int) -> float:
    """p50 seconds of a grade at low load with a pool of one (spawned with the ceiling)."""
    pool = enable_pool(1)
    try:
        times = []
        for _ in range(runs):
            pool.wait_ready()
            t = time.perf_counter()
            result = grade(solution, spec, cases, ref)
            times.append(time.perf_counter() - t)
            assert result.verdict == Verdict.PASSED, result.to_dict()
        return statistics.median(times)
    finally:
        disable_pool()


TEACHING_EXERCISE = (
    Path(__file__).resolve().parent.parent
    / "courses/content/attention/06-scaled-dot-product/attention-function"
)


def teaching_cost(folder: Path, runs: int) -> tuple[float, float, int, int]:
    """p50 seconds of a fresh-sandbox grade of ``folder``'s solution with its weight probes
    and property cases, and without them (the same cases otherwise), interleaved so that
    background load hits both alike; and the numbers of cases with and without."""
    spec, solution, cases = load_exercise(folder)
    ref = run_reference(solution, spec, cases)
    plain_spec = dataclasses.replace(spec, probes=(), properties=())
    plain_cases = [c for c in cases if c.base is None]
    with_teaching: list[float] = []
    without: list[float] = []
    for _ in range(runs):
        for timings, x_spec, x_cases in ((with_teaching, spec, cases), (without, plain_spec, plain_cases)):
            t = time.perf_counter()
            result = grade(solution, x_spec, x_cases, ref)
            timings.append(time.perf_counter() - t)
            assert result.verdict == Verdict.PASSED, result.to_dict()
    return statistics.median(with_teaching), statistics.median(without), len(cases), len(plain_cases)


_worker: dict[str, object] = {}


def _zygote_worker_init(folder: str | None) -> None:
    """A grading worker process of its own (as `manage.py serve` runs them), with its own zygote."""
    if folder == "blank":
        spec = parse_spec(tomllib.loads(BLANK_TOML))
        solution, cases = BLANK_SOLUTION, list(spec.cases)
    else:
        spec, solution, cases = load_exercise(Path(folder) if folder else None)
    ref = run_reference(solution, spec, cases)
    manager = zygote.enable_zygote()
    assert manager.wait_ready(60), "the grading zygote did not start"
    _worker.update(spec=spec, solution=solution, cases=cases, ref=ref)


def _zygote_worker_grade(_: int) -> float:
    t = time.perf_counter()
    result = grade(_worker["solution"], _worker["spec"], _worker["cases"], _worker["ref"])  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t
    assert result.verdict == Verdict.PASSED, result.to_dict()
    return elapsed


def zygote_saturated(folder: str | None, workers: int, n: int) -> tuple[list[float], float]:
    """Seconds per grade and grades per second with ``workers`` worker processes grading back to
    back, each with its own zygote (threads would share one GIL on the host side)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_zygote_worker_init, initargs=(folder,)
    ) as pool:
        list(pool.map(_zygote_worker_grade, range(2 * workers)))  # every worker started and warm
        t = time.perf_counter()
        latencies = list(pool.map(_zygote_worker_grade, range(n)))
        rate = n / (time.perf_counter() - t)
    return latencies, rate


def bare_rate(workers: int, n: int) -> float:
    """Bare ``python -c "import numpy"`` processes per second with ``workers`` at once."""
    t = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: floor_once(), range(n)))
    return n / (time.perf_counter() - t)


def zygote_report(args: argparse.Namespace, floor_p50: float, floor_cpu: float) -> None:
    """The zygote's figures (issue 18) against the floor measured in this run."""
    n = max(args.runs, 8 * args.workers)
    exercises: list[tuple[str, str | None]] = [(folder.name, str(folder)) for folder in args.also]
    exercises += [("code fill-in blank", "blank"), ("sample", None)]
    manager = zygote.enable_zygote()
    try:
        assert manager.wait_ready(60), "the grading zygote did not start"
        for name, folder in exercises:
            if folder == "blank":
                x_spec = parse_spec(tomllib.loads(BLANK_TOML))
                x_solution, x_cases = BLANK_SOLUTION, list(x_spec.cases)
            else:
                x_spec, x_solution, x_cases = load_exercise(Path(folder) if folder else None)
            x_ref = run_reference(x_solution, x_spec, x_cases)
            low = []
            host0 = time.process_time()
            zygote_group = manager.current.cgroup if manager.current else None
            zygote0 = zygote_group.cpu_seconds() if zygote_group else None
            child0 = zygote.totals["child_cpu"]
            for _ in range(args.runs):
                t = time.perf_counter()
                result = grade(x_solution, x_spec, x_cases, x_ref)
                low.append(time.perf_counter() - t)
                assert result.verdict == Verdict.PASSED, result.to_dict()
            host_cpu = (time.process_time() - host0) / args.runs
            run_cpu = zygote.totals["child_cpu"] - child0
            zygote1 = zygote_group.cpu_seconds() if zygote_group else None
            zygote_cpu = (
                (zygote1 - zygote0) / args.runs if zygote0 is not None and zygote1 is not None else 0.0
            )
            cpu = host_cpu + run_cpu / args.runs + zygote_cpu
            target = 0.2 if folder == "blank" else 0.25
            lo = statistics.median(low)
            # The same with a pool of one pre-forked child (DIKKAT_GRADER_POOL=1 with the zygote on):
            # the child's fork, namespaces, mounts and cgroup move happen before the job arrives.
            warm = enable_pool(1)
            try:
                pooled = []
                for _ in range(args.runs):
                    warm.wait_ready()
                    t = time.perf_counter()
                    result = grade(x_solution, x_spec, x_cases, x_ref)
                    pooled.append(time.perf_counter() - t)
                    assert result.verdict == Verdict.PASSED, result.to_dict()
            finally:
                disable_pool()
            po = statistics.median(pooled)
            print(
                f"zygote ({name}, {len(x_cases)} cases), low load: p50 {lo * 1000:6.1f} ms "
                f"p95 {pct(low, 95) * 1000:6.1f} ms -> {lo / floor_p50:.2f} x floor; with a pre-forked child "
                f"p50 {po * 1000:6.1f} ms -> {po / floor_p50:.2f} x floor (target <= {target})"
            )
            print(
                f"         CPU per grade {cpu * 1000:5.1f} ms (host {host_cpu * 1000:.1f}, the job's cgroup "
                f"{run_cpu / args.runs * 1000:.1f}, the zygote {zygote_cpu * 1000:.1f}) -> floor CPU / that = "
                f"{floor_cpu / cpu:.2f} (the throughput ratio when CPU bound)"
            )
            zygote.disable_zygote()  # the workers below have their own
            # Bare NumPy processes on the same cores just before and just after (the mean): the
            # machine's load changes by the minute.
            before = bare_rate(args.workers, n)
            saturated, rate = zygote_saturated(folder, args.workers, n)
            floor_throughput = (before + bare_rate(args.workers, n)) / 2
            manager = zygote.enable_zygote()
            assert manager.wait_ready(60)
            sat = statistics.median(saturated)
            print(
                f"zygote ({name}), {args.workers} worker processes back to back: p50 {sat * 1000:6.1f} ms "
                f"-> {sat / floor_p50:.2f} x floor; {rate:.1f} grades/s -> {rate / floor_throughput:.2f} x "
                f"bare NumPy processes ({floor_throughput:.1f}/s around it; target >= 3)"
            )
        print(
            f"zygote: {manager.fallbacks} jobs fell back to a fresh sandbox in this process; "
            f"load average now {os.getloadavg()[0]:.2f}"
        )
    finally:
        zygote.disable_zygote()


# Each stamp names the stage that ended at it (timeline.py); the breakdown's rows, in order.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    (
        "host: check the source, run lock, job directory",
        ("grade.start", "grade.check", "host.lock", "host.jobdir"),
    ),
    ("host: create the run's cgroup", ("host.prepare",)),
    (
        "zygote: receive the request and fork",
        ("sandbox:zygote.recv", "sandbox:zygote.fork", "host.fork.request"),
    ),
    ("child: its fds and unshare (namespaces)", ("sandbox:child.fds", "sandbox:child.unshare")),
    ("child: tmpfs mounts and /job", ("sandbox:child.mounts",)),
    ("host: receive the child's report, check its pid", ("host.child.reported", "host.pid.check")),
    ("host: move the child into the cgroup", ("host.cgroup.place", "host.child.mounted", "host.cgroup.rest")),
    (
        "child: fork init, /proc, fork the runner",
        ("sandbox:init.fork", "sandbox:init.proc", "sandbox:runner.fork"),
    ),
    ("runner: close fds, drop capabilities", ("sandbox:runner.fds", "sandbox:runner.caps")),
    ("runner: load the seccomp filter", ("sandbox:runner.seccomp",)),
    (
        "runner: reseed, say R; host reads it",
        ("sandbox:runner.reseed", "sandbox:ready", "host.spawn", "host.ready"),
    ),
    ("host: write job, code and inputs to in/", ("host.inputs",)),
    ("child: copy the inputs into /job", ("host.publish",)),
    (
        "runner: J, job.json, rlimits, no-exec filter, S",
        ("host.J", "sandbox:job.wait", "sandbox:job.read", "sandbox:secured", "host.status.S"),
    ),
    ("runner: compile and import the submission", ("sandbox:module",)),
    ("runner: per-case output files and stdio", ("sandbox:case.files",)),
    ("runner: load inputs (.npy)", ("sandbox:case.load",)),
    ("student code", ("sandbox:case.code",)),
    ("runner: write results (.npy, status)", ("sandbox:case.save",)),
    (
        "host: read phase 0, stage and copy hidden inputs",
        ("host.status.P0", "host.collect", "host.stage", "sandbox:phase.wait"),
    ),
    ("runner: exit; host sees it", ("sandbox:end", "host.exit")),
    ("host: stop, read the last phase", ("host.stop", "host.collect.last")),
    (
        "host: teardown (kill, cgroup removal, unmount, directory, lock)",
        ("host.kill", "host.cgroup.remove", "host.umount", "host.rmtree", "host.unlock"),
    ),
    ("host: compare outputs, teaching feedback", ("grade.run", "grade.evaluate", "grade.teach", "grade.end")),
]


def stage_times(stamps: list[timeline.Stamp]) -> dict[str, float]:
    """Seconds per stage of one grade: each interval between two stamps goes to the later one."""
    rows = {name: stage for stage, names in STAGES for name in names}
    times: dict[str, float] = {}
    for (_, t0), (name, t1) in itertools.pairwise(stamps):
        stage = rows.get(name, "other: " + name)
        times[stage] = times.get(stage, 0.0) + (t1 - t0)
    return times


def breakdown_report(args: argparse.Namespace, floor_p50: float) -> None:
    """Where one grade's time goes with the zygote on, at low load (one grade at a time)."""
    exercises: list[tuple[str, str | None]] = [(folder.name, str(folder)) for folder in args.also]
    exercises.append(("code fill-in blank", "blank"))
    manager = zygote.enable_zygote()
    try:
        assert manager.wait_ready(60), "the grading zygote did not start"
        for name, folder in exercises:
            if folder == "blank":
                x_spec = parse_spec(tomllib.loads(BLANK_TOML))
                x_solution, x_cases = BLANK_SOLUTION, list(x_spec.cases)
            else:
                x_spec, x_solution, x_cases = load_exercise(Path(folder) if folder else None)
            x_ref = run_reference(x_solution, x_spec, x_cases)
            for _ in range(3):
                grade(x_solution, x_spec, x_cases, x_ref)
            per_grade: list[dict[str, float]] = []
            totals: list[float] = []
            for _ in range(args.runs):
                time.sleep(0.02)  # low load: nothing of the previous grade still runs
                with timeline.recording() as stamps:
                    result = grade(x_solution, x_spec, x_cases, x_ref)
                assert result.verdict == Verdict.PASSED, result.to_dict()
                per_grade.append(stage_times(stamps))
                totals.append(stamps[-1][1] - stamps[0][1])
            names = [stage for stage, _ in STAGES]
            names += sorted({k for g in per_grade for k in g} - set(names))
            total = statistics.median(totals)
            print(
                f"breakdown ({name}, {len(x_cases)} cases, zygote, low load): p50 {total * 1000:.1f} ms "
                f"-> {total / floor_p50:.2f} x floor; median ms per stage over {args.runs} grades:"
            )
            for stage in names:
                ms = statistics.median(g.get(stage, 0.0) for g in per_grade) * 1000
                print(f"  {ms:6.2f}  {stage}")
        print(f"breakdown: load average now {os.getloadavg()[0]:.2f}")
    finally:
        zygote.disable_zygote()


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(q / 100 * (len(values) - 1))))
    return values[k]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=40, help="sequential grades (default 40)")
    parser.add_argument(
        "--exercise", type=Path, help="an exercise folder (default: a built-in attention sample)"
    )
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="parallel graders for throughput"
    )
    parser.add_argument(
        "--pool",
        type=int,
        default=0,
        metavar="N",
        help="also measure with a pool of N pre-spawned single-use sandboxes",
    )
    parser.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="with --pool: also measure the pool on this exercise folder (and on a code blank)",
    )
    parser.add_argument(
        "--zygote",
        action="store_true",
        help="also measure grading through the grading zygote (GRADER_ZYGOTE), on --also folders and a code blank",
    )
    parser.add_argument(
        "--teaching",
        type=Path,
        default=TEACHING_EXERCISE,
        metavar="DIR",
        help="measure the extra time of this exercise's weight probes and property cases "
        "(default: attention-function; 'none' to skip)",
    )
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="only print where a grade's time goes with the zygote on (per stage, low load), "
        "for --also folders and a code blank",
    )
    args = parser.parse_args(argv)
    if args.breakdown:
        floor_once()
        floor_p50 = statistics.median(floor_once()[0] for _ in range(max(5, args.runs // 2)))
        breakdown_report(args, floor_p50)
        return 0

    spec, solution, cases = load_exercise(args.exercise)
    ref = run_reference(solution, spec, cases)
    cores = os.cpu_count() or 1

    # Warm up caches (page cache, the seccomp program, cgroup parents).
    for _ in range(3):
        grade(solution, spec, cases, ref)
        floor_once()

    # Floor and grade alternate so that background load hits both alike.
    floor_walls, floor_cpus, latencies = [], [], []
    grade_cpu = 0.0
    for _ in range(args.runs):
        wall, cpu = floor_once()
        floor_walls.append(wall)
        floor_cpus.append(cpu)
        self0 = time.process_time()
        t = time.perf_counter()
        result = grade(solution, spec, cases, ref)
        latencies.append(time.perf_counter() - t)
        grade_cpu += time.process_time() - self0 + (result.cpu_ms or 0) / 1000
        assert result.verdict == Verdict.PASSED, result.to_dict()
    grade_cpu /= args.runs
    floor_cpu = statistics.mean(floor_cpus)

    n = max(args.runs, 4 * args.workers)
    rate = throughput(solution, spec, cases, ref, args.workers, n)
    # The same parallelism for bare NumPy processes: what this machine gives right now.
    t = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(lambda _: floor_once(), range(n)))
    floor_throughput = n / (time.perf_counter() - t)

    pooled = None
    if args.pool:
        warm = enable_pool(args.pool)
        try:
            pooled = []
            for _ in range(args.runs):
                warm.wait_ready()  # low load: a warm sandbox is waiting
                t = time.perf_counter()
                result = grade(solution, spec, cases, ref)
                pooled.append(time.perf_counter() - t)
                assert result.verdict == Verdict.PASSED, result.to_dict()
        finally:
            disable_pool()

    floor_p50 = statistics.median(floor_walls)
    target_tp = 0.8 * cores / floor_cpu
    load = os.getloadavg()[0]
    print(
        f"cases per grade: {len(cases)}  cores: {cores}  runs: {args.runs}  load average at the end: {load:.2f}"
    )
    print(
        f"floor  python -c 'import numpy':  p50 {floor_p50 * 1000:7.1f} ms   p95 {pct(floor_walls, 95) * 1000:7.1f} ms   CPU {floor_cpu * 1000:6.1f} ms"
    )
    print(
        f"grade  (fresh sandbox):           p50 {statistics.median(latencies) * 1000:7.1f} ms   p95 {pct(latencies, 95) * 1000:7.1f} ms   CPU {grade_cpu * 1000:6.1f} ms (host + its sandbox)"
    )
    print(
        f"ratio  p50 {statistics.median(latencies) / floor_p50:.2f} x floor (target <= 1.3)   "
        f"p95 {pct(latencies, 95) / pct(floor_walls, 95):.2f} x floor p95"
    )
    if pooled:
        print(
            f"grade  (pool of {args.pool}, low load):   p50 {statistics.median(pooled) * 1000:7.1f} ms   p95 {pct(pooled, 95) * 1000:7.1f} ms"
            f"   -> p50 {statistics.median(pooled) / floor_p50:.2f} x floor (target <= 0.3)"
        )
    if args.pool and args.also:
        # Real work: the course's own exercises (their own limits) and a code fill-in blank.
        extra = [(folder.name, *load_exercise(folder)) for folder in args.also]
        blank = parse_spec(tomllib.loads(BLANK_TOML))
        extra.append(("code fill-in blank", blank, BLANK_SOLUTION, list(blank.cases)))
        for name, x_spec, x_solution, x_cases in extra:
            x_ref = run_reference(x_solution, x_spec, x_cases)
            p50 = pooled_p50(x_solution, x_spec, x_cases, x_ref, args.runs)
            print(
                f"grade  (pool, {name}, own limits): p50 {p50 * 1000:7.1f} ms   -> {p50 / floor_p50:.2f} x floor "
                f"(target <= 0.3)"
            )
    if args.zygote:
        zygote_report(args, floor_p50, floor_cpu)
    if str(args.teaching) != "none" and (args.teaching / "exercise.toml").is_file():
        with_p50, without_p50, n_with, n_without = teaching_cost(args.teaching, args.runs)
        share = with_p50 / without_p50 - 1
        print(
            f"grade  ({args.teaching.name}, probes + properties): p50 {with_p50 * 1000:7.1f} ms "
            f"({n_with} cases) vs {without_p50 * 1000:7.1f} ms without ({n_without} cases) "
            f"-> {share * 100:+.0f} % (target <= +20 %)"
        )
    print(
        f"throughput {rate:.2f} grades/s with {args.workers} workers; "
        f"target >= 0.8 x cores / floor CPU = {target_tp:.2f}/s -> {rate / target_tp:.2f} x target"
    )
    print(
        f"           bare NumPy processes, same workers, same moment: {floor_throughput:.2f}/s "
        f"-> grading runs at {rate / floor_throughput:.2f} x that rate"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
