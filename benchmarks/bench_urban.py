"""Benchmark of the urban model on the offline rule brain.

(a) 70 residents x 3 days (the reference scenario; goal <= 30 s);
(b) 1,000 travellers x 1 day on a scaled population (goal <= 5 min).
Prints wall time, simulated minutes per second, trips and decisions.

    python benchmarks/bench_urban.py [--skip-large]
"""

from __future__ import annotations

import argparse
import time

from mesa_llm_mobility.urban.model import UrbanMobilityModel


def run(n_agents: int | None, days: int) -> None:
    started = time.perf_counter()
    model = UrbanMobilityModel(days=days, rng=0, n_agents=n_agents)
    setup = time.perf_counter() - started
    model.run()
    wall = time.perf_counter() - started
    summary = model.summary()
    decisions = sum(summary["decisions"].values())
    model.close()
    label = f"{n_agents or len(model.travellers)} travellers x {days} day(s)"
    print(
        f"{label}: wall_s {wall:.1f} (setup {setup:.1f})  minutes_per_s {days * 1440 / wall:.0f}  "
        f"trips {summary['trips']}  decisions {decisions}  mean_delay_min {summary['mean_delay']:.2f}  "
        f"punctuality {summary['punctuality']:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-large", action="store_true", help="skip the 1,000-traveller day"
    )
    args = parser.parse_args()
    run(None, 3)
    if not args.skip_large:
        run(1000, 1)


if __name__ == "__main__":
    main()
