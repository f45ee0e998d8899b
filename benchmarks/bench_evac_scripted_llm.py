"""The 8 x 8 experiment's LLM path with the realistic and the token-exact scripted pedestrian.

Runs ``run_experiment`` through the LLM brain against the local OpenAI-compatible server twice,
once with :func:`~mesa_llm_mobility.evacuation.scripted_llm.exact_respond` (the engine's own
tokens, every field) and once with
:func:`~mesa_llm_mobility.evacuation.scripted_llm.realistic_respond` (the same decisions worded
like a real model), and prints, for each, the wall and CPU time, the LLM calls, and what the
engine derived from the answers: shouts heard and exit-information messages per run, the
goal-revision rate, the evacuated share, rejected answers. The two should agree once the
engine's channels read the answers' meaning rather than their tokens. Results are merged into
``benchmarks/results/evac_scripted_llm.json``.

    python benchmarks/bench_evac_scripted_llm.py [--blocks 1] [--time-limit 60]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.evacuation import scripted_llm
from mesa_llm_mobility.evacuation.experiment import run_experiment
from mesa_llm_mobility.experiment.run_directory import RunDirectory

RESULTS = Path(__file__).parent / "results" / "evac_scripted_llm.json"


def channel_numbers(result) -> dict:
    runs = result.results.drop_duplicates("RunId")
    shouts = messages = goal = later = rejected = calls = 0
    for run_dir in runs["run_dir"]:
        run = RunDirectory.open(run_dir)
        events = run.read_table("events")
        decisions = run.read_table("decisions")
        shouts += int((events["event"] == "shout_heard").sum())
        messages += int((events["event"] == "exit_info_received").sum())
        after = decisions[decisions["trigger"] != "initial"]
        goal += int((after["revision_level"] == "goal").sum())
        later += len(after)
        rejected += int((decisions["outcome"] != "ok").sum())
        calls += int(
            Ledger.summarize_file(Path(run_dir) / "ledger.jsonl").loc[
                "all", "http_calls"
            ]
        )
    peds = result.pooled["pedestrians"]
    n = len(runs)
    return {
        "runs": n,
        "llm_calls": calls,
        "shouts_heard_per_run": round(shouts / n, 2),
        "exit_messages_per_run": round(messages / n, 2),
        "goal_revision_rate": round(goal / later, 4) if later else None,
        "evacuated_share": round(float((peds["outcome"] == "evacuated").mean()), 4),
        "rejected_answers": rejected,
    }


def one_answerer(name: str, responder, args: argparse.Namespace, folder: Path) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    with FakeLLMServer(responder) as server:
        result = run_experiment(
            folder / name,
            compositions=args.compositions,
            blocks=args.blocks,
            time_limit_s=args.time_limit,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": "sk-bench-local",
                "timeout_s": 60.0,
                "max_concurrency": 16,
            },
            progress=False,
            report=False,
        )
    row = {
        "answerer": name,
        "compositions": args.compositions,
        "blocks": args.blocks,
        "time_limit_s": args.time_limit,
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s_this_process": round(time.process_time() - c0, 1),
        **channel_numbers(result),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compositions", default="A-H")
    parser.add_argument("--blocks", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            one_answerer(name, responder, args, Path(tmp))
            for name, responder in (
                ("exact", scripted_llm.exact_respond),
                ("realistic", scripted_llm.realistic_respond),
            )
        ]
    RESULTS.parent.mkdir(exist_ok=True)
    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else []
    RESULTS.write_text(json.dumps([*old, *rows], indent=1) + "\n")


if __name__ == "__main__":
    main()
