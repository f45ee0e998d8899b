"""What a sweep gains from processes and from Ray on this machine.

Runs the same sweep of ``--runs`` short urban runs (rule brain, one day, ``--agents``
travellers, seeds 0..runs-1) serially, on a process pool and on a local Ray instance with
``--workers`` CPUs (started by the sweep, and already running), each into a fresh folder, and prints wall time, speed-up over serial and the
overhead per run (``(wall x workers - serial wall) / runs``: start-up, pickling, scheduling).
It checks that every executor returned the same table. Goal on 2 cores: both >= 1.7x.

    python benchmarks/bench_sweep.py [--runs 16] [--agents 70] [--workers 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from mesa_llm_mobility.experiment.sweeps import sweep
from mesa_llm_mobility.urban import UrbanMobilityModel


def timed_sweep(
    executor: str, out: Path, args: argparse.Namespace
) -> tuple[float, pd.DataFrame]:
    start = time.perf_counter()
    results = sweep(
        UrbanMobilityModel,
        {"n_agents": args.agents, "days": 1},
        seeds=args.runs,
        out=out,
        executor=executor,
        max_workers=args.workers,
        num_cpus=args.workers,
        progress=False,
    )
    return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--agents", type=int, default=70)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    walls: dict[str, float] = {}
    tables: dict[str, pd.DataFrame] = {}
    with tempfile.TemporaryDirectory() as folder:
        for executor in ("serial", "process", "ray"):
            walls[executor], tables[executor] = timed_sweep(
                executor, Path(folder) / executor, args
            )
        # Ray already running (a cluster, or ray.init by the user): its start-up and shutdown
        # (about 5 s on 2 cores) are not the sweep's
        import ray  # noqa: PLC0415

        ray.init(num_cpus=args.workers, include_dashboard=False)
        try:
            walls["ray (up)"], tables["ray (up)"] = timed_sweep(
                "ray", Path(folder) / "ray-up", args
            )
        finally:
            ray.shutdown()
    for executor in ("process", "ray", "ray (up)"):
        pd.testing.assert_frame_equal(
            tables["serial"].drop(columns="run_dir"),
            tables[executor].drop(columns="run_dir"),
        )
    serial = walls["serial"]
    print(
        f"{args.runs} urban runs ({args.agents} agents, 1 day, rules), {args.workers} workers; "
        "identical tables from every executor"
    )
    print(
        f"{'executor':<10}{'wall s':>9}{'per run s':>11}{'speed-up':>10}{'overhead/run s':>16}"
    )
    for executor, wall in walls.items():
        workers = 1 if executor == "serial" else args.workers
        overhead = (wall * workers - serial) / args.runs
        print(
            f"{executor:<10}{wall:>9.1f}{wall / args.runs:>11.2f}{serial / wall:>9.2f}x"
            f"{overhead:>16.2f}"
        )


if __name__ == "__main__":
    main()
