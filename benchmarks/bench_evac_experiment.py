"""The paper's 8 x 8 evacuation experiment end to end: wall and CPU time, and one LLM block.

Runs ``mlm evac experiment``'s design (compositions A-H x blocks 1-8, 704 pedestrians, rule
brain) on the chosen executor into a fresh folder and reports wall seconds, CPU seconds (this
process and its worker processes) and CPU seconds per run: the goal is the whole design in
<= 5 min on 2 cores. On a shared machine the wall time depends on the other load, so the CPU
time is the number to compare (CPU / 2 is the wall time on two free cores).

With ``--llm-block`` it also runs one block (A-H, block 1) through the LLM brain against the
local OpenAI-compatible server (the scripted pedestrian, ``--latency`` seconds an answer) and
reports the LLM calls per pedestrian-second (calls / the seconds pedestrians spent in the
plaza). Results are merged into ``benchmarks/results/evac_experiment.json``.

    python benchmarks/bench_evac_experiment.py [--executor process] [--workers 2] [--llm-block]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.evacuation import scripted_llm as pedestrian
from mesa_llm_mobility.evacuation.experiment import run_experiment
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND
from mesa_llm_mobility.experiment.run_directory import RunDirectory

RESULTS = Path(__file__).parent / "results" / "evac_experiment.json"


def pedestrian_seconds(run_dir: str) -> float:
    """Seconds the run's pedestrians spent in the plaza (until resolved, or the run's end)."""
    run = RunDirectory.open(run_dir)
    peds = run.read_table("pedestrians")
    end = int(run.metadata["extra"]["steps"])
    steps = peds["resolved_step"].fillna(end).astype(float)
    return float(steps.sum()) / STEPS_PER_SECOND


def rule_design(args: argparse.Namespace, folder: Path) -> dict:
    result = run_experiment(
        folder / "rules",
        executor=args.executor,
        max_workers=args.workers,
        progress=False,
    )
    runs = int(result.results["RunId"].nunique())
    numbers = json.loads((folder / "rules" / "report.json").read_text())["ours"]
    return {
        "executor": args.executor,
        "workers": args.workers,
        "runs": runs,
        "pedestrians": len(result.pooled["pedestrians"]),
        "wall_s": round(result.wall_s, 1),
        "cpu_s": round(result.cpu_s, 1),
        "cpu_s_per_run": round(result.cpu_s / runs, 2),
        "wall_s_on_two_free_cores": round(result.cpu_s / 2, 1),
        "evacuated_share": round(numbers["evacuated_share"], 4),
        "killed_share": round(numbers["killed_share"], 4),
    }


def llm_block(args: argparse.Namespace, folder: Path) -> dict:
    with FakeLLMServer(pedestrian.respond, latency_s=args.latency) as server:
        result = run_experiment(
            folder / "llm",
            blocks=[1],
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": "sk-bench-local",
                "timeout_s": 30.0,
                "max_concurrency": 16,
            },
            executor="serial",
            progress=False,
        )
        received = server.request_count
    run_dirs = result.results["run_dir"].unique().tolist()
    calls = sum(
        int(Ledger.summarize_file(Path(d) / "ledger.jsonl").loc["all", "http_calls"])
        for d in run_dirs
    )
    seconds = sum(pedestrian_seconds(d) for d in run_dirs)
    decisions = result.pooled["decisions"]
    return {
        "runs": len(run_dirs),
        "latency_s": args.latency,
        "http_calls": calls,
        "server_requests": received,
        "pedestrian_seconds": round(seconds, 1),
        "calls_per_pedestrian_second": round(calls / seconds, 4),
        "brain_outcomes": decisions["brain_outcome"].value_counts().to_dict(),
        "wall_s": round(result.wall_s, 1),
        "cpu_s": round(result.cpu_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--executor", default="process", choices=("serial", "process", "ray")
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--llm-block", action="store_true")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--skip-rules", action="store_true")
    args = parser.parse_args()
    results = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.skip_rules:
            results["rule_design"] = rule_design(args, folder)
            print(pd.Series(results["rule_design"]).to_string())
        if args.llm_block:
            results["llm_block"] = llm_block(args, folder)
            print(pd.Series(results["llm_block"]).to_string())
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
