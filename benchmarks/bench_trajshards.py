"""Benchmark: trajectory generation sharded by individuals, unsharded vs serial vs process shards.

Synthesizes a city (``--individuals``, default 2,400, x 4 weeks of history), then runs
``mlm traj generate --days 7`` once per variant, each in its own process:

* ``unsharded``: one model (today's path);
* ``serial``: ``--executor serial --shards K``;
* ``process``: ``--executor process --workers W --shards K``;
* ``ray``: ``--executor ray --num-cpus W --shards K`` (only with ``--ray``; Ray's workers are
  not this process's children, so their CPU time is not counted).

For each it reports wall time, CPU time (user + sys of the command and every worker process it
reaped), the largest peak RSS of one process, and the load average around it; and it checks
that every variant wrote exactly the unsharded trajectories. Wall time on a shared machine
says little: compare CPU times, and read the load.

Run: ``PYTHONPATH=. python benchmarks/bench_trajshards.py [--individuals 2400] [--days 7]
[--shards 8] [--workers 2] [--ray] [--out /tmp/bench_trajshards]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd


def _generate(args: argparse.Namespace, name: str, extra: list[str]) -> dict:
    run_dir = Path(args.out) / name / "gen.run"
    out = run_dir / "tables" / "trajectories.parquet"
    command = [
        sys.executable,
        "-m",
        "mesa_llm_mobility.cli",
        "traj",
        "run",
        "--history",
        str(Path(args.out) / "city"),
        "--days",
        str(args.days),
        "--out",
        str(run_dir),
        "--overwrite",
        "--no-progress",
        *extra,
    ]
    load_before = os.getloadavg()[0]
    began = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    # wait4: this command's usage, with every worker process it reaped
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{name}: exit status {child.returncode}")
    return {
        "variant": name,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),  # the largest of its processes
        "load_before": round(load_before, 1),
        "load_after": round(os.getloadavg()[0], 1),
        "output": str(out),
    }


def main() -> None:
    """Run the variants and print one line each, then a JSON summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, default=2400)
    parser.add_argument("--weeks", type=int, default=4)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also the ray executor")
    parser.add_argument("--out", default="/tmp/bench_trajshards")
    args = parser.parse_args()
    city = Path(args.out) / "city"
    if not (city / "staypoints.parquet").is_file():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mesa_llm_mobility.cli",
                "traj",
                "synth",
                "--individuals",
                str(args.individuals),
                "--weeks",
                str(args.weeks),
                "--out",
                str(city),
            ],
            check=True,
        )
    shards = ["--shards", str(args.shards)]
    variants = [
        ("unsharded", []),
        ("serial", ["--executor", "serial", *shards]),
        ("process", ["--executor", "process", "--workers", str(args.workers), *shards]),
    ]
    if args.ray:
        variants.append(
            ("ray", ["--executor", "ray", "--num-cpus", str(args.workers), *shards])
        )
    rows = []
    for name, extra in variants:
        row = _generate(args, name, extra)
        rows.append(row)
        print(
            f"{name:>9}: wall {row['wall_s']:6.1f} s, CPU {row['cpu_s']:6.1f} s, "
            f"peak RSS {row['peak_rss_mb']} MB, load {row['load_before']}-{row['load_after']}"
        )
    reference = pd.read_parquet(rows[0]["output"])
    for row in rows[1:]:
        pd.testing.assert_frame_equal(pd.read_parquet(row["output"]), reference)
    print(f"every variant wrote the unsharded {len(reference)} visits")
    print(
        json.dumps({"individuals": args.individuals, "days": args.days, "rows": rows})
    )


if __name__ == "__main__":
    main()
