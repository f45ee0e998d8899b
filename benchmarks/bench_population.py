"""Benchmark: wall time and peak memory against population size (issue #13, 10,000 agents).

Urban: ``UrbanMobilityModel(days=1, rng=0, n_agents=n)`` with the rule brain on the bundled
Nguyen-Dupuis network (goal at 10,000: <= 120 s, peak RSS <= 4 GB on 2 cores).
Evacuation: ``n`` rule-brain pedestrians for 720 steps (240 s) on a generated square plaza
holding them at about one pedestrian per 9 walkable cells (``random_spawn=True``; goal at 10,000:
<= 10 min, peak RSS <= 4 GB).

Every run is a fresh process, so its peak RSS (``ru_maxrss``) and CPU time (user + system,
the fair figure on a loaded machine) are its own; evacuation runs also report the CPU time of
the first step (everyone's initial decision) and the rate of the later steps. Results are merged
into ``--results`` (JSON, keyed by model and size), so the table can be built in parts, and the
log-log plots ``docs/images/scale_urban.png`` / ``scale_evac.png`` are redrawn from all of them.

    PYTHONPATH=. python benchmarks/bench_population.py --model urban --max 3000
    PYTHONPATH=. python benchmarks/bench_population.py --model evac --sizes 1000 10000
    PYTHONPATH=. python benchmarks/bench_population.py --model evac --sizes 10000 --steps 60

Runs of fewer than 720 evacuation steps are stored apart (``evac_<steps>_steps``), not plotted.
``--route-workers 2`` plans the evacuation's routes on a second process (the same run); its
rows are stored apart (``..._2_route_workers``), with the workers' CPU time and peak RSS (the
workers' usage is counted when the model closes them), and the rate of later steps per wall
second, which is what two cores buy:

    PYTHONPATH=. python benchmarks/bench_population.py --model evac --sizes 10000 --route-workers 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.personality import mixed_composition
from mesa_llm_mobility.evacuation.plaza import parse_plaza
from mesa_llm_mobility.urban.model import UrbanMobilityModel

ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 300, 1000, 3000, 10000)
DEFAULT_RESULTS = ROOT / "benchmarks" / "results" / "population.json"
GOALS = {"urban": (120.0, 4096.0), "evac": (600.0, 4096.0)}  # wall s, peak RSS MB


def generated_plaza_text(n: int) -> str:
    """A square plaza with room for ``n`` pedestrians (9 walkable cells each, at least 60 x 60).

    Walls around, two exits on the east side, a gate north and south, a few tree groups, and
    the threat entry cell in the west.
    """
    side = max(60, math.ceil(math.sqrt(9 * n)) + 2)
    rows = [["."] * side for _ in range(side)]
    for i in range(side):
        rows[0][i] = rows[side - 1][i] = rows[i][0] = rows[i][side - 1] = "#"
    for y in range(side // 3, side // 3 + 6):  # exit 1 (east, 2.4 m)
        rows[y][side - 1] = "1"
    for y in range(2 * side // 3, 2 * side // 3 + 9):  # exit 2 (east, 3.6 m)
        rows[y][side - 1] = "2"
    for x in range(side // 2 - 5, side // 2 + 5):  # gates north and south (4 m)
        rows[0][x] = "4"
        rows[side - 1][x] = "5"
    for gx in range(side // 5, side - 4, side // 5):  # tree groups of 2 x 2 cells
        for gy in range(side // 5, side - 4, side // 5):
            for dx in (0, 1):
                for dy in (0, 1):
                    rows[gy + dy][gx + dx] = "T"
    rows[side // 2][2] = "a"
    for x in range(
        4, 15
    ):  # start cells (unused with random_spawn, required by the format)
        rows[side // 2][x] = "s"
    header = [
        "[plaza]",
        f"name: generated_{n}",
        "cell_size_m: 0.4",
        "description: generated square plaza for the population benchmark",
        "[openings]",
        "1 exit1 exit 2.4",
        "2 exit2 exit 3.6",
        "4 gate1 gate 4.0",
        "5 gate2 gate 4.0",
        "[map]",
    ]
    return "\n".join(header + ["".join(row) for row in rows]) + "\n"


def evacuation_model(n: int, steps: int, route_workers: int = 1) -> EvacuationModel:
    """The benchmark's evacuation run: ``n`` pedestrians on the generated plaza, ``rng=0``."""
    plaza = parse_plaza(generated_plaza_text(n), source=f"generated_{n}")
    return EvacuationModel(
        plaza,
        composition=mixed_composition(n),
        random_spawn=True,
        rng=0,
        time_limit_s=steps / 3,
        record_positions=False,
        route_workers=route_workers,
    )


def machine() -> str:
    """The CPU model, core count and Python version: the same run differs 2.4 x across machines."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _child(
    model_name: str, n: int, steps: int, route_workers: int = 1
) -> dict[str, float]:
    started = time.perf_counter()
    cpu_started = time.process_time()
    if model_name == "urban":
        model = UrbanMobilityModel(days=1, rng=0, n_agents=n)
        setup = time.perf_counter() - started
        model.run()
        extra = {"trips": model.arrived, "in_progress": model.trips_in_progress}
        model.memory_store.close()
    else:
        model = evacuation_model(n, steps, route_workers)
        setup = time.perf_counter() - started
        model.step()  # the initial decisions of everyone, and the first step
        first_cpu = time.process_time()
        first_wall = time.perf_counter() - started - setup
        model.run()
        later_cpu = time.process_time() - first_cpu
        outcomes = model.pedestrians_frame()["outcome"].value_counts().to_dict()
        extra = {
            "steps": model.tick,
            "outcomes": outcomes,
            "first_step_cpu_s": first_cpu - cpu_started,
            "later_steps_per_cpu_s": (model.tick - 1) / later_cpu
            if later_cpu
            else None,
            "route_workers": route_workers,
            "later_steps_per_wall_s": (model.tick - 1)
            / (time.perf_counter() - started - setup - first_wall),
            "phases_s": {name: round(s, 1) for name, s in model.timing.items()},
        }
        model.close()  # waits for the route workers, so their usage is counted below
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "n": n,
        "setup_s": setup,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "worker_cpu_s": workers.ru_utime + workers.ru_stime,
        "worker_peak_rss_mb": workers.ru_maxrss / 1024,
        "machine": machine(),
    } | extra


def plot(results: dict[str, dict[str, dict]], model_name: str) -> Path | None:
    rows = sorted(results.get(model_name, {}).values(), key=lambda r: r["n"])
    if len(rows) < 2:
        return None
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(ns, [r["wall_s"] for r in rows], "o-", label="wall (s)")
    with_cpu = [r for r in rows if "cpu_s" in r]
    if len(with_cpu) >= 2:
        ax.loglog(
            [r["n"] for r in with_cpu],
            [r["cpu_s"] for r in with_cpu],
            "^--",
            color="C3",
            label="CPU user + sys (s)",
        )
    shared = sorted(
        results.get(f"{model_name}_2_route_workers", {}).values(),
        key=lambda r: r["n"],
    )
    if shared:
        ax.loglog(
            [r["n"] for r in shared],
            [r["wall_s"] for r in shared],
            "o--",
            color="C2",
            label="wall, 2 route workers (s)",
        )
    ax.loglog(
        ns,
        [r["peak_rss_mb"] / 1024 for r in rows],
        "s-",
        color="C1",
        label="peak RSS (GB)",
    )
    wall_goal, rss_goal = GOALS[model_name]
    ax.axhline(wall_goal, color="C0", ls=":", lw=1, label=f"goal {wall_goal:.0f} s")
    ax.axhline(rss_goal / 1024, color="C1", ls=":", lw=1, label="goal 4 GB")
    ax.set_xlabel("agents")
    title = (
        "urban, rule brain, 1 day" if model_name == "urban" else "evacuation, 720 steps"
    )
    ax.set_title(f"Population scaling: {title}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    out = ROOT / "docs" / "images" / f"scale_{model_name}.png"
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=("urban", "evac"), default="urban")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--max", type=int, default=None, help="skip sizes above this")
    parser.add_argument("--steps", type=int, default=720, help="evacuation steps")
    parser.add_argument(
        "--route-workers",
        type=int,
        default=1,
        help="evacuation: processes that plan the routes (results are stored apart)",
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(
            json.dumps(_child(args.model, args.child, args.steps, args.route_workers))
        )
        return
    results: dict[str, dict[str, dict]] = (
        json.loads(args.results.read_text()) if args.results.exists() else {}
    )
    sizes = [n for n in args.sizes if args.max is None or n <= args.max]
    wall_goal, rss_goal = GOALS[args.model]
    # evacuation runs shorter than 720 steps are kept apart (not in the plot)
    whole_run = args.model == "urban" or args.steps == 720
    key = args.model if whole_run else f"{args.model}_{args.steps}_steps"
    if args.model == "evac" and args.route_workers > 1:
        key += f"_{args.route_workers}_route_workers"
    print(
        f"{'model':6} {'agents':>7} {'setup s':>8} {'wall s':>8} {'CPU s':>8} "
        f"{'peak RSS MB':>12}"
    )
    for n in sizes:
        command = [sys.executable, __file__, "--model", args.model, "--child", str(n)]
        command += ["--steps", str(args.steps)]
        command += ["--route-workers", str(args.route_workers)]
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=ROOT, check=False
        )
        if done.returncode:
            sys.exit(f"{args.model} n={n} failed:\n{done.stderr[-3000:]}")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        results.setdefault(key, {})[str(n)] = row
        print(
            f"{args.model:6} {n:7d} {row['setup_s']:8.1f} {row['wall_s']:8.1f} "
            f"{row['cpu_s']:8.1f} {row['peak_rss_mb']:12.0f}",
            flush=True,
        )
        if row.get("worker_cpu_s"):
            print(
                f"       route workers: {row['worker_cpu_s']:.1f} CPU s, peak RSS "
                f"{row['worker_peak_rss_mb']:.0f} MB; later steps "
                f"{row['later_steps_per_wall_s']:.2f} per wall s",
                flush=True,
            )
        if row.get("later_steps_per_cpu_s"):
            estimate = row["first_step_cpu_s"] + 719 / row["later_steps_per_cpu_s"]
            print(
                f"       first step {row['first_step_cpu_s']:.1f} CPU s, then "
                f"{row['later_steps_per_cpu_s']:.2f} steps per CPU s: 720 steps at this "
                f"rate {estimate:.0f} CPU s",
                flush=True,
            )
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if 10000 in sizes and whole_run:
        row = results[key]["10000"]
        rss = row["peak_rss_mb"] + row.get("worker_peak_rss_mb", 0.0)  # both at once
        print(
            f"goal at 10,000: wall {row['wall_s']:.0f} s <= {wall_goal:.0f} s: "
            f"{row['wall_s'] <= wall_goal}; peak RSS (model + route workers) {rss:.0f} MB "
            f"<= {rss_goal:.0f} MB: {rss <= rss_goal} ({row.get('machine', '?')})"
        )
    out = plot(results, args.model)
    if out is not None:
        print(f"plot: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
