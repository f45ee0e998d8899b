import json

import networkx as nx
import pandas as pd
import pytest

from mesa_llm_mobility.cli import build_parser, main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, with_faults
from mesa_llm_mobility.evacuation import scripted_llm
from mesa_llm_mobility.evacuation.knowledge_graph import operation_counts
from mesa_llm_mobility.evacuation.timing import due_step
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.memory.store import MemoryStore

TABLES = (
    "positions",
    "decisions",
    "events",
    "outcomes",
    "pedestrians",
    "model",
    "memory_versions",
    "memory_operations",
    "opening_observations",
)


def test_evac_run_writes_run_directory_and_prints_summary(tmp_path, capsys):
    out = tmp_path / "e1"
    code = main(
        [
            "evac",
            "run",
            "--composition",
            "H",
            "--block",
            "3",
            "--time-limit",
            "20",
            "--memory-stream",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "anxious_conformist" in printed and "evacuated" in printed
    run = RunDirectory.open(out)
    # exit information may not have passed yet in 20 s: its table can be empty
    assert set(run.table_names()) == set(TABLES) | {
        "opening_observations",
        "exit_information",
    }
    for name in TABLES:
        assert len(run.read_table(name)) > 0
    assert (run.plots_dir / "trajectories.png").stat().st_size > 10_000
    assert run.config["composition"] == "H" and run.config["block"] == 3
    assert run.config["seed"] == 0 and run.config["brain"] == "rules"
    assert run.metadata["extra"]["brain"] == "rules"
    assert not run.ledger_path.exists()  # the rule brain keeps no ledger
    assert run.config["rejection"] == "paper"
    # every memory revision is in the table and in the agent's Chroma stream
    versions = run.read_table("memory_versions")
    store = MemoryStore.open(run.memory_dir)
    try:
        for agent_id, rows in versions.groupby("agent_id"):
            stored = [n.content for n in store.stream(int(agent_id)).nodes()]
            assert stored == rows["memory"].tolist()
    finally:
        store.close()
    counts = run.metadata["extra"]["memory_operations"]
    assert counts == operation_counts(run.read_table("memory_operations"))
    assert counts["write"] > 0
    graph = nx.read_graphml(out / "knowledge_graph.graphml")
    types = {data["type"] for _, data in graph.nodes(data=True)}
    assert {"memory", "decision", "affect"} <= types
    agent_id = int(versions["agent_id"].iloc[0])
    assert main(["evac", "lanes", str(out), "--agent", str(agent_id)]) == 0
    assert (run.plots_dir / f"lanes_{agent_id}.png").stat().st_size > 10_000
    assert main(["evac", "lanes", str(out), "--agent", "999"]) == 2
    assert "no pedestrian 999 in the decisions table" in capsys.readouterr().err


def test_evac_run_refuses_an_earlier_run_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "e1"
    args = ["evac", "run", "--time-limit", "2", "--out", str(out)]
    assert main(args) == 0
    assert main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0


@pytest.mark.slow
def test_evac_run_with_route_workers_writes_the_same_tables(
    tmp_path, capsys, monkeypatch
):
    from mesa_llm_mobility.evacuation import route_planner  # noqa: PLC0415

    monkeypatch.setattr(route_planner, "MIN_QUERIES_PER_WORKER", 1)
    base = ["evac", "run", "--time-limit", "6", "--seed", "4"]
    assert main([*base, "--out", str(tmp_path / "one")]) == 0
    assert main([*base, "--route-workers", "2", "--out", str(tmp_path / "two")]) == 0
    one, two = RunDirectory.open(tmp_path / "one"), RunDirectory.open(tmp_path / "two")
    for table in ("positions", "decisions", "events", "outcomes", "pedestrians"):
        pd.testing.assert_frame_equal(
            one.read_table(table), two.read_table(table), obj=table
        )
    assert one.config == two.config  # an execution setting, not part of the run
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main([*base, "--route-workers", "0", "--out", str(tmp_path / "zero")])
    assert "--route-workers: must be >= 1, got 0" in capsys.readouterr().err


def test_evac_run_parses_explicit_counts():
    args = build_parser().parse_args(
        [
            "evac",
            "run",
            "--composition",
            "rule_following=6,anxious_conformist=5",
            "--out",
            "x",
        ]
    )
    assert args.parameter_composition == {"rule_following": 6, "anxious_conformist": 5}


def test_evac_run_reports_bad_composition(tmp_path, capsys):
    code = main(["evac", "run", "--composition", "Q", "--out", str(tmp_path / "bad")])
    assert code == 2
    assert "unknown composition 'Q'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()  # a refused configuration leaves no run


FAULTS = (
    Fault.malformed_json('{"action": '),
    Fault.schema_violation(),
    Fault.http(500, "upstream exploded"),
    Fault.rate_limited(0.05),
)


@pytest.mark.timeout(120)
def test_evac_run_through_the_llm_brain_writes_the_ledger(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("MLM_API_KEY", "sk-evac-cli-local")
    out = tmp_path / "llm"
    with FakeLLMServer(with_faults(scripted_llm.respond, FAULTS, every=4)) as server:
        code = main(
            [
                "evac",
                "run",
                "--composition",
                "average=6",
                "--seed",
                "3",
                "--time-limit",
                "4",
                "--brain",
                "llm:openai/fake-model",
                "--api-base",
                server.api_base,
                "--timeout",
                "5",
                "--max-attempts",
                "3",
                "--out",
                str(out),
            ]
        )
        requests = server.request_count
    assert code == 0
    assert "HTTP calls" in capsys.readouterr().out
    run = RunDirectory.open(out)
    every_record = Ledger.read(run.ledger_path)
    decisions = run.read_table("decisions")
    assert {r["kind"] for r in every_record} == {"EvacuationMove", "EvacuationMemory"}
    assert set(decisions["kind"]) == {"EvacuationMove"}
    records = [r for r in every_record if r["kind"] == "EvacuationMove"]
    memory = run.read_table("memory_versions")
    assert 0 < len(memory) <= len(every_record) - len(records)
    key = ["request_step", "agent_id"]
    answered = pd.DataFrame(
        {
            "agent_id": [int(r["agent_id"]) for r in records],
            "request_step": [r["tags"]["step"] for r in records],
            "outcome": [r["outcome"] for r in records],
            "reason": [r["reason"] for r in records],
        }
    )
    # at step 0 a pedestrian may ask twice: its initial decision (applied at once) and, on a
    # first sighting in that step's perception, again; records and rows keep request order
    answered["nth"] = answered.groupby(key).cumcount()
    applied_rows = decisions[[*key, "outcome", "reason"]].copy()
    applied_rows["nth"] = applied_rows.groupby(key).cumcount()
    key = [*key, "nth"]
    merged = answered.merge(
        applied_rows,
        on=key,
        how="outer",
        suffixes=("", "_applied"),
        indicator="source",
    )
    applied = merged[merged["source"] == "both"]
    assert len(applied) == len(decisions) > 6  # every decision has its ledger record
    assert (applied["outcome"] == applied["outcome_applied"]).all()
    assert (applied["reason"].fillna("") == applied["reason_applied"].fillna("")).all()
    # a record without a decision row fell due after the run ended, its pedestrian left, or a
    # first sighting replaced it by a later request before it fell due
    steps = run.metadata["extra"]["steps"]
    resolved = run.read_table("pedestrians").set_index("agent_id")["resolved_step"]
    for row in merged[merged["source"] != "both"].itertuples():
        assert row.source == "left_only", row  # no decision without a record
        due = due_step(int(row.request_step))
        left = resolved.get(row.agent_id)
        mine = answered[answered["agent_id"] == row.agent_id]["request_step"]
        replaced = ((mine > row.request_step) & (mine < due)).any()
        assert due >= steps or (pd.notna(left) and left <= due) or replaced, row
    summary = run.read_table("llm_summary").set_index("kind")
    # the faults showed: rejected decisions (paper semantics) or repaired memory revisions,
    # and more calls than decisions (retries)
    assert summary.loc["all", "repairs"] + summary.loc["all", "rejected"] >= 1
    assert summary.loc["all", "http_calls"] > len(every_record)
    assert summary.loc["all", "http_calls"] == requests
    assert summary.loc["all", "decisions"] == len(every_record)
    assert "sk-evac-cli-local" not in json.dumps(run.config)
    assert b"sk-evac-cli-local" not in run.ledger_path.read_bytes()
