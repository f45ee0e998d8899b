"""Benchmark: both LLM roles of the evacuation against the local server, and the memory writer.

One run (composition A, block 1) through the LLM brain against the project's local
OpenAI-compatible server (scripted answers, one prompt in ``--unoffered-every`` naming an
unoffered route, so the paper's rejection shows): wall time, HTTP calls per pedestrian-second,
the ledger's outcomes per kind, memory operation shares and memory links per decision. Then the
rule brain's memory writer: microseconds per revision.

Run: ``PYTHONPATH=. python benchmarks/bench_evacuation_minds.py [--seed 0] [--latency 0]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.evacuation import knowledge_graph, scripted_llm
from mesa_llm_mobility.evacuation.memory_role import EVACUATION_MEMORY
from mesa_llm_mobility.evacuation.model import EvacuationModel


def llm_run(seed: int, latency: float, unoffered_every: int) -> None:
    ledger = Path(tempfile.mkdtemp()) / "ledger.jsonl"
    responder = scripted_llm.with_unoffered_routes(
        scripted_llm.respond, every=unoffered_every
    )
    with FakeLLMServer(responder, latency_s=latency) as server:
        start = time.perf_counter()
        model = EvacuationModel(
            composition="A",
            block=1,
            rng=seed,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": "sk-bench-local",
                "ledger": ledger,
            },
        )
        model.run()
        model.close()
        wall = time.perf_counter() - start
        calls = server.request_count
    pedestrians = model.pedestrians_frame()
    pedestrian_s = float(pedestrians["resolved_step"].fillna(model.tick).sum()) / 3
    print(
        f"LLM run: wall {wall:.1f} s, ended at {model.time_s:.1f} s, "
        f"{pedestrians['outcome'].value_counts().to_dict()}"
    )
    print(
        f"HTTP calls {calls} over {pedestrian_s:.1f} pedestrian-seconds: "
        f"{calls / pedestrian_s:.3f} calls per pedestrian-second"
    )
    summary = Ledger.summarize_file(ledger)
    print(
        summary[["decisions", "http_calls", "ok", "repaired", "fallback", "rejected"]]
    )
    versions = model.memory_versions_frame()
    counts = knowledge_graph.operation_counts(
        knowledge_graph.memory_operations(versions)
    )
    total = sum(counts.values()) or 1
    graph = knowledge_graph.knowledge_graph(
        versions, model.decisions_frame(), model.events_frame()
    )
    shares = {name: f"{100 * n / total:.1f} %" for name, n in counts.items()}
    print(f"memory operations {counts} ({shares})")
    print(
        f"memory links per decision {knowledge_graph.memory_links_per_decision(graph):.2f}"
    )


def memory_writer_cost(seed: int, repeats: int = 5) -> None:
    model = EvacuationModel(composition="A", block=1, rng=seed)
    requests = []
    decide = model.decide

    def keep_memory_requests(batch, **time_columns):
        requests.extend(r for r in batch if r.kind is EVACUATION_MEMORY)
        return decide(batch, **time_columns)

    model.decide = keep_memory_requests
    model.run()
    start = time.perf_counter()
    for _ in range(repeats):
        model.brain.decide_all(requests)
    per = (time.perf_counter() - start) / repeats / max(len(requests), 1)
    print(
        f"rule memory writer: {len(requests)} revisions, {1e6 * per:.1f} us per revision"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--unoffered-every", type=int, default=4)
    args = parser.parse_args()
    llm_run(args.seed, args.latency, args.unoffered_every)
    memory_writer_cost(args.seed)


if __name__ == "__main__":
    main()
