import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.urban.run_files import daily_table, run_summary, summary_lines
from tests.urban.runs import run_urban, summary


def test_run_directory_holds_config_tables_plots_and_summary(finished_run):
    run = RunDirectory.open(finished_run.run.path)
    assert run.config["days"] == 2
    assert run.config["brain"] == "rules"
    assert run.table_days("trips") == [1, 2]
    trips = run.read_table("trips")
    assert set(trips["day"]) == {1, 2}
    assert len(trips) == summary(finished_run)["trips"]
    assert set(run.read_table("link_states")["time"] // 1440 + 1) == {1, 2}
    assert len(run.read_table("decisions")) > 0
    assert len(pd.read_parquet(run.tables_dir / "trips")) == len(
        trips
    )  # plain pandas loads it too
    assert {p.name for p in finished_run.outputs} == {
        "departures_per_day.png",
        "mode_shares.png",
        "traffic_snapshots.png",
    }
    assert all(p.stat().st_size > 10_000 for p in finished_run.outputs)
    assert run.metadata["model"] == "urban"
    used = run.metadata["extra"]["memory"]["embedding"]
    assert used["setting"] == "auto"  # the default: MiniLM when installed, else hash
    assert used["name"] in ("minilm", "hash")


def test_daily_table_and_summary_lines(finished_run):
    table = daily_table(finished_run.run.read_table("trips"))
    assert list(table["day"]) == [1, 2]
    assert (table["completed"] <= table["trips"]).all()
    kpis = run_summary(finished_run.run, finished_run.model)
    lines = summary_lines(kpis)
    assert lines[0].startswith("trips")
    assert any(line.startswith("punctuality") for line in lines)
    assert f"interrupted      {kpis['interruptions']} trips" in "\n".join(lines)


def test_a_run_directory_is_not_overwritten_by_accident(finished_run):
    with pytest.raises(RunDirectoryError):
        run_urban(finished_run.run.path, days=1, n_agents=3)


def test_cli_urban_run(tmp_path, capsys):
    out = tmp_path / "cli"
    assert (
        main(
            [
                "urban",
                "run",
                "--days",
                "1",
                "--agents",
                "6",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert f"run directory: {out}" in printed
    assert "punctuality" in printed
    assert (out / "plots" / "traffic_snapshots.png").exists()
    # the default embedding is "auto": the run records and prints which one it used
    used = RunDirectory.open(out).metadata["extra"]["memory"]["embedding"]
    assert used["setting"] == "auto" and used["name"] in ("minilm", "hash")
    assert f"embedding: {used['name']} ({used['backend']})" in printed


def test_cli_urban_run_with_tools_through_the_local_server(tmp_path, monkeypatch):
    from mesa_llm_mobility.cognition.testing import FakeLLMServer  # noqa: PLC0415
    from mesa_llm_mobility.urban import scripted_llm  # noqa: PLC0415

    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    out = tmp_path / "tools"
    with FakeLLMServer(scripted_llm.respond) as server:
        code = main(
            ["urban", "run", "--days", "1", "--agents", "4", "--out", str(out),
             "--no-progress", "--tools", "--brain", "llm:openai/fake-model",
             "--api-base", server.api_base]
        )  # fmt: skip
    assert code == 0
    run = RunDirectory.open(out)
    assert run.config["tools"] is True
    calls = run.read_table("tool_calls")
    assert len(calls) >= 4 and calls["ok"].all()
    decisions = run.read_table("decisions")
    assert (decisions["kind"] == "TravelQuery").sum() >= 4
    assert "chats" in run.table_names()
    assert UrbanParameters().tools is False
