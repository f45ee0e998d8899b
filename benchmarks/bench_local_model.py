"""Benchmark of the local model: Gemma 3 270M decoding under the kinds' schemas, then real runs.

(a) **Decoding speed.** Real requests of every model (from a dry-run pass: an urban day, an
evacuation, a trajectory day) are rendered in Gemma's template and decoded in-process by
``LocalDecoder`` under each request's JSON schema (llguidance's masks), at temperature 0 with
``--max-tokens``. Prints prompt tokens per second (what was evaluated after the cached prefix)
and answer tokens per second per kind and overall (goal: >= 20 answer tokens/s on 2 cores).
``--baseline`` also times llama.cpp's own grammar sampler (llama-cpp-python's
``create_completion(grammar=LlamaGrammar.from_json_schema(...))``) on the same requests.

(b) **Smoke runs** through the local server (``LocalModelServer``) and the real brain: an urban
day (``--agents`` travellers), an evacuation (4 pedestrians, ``--evac-seconds``) and a trajectory
week (2 individuals, 7 days). Prints their wall time and outcome shares per kind: the model must
make real decisions (ok or repaired), not only fallbacks.

The machine's load average is printed before and after each part (the machine may be shared;
llama.cpp's threads wait on each other when the cores are busy, so measure on a quiet machine).

    python benchmarks/bench_local_model.py [--requests 6] [--max-tokens 256] [--threads 2]
        [--baseline] [--skip-runs] [--agents 2] [--evac-seconds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import llama_cpp

from mesa_llm_mobility.cognition.dry_run import DryRunBrain
from mesa_llm_mobility.cognition.ledger import Ledger, llm_outcome_shares
from mesa_llm_mobility.cognition.local_decoding import LocalDecoder
from mesa_llm_mobility.cognition.local_model import LocalModelServer, gemma_model_path
from mesa_llm_mobility.cognition.local_server import render_gemma
from mesa_llm_mobility.cognition.structured_output import grammar_safe
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.synth import synthesize
from mesa_llm_mobility.urban.model import UrbanMobilityModel


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f})"


class Collecting(DryRunBrain):
    """Rule answers; the first ``per_kind`` requests of each kind kept."""

    def __init__(self, found, per_kind, **options):
        super().__init__("openai/gemma3-270m", **options)
        self.found, self.per_kind = found, per_kind

    def decide_all(self, requests, *, tags=None):
        for request in requests:
            if len(self.found[request.kind.name]) < self.per_kind:
                self.found[request.kind.name].append(request)
        return super().decide_all(requests, tags=tags)


def collect(per_kind: int) -> dict[str, list]:
    found: dict[str, list] = defaultdict(list)
    with UrbanMobilityModel(
        days=1, rng=1, n_agents=3, brain=Collecting(found, per_kind, rng=1)
    ) as urban:
        urban.run()
    evacuation = EvacuationModel(
        composition={"average": 3},
        rng=2,
        time_limit_s=2,
        brain=Collecting(found, per_kind, rng=2),
    )
    evacuation.run()
    evacuation.close()
    with TrajectoryModel(
        synthesize(3, 2, seed=3).stays, days=1, brain=Collecting(found, per_kind, rng=3)
    ) as trajectories:
        trajectories.step()
    return found


def decoding_speed(args: argparse.Namespace) -> None:
    found = collect(args.requests)
    started = time.perf_counter()
    decoder = LocalDecoder(gemma_model_path(), threads=args.threads)
    print(f"decoder ready in {time.perf_counter() - started:.1f} s; {load()}")
    totals = defaultdict(float)
    for name, requests in sorted(found.items()):
        prompt_s = answer_s = evaluated = answered = 0.0
        finishes = defaultdict(int)
        for request in requests:
            prompt = decoder.tokenize(
                render_gemma(request.kind.messages(request.context))
            )
            grammar = decoder.grammar(request.kind.schema_for(request.context))
            generation = decoder.generate(
                prompt, grammar=grammar, max_tokens=args.max_tokens
            )
            prompt_s += generation.prompt_s
            answer_s += generation.answer_s
            evaluated += generation.evaluated
            answered += len(generation.tokens)
            finishes[generation.finish_reason] += 1
        totals["prompt_s"] += prompt_s
        totals["answer_s"] += answer_s
        totals["evaluated"] += evaluated
        totals["answered"] += answered
        print(
            f"  {name:16s} {len(requests)} requests: prompt {evaluated:6.0f} tokens "
            f"{evaluated / prompt_s:7.1f} tok/s; answer {answered:5.0f} tokens "
            f"{answered / answer_s:6.1f} tok/s; finish {dict(finishes)}"
        )
    print(
        f"all kinds: prompt {totals['evaluated'] / totals['prompt_s']:.1f} tok/s, answer "
        f"{totals['answered'] / totals['answer_s']:.1f} tok/s under the schema "
        f"({args.threads} threads; {load()})"
    )
    if args.baseline:
        baseline(decoder, found, args)


def baseline(
    decoder: LocalDecoder, found: dict[str, list], args: argparse.Namespace
) -> None:
    """llama.cpp's own grammar sampler on the same requests (its tokens per second)."""
    tokens = seconds = 0.0
    for requests in found.values():
        for request in requests[:2]:
            text = render_gemma(request.kind.messages(request.context))
            schema = grammar_safe(request.kind.schema_for(request.context))
            grammar = llama_cpp.LlamaGrammar.from_json_schema(
                json.dumps(schema), verbose=False
            )
            began = time.perf_counter()
            out = decoder.llm.create_completion(
                text, grammar=grammar, max_tokens=args.max_tokens, temperature=0.0
            )
            seconds += time.perf_counter() - began
            tokens += out["usage"]["completion_tokens"]
    print(
        f"baseline (llama.cpp grammar sampler): {tokens / seconds:.2f} tok/s; {load()}"
    )


def smoke_runs(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp())
    with LocalModelServer(threads=args.threads) as server:
        options = {
            "api_base": server.api_base,
            "api_key": "local",
            "max_concurrency": 2,
            "timeout_s": 300.0,
            "max_repairs": 1,
            "max_tokens": args.max_tokens,
        }
        runs = {
            "urban day": lambda ledger: _urban(
                server, options | {"ledger": ledger}, args
            ),
            "evacuation": lambda ledger: _evacuation(
                server, options | {"ledger": ledger}, args
            ),
            "trajectory week": lambda ledger: _week(
                server, options | {"ledger": ledger}
            ),
        }
        for label, run in runs.items():
            path = folder / f"{label.replace(' ', '_')}.jsonl"
            began = time.perf_counter()
            run(Ledger(path))
            wall = time.perf_counter() - began
            summary = Ledger.summarize_file(path)
            print(f"{label}: wall {wall:.0f} s; {load()}")
            for kind in summary.index:
                shares = llm_outcome_shares(summary, kind)
                row = summary.loc[kind]
                print(
                    f"  {kind:16s} {int(row['decisions']):4d} decisions "
                    f"{int(row['completion_tokens']):6d} answer tokens: "
                    + ", ".join(f"{o} {s:.0%}" for o, s in shares.items())
                )


def _urban(server, options, args) -> None:
    with UrbanMobilityModel(
        days=1, rng=0, n_agents=args.agents, brain=f"llm:{server.model}",
        brain_options=options,
    ) as model:  # fmt: skip
        model.run()


def _evacuation(server, options, args) -> None:
    model = EvacuationModel(
        composition={"average": 4}, rng=1, time_limit_s=args.evac_seconds,
        brain=f"llm:{server.model}", brain_options=options,
    )  # fmt: skip
    model.run()
    model.close()


def _week(server, options) -> None:
    with TrajectoryModel(
        synthesize(2, 2, seed=3).stays, days=7, brain=f"llm:{server.model}",
        brain_options=options, rng=3,
    ) as model:  # fmt: skip
        model.run(progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=6, help="requests per kind")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--baseline", action="store_true")
    parser.add_argument("--skip-runs", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--agents", type=int, default=2)
    parser.add_argument("--evac-seconds", type=float, default=3.0)
    args = parser.parse_args()
    print(f"cores {os.cpu_count()}; {load()}")
    if not args.skip_speed:
        decoding_speed(args)
    if not args.skip_runs:
        smoke_runs(args)


if __name__ == "__main__":
    main()
