"""``mlm traj synth | generate | evaluate`` end to end, offline, and their one-line errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.trajectory import scripted_llm
from mesa_llm_mobility.trajectory.metrics import METRICS
from mesa_llm_mobility.trajectory.staypoints import read_history


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("traj") / "data"
    assert (
        main(
            [
                "traj",
                "synth",
                "--individuals",
                "25",
                "--weeks",
                "2",
                "--seed",
                "1",
                "--out",
                str(folder),
            ]
        )
        == 0
    )
    return folder


def test_synth_writes_numosims_layout(data, capsys):
    assert {path.name for path in data.iterdir()} == {
        "staypoints.parquet",
        "poi.parquet",
        "people.parquet",
    }
    stays = read_history(data)
    assert stays["agent_id"].nunique() == 25
    assert set(pd.read_parquet(data / "staypoints.parquet").columns) >= {
        "agent_id",
        "poi_id",
        "start_datetime",
        "end_datetime",
    }


def test_generate_then_evaluate_against_the_held_out_days(data, tmp_path, capsys):
    out = tmp_path / "gen.parquet"
    code = main(
        [
            "traj",
            "generate",
            "--history",
            str(data),
            "--hold-out",
            "3",
            "--out",
            str(out),
            "--no-progress",
            "--seed",
            "4",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        "25 individuals x 3 days, brain rules, seed 4" in printed
        and "workflow success 100.0%" in printed
    )
    run = RunDirectory.open(tmp_path / "gen.run")
    assert {"trajectories", "decisions", "workflow", "held_out"} <= set(
        run.table_names()
    )
    assert (
        run.config["hold_out"] == 3
        and run.metadata["extra"]["workflow_success_rate"] == 1.0
    )
    generated = read_history(out)
    held_out = read_history(run.table_path("held_out"))
    assert set(generated["start"].dt.normalize()) == set(
        held_out["start"].dt.normalize()
    )
    metrics = tmp_path / "metrics.json"
    code = main(
        [
            "traj",
            "evaluate",
            "--real",
            str(run.table_path("held_out")),
            "--generated",
            str(out),
            "--json",
            str(metrics),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    values = json.loads(metrics.read_text())
    assert list(values) == list(METRICS)
    assert all(0 <= values[name] <= 0.7 for name in METRICS)
    assert "G-radius" in printed and "0.5 km cells" in printed
    assert (
        main(
            [
                "traj",
                "evaluate",
                "--real",
                str(data),
                "--generated",
                str(out),
                "--compat",
                "trajgenagent",
            ]
        )
        == 0
    )
    assert "trajgenagent compat" in capsys.readouterr().out


@pytest.mark.timeout(180)
def test_generate_through_the_llm_brain_writes_the_ledger(
    data, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("MLM_API_KEY", "sk-traj-cli-local")
    out = tmp_path / "llm.parquet"
    with FakeLLMServer(
        with_faults(scripted_llm.respond, provider_faults(hang_s=1.5), every=5)
    ) as server:
        code = main(
            [
                "traj",
                "generate",
                "--history",
                str(data),
                "--days",
                "1",
                "--out",
                str(out),
                "--no-progress",
                "--brain",
                "llm:openai/fake-model",
                "--api-base",
                server.api_base,
                "--timeout",
                "1",
                "--max-attempts",
                "3",
            ]
        )
        received = server.request_count
    assert code == 0
    printed = capsys.readouterr().out
    assert "LLM decisions" in printed and "HTTP calls" in printed
    run = RunDirectory.open(tmp_path / "llm.run")
    summary = run.read_table("llm_summary").set_index("kind")
    assert (
        summary.loc["all", "decisions"] == 50
        and summary.loc["all", "http_calls"] == received
    )
    assert summary.loc["all", "ok"] > 0 and summary.loc["all", "repairs"] > 0
    assert run.metadata["extra"]["workflow_success_rate"] == 1.0
    assert run.ledger_path.is_file()


def test_bad_history_is_one_line_and_writes_nothing(data, tmp_path, capsys):
    stays = pd.read_parquet(data / "staypoints.parquet")
    stays.loc[5, "act_type"] = 42
    bad = tmp_path / "bad"
    bad.mkdir()
    stays.to_parquet(bad / "staypoints.parquet")
    (bad / "poi.parquet").write_bytes((data / "poi.parquet").read_bytes())
    out = tmp_path / "gen.parquet"
    assert (
        main(
            [
                "traj",
                "generate",
                "--history",
                str(bad),
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 2
    )
    error = capsys.readouterr().err.strip()
    assert error.startswith("mlm: error: ") and "\n" not in error
    assert (
        "staypoints.parquet: row 6, field act_type: unknown activity code 42" in error
    )
    assert not out.exists() and not (tmp_path / "gen.run").exists()


def test_an_existing_run_is_not_replaced_without_overwrite(data, tmp_path, capsys):
    out = tmp_path / "gen.parquet"
    arguments = [
        "traj",
        "generate",
        "--history",
        str(data),
        "--days",
        "1",
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(arguments) == 0
    assert main(arguments) == 2
    assert "already exists" in capsys.readouterr().err
    assert main([*arguments, "--overwrite"]) == 0
