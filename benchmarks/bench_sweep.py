"""What a sweep gains from worker processes and from Ray, and where their time goes.

Runs the same sweep of ``--runs`` short urban runs (rule brain, one day, ``--agents``
travellers, seeds 0..runs-1) on each executor of ``--executors``, each in a fresh Python
process (so no executor profits from modules or caches another one loaded), into a fresh
folder, and checks that every executor returned the serial table:

- ``serial``: one run after the other in the process;
- ``process``: the process executor as the sweep makes it (on Linux its workers are forked from
  a fork server that imported the sweep's and the model's modules once);
- ``process-spawn``: the process executor with spawned workers (each imports everything);
- ``ray``: a local Ray instance with ``--workers`` CPUs, started and stopped by the sweep;
- ``ray-up``: the same Ray instance started before the sweep (a cluster already running).

For each it prints the sweep's wall time and speed-up over serial, the CPU time of the whole
process tree during the sweep (``/proc`` on Linux: the process, its workers, a fork server,
Ray's daemons), and, measured inside the workers (the sweep's function is wrapped): how many
worker processes ran, when the first run began, the CPU a worker spent before its first run
(interpreter start and imports), the CPU of each worker's first run and of its later runs
(median), and the per-run overhead (the later runs' median CPU minus serial's).

On a machine shared with other work, wall times say little: Linux's autogroup scheduler gives
each login session one share of the CPUs, so two workers of one session get no more CPU than a
serial run of it, and the speed-up reads below 1. The CPU columns then say what each executor
costs; the speed-up needs a quiet machine. Goal on 2 cores: process and Ray >= 1.7x serial at
16 runs x 70 agents.

    python benchmarks/bench_sweep.py [--runs 16] [--agents 70] [--workers 2] [--json out.json]
    python benchmarks/bench_sweep.py --only process    # one executor, in this process
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import pandas as pd

from mesa_llm_mobility.experiment.executors import (
    Executor,
    LostTask,
    ProcessExecutor,
    RayExecutor,
    WorkerLostError,
    make_executor,
)
from mesa_llm_mobility.experiment.sweeps import sweep
from mesa_llm_mobility.urban import UrbanMobilityModel

ROOT = Path(__file__).resolve().parent.parent
EXECUTOR_CHOICES = ("serial", "process", "process-spawn", "ray", "ray-up")


# ---------------------------------------------------------------------------- measuring
def tree_cpu_seconds() -> float | None:
    """CPU seconds (user + system) of this process and all its descendants, dead or alive.

    Reaped descendants come from ``getrusage``; live ones (and zombies) from ``/proc``, each
    with the CPU of the children it reaped. ``None`` where there is no ``/proc``.
    """
    proc = Path("/proc")
    if not (proc / "self" / "stat").is_file():
        return None
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()
        pid, parent = int(entry.name), int(fields[1])
        children.setdefault(parent, []).append(pid)
        # utime, stime, cutime, cstime: its own CPU and that of the children it reaped
        ticks[pid] = sum(int(value) for value in fields[11:15])
    stack, seconds = list(children.get(os.getpid(), [])), 0
    while stack:
        pid = stack.pop()
        seconds += ticks.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total + seconds / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class TimedCall:
    """``fn(task)`` in a worker, with what the run cost there (picklable)."""

    fn: Callable[[Any], Any]

    def __call__(self, task: Any) -> tuple[Any, dict[str, Any]]:
        """Run the task; return its result and its worker's figures."""
        cpu_before = time.process_time()
        start = time.time()
        result = self.fn(task)
        return result, {
            "pid": os.getpid(),
            "cpu_before_s": cpu_before,
            "cpu_s": time.process_time() - cpu_before,
            "start": start,
            "end": time.time(),
        }


class Instrumented:
    """An executor that records the figures of every run its inner executor runs."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.name = inner.name
        self.runs: list[dict[str, Any]] = []
        self.cpu_at_close: float | None = None

    @property
    def workers(self) -> int:
        """The inner executor's workers."""
        return self.inner.workers

    def imap_unordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_lost: LostTask | None = None,
    ) -> Iterator[Any]:
        """The inner executor's results, its figures kept aside."""

        def lost(task: Any, message: str) -> tuple[Any, None]:
            if on_lost is None:
                raise WorkerLostError(message)
            return on_lost(task, message), None

        for result, figures in self.inner.imap_unordered(TimedCall(fn), tasks, lost):
            if figures is not None:
                self.runs.append(figures)
            yield result

    def __enter__(self) -> Self:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        # before the executor closes: Ray's workers are still alive to be counted
        self.cpu_at_close = tree_cpu_seconds()
        self.inner.__exit__(*exc_info)


def executor_for(name: str, workers: int) -> Executor:
    """The executor a benchmark row runs on."""
    if name == "process":
        return make_executor("process", max_workers=workers)
    if name == "process-spawn":
        return ProcessExecutor(workers, start_method="spawn")
    if name == "ray":
        return RayExecutor(num_cpus=workers)
    if name == "ray-up":
        return RayExecutor()  # uses the Ray instance already running
    return make_executor("serial")


def run_one(name: str, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Time the sweep on one executor in this process; return its figures and its table."""
    ray = None
    if name == "ray-up":
        import ray  # noqa: PLC0415  (an optional dependency, needed by this row only)

        ray.init(num_cpus=args.workers, include_dashboard=False)
    try:
        executor = Instrumented(executor_for(name, args.workers))
        cpu_before = tree_cpu_seconds()
        own_cpu_before = time.process_time()
        start_epoch = time.time()
        start = time.perf_counter()
        table = sweep(
            UrbanMobilityModel,
            {"n_agents": args.agents, "days": 1},
            seeds=args.runs,
            out=folder / name,
            executor=executor,
            progress=False,
        )
        wall = time.perf_counter() - start
        own_cpu = time.process_time() - own_cpu_before
        cpu_after = tree_cpu_seconds()
    finally:
        if ray is not None:
            ray.shutdown()
    cpu = None
    if cpu_before is not None and cpu_after is not None:
        cpu = max(cpu_after, executor.cpu_at_close or 0.0) - cpu_before
    return {
        "executor": name,
        "wall_s": wall,
        "cpu_s": cpu,
        "own_cpu_s": own_cpu,
        "failed": int(table.attrs["failed"]),
        **worker_figures(executor.runs, start_epoch),
        "table": table.drop(columns="run_dir"),
    }


def worker_figures(runs: list[dict[str, Any]], start_epoch: float) -> dict[str, Any]:
    """Workers used, when the first run began, and the start-up, first and later runs' CPU."""
    by_worker: dict[int, list[dict[str, Any]]] = {}
    for figures in sorted(runs, key=lambda figures: figures["start"]):
        by_worker.setdefault(figures["pid"], []).append(figures)
    firsts = [own[0] for own in by_worker.values()]
    later = [figures["cpu_s"] for own in by_worker.values() for figures in own[1:]]
    # a worker's CPU from its start to the end of its last run
    totals = [own[-1]["cpu_before_s"] + own[-1]["cpu_s"] for own in by_worker.values()]
    return {
        "workers": len(by_worker),
        "worker_cpu_s": sum(totals),
        "busiest_worker_cpu_s": max(totals),
        "first_run_at_s": min(f["start"] for f in firsts) - start_epoch,
        "worker_start_cpu_s": statistics.median(f["cpu_before_s"] for f in firsts),
        "first_run_cpu_s": statistics.median(f["cpu_s"] for f in firsts),
        "later_run_cpu_s": statistics.median(later) if later else None,
    }


# ---------------------------------------------------------------------------- the table
def machine() -> dict[str, Any]:
    """Where and when: CPU model, cores, load, Python, commit, date."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "commit": commit or None,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "load_1_5_15": [round(load, 2) for load in os.getloadavg()],
    }


def quiet_speed_up(
    row: dict[str, Any], serial: dict[str, Any], workers: int
) -> float | None:
    """The speed-up these CPU times allow on ``workers`` otherwise idle cores (an estimate).

    On idle cores a serial sweep takes its CPU time, and a parallel one at least its total
    CPU time over the cores, and at least the CPU of what runs one after the other: the
    caller's own part, the processes that are neither caller nor worker (a fork server's
    imports, Ray's daemons: counted as if none of it overlapped the runs), and the busiest
    worker. The estimate divides the serial CPU by the larger of the two.
    """
    if row is serial or row["cpu_s"] is None or serial["cpu_s"] is None:
        return None
    others = max(0.0, row["cpu_s"] - row["own_cpu_s"] - row["worker_cpu_s"])
    critical = row["own_cpu_s"] + others + row["busiest_worker_cpu_s"]
    return serial["cpu_s"] / max(row["cpu_s"] / workers, critical)


def print_table(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """One line per executor, against the serial row."""
    serial = next(row for row in rows if row["executor"] == "serial")

    def number(value: float | None, digits: int = 2) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    print(
        f"{args.runs} urban runs ({args.agents} agents, 1 day, rules), {args.workers} workers; "
        "the same table from every executor"
    )
    header = (
        f"{'executor':<14}{'wall s':>8}{'speed-up':>9}{'cpu s':>8}{'extra cpu s':>12}"
        f"{'workers':>8}{'1st run at s':>13}{'start cpu s':>12}{'1st run cpu s':>14}"
        f"{'run cpu s':>10}{'overhead/run s':>15}{'2-core est.':>12}"
    )
    print(header)
    for row in rows:
        extra = (
            None
            if row["cpu_s"] is None or serial["cpu_s"] is None
            else row["cpu_s"] - serial["cpu_s"]
        )
        overhead = (
            None
            if row["later_run_cpu_s"] is None or serial["later_run_cpu_s"] is None
            else row["later_run_cpu_s"] - serial["later_run_cpu_s"]
        )
        print(
            f"{row['executor']:<14}{row['wall_s']:>8.1f}"
            f"{serial['wall_s'] / row['wall_s']:>8.2f}x{number(row['cpu_s'], 1):>8}"
            f"{number(extra, 1):>12}{row['workers']:>8}{row['first_run_at_s']:>13.1f}"
            f"{row['worker_start_cpu_s']:>12.2f}{row['first_run_cpu_s']:>14.2f}"
            f"{number(row['later_run_cpu_s']):>10}{number(overhead):>15}"
            f"{number(quiet_speed_up(row, serial, args.workers)):>11}x"
        )


def main() -> None:
    """Run every executor in its own process, check the tables, print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--agents", type=int, default=70)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--executors",
        default=",".join(EXECUTOR_CHOICES),
        help=f"comma-separated, from {', '.join(EXECUTOR_CHOICES)} (serial always runs)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--only",
        choices=EXECUTOR_CHOICES,
        help="run this executor alone, in this process (for timing the whole process)",
    )
    parser.add_argument(
        "--figures", type=Path, help=argparse.SUPPRESS
    )  # --only's output
    args = parser.parse_args()
    if args.only:
        with tempfile.TemporaryDirectory() as folder:
            row = run_one(args.only, args, Path(folder))
        if args.figures is not None:
            row["table"].to_parquet(args.figures.with_suffix(".parquet"))
            del row["table"]
            args.figures.write_text(json.dumps(row))
        print(f"{args.only}: {row['wall_s']:.1f} s, {row['failed']} failed")
        return
    names = [name for name in args.executors.split(",") if name]
    unknown = sorted(set(names) - set(EXECUTOR_CHOICES))
    if unknown:
        parser.error(f"unknown executor {', '.join(unknown)}")
    names = ["serial", *[name for name in names if name != "serial"]]
    before = machine()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            figures = Path(folder) / f"{name}.json"
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    f"--only={name}",
                    f"--runs={args.runs}",
                    f"--agents={args.agents}",
                    f"--workers={args.workers}",
                    f"--figures={figures}",
                ],
                check=True,
            )
            row = json.loads(figures.read_text())
            row["table"] = pd.read_parquet(figures.with_suffix(".parquet"))
            rows.append(row)
    for row in rows:
        pd.testing.assert_frame_equal(rows[0]["table"], row["table"])
        if row["failed"]:
            raise SystemExit(f"{row['executor']}: {row['failed']} runs failed")
    print_table(rows, args)
    after = machine()
    print(
        f"load average (1/5/15 min) {before['load_1_5_15']} before, "
        f"{after['load_1_5_15']} after; {before['cpu']}, {before['cores']} cores"
    )
    if args.json is not None:
        record = {
            "machine": before,
            "load_after": after["load_1_5_15"],
            "runs": args.runs,
            "agents": args.agents,
            "workers": args.workers,
            "rows": [
                {
                    **{k: v for k, v in row.items() if k != "table"},
                    "speed_up": rows[0]["wall_s"] / row["wall_s"],
                    "two_core_estimate": quiet_speed_up(row, rows[0], args.workers),
                }
                for row in rows
            ],
        }
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
