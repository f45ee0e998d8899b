"""Route options of a 10,000-pedestrian run, recorded once and replayed in isolation.

``record`` runs the population benchmark's evacuation model (generated plaza, ``rng=0``) and
pickles every ``route_options`` call of the chosen steps; ``replay`` times those calls (CPU
time per call, best and median of the repeats) and, with ``--save`` / ``--compare``, writes or
checks every option, path and distance array, so a change of the routing internals can be
shown exact and timed in seconds instead of a long run::

    PYTHONPATH=. python benchmarks/bench_route_options.py record calls.pkl
    PYTHONPATH=. python benchmarks/bench_route_options.py replay calls.pkl --save before.pkl
    # ... change mesa_llm_mobility/evacuation/routing.py ...
    PYTHONPATH=. python benchmarks/bench_route_options.py replay calls.pkl --compare before.pkl
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import time
from pathlib import Path

import numpy as np
from bench_population import evacuation_model

from mesa_llm_mobility.evacuation import route_planner
from mesa_llm_mobility.evacuation.routing import GridGraph, route_options


def record(path: Path, n: int, steps: set[int]) -> None:
    """Run ``n`` pedestrians to the last of ``steps``, pickling the calls of those steps."""
    model = evacuation_model(n, max(steps))
    calls: list[bytes] = []
    real = route_planner.route_options

    def recording(graph, *args, **kwargs):
        if model.tick in steps:
            calls.append(pickle.dumps((model.tick, args, kwargs)))
        return real(graph, *args, **kwargs)

    route_planner.route_options = recording
    try:
        model.step()
        model.run()
    finally:
        route_planner.route_options = real
        model.close()
    with path.open("wb") as handle:
        pickle.dump({"raw": model.plaza.raw, "calls": calls}, handle)
    print(f"{len(calls)} calls of steps {sorted(steps)} -> {path}")


def replay(path: Path, repeats: int, save: Path | None, compare: Path | None) -> None:
    """Time the recorded calls; save or compare their results."""
    with path.open("rb") as handle:
        data = pickle.load(handle)
    graph = GridGraph(data["raw"])
    calls = [pickle.loads(c) for c in data["calls"]]

    def run_all() -> list:
        return [route_options(graph, *args, **kwargs) for _t, args, kwargs in calls]

    out = run_all()  # fills the window-graph cache
    per_call = []
    for _ in range(repeats):
        started = time.process_time()
        out = run_all()
        per_call.append((time.process_time() - started) / len(calls) * 1e3)
    print(
        f"{len(calls)} calls: CPU ms a call best {min(per_call):.3f}, "
        f"median {statistics.median(per_call):.3f} ({repeats} repeats)"
    )
    if save is not None:
        with save.open("wb") as handle:
            pickle.dump(out, handle)
    if compare is not None:
        with compare.open("rb") as handle:
            before = pickle.load(handle)
        differ = sum(
            o1 != o2 or d1.dtype != d2.dtype or not np.array_equal(d1, d2)
            for (o1, d1), (o2, d2) in zip(before, out, strict=True)
        )
        print(f"calls whose options or distances differ: {differ} of {len(out)}")
        if differ:
            raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("calls", type=Path)
    rec.add_argument("--n", type=int, default=10000)
    rec.add_argument("--steps", type=int, nargs="+", default=[2, 3, 20, 30, 31])
    rep = sub.add_parser("replay")
    rep.add_argument("calls", type=Path)
    rep.add_argument("--repeats", type=int, default=5)
    rep.add_argument("--save", type=Path)
    rep.add_argument("--compare", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        record(args.calls, args.n, set(args.steps))
    else:
        replay(args.calls, args.repeats, args.save, args.compare)


if __name__ == "__main__":
    main()
