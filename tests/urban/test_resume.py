"""Checkpoints, resume and fork of urban runs (the shared lifecycle on the urban model)."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content
from mesa_llm_mobility.experiment.lifecycle import fork_run, resume_run
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.memory import MemoryStore
from mesa_llm_mobility.urban import run_files
from mesa_llm_mobility.urban import scripted_llm as traveller
from mesa_llm_mobility.urban.traffic_records import LINK_STATE_COLUMNS
from tests.urban.runs import kpis, run_urban

TABLES = ("trips", "decisions", "plans", "revisions", "positions", "link_states")
CONFIG = {"days": 2, "n_agents": 8, "seed": 3}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return run_urban(tmp_path_factory.mktemp("runs") / "full", **CONFIG)


def _assert_same_tables(left: RunDirectory, right: RunDirectory) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(left.read_table(name), right.read_table(name))


def test_every_day_boundary_has_a_checkpoint_and_a_memory_snapshot(uninterrupted):
    run = uninterrupted.run
    assert run.checkpoint_numbers() == [0, 1, 2]
    for day in (0, 1, 2):
        assert run.memory_snapshot_path(day).is_dir()
    store = MemoryStore.open(run.memory_snapshot_path(2))
    try:
        assert store.agent_ids()  # the snapshot reopens with its agents' memories
    finally:
        store.close()


def test_interrupted_run_resumed_equals_uninterrupted(uninterrupted, tmp_path):
    stopped = run_urban(tmp_path / "b", stop_after=1, **CONFIG)
    assert not stopped.finished and stopped.outputs == []
    assert stopped.run.table_days("trips") == [1]
    resumed = resume_run(tmp_path / "b", progress=False)
    assert resumed.finished
    _assert_same_tables(uninterrupted.run, resumed.run)
    pd.testing.assert_frame_equal(
        uninterrupted.run.read_table("memories"), resumed.run.read_table("memories")
    )
    assert kpis(resumed)["trips"] == kpis(uninterrupted)["trips"]
    assert {p.name for p in resumed.outputs} == {p.name for p in uninterrupted.outputs}
    again = resume_run(tmp_path / "b", progress=False)  # finished: outputs again
    assert again.finished and kpis(again)["trips"] == kpis(resumed)["trips"]


def test_corrupt_latest_checkpoint_falls_back_to_the_previous(uninterrupted, tmp_path):
    stopped = run_urban(tmp_path / "c", stop_after=1, **CONFIG)
    path = stopped.run.checkpoint_path(1)
    path.write_bytes(path.read_bytes()[:100])  # truncated
    resumed = resume_run(tmp_path / "c", progress=False)  # from day 0
    _assert_same_tables(uninterrupted.run, resumed.run)


# ---------------------------------------------------------------------------- LLM brain
LLM_CONFIG = {"days": 2, "n_agents": 6, "seed": 5, "brain": "llm:openai/fake-model"}


def _respond(body):
    """Valid urban answers for any persona: stay home, keep plans, reflect briefly."""
    prompt = body["messages"][1]["content"]
    if "Plan today" in prompt:
        return json_content(
            {"activities": [], "long_term_reflection": "quiet", "concepts": []}
        )
    if "Choose action" in prompt:
        return json_content({"action": "keep", "reason": "fine"})
    if "is over" in prompt:
        return json_content(
            {
                "reflections": [{"content": "a quiet day", "importance": 0.3}],
                "long_term_reflection": "steady",
            }
        )
    return Fault.schema_violation()


def _options(server):
    return {
        "api_base": server.api_base,
        "api_key": "sk-fake",
        "timeout_s": 10,
        "max_attempts": 1,
    }


@pytest.fixture(scope="module")
def llm_source(tmp_path_factory):
    with FakeLLMServer(_respond) as server:
        result = run_urban(
            tmp_path_factory.mktemp("llm") / "source",
            brain_options=_options(server),
            **LLM_CONFIG,
        )
        assert server.request_count > 0
    # the run's result, and what the server saw of it
    return SimpleNamespace(
        run=result.run, summary=kpis(result), server_requests=server.request_count
    )


def test_llm_summary_counts_every_http_call_the_server_received(llm_source):
    llm = llm_source.summary["llm"].loc["all"]
    assert llm["http_calls"] == llm_source.server_requests
    assert llm["repairs"] > 0  # chats answer schema violations: re-prompted, then rules
    assert llm["decisions"] < llm["http_calls"]


def _days(ledger_path):
    return Ledger.read(ledger_path)


def test_llm_fork_replays_identical_days_without_calls(llm_source, tmp_path):
    source_day2 = [
        r for r in _days(llm_source.run.ledger_path) if r["tags"]["day"] == 2
    ]
    assert source_day2
    with FakeLLMServer(_respond) as server:
        fork = fork_run(
            llm_source.run.path,
            tmp_path / "fork",
            at=1,
            changes={"days": 3},
            progress=False,
            brain_options=_options(server),
        )
        asked = server.requests
    assert not any("Day 2 is over" in r["messages"][1]["content"] for r in asked)
    records = _days(fork.run.ledger_path)
    day2 = [r for r in records if r["tags"]["day"] == 2]
    assert len(day2) == len(source_day2) and all(r["replayed"] for r in day2)
    day3 = [r for r in records if r["tags"]["day"] == 3]
    assert day3 and len(asked) >= len(day3) > 0  # only the new day was asked
    assert fork.run.table_days("trips") == [1, 2, 3]
    for name in ("trips", "decisions"):
        source = llm_source.run.read_table(name)
        forked = fork.run.read_table(name)
        pd.testing.assert_frame_equal(
            source, forked[forked["day"] <= 2].reset_index(drop=True)
        )
    assert RunDirectory.open(fork.run.path).metadata["forked_at"] == 1


def test_llm_fork_of_an_unchanged_day_makes_zero_requests(llm_source, tmp_path):
    with FakeLLMServer(_respond) as server:
        fork = fork_run(
            llm_source.run.path,
            tmp_path / "same",
            at=1,
            progress=False,
            brain_options=_options(server),
        )
        assert server.request_count == 0
    assert kpis(fork)["llm"].loc["all", "replayed"] > 0
    assert kpis(fork)["llm"].loc["all", "http_calls"] == 0  # it made none
    _assert_same_tables(llm_source.run, fork.run)


def test_llm_resume_answers_the_interrupted_day_from_its_ledger(llm_source, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(llm_source.run.path, copy)
    recorded = _days(copy / "ledger.jsonl")
    # as if the process died during day 2's checkpoint: day 2's tables and ledger are there
    path = RunDirectory(copy).checkpoint_path(2)
    path.write_bytes(b"truncated")
    (copy / "summary.json").unlink()
    with FakeLLMServer(_respond) as server:
        resumed = resume_run(copy, progress=False, brain_options=_options(server))
        assert server.request_count == 0
    records = _days(copy / "ledger.jsonl")
    assert len(records) == len(recorded)  # day 2 replaced, not duplicated
    assert all(r["replayed"] for r in records if r["tags"]["day"] == 2)
    _assert_same_tables(llm_source.run, resumed.run)
    llm = kpis(resumed)["llm"].loc["all"]  # the whole ledger, not only the resumed day
    assert (
        llm["decisions"]
        == len(records)
        == llm_source.summary["llm"].loc["all", "decisions"]
    )
    # day 2's calls were made before the crash: still the run's, though replayed now
    assert llm["http_calls"] == llm_source.server_requests
    assert llm["replayed"] == sum(r["tags"]["day"] == 2 for r in records)


def test_fork_rejects_unknown_changes(uninterrupted, tmp_path):
    with pytest.raises(ValueError, match="seed cannot change in a fork"):
        fork_run(uninterrupted.run.path, tmp_path / "x", at=1, changes={"seed": 1})
    with pytest.raises(ValueError, match="before the checkpoint of day 2"):
        fork_run(uninterrupted.run.path, tmp_path / "y", at=2, changes={"days": 1})
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_fork_with_events_off_from_day_0_equals_a_run_without_events(
    uninterrupted, tmp_path
):
    quiet = run_urban(tmp_path / "quiet", **{**CONFIG, "events": False})
    fork = fork_run(
        uninterrupted.run.path,
        tmp_path / "fork",
        at=0,
        changes={"events": False},
        progress=False,
    )
    assert fork.run.config["events"] is False
    assert fork.run.read_checkpoint(2)["model"].town.events == ()
    _assert_same_tables(quiet.run, fork.run)
    source = uninterrupted.run.read_checkpoint(1)["model"]
    forked = fork.run.read_checkpoint(1)["model"]
    assert source.engine.announced_events(8 * 60)  # the fork's days have none
    assert forked.engine.announced_events(8 * 60) == []


# ---------------------------------------------------------------------------- command line
@pytest.mark.slow
def test_cli_urban_resume_and_fork(uninterrupted, tmp_path, capsys):
    out = tmp_path / "cli"
    run_urban(out, stop_after=1, **CONFIG)
    assert main(["urban", "resume", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"run directory: {out}" in printed and "punctuality" in printed
    _assert_same_tables(uninterrupted.run, RunDirectory.open(out))

    fork = tmp_path / "fork"
    argv = ["urban", "fork", str(out), "--at", "2", "--out", str(fork)]
    assert main([*argv, "--days", "3", "--no-events", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"run directory: {fork}" in printed and "written:" in printed
    assert RunDirectory.open(fork).table_days("trips") == [1, 2, 3]


def test_cli_resume_of_a_missing_run_is_a_clear_error(tmp_path, capsys):
    assert main(["urban", "resume", str(tmp_path / "nothing")]) == 2
    assert "no such run directory" in capsys.readouterr().err


@pytest.mark.slow
def test_fork_of_a_rule_run_with_an_llm_brain(uninterrupted, tmp_path):
    with FakeLLMServer(_respond) as server:
        fork = fork_run(
            uninterrupted.run.path,
            tmp_path / "llm",
            at=1,
            changes={"brain": "llm:openai/fake-model"},
            progress=False,
            brain_options=_options(server),
        )
        assert server.request_count > 0
    records = Ledger.read(fork.run.ledger_path)
    assert {r["tags"]["day"] for r in records} == {2}
    assert not any(r["replayed"] for r in records)
    assert fork.run.config["brain"] == "llm:openai/fake-model"
    with pytest.raises(ValueError, match="brain setting"):
        fork_run(uninterrupted.run.path, tmp_path / "bad", at=1, changes={"brain": "x"})


def test_checkpoints_leave_out_stored_link_rows_and_resume_puts_them_back(tmp_path):
    out = tmp_path / "r"
    run_urban(out, days=2, n_agents=8, seed=1, stop_after=1)
    run = RunDirectory.open(out)
    model = run.read_checkpoint(1)["model"]
    assert (
        model.engine.link_states_frame().empty
    )  # day 1's rows live in tables/link_states
    run_files.restore_link_history(run, model, 1)
    stored = run.read_table("link_states")[LINK_STATE_COLUMNS]
    pd.testing.assert_frame_equal(model.link_states_frame(), stored, check_dtype=False)
    with pytest.raises(ValueError, match="overlap"):
        model.engine.restore_link_history(stored)

    shutil.rmtree(run.tables_dir / "link_states")
    with pytest.raises(ValueError, match="link_states"):
        resume_run(out, progress=False)


def _flawed_then_fixed(body):
    """Day plans first come back without the trip home (a domain error), fixed when re-asked."""
    repairing = body["messages"][-1]["role"] == "user" and len(body["messages"]) > 2
    prompt = body["messages"][1]["content"]
    if "Plan today" in prompt and not repairing:
        plan = json.loads(traveller.respond(body))
        plan["activities"] = plan["activities"][:-1] or plan["activities"]
        return json_content(plan)
    return traveller.respond(body)


@pytest.mark.slow
def test_a_replayed_llm_run_reports_what_the_live_run_reported(tmp_path):
    config = {"days": 1, "n_agents": 6, "seed": 8, "brain": "llm:openai/fake-model"}
    with FakeLLMServer(_flawed_then_fixed) as server:
        live = run_urban(tmp_path / "live", brain_options=_options(server), **config)
        assert kpis(live)["plan_errors"]  # the flawed plans were seen and counted
        requests = server.request_count
        replay = fork_run(
            live.run.path,
            tmp_path / "replay",
            at=0,
            progress=False,
            brain_options=_options(server),
        )
        assert server.request_count == requests  # every answer came from the ledger
    for key in kpis(live).keys() - {"llm"}:
        assert kpis(replay)[key] == kpis(live)[key], key
    _assert_same_tables(live.run, replay.run)
