"""Trajectory generation sharded by individuals: the unsharded result on every executor.

Serial, process and Ray shards (Ray started locally with 2 CPUs) give exactly the tables of one
unsharded model; a shard that fails is recorded and the others are kept; the next call runs only
the unfinished shards; an LLM-brain sharded run against the local server, with provider faults,
slow answers and an idle gap before its resume, gives every individual a trajectory and records
every fallback; the shards share the endpoint's budget.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectoryError
from mesa_llm_mobility.trajectory import scripted_llm, shards
from mesa_llm_mobility.trajectory.model import (
    TrajectoryModel,
    individual_stream,
    stream_key,
)
from mesa_llm_mobility.trajectory.shards import (
    DONE_FILE,
    ERROR_FILE,
    ShardsFailedError,
    lost_shard,
    shard_dir,
    split_individuals,
)
from mesa_llm_mobility.trajectory.staypoints import write_numosim
from tests.conftest import local_server_options
from tests.trajectory.runs import generation_config, run_generation

from .conftest import slow_sometimes

pytestmark = pytest.mark.slow  # its module fixtures take more than ten seconds

TABLES = ("trajectories", "decisions", "workflow")
KEY = "trajshard-suite-key-5d1e07"
RESOLVED = {"ok", "repaired", "fallback"}


@pytest.fixture(scope="module")
def history_dir(small_city, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards") / "city"
    write_numosim(small_city.stays, folder)
    return folder


@pytest.fixture(scope="module")
def llm_history_dir(small_city, tmp_path_factory):
    # twelve individuals keep the LLM tests short; their peers are among them
    stays = small_city.stays
    people = sorted(stays["agent_id"].unique())[:12]
    folder = tmp_path_factory.mktemp("shards-llm") / "city"
    write_numosim(stays[stays["agent_id"].isin(people)].reset_index(drop=True), folder)
    return folder


@pytest.fixture(scope="module", params=["day", "visit"])
def unsharded(request, history_dir, tmp_path_factory):
    config = generation_config(
        history_dir, days=2, seed=7, durations=request.param, hold_out=2
    )
    out = tmp_path_factory.mktemp(f"unsharded-{request.param}") / "gen.parquet"
    return config, run_generation(out, config)


def _assert_same_run(sharded, reference):
    for name in (*TABLES, "held_out"):
        pd.testing.assert_frame_equal(
            sharded.run.read_table(name),
            reference.run.read_table(name),
            check_exact=True,
            obj=name,
        )
    pd.testing.assert_frame_equal(
        pd.read_parquet(sharded.output), pd.read_parquet(reference.output)
    )
    mine, theirs = sharded.run.metadata["extra"], reference.run.metadata["extra"]
    for key in ("brain", "individuals", "dates", "workflow_success_rate"):
        assert mine[key] == theirs[key], key
    assert sharded.run.config == reference.run.config


# ---------------------------------------------------------------------------- streams
def test_stream_keys_are_stable_and_distinct():
    assert stream_key(5) == stream_key(np.int64(5)) == (0, 5)
    assert stream_key("5")[0] == 1 and stream_key("5") == stream_key("5")
    assert stream_key(-3)[0] == 1  # SeedSequence keys must be non-negative
    first = individual_stream(7, 5).random(3)
    assert np.array_equal(first, individual_stream(7, 5).random(3))
    assert not np.array_equal(first, individual_stream(7, 6).random(3))
    assert not np.array_equal(first, individual_stream(8, 5).random(3))


def test_an_individual_is_generated_the_same_whoever_else_is(small_split):
    history = small_split.history
    people = sorted(history["agent_id"].unique())
    chosen = [people[4], people[11]]
    with TrajectoryModel(history, days=3, rng=2) as everyone:
        everyone.run()
        full = everyone.trajectories_frame()
    with TrajectoryModel(history, days=3, rng=2, individuals=chosen[::-1]) as some:
        some.run()
        part = some.trajectories_frame()
    assert [agent.person_id for agent in some.individuals] == chosen  # history order
    pd.testing.assert_frame_equal(
        part, full[full["agent_id"].isin(chosen)].reset_index(drop=True)
    )
    with pytest.raises(ValueError, match="not in the history"):
        TrajectoryModel(history, days=1, rng=2, individuals=["nobody"])


def test_split_individuals_keeps_order_and_sizes():
    parts = split_individuals(list(range(10)), 4)
    assert [len(part) for part in parts] == [2, 3, 2, 3]
    assert [item for part in parts for item in part] == list(range(10))
    assert split_individuals([1, 2], 5) == [[1], [2]]  # never an empty shard
    with pytest.raises(ValueError, match="shards must be >= 1"):
        split_individuals([1], 0)


# ---------------------------------------------------------------------------- executors
def test_serial_and_process_shards_equal_the_unsharded_run(unsharded, tmp_path):
    config, reference = unsharded
    serial = run_generation(
        tmp_path / "serial.parquet", config, executor="serial", shards=3
    )
    process = run_generation(
        tmp_path / "process.parquet", config, executor="process", workers=2, shards=5
    )
    for sharded, count in ((serial, 3), (process, 5)):
        assert sharded.shards == count and sharded.model is None
        _assert_same_run(sharded, reference)
    assert process.run.metadata["extra"]["executor"] == "process"
    assert json.loads((process.run.path / "shards" / "plan.json").read_text()) == {
        "shards": 5,
        "individuals": [6, 6, 6, 6, 6],
    }


def test_ray_shards_equal_the_unsharded_run(unsharded, tmp_path, local_ray):
    config, reference = unsharded
    on_ray = run_generation(tmp_path / "ray.parquet", config, executor="ray", shards=4)
    _assert_same_run(on_ray, reference)


# ---------------------------------------------------------------------------- failures and resume
def _failing_shard(monkeypatch, victim):
    """Make the shard holding ``victim`` raise after generating (its ledger is written)."""
    original = TrajectoryModel.trajectories_frame

    def trajectories_frame(model):
        if victim in {agent.person_id for agent in model.individuals}:
            raise RuntimeError(f"disk full while writing {victim}")
        return original(model)

    monkeypatch.setattr(TrajectoryModel, "trajectories_frame", trajectories_frame)


def _counting_shards(monkeypatch):
    ran = []
    original = shards._generate_shard

    def generate(task, path):
        ran.append(task.index)
        return original(task, path)

    monkeypatch.setattr(shards, "_generate_shard", generate)
    return ran


def test_a_failed_shard_is_recorded_and_the_rerun_runs_only_it(
    unsharded, tmp_path, monkeypatch
):
    config, reference = unsharded
    out = tmp_path / "gen.parquet"
    victim = sorted(reference.trajectories["agent_id"].unique())[12]
    ran = _counting_shards(monkeypatch)
    with monkeypatch.context() as patch:
        _failing_shard(patch, victim)
        with pytest.raises(ShardsFailedError, match="1 of 4 shards failed") as failed:
            run_generation(out, config, executor="serial", shards=4)
    assert ran == [0, 1, 2, 3]
    assert set(failed.value.failures) == {1}
    assert "RuntimeError: disk full" in failed.value.failures[1]
    run_dir = out.with_name("gen.run")
    assert "disk full" in (shard_dir(run_dir, 1) / ERROR_FILE).read_text()
    assert [
        (shard_dir(run_dir, index) / DONE_FILE).is_file() for index in range(4)
    ] == [True, False, True, True]
    assert not out.exists()  # nothing merged while a shard is missing
    ran.clear()
    resumed = run_generation(out, config, executor="serial")  # the plan is kept
    assert ran == [1]
    assert not (shard_dir(run_dir, 1) / ERROR_FILE).exists()
    _assert_same_run(resumed, reference)
    ran.clear()
    again = run_generation(out, config, executor="process", workers=2)
    assert ran == []  # complete: only merged again
    _assert_same_run(again, reference)
    with pytest.raises(ValueError, match="split into 4 shards"):
        run_generation(out, config, executor="serial", shards=2)
    other = {**config, "seed": 8}
    with pytest.raises(RunDirectoryError, match="already exists"):
        run_generation(out, other, executor="serial")


def test_sharded_runs_refuse_no_seed_and_a_ledger_option(unsharded, tmp_path):
    config, _ = unsharded
    with pytest.raises(ValueError, match="needs a seed"):
        run_generation(tmp_path / "a.parquet", {**config, "seed": None}, shards=2)
    with pytest.raises(ValueError, match="drop brain_options"):
        run_generation(
            tmp_path / "b.parquet",
            config,
            shards=2,
            brain_options={"ledger": tmp_path / "l.jsonl"},
        )
    assert not any(tmp_path.iterdir())


def test_a_lost_worker_fails_its_shard_only(tmp_path):
    task = shards.ShardTask(3, str(tmp_path / "shard-0003"), "inputs", {})
    outcome = lost_shard(task, "worker died while running this task (killed)")
    assert outcome.index == 3 and outcome.error.startswith("WorkerLostError: ")
    assert "killed" in (tmp_path / "shard-0003" / ERROR_FILE).read_text()


# ---------------------------------------------------------------------------- the CLI
def _generate(history, out, *extra):
    return main(
        [
            "traj",
            "run",
            "--history",
            str(history),
            "--days",
            "2",
            "--seed",
            "3",
            "--out",
            str(out.with_suffix(".run")),
            "--stays",
            str(out),
            "--no-progress",
            *extra,
        ]
    )


def test_cli_shards_give_the_unsharded_file(history_dir, tmp_path, capsys):
    assert _generate(history_dir, tmp_path / "plain.csv") == 0
    assert (
        _generate(
            history_dir,
            tmp_path / "sharded.csv",
            "--executor",
            "process",
            "--workers",
            "2",
            "--shards",
            "3",
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "30 individuals x 2 days, brain rules, seed 3, 3 shards:" in printed
    assert (tmp_path / "plain.csv").read_bytes() == (
        tmp_path / "sharded.csv"
    ).read_bytes()


def test_cli_reports_failed_shards_in_one_line(
    history_dir, tmp_path, capsys, monkeypatch
):
    _failing_shard(
        monkeypatch,
        sorted(
            pd.read_parquet(history_dir / "staypoints.parquet")["agent_id"].unique()
        )[0],
    )
    assert _generate(history_dir, tmp_path / "gen.csv", "--shards", "2") == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("mlm: error: ") and "1 of 2 shards failed (shard 0" in error
    assert "run the same command again" in error and "\n" not in error


# ---------------------------------------------------------------------------- the LLM brain
def _llm_options(server, budget):
    # no ledger: each shard keeps its own
    return local_server_options(server, KEY, max_concurrency=budget)


def test_llm_shards_with_faults_give_everyone_a_trajectory_and_record_fallbacks(
    llm_history_dir, tmp_path
):
    config = generation_config(
        llm_history_dir, days=1, seed=5, brain="llm:openai/fake-model"
    )
    out = tmp_path / "gen.parquet"
    # 24 decisions make at least 24 requests: request 24 gets the 401, which falls back
    with FakeLLMServer(
        with_faults(scripted_llm.respond, provider_faults(hang_s=1.5), every=3),
        latency_s=slow_sometimes,
    ) as server:
        result = run_generation(
            out,
            config,
            executor="process",
            workers=2,
            shards=3,
            brain_options=_llm_options(server, budget=4),
        )
        # two shards at once, each with 4 // 2 requests in flight at most
        assert 1 <= server.max_in_flight <= 4
        received = server.request_count
        time.sleep(1.0)  # idle: the resumed run would reconnect from scratch
        again = run_generation(
            out,
            config,
            executor="process",
            workers=2,
            brain_options=_llm_options(server, 4),
        )
        assert server.request_count == received  # finished shards are not asked again
    assert result.run.metadata["extra"]["individuals"] == 12
    assert set(result.trajectories["agent_id"]) == set(
        pd.read_parquet(llm_history_dir / "staypoints.parquet")["agent_id"]
    )
    assert result.workflow_success_rate == 1.0
    decisions = result.run.read_table("decisions")
    assert set(decisions["outcome"]) <= RESOLVED
    fallbacks = decisions[decisions["outcome"] == "fallback"]
    assert len(fallbacks) > 0 and fallbacks["reason"].notna().all()
    records = Ledger.read(result.run.ledger_path)
    assert len(records) == len(decisions)
    assert (
        decisions["kind"] == "ActivityChain"
    ).sum() == 12  # one chain per person-day
    assert sum(r["outcome"] == "fallback" for r in records) == len(fallbacks)
    summary = result.run.read_table("llm_summary").set_index("kind").loc["all"]
    assert summary["http_calls"] == received
    assert summary["repairs"] > 0
    workflow = result.run.read_table("workflow")
    assert workflow["chain_fallbacks"].sum() + workflow[
        "duration_fallbacks"
    ].sum() == len(fallbacks)
    pd.testing.assert_frame_equal(
        again.run.read_table("trajectories"), result.run.read_table("trajectories")
    )
    leaked = [
        path
        for path in tmp_path.rglob("*")
        if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    assert leaked == []


def test_a_failed_llm_shard_replays_its_answers_on_resume(
    llm_history_dir, tmp_path, monkeypatch
):
    config = generation_config(
        llm_history_dir, days=1, seed=5, brain="llm:openai/fake-model"
    )
    out = tmp_path / "gen.parquet"
    victim = sorted(
        pd.read_parquet(llm_history_dir / "staypoints.parquet")["agent_id"].unique()
    )[0]
    with FakeLLMServer(
        with_faults(scripted_llm.respond, provider_faults(hang_s=1.5), every=5),
        latency_s=slow_sometimes,
    ) as server:
        with monkeypatch.context() as patch:
            _failing_shard(patch, victim)
            with pytest.raises(ShardsFailedError):
                run_generation(
                    out, config, shards=2, brain_options=_llm_options(server, 8)
                )
        received = server.request_count
        time.sleep(1.0)  # idle gap before the retry
        result = run_generation(
            out, config, executor="serial", brain_options=_llm_options(server, 8)
        )
        assert server.request_count == received  # the failed shard's answers replayed
    records = Ledger.read(result.run.ledger_path)
    assert len(records) == len(result.run.read_table("decisions"))
    assert sum(record["kind"] == "ActivityChain" for record in records) == 12
    retried = Ledger.read(shard_dir(result.run.path, 0) / "ledger.jsonl")
    assert retried and all(record["replayed"] for record in retried)
    summary = result.run.read_table("llm_summary").set_index("kind").loc["all"]
    assert summary["http_calls"] == received  # the first attempt's calls stay counted
    assert set(result.trajectories["agent_id"]) >= {victim}
