"""Benchmark: specific flow through a bottleneck with and without the friction calibration.

The evacuation grid (0.4 m cells, one Moore step per 1/3 s, the paper's conflict rule) lets a
pressing crowd pour through a bottleneck at about 7.5 persons/(m s); laboratory bottleneck
flows are about 1.9 (Seyfried et al. 2009, widths 0.8-1.2 m; Kretz et al. 2006; Liao et al.
2014). ``EvacuationModel(friction=mu)`` adds Kirchner et al.'s (2003) friction: with
probability ``mu`` every claimant of a contested cell stays. This script measures the specific
flow through the movement engine (:func:`~mesa_llm_mobility.evacuation.movement.resolve_moves`)
in a room of 8 x 8 m with a 2 m long bottleneck of each width, filled with walkers that each
step propose the neighbouring cell nearest the exit (a static floor field, as the model's
pedestrians follow their shortest routes). The flow is counted between the 10th and the
10th-last walker out, and averaged over seeds.

    PYTHONPATH=. python benchmarks/bench_bottleneck_flow.py
    PYTHONPATH=. python benchmarks/bench_bottleneck_flow.py --friction 0 0.6 0.7 0.75 --seeds 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from mesa_llm_mobility.evacuation.movement import resolve_moves
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, Terrain
from mesa_llm_mobility.evacuation.routing import GridGraph

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = ROOT / "benchmarks" / "results" / "bottleneck_flow.json"
CELL_M = 0.4
STEPS_PER_SECOND = 3
ROOM_CELLS = 20  # 8 m
NECK_CELLS = 5  # 2 m
LAB_SPECIFIC_FLOW = 1.9  # persons/(m s), Seyfried et al. 2009


def bottleneck(width_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """``[x, y]`` passable cells and exit cells: a room, a neck of ``width_cells`` lanes, the exit."""
    height = ROOM_CELLS + 2
    width = ROOM_CELLS + 2 + NECK_CELLS + 1
    passable = np.zeros((width, height), dtype=bool)
    passable[1 : ROOM_CELLS + 1, 1 : ROOM_CELLS + 1] = True
    lo = height // 2 - width_cells // 2
    lanes = slice(lo, lo + width_cells)
    passable[ROOM_CELLS + 1 : width, lanes] = True
    exits = np.zeros_like(passable)
    exits[width - 1, lanes] = True
    return passable, exits


def floor_field(passable: np.ndarray, exits: np.ndarray) -> np.ndarray:
    """Distance (cells, diagonals sqrt 2, no corner cutting) from every cell to the nearest exit."""
    codes = np.where(
        exits, Terrain.EXIT, np.where(passable, Terrain.FLOOR, Terrain.WALL)
    ).astype(np.uint8)
    graph = GridGraph(codes)
    weights = graph.weights_for(passable.ravel())
    matrix = csr_matrix(
        (weights, graph.indices, graph.indptr), shape=(graph.n_cells,) * 2
    )
    dist = dijkstra(matrix, indices=np.flatnonzero(exits.ravel()), min_only=True)
    return dist.reshape(passable.shape)


def specific_flow(
    width_cells: int, friction: float, seed: int, walkers: int = 150
) -> float:
    """Persons per metre and second through the neck (steady part of the outflow)."""
    passable, exits = bottleneck(width_cells)
    dist = floor_field(passable, exits)
    room = np.argwhere(passable[: ROOM_CELLS + 1])
    rng = np.random.default_rng(seed)
    pos = room[rng.choice(len(room), size=walkers, replace=False)].astype(np.int64)
    occupancy = np.full(passable.shape, -1, dtype=np.int64)
    occupancy[pos[:, 0], pos[:, 1]] = np.arange(walkers)
    active = np.ones(walkers, dtype=bool)
    arrivals: list[int] = []
    steps = np.array(MOORE_STEPS)
    step = 0
    while active.any() and step < 20_000:
        candidates = pos[:, None, :] + steps[None, :, :]
        cx = np.clip(candidates[..., 0], 0, passable.shape[0] - 1)
        cy = np.clip(candidates[..., 1], 0, passable.shape[1] - 1)
        d = np.where(passable[cx, cy], dist[cx, cy], np.inf)
        best = np.argmin(d, axis=1)
        proposals = np.where(
            np.isfinite(d[np.arange(walkers), best])[:, None]
            & (d[np.arange(walkers), best] < dist[pos[:, 0], pos[:, 1]])[:, None],
            candidates[np.arange(walkers), best],
            pos,
        )
        result = resolve_moves(
            pos, proposals, active, passable, occupancy, rng, friction=friction
        )
        pos = result.positions
        step += 1
        out = np.flatnonzero(active & exits[pos[:, 0], pos[:, 1]])
        for i in out.tolist():
            active[i] = False
            occupancy[pos[i, 0], pos[i, 1]] = -1
            arrivals.append(step)
    times = np.array(arrivals) / STEPS_PER_SECOND
    lo, hi = 10, len(times) - 10
    flow = (hi - lo) / (times[hi] - times[lo])
    return flow / (width_cells * CELL_M)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--friction", type=float, nargs="+", default=[0.0, 0.7])
    parser.add_argument("--widths", type=int, nargs="+", default=[2, 3, 4, 6])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--walkers", type=int, default=150)
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args()
    rows = []
    print(f"{'friction':>8} {'width m':>8} {'flow /(m s)':>12} {'sd':>6} {'vs 1.9':>7}")
    for mu in args.friction:
        for w in args.widths:
            started = time.process_time()
            flows = [
                specific_flow(w, mu, seed, args.walkers) for seed in range(args.seeds)
            ]
            mean, sd = float(np.mean(flows)), float(np.std(flows, ddof=1))
            rows.append(
                {
                    "friction": mu,
                    "width_m": w * CELL_M,
                    "specific_flow_per_m_s": mean,
                    "sd": sd,
                    "seeds": args.seeds,
                    "walkers": args.walkers,
                    "cpu_s": time.process_time() - started,
                }
            )
            print(
                f"{mu:8.2f} {w * CELL_M:8.1f} {mean:12.2f} {sd:6.2f} "
                f"{mean / LAB_SPECIFIC_FLOW - 1:+7.0%}",
                flush=True,
            )
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
