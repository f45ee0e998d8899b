"""Prompt characters per decision kind on the reference town: one day, LLM brain, local server.

Runs the reference population for one day with an LLM brain against the in-process
``FakeLLMServer`` (the sensible traveller of ``mesa_llm_mobility.urban.scripted_llm``, no
latency), then reads the ledger: for every decision, the characters of the messages first sent (system message with
the output schema, and the user prompt), by kind. Repair rounds are not counted.

    python benchmarks/prompt_sizes.py [--seed 0] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.scripted_llm import respond


def prompt_sizes(seed: int = 0, concurrency: int = 32) -> pd.DataFrame:
    """Run the day and return one row per decision: kind, outcome, system and user characters."""
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(respond) as server:
        ledger = Path(tmp) / "ledger.jsonl"
        model = UrbanMobilityModel(
            days=1, rng=seed, brain="llm:openai/fake-model",
            brain_options={"api_base": server.api_base, "api_key": "sk-fake", "ledger": ledger,
                           "max_concurrency": concurrency, "timeout_s": 30},
        )  # fmt: skip
        model.run()
        model.close()
        records = Ledger.read(ledger)
    return pd.DataFrame(
        [
            {
                "kind": r["kind"],
                "outcome": r["outcome"],
                "system": len(r["messages"][0]["content"]),
                "user": sum(len(m["content"]) for m in r["messages"][1:]),
            }
            for r in records
        ]
    ).assign(total=lambda f: f["system"] + f["user"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    sizes = prompt_sizes(args.seed, args.concurrency)
    table = sizes.groupby("kind").agg(
        calls=("total", "size"),
        user_mean=("user", "mean"),
        user_max=("user", "max"),
        total_mean=("total", "mean"),
        total_max=("total", "max"),
    )
    table.loc["all"] = [
        len(sizes),
        sizes["user"].mean(),
        sizes["user"].max(),
        sizes["total"].mean(),
        sizes["total"].max(),
    ]
    print(table.round(0).astype(int).to_string())
    print(
        "outcomes: "
        + ", ".join(
            f"{k} {o}: {n}"
            for (k, o), n in sizes.groupby(["kind", "outcome"]).size().items()
        )
    )


if __name__ == "__main__":
    main()
