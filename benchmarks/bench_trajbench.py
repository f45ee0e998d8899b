"""Benchmark: ``mlm traj benchmark`` itself, and its temperature study with a real local model.

* ``offline`` (default): the benchmark on the synthetic city with the rule brain; prints the
  CPU time (user + system) and peak RSS of this process beside the wall time, and each
  baseline's cost row. On a shared machine the wall time means little: compare CPU times.
* ``--local-model``: the temperature study (Table VIII) with Gemma 3 270M in llama.cpp's
  server (the ``local-llm`` extra), on a few individuals and one held-out day: verifier
  failure rates of a real, if tiny, model at 0.5 / 0.9 / 1.5.

Run: ``PYTHONPATH=. python benchmarks/bench_trajbench.py [--individuals 300] [--weeks 4]
[--local-model --study-individuals 5] --out runs/bench_tb``.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from mesa_llm_mobility.trajectory.benchmark import benchmark_config, run_benchmark


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/bench_tb")
    parser.add_argument("--individuals", type=int, default=300)
    parser.add_argument("--weeks", type=int, default=4)
    parser.add_argument("--hold-out", type=int, default=7)
    parser.add_argument("--local-model", action="store_true")
    parser.add_argument("--study-individuals", type=int, default=5)
    args = parser.parse_args()
    began, cpu = time.perf_counter(), _cpu_s()
    if not args.local_model:
        config = benchmark_config(
            individuals=args.individuals, weeks=args.weeks, hold_out=args.hold_out
        )
        result = run_benchmark(args.out, config, overwrite=True, progress=True)
    else:
        from mesa_llm_mobility.cognition.local_model import (  # noqa: PLC0415
            LocalModelServer,
        )

        with LocalModelServer() as server:
            config = benchmark_config(
                individuals=args.individuals,
                weeks=args.weeks,
                hold_out=args.hold_out,
                baselines=["markov"],
                brain=f"llm:{server.model}",
                detectors=["visit"],
                study_individuals=args.study_individuals,
            )
            result = run_benchmark(
                args.out,
                config,
                overwrite=True,
                progress=True,
                brain_options={
                    "api_base": server.api_base,
                    "api_key": "local",
                    "max_concurrency": 2,
                    "timeout_s": 300.0,
                    "max_total_s": 600.0,
                    "max_tokens": 512,
                },
            )
        print(result.tables.temperature.to_string())
    wall, cpu = time.perf_counter() - began, _cpu_s() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(result.tables.cost.to_string())
    print(
        f"wall {wall:.1f} s, CPU {cpu:.1f} s (user + system, children included), "
        f"peak RSS {peak_mb:.0f} MB, load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
