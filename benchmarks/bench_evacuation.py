"""Benchmark: the reference plaza with 11 and 1,000 rule-brain pedestrians for 240 s (720 steps).

Goal: 1,000 pedestrians x 720 steps <= 60 s on 2 cores. Prints wall time and the per-step cost
split (perception, routing, decisions, movement, other) from ``model.timing``.

Run: ``PYTHONPATH=. python benchmarks/bench_evacuation.py [--pedestrians 11 1000] [--steps 720]``.
"""

from __future__ import annotations

import argparse
import time

from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.personality import mixed_composition
from mesa_llm_mobility.evacuation.plaza import load_plaza


def bench(n: int, steps: int, seed: int) -> dict[str, float]:
    plaza = load_plaza()
    start = time.perf_counter()
    if n == 11:
        model = EvacuationModel(
            plaza,
            composition="A",
            block=1,
            rng=seed,
            time_limit_s=steps / 3,
            record_positions=True,
        )
    else:
        model = EvacuationModel(
            plaza,
            composition=mixed_composition(n),
            random_spawn=True,
            rng=seed,
            time_limit_s=steps / 3,
            record_positions=True,
        )
    setup = time.perf_counter() - start
    model.run()
    total = time.perf_counter() - start
    decisions = len(model.decisions_frame())
    peds = model.pedestrians_frame()["outcome"].value_counts().to_dict()
    row = {
        "pedestrians": n,
        "steps": model.tick,
        "setup_s": setup,
        "total_s": total,
        "decisions": decisions,
    }
    row.update(
        {
            f"{k}_ms_per_step": 1000 * v / max(model.tick, 1)
            for k, v in model.timing.items()
        }
    )
    print(
        f"n={n:5d} steps={model.tick:4d} total={total:7.2f} s (setup {setup:5.2f} s) decisions={decisions} outcomes={peds}\n"
        "        per step: "
        + ", ".join(
            f"{k} {1000 * v / max(model.tick, 1):6.2f} ms"
            for k, v in model.timing.items()
        )
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pedestrians", type=int, nargs="+", default=[11, 1000])
    parser.add_argument("--steps", type=int, default=720)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for n in args.pedestrians:
        bench(n, args.steps, args.seed)


if __name__ == "__main__":
    main()
