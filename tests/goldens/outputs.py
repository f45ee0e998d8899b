"""The outputs pinned as goldens: what a refactor must leave identical to the last digit.

Each function runs one reference case through the public API and returns its outputs as tidy
tables (and a JSON-ready summary). ``scripts/pin_goldens.py`` writes them under
``tests/goldens/data``; ``tests/test_goldens.py`` runs them again and compares. When a change is
meant to change a number, re-pin with the script and say why in the commit and the changelog.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.evacuation import scripted_llm as pedestrian
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.trajectory import scripted_llm as individual
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.synth import synthesize
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings
from mesa_llm_mobility.urban import scripted_llm as traveller
from mesa_llm_mobility.urban.runner import run_urban, urban_config

DATA = Path(__file__).parent / "data"
COMPOSITIONS = "ABCDEFGH"
LEDGER_FIELDS = ("kind", "agent_id", "outcome", "reason", "tags")


def urban_rule_run() -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """``mlm urban run --days 3 --seed 0``: summary, trips, plans, revisions, decisions."""
    with tempfile.TemporaryDirectory() as folder:
        result = run_urban(
            Path(folder) / "run",
            urban_config(days=3, seed=0, embedding="hash"),
            progress=False,
        )
        tables = {
            name: result.run.read_table(name)
            for name in ("trips", "plans", "revisions", "decisions")
        }
        summary = json.loads((result.run.path / "summary.json").read_text())
    return summary, tables


def evacuation_rule_runs() -> dict[str, pd.DataFrame]:
    """Every composition A-H, block 1, seed 0: outcomes and positions, one table each."""
    outcomes, positions = [], []
    for composition in COMPOSITIONS:
        model = EvacuationModel(composition=composition, block=1, rng=0)
        model.run()
        outcomes.append(model.outcomes_frame().assign(composition=composition))
        positions.append(model.positions_frame().assign(composition=composition))
    return {
        "outcomes": pd.concat(outcomes, ignore_index=True),
        "positions": pd.concat(positions, ignore_index=True),
    }


def _ledger_table(path: Path) -> pd.DataFrame:
    rows = []
    for record in Ledger.read(path):
        row = {name: record[name] for name in LEDGER_FIELDS}
        row["agent_id"] = str(row["agent_id"])
        row["tags"] = json.dumps(row["tags"], sort_keys=True)
        row["messages"] = json.dumps(record["messages"], ensure_ascii=False)
        row["rounds"] = json.dumps(
            [[r.get("raw"), r.get("errors")] for r in record["rounds"]],
            ensure_ascii=False,
        )
        row["result"] = json.dumps(record["result"], sort_keys=True, ensure_ascii=False)
        rows.append(row)
    return pd.DataFrame(rows)


def _llm_options(server: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    return {
        "api_base": server.api_base,
        "api_key": "sk-golden-local",
        "timeout_s": 10.0,
        "max_attempts": 2,
        **extra,
    }


def urban_llm_run() -> dict[str, pd.DataFrame]:
    """One day of 8 travellers through the LLM brain against the local server: ledger, tables."""
    config = urban_config(
        days=1, n_agents=8, seed=5, brain="llm:openai/fake-model", embedding="hash"
    )
    with (
        tempfile.TemporaryDirectory() as folder,
        FakeLLMServer(traveller.respond) as server,
    ):
        result = run_urban(
            Path(folder) / "run",
            config,
            progress=False,
            brain_options=_llm_options(server),
        )
        return {
            "ledger": _ledger_table(result.run.ledger_path),
            "trips": result.run.read_table("trips"),
            "decisions": result.run.read_table("decisions"),
        }


def evacuation_llm_run() -> dict[str, pd.DataFrame]:
    """Six pedestrians for 4 s through the LLM brain against the local server."""
    with (
        tempfile.TemporaryDirectory() as folder,
        FakeLLMServer(pedestrian.respond) as server,
    ):
        ledger = Path(folder) / "ledger.jsonl"
        model = EvacuationModel(
            composition={"average": 6},
            rng=3,
            brain="llm:openai/fake-model",
            brain_options=_llm_options(server, ledger=ledger),
            time_limit_s=4,
        )
        model.run()
        model.close()
        return {
            "ledger": _ledger_table(ledger),
            "positions": model.positions_frame(),
            "decisions": model.decisions_frame(),
        }


def _trajectory_tables(model: TrajectoryModel) -> dict[str, pd.DataFrame]:
    return {
        "trajectories": model.trajectories_frame(),
        "decisions": model.decisions_frame(),
        "workflow": model.workflow_frame(),
    }


def trajectory_rule_runs() -> dict[str, pd.DataFrame]:
    """A synthetic city of 24 people over 2 weeks, 3 days generated per duration mode."""
    history = synthesize(24, 2, seed=0).stays
    frames: dict[str, list[pd.DataFrame]] = {}
    for durations in ("day", "visit"):
        model = TrajectoryModel(
            history, days=3, settings=WorkflowSettings(durations=durations), rng=0
        )
        with model:
            model.run()
        for name, frame in _trajectory_tables(model).items():
            frames.setdefault(name, []).append(frame.assign(durations=durations))
    return {name: pd.concat(parts, ignore_index=True) for name, parts in frames.items()}


def trajectory_llm_run() -> dict[str, pd.DataFrame]:
    """Eight people, 2 days, per-visit durations through the LLM brain and the local server."""
    history = synthesize(8, 2, seed=1).stays
    with (
        tempfile.TemporaryDirectory() as folder,
        FakeLLMServer(individual.respond) as server,
    ):
        ledger = Path(folder) / "ledger.jsonl"
        model = TrajectoryModel(
            history,
            days=2,
            settings=WorkflowSettings(durations="visit"),
            brain="llm:openai/fake-model",
            brain_options=_llm_options(server, ledger=ledger),
            rng=2,
        )
        with model:
            model.run()
        return {"ledger": _ledger_table(ledger), **_trajectory_tables(model)}
