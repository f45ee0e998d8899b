"""Benchmark of the LLM gateway: N decisions through LLMBrain against the local server.

The server runs in a separate process (``python -m mesa_llm_mobility.cognition.testing``), so it
does not compete with the brain for the GIL, exactly as a real provider would not.

Prints, per client (the direct OpenAI-compatible one and litellm), wall time, the ideal
N x L / C, efficiency = ideal / wall, the client process's CPU time per decision, and the
ledger's overhead per decision (building and writing the JSONL records).
Goals: efficiency >= 0.90 at N = 1,000, C = 64, L = 200 ms and at N = 5,000, C = 256, L = 1 s;
client CPU <= 0.5 ms per call on the direct path; ledger overhead < 1 ms per decision.

    python benchmarks/bench_llm_gateway.py [--n 1000] [--concurrency 64] [--latency 0.2]
        [--client both|direct|litellm]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mesa_llm_mobility.cognition import DecisionKind, DecisionRequest, Ledger, LLMBrain


class Situation(BaseModel):
    agent_name: str
    options: list[str]


class Choice(BaseModel):
    choice: Literal["a", "b"]


CHOICE = DecisionKind(
    name="Choice",
    context_type=Situation,
    output_schema=Choice,
    render_prompt=lambda s: [
        {"role": "system", "content": f"You are {s.agent_name}."},
        {"role": "user", "content": f"Choose one of {s.options}."},
    ],
    rule_policy=lambda s, rng: Choice(choice="a"),
)


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mesa_llm_mobility.cognition.testing",
            "--port",
            "0",
            "--latency",
            str(latency),
            "--content",
            '{"choice": "b"}',
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline().strip()
    if not line.startswith("listening "):
        process.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    return process, line.removeprefix("listening ")


def run_client(client: str, api_base: str, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        ledger_path = Path(folder) / "ledger.jsonl"
        brain = LLMBrain(
            "openai/fake-model",
            api_base=api_base,
            api_key="sk-bench",
            max_concurrency=args.concurrency,
            rng=np.random.default_rng(0),
            ledger=Ledger(ledger_path),
            client=client,
        )
        warm = [
            DecisionRequest(
                CHOICE, f"warm{i}", Situation(agent_name=f"W{i}", options=["a", "b"])
            )
            for i in range(args.concurrency)
        ]
        # connection pool, litellm caches and the response-mode probe, as after a first step
        brain.decide_all(warm)
        requests = [
            DecisionRequest(
                CHOICE, i, Situation(agent_name=f"A{i}", options=["a", "b"])
            )
            for i in range(args.n)
        ]
        cpu_started = time.process_time()
        started = time.perf_counter()
        results = brain.decide_all(requests)
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        outcomes = {
            str(o): sum(r.outcome == o for r in results)
            for o in {r.outcome for r in results}
        }
        records = Ledger.read(ledger_path)[-args.n :]
        replay_ledger = Ledger(Path(folder) / "again.jsonl")
        started = time.perf_counter()
        replay_ledger.append_many(records)
        ledger_s = time.perf_counter() - started
        brain.close()
        replay_ledger.close()
    ideal = args.n * args.latency / args.concurrency
    print(
        f"client: {client}  outcomes: {outcomes}  mode: {records[0]['response_mode']}"
    )
    print(f"  wall_s: {wall:.3f}  ideal_s: {ideal:.3f}  efficiency: {ideal / wall:.3f}")
    print(f"  client_cpu_ms_per_call: {cpu / args.n * 1000:.3f}")
    print(f"  ledger_overhead_ms_per_decision: {ledger_s / args.n * 1000:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument(
        "--client", choices=["both", "direct", "litellm"], default="both"
    )
    args = parser.parse_args()
    clients = ["direct", "litellm"] if args.client == "both" else [args.client]

    process, api_base = start_server(args.latency)
    try:
        print(
            f"decisions: {args.n}  concurrency: {args.concurrency}  "
            f"latency: {args.latency * 1000:.0f} ms  load: {os.getloadavg()[0]:.2f}"
        )
        for client in clients:
            run_client(client, api_base, args)
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
