"""Benchmark: point-queue network loading of UXsim's 11 x 11 grid (``run_large``), ours vs UXsim.

Scenario: ``grid11_scenario.json`` (UXsim's own ``run_large`` exported as data): 121 nodes, 440
one-way links of 1000 m at 20 m/s (50 s), exit capacity 0.8 veh/s, 484 OD windows of 0.035 veh/s
over one hour (60,984 vehicles). Our engine runs the ``flow`` link model at single-vehicle
resolution with dynamic en-route routing refreshed every 10 min with update weight 0.5 (UXsim's
DUO update interval and weight); an undamped variant (weight 1) is printed for comparison.

When the ``uxsim`` package is installed, the same network and demand run in UXsim's
point-queue-like setting (jam density 1000 veh/m, ``capacity_out`` 0.8 veh/s, the maintainer's
recipe), each configuration in a fresh subprocess with trajectory logging off:

- ``python_platoon5``: pure-Python engine, platoon size 5 (``deltan=5``);
- ``cpp_vehicle``: bundled C++ engine at single-vehicle resolution (``deltan=1``).

Timing is the wall time of the simulation call only (ours: ``simulate_demand`` on the expanded
demand table, including building its trips table; UXsim: ``exec_simulation``).

Usage::

    python benchmarks/bench_traffic.py [--scenario PATH] [--runs 3] [--uxsim-runs 1] [--no-uxsim]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mesa_llm_mobility.urban.demand import demand_from_windows, simulate_demand
from mesa_llm_mobility.urban.scenario import grid_scenario_from_uxsim

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = [
    ROOT.parent / "shared" / "bench" / "grid11_scenario.json",
    ROOT.parents[1] / "shared" / "bench" / "grid11_scenario.json",
]
UXSIM_CONFIGS = {"python_platoon5": (5, False), "cpp_vehicle": (1, True)}


def run_ours(path: Path, runs: int, route_update_weight: float = 0.5) -> dict:
    scenario, windows = grid_scenario_from_uxsim(path)
    demand = demand_from_windows(windows)
    times = []
    trips = None
    for _ in range(runs):
        start = time.perf_counter()
        trips = simulate_demand(
            scenario,
            demand,
            routing="dynamic",
            route_interval=10.0,
            route_update_weight=route_update_weight,
        )
        times.append(time.perf_counter() - start)
    completed = int(trips.arrival.notna().sum())
    wall = statistics.median(times)
    return {
        "engine": "ours (event-driven point queue, vehicle resolution, "
        f"route update weight {route_update_weight})",
        "wall_s": wall,
        "wall_s_all": times,
        "total_trips": len(trips),
        "completed_trips": completed,
        "trips_per_wall_s": completed / wall,
        "mean_travel_time_s": float(trips.travel_time.mean() * 60.0),
        "mean_delay_s": float(trips.delay.mean() * 60.0),
    }


def uxsim_single(path: Path, deltan: int, cpp: bool) -> dict:
    """Run UXsim once in this process (called in a subprocess by :func:`run_uxsim`)."""
    import uxsim  # noqa: PLC0415 - optional dependency

    data = json.loads(path.read_text())
    pq = {item["name"]: item for item in data["links_pq_variant"]}
    simulation = data["simulation"]
    route = simulation["route_choice"]
    kwargs = {
        "name": "",
        "deltan": deltan,
        "tmax": simulation["tmax"],
        "reaction_time": simulation["reaction_time"],
        "duo_update_time": route["duo_update_time"],
        "duo_update_weight": route["duo_update_weight"],
        "duo_noise": route["duo_noise"],
        "no_cyclic_routing": route["no_cyclic_routing"],
        "print_mode": 0,
        "save_mode": 0,
        "show_mode": 0,
        "random_seed": simulation.get("random_seed", 0),
        "vehicle_logging_timestep_interval": -1,
    }
    if cpp:
        kwargs["cpp"] = True
    world = uxsim.World(**kwargs)
    nodes = {n["name"]: world.addNode(n["name"], n["x"], n["y"]) for n in data["nodes"]}
    for link in data["links"]:
        variant = pq[link["name"]]
        world.addLink(
            link["name"],
            nodes[link["from"]],
            nodes[link["to"]],
            length=link["length"],
            free_flow_speed=link["free_flow_speed"],
            jam_density=variant["jam_density"],
            number_of_lanes=link["number_of_lanes"],
            capacity_out=variant["capacity_out"],
        )
    for d in data["demand"]:
        world.adddemand(
            nodes[d["orig"]], nodes[d["dest"]], d["t_start"], d["t_end"], d["flow"]
        )
    start = time.perf_counter()
    world.exec_simulation()
    wall = time.perf_counter() - start
    row = world.analyzer.basic_to_pandas().iloc[0]
    return {
        "wall_s": wall,
        "total_trips": float(row["total_trips"]),
        "completed_trips": float(row["completed_trips"]),
        "mean_travel_time_s": float(row["average_travel_time"]),
        "mean_delay_s": float(row["average_delay"]),
    }


def run_uxsim(path: Path, name: str, runs: int) -> dict:
    deltan, cpp = UXSIM_CONFIGS[name]
    rows = []
    for _ in range(runs):
        cmd = [
            sys.executable,
            __file__,
            "--scenario",
            str(path),
            "--uxsim-single",
            name,
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    wall = statistics.median(r["wall_s"] for r in rows)
    result = dict(rows[-1])
    result.update(
        engine=f"uxsim {name} (deltan={deltan}, {'C++' if cpp else 'Python'})",
        wall_s=wall,
        wall_s_all=[r["wall_s"] for r in rows],
        trips_per_wall_s=result["completed_trips"] / wall,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        default=next((p for p in CANDIDATES if p.exists()), CANDIDATES[0]),
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--uxsim-runs", type=int, default=1)
    parser.add_argument("--no-uxsim", action="store_true")
    parser.add_argument(
        "--uxsim-single", choices=sorted(UXSIM_CONFIGS), help=argparse.SUPPRESS
    )
    args = parser.parse_args()

    if args.uxsim_single:
        deltan, cpp = UXSIM_CONFIGS[args.uxsim_single]
        print(json.dumps(uxsim_single(args.scenario, deltan, cpp)))
        return

    results = {
        "ours": run_ours(args.scenario, args.runs),
        # for the travel-time discussion only: every traveller follows the newest table
        "ours_undamped": run_ours(args.scenario, 1, route_update_weight=1.0),
    }
    have_uxsim = False
    if not args.no_uxsim:
        try:
            import uxsim  # noqa: F401, PLC0415

            have_uxsim = True
        except ImportError:
            print(
                "uxsim not installed: skipping the UXsim comparison (pip install uxsim)"
            )
    if have_uxsim:
        for name in UXSIM_CONFIGS:
            results[name] = run_uxsim(args.scenario, name, args.uxsim_runs)

    for key, r in results.items():
        print(
            f"{key:<16} {r['engine']}\n"
            f"  wall_s: {r['wall_s']:.2f} (runs: {', '.join(f'{x:.2f}' for x in r['wall_s_all'])})   "
            f"trips_per_wall_s: {r['trips_per_wall_s']:.0f}   "
            f"completed_trips: {r['completed_trips']:.0f}/{r['total_trips']:.0f}   "
            f"mean_travel_time_s: {r['mean_travel_time_s']:.1f}   mean_delay_s: {r['mean_delay_s']:.1f}"
        )
    ours = results["ours"]["trips_per_wall_s"]
    if have_uxsim:
        print(
            f"ratio_vs_uxsim_python_platoon5: {ours / results['python_platoon5']['trips_per_wall_s']:.2f}"
        )
        print(
            f"ratio_vs_uxsim_cpp_vehicle: {ours / results['cpp_vehicle']['trips_per_wall_s']:.2f}"
        )


if __name__ == "__main__":
    main()
