"""Benchmark: the realism detectors' CPU time and memory as the population grows.

On the synthetic city (``--individuals`` x 4 weeks), the detectors learn from the first three
weeks' real days and compare the held-out fourth week with the rule-brain workflow's week for
the same dates. Each detector runs alone, so its time is its own (the split is shared work and
counted in each). Reports CPU seconds (user + sys of this process, ``time.process_time``: wall
time means little on a shared machine), the peak RSS so far, and the load average.

Run: ``PYTHONPATH=. python benchmarks/bench_realism.py [--individuals 300 1200]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

from mesa_llm_mobility.trajectory.model import generate
from mesa_llm_mobility.trajectory.realism import DETECTORS, realism
from mesa_llm_mobility.trajectory.staypoints import split_history
from mesa_llm_mobility.trajectory.synth import synthesize


def bench(individuals: int, seed: int) -> list[dict[str, object]]:
    stays = synthesize(individuals, 4, seed=seed).stays
    split = split_history(stays, held_out_days=7)
    dates = sorted(split.held_out["start"].dt.normalize().unique())
    generated = generate(split.history, dates=dates, rng=seed)
    rows = []
    for detector in DETECTORS:
        began = time.process_time()
        table = realism(split.history, generated, seed=seed, detectors=(detector,))
        rows.append(
            {
                "individuals": individuals,
                "real_visits": len(split.history),
                "generated_visits": len(generated),
                "detector": detector,
                "cpu_s": round(time.process_time() - began, 2),
                "auroc": round(float(table["auroc"].iloc[0]), 4),
                "peak_rss_mb": round(
                    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
                ),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--individuals", type=int, nargs="+", default=[300])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = [row for n in args.individuals for row in bench(n, args.seed)]
    print(json.dumps({"load_average": os.getloadavg(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
