"""Benchmark: trajectory generation at the paper's scale (1,200 individuals, 34,000 trajectories).

Measures, on the synthetic city (1,200 individuals x 4 weeks of history):

* ``synth``: synthesis time;
* ``rules``: generating >= 34,000 daily trajectories with the rule brain (29 days x 1,200);
  goal <= 60 s on 2 cores (the paper needed 1.67 H100 GPU-hours with its LLM);
* ``llm``: generating with the LLM brain against the local OpenAI-compatible server (scripted
  answers, in a separate process so that it does not share the client's GIL) at 300 ms latency
  and concurrency 64: LLM calls per trajectory (goal <= 2; the reference makes 1 + one per
  visit) and wall time against the ideal ``calls x latency / concurrency``;
* ``evaluate``: the seven metrics of 34,000 generated vs 34,000 real trajectories; goal <= 15 s.

Run: ``PYTHONPATH=. python benchmarks/bench_trajgen.py [--parts synth rules llm evaluate]
[--llm-days 1] [--latency 0.3] [--concurrency 64]``. Prints one line per part and a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import time

from mesa_llm_mobility.trajectory.evidence import build_evidence
from mesa_llm_mobility.trajectory.metrics import evaluate
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.synth import synthesize

INDIVIDUALS = 1200
WEEKS = 4
TARGET_TRAJECTORIES = 34_000


def _serve(
    latency: float, ready: multiprocessing.Queue, stop: multiprocessing.Event
) -> None:
    from mesa_llm_mobility.cognition.testing import FakeLLMServer  # noqa: PLC0415
    from mesa_llm_mobility.trajectory import scripted_llm  # noqa: PLC0415

    with FakeLLMServer(scripted_llm.respond, latency_s=latency) as server:
        ready.put(server.api_base)
        stop.wait()
        ready.put(server.request_count)


def bench_rules(history, days: int, seed: int) -> tuple[dict[str, float], object]:
    began = time.perf_counter()
    book = build_evidence(history, peers=10)
    evidence_s = time.perf_counter() - began
    model = TrajectoryModel(history, days=days, evidence=book, rng=seed)
    model.run()
    total = time.perf_counter() - began
    generated = model.trajectories_frame()
    trajectories = len(model.book.individuals) * days
    row = {
        "trajectories": trajectories,
        "visits": len(generated),
        "evidence_s": evidence_s,
        "total_s": total,
        "ms_per_trajectory": 1000 * total / trajectories,
        "workflow_success": model.workflow_success_rate(),
    }
    print(
        f"rules: {trajectories} trajectories ({len(generated)} visits) in {total:.1f} s "
        f"(evidence {evidence_s:.1f} s; {row['ms_per_trajectory']:.2f} ms each), "
        f"workflow success {row['workflow_success']:.1%}"
    )
    return row, generated


def bench_llm(
    history, days: int, latency: float, concurrency: int, durations: str
) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(latency, ready, stop), daemon=True)
    server.start()
    try:
        api_base = ready.get(timeout=60)
        model = TrajectoryModel(
            history,
            days=days,
            durations=durations,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": api_base,
                "api_key": "sk-bench-local",
                "max_concurrency": concurrency,
                "timeout_s": 30,
            },
            rng=0,
        )
        began = time.perf_counter()
        model.run()
        wall = time.perf_counter() - began
        summary = model.ledger.summary().loc["all"]
        model.close()
        stop.set()
        received = ready.get(timeout=30)
    finally:
        stop.set()
        server.join(timeout=30)
    trajectories = len(model.book.individuals) * days
    calls = int(summary["http_calls"])
    # each step's batches run one after another: a day costs one latency per batch at least
    batches = days * (2 if durations == "day" else 1 + max_visits(model))
    ideal = max(calls * latency / concurrency, batches * latency)
    row = {
        "durations": durations,
        "trajectories": trajectories,
        "http_calls": calls,
        "server_requests": received,
        "calls_per_trajectory": calls / trajectories,
        "wall_s": wall,
        "ideal_s": ideal,
        "wall_over_ideal": wall / ideal,
        "fallbacks": int(summary["fallback"]),
        "workflow_success": model.workflow_success_rate(),
    }
    print(
        f"llm ({durations} durations, {latency * 1000:.0f} ms, concurrency {concurrency}): "
        f"{trajectories} trajectories, {calls} calls ({row['calls_per_trajectory']:.2f} per trajectory), "
        f"wall {wall:.1f} s vs ideal {ideal:.1f} s ({row['wall_over_ideal']:.2f}x), "
        f"fallbacks {row['fallbacks']}, workflow success {row['workflow_success']:.1%}"
    )
    return row


def max_visits(model: TrajectoryModel) -> int:
    """Most visit rounds of any generated day (the per-visit mode's batches per day)."""
    decisions = model.decisions_frame()
    visits = decisions.loc[decisions["kind"] == "VisitDuration", "visit"]
    return int(visits.max()) + 1 if len(visits) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts", nargs="+", default=["synth", "rules", "llm", "evaluate"]
    )
    parser.add_argument("--individuals", type=int, default=INDIVIDUALS)
    parser.add_argument("--llm-days", type=int, default=1)
    parser.add_argument("--llm-individuals", type=int, default=INDIVIDUALS)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--durations", choices=("day", "visit"), default="day")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    results: dict[str, object] = {}

    began = time.perf_counter()
    city = synthesize(args.individuals, WEEKS, seed=args.seed)
    synth_s = time.perf_counter() - began
    history = city.stays
    days_per_person = history.groupby(
        ["agent_id", history["start"].dt.normalize()]
    ).ngroups
    results["synth"] = {
        "individuals": args.individuals,
        "daily_trajectories": days_per_person,
        "stays": len(history),
        "stays_per_day": len(history) / days_per_person,
        "seconds": synth_s,
    }
    print(
        f"synth: {args.individuals} individuals, {days_per_person} daily trajectories, "
        f"{len(history)} stays ({len(history) / days_per_person:.2f} per day) in {synth_s:.1f} s"
    )
    generated = None
    if "rules" in args.parts or "evaluate" in args.parts:
        days = math.ceil(TARGET_TRAJECTORIES / args.individuals)
        results["rules"], generated = bench_rules(history, days, args.seed)
    if "evaluate" in args.parts:
        began = time.perf_counter()
        metrics = evaluate(history, generated)
        seconds = time.perf_counter() - began
        results["evaluate"] = {"seconds": seconds, "metrics": metrics}
        print(
            f"evaluate: {days_per_person} real vs {results['rules']['trajectories']} generated "
            f"trajectories in {seconds:.1f} s: "
            + ", ".join(f"{name} {value:.4f}" for name, value in metrics.items())
        )
    if "llm" in args.parts:
        people = sorted(history["agent_id"].unique())[: args.llm_individuals]
        subset = history[history["agent_id"].isin(people)].reset_index(drop=True)
        results["llm"] = bench_llm(
            subset, args.llm_days, args.latency, args.concurrency, args.durations
        )
    print(json.dumps(results, indent=2, default=float))


if __name__ == "__main__":
    main()
