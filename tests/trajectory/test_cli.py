"""``mlm traj synth | run | evaluate`` end to end, offline, and their one-line errors."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    Fault,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.trajectory import scripted_llm
from mesa_llm_mobility.trajectory.metrics import METRICS
from mesa_llm_mobility.trajectory.spatial import SPATIAL_METRICS
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
            "run",
            "--history",
            str(data),
            "--hold-out",
            "3",
            "--out",
            str(out.with_suffix(".run")),
            "--stays",
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
    code = main(
        [
            "traj",
            "evaluate",
            "--real",
            str(run.table_path("held_out")),
            "--generated",
            str(out),
            "--spatial",
            "--json",
            str(metrics),
        ]
    )
    assert code == 0
    assert "location-aware" in capsys.readouterr().out
    values = json.loads(metrics.read_text())
    assert list(values) == [*METRICS, *SPATIAL_METRICS]


def _llm_flags(server):
    """The shared brain flags for the local server: short timeouts, bounded retries."""
    return [
        "--brain",
        "llm:openai/fake-model",
        "--api-base",
        server.api_base,
        "--timeout",
        "1",
        "--max-attempts",
        "3",
    ]


@pytest.mark.slow
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
                "run",
                "--history",
                str(data),
                "--days",
                "1",
                "--out",
                str(out.with_suffix(".run")),
                "--stays",
                str(out),
                "--no-progress",
                *_llm_flags(server),
            ]
        )
        received = server.request_count
    assert code == 0
    printed = capsys.readouterr().out
    assert "LLM decisions" in printed and "HTTP calls" in printed
    run = RunDirectory.open(tmp_path / "llm.run")
    summary = run.read_table("llm_summary").set_index("kind")
    assert summary.loc["all", "http_calls"] == received
    # one chain per person-day (25 people, 1 day), then a duration per visit of each chain
    assert summary.loc["ActivityChain", "decisions"] == 25
    assert (
        summary.loc["all", "decisions"]
        == 25 + summary.loc["VisitDuration", "decisions"]
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
                "run",
                "--history",
                str(bad),
                "--out",
                str(out.with_suffix(".run")),
                "--stays",
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
        "run",
        "--history",
        str(data),
        "--days",
        "1",
        "--out",
        str(out.with_suffix(".run")),
        "--stays",
        str(out),
        "--no-progress",
    ]
    assert main(arguments) == 0
    assert main(arguments) == 2
    assert "already exists" in capsys.readouterr().err
    assert main([*arguments, "--overwrite"]) == 0


def test_benchmark_on_a_tiny_city(tmp_path, capsys):
    out = tmp_path / "tb"
    code = main(
        [
            "traj",
            "benchmark",
            "--out",
            str(out),
            "--individuals",
            "12",
            "--weeks",
            "2",
            "--hold-out",
            "3",
            "--detectors",
            "visit,individual",
            "--baselines",
            "markov,historical,rules,no_kinematics",
            "--no-progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "12 individuals x 3 held-out days, 4 baselines" in printed
    assert "beyond the paper, location-aware" in printed
    assert "full workflow, rule brain" in printed and "No temperature study" in printed
    run = RunDirectory.open(out)
    for name in ("metrics", "realism", "cost", "spatial", "tools"):
        assert (
            run.table_path(name).is_file()
            and (run.tables_dir / f"{name}.csv").is_file()
        )
    assert "temperature" not in run.table_names()
    metrics = pd.read_csv(run.tables_dir / "metrics.csv").set_index("baseline")
    assert list(metrics.columns) == list(METRICS)
    assert list(metrics.index) == [
        "markov",
        "historical",
        "rules",
        "no_kinematics",
        "real, weeks before",
    ]
    tools = pd.read_csv(run.tables_dir / "tools.csv").set_index("baseline")
    assert list(tools.index) == ["historical", "rules", "no_kinematics"]
    for name in ("markov", "historical", "rules", "no_kinematics"):
        generated = run.read_table(f"generated_{name}")
        assert generated["agent_id"].nunique() == 12
    report = (out / "report.md").read_text()
    assert "Tables II and VI" in report and "Tables III and VII" in report
    assert "NumoSim" in report
    assert (run.plots_dir / "metrics.png").is_file() and (
        run.plots_dir / "realism.png"
    ).is_file()
    assert run.config["baselines"] == ["markov", "historical", "rules", "no_kinematics"]


def test_benchmark_refuses_the_llm_baseline_without_an_llm(tmp_path, capsys):
    code = main(
        [
            "traj",
            "benchmark",
            "--out",
            str(tmp_path / "tb"),
            "--baselines",
            "markov,llm",
            "--no-progress",
        ]
    )
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert error == "mlm: error: the llm baseline needs --brain llm:<model>"
    assert not (tmp_path / "tb").exists()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_benchmark_temperature_study_through_the_llm_brain(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("MLM_API_KEY", "sk-traj-bench-local")
    # 0.5: answers intact (transport faults only); 0.9: every answer infeasible; 1.5: every
    # answer off-schema. The LLM baseline itself samples at 0.2, which is never broken.
    noise = scripted_llm.SamplingNoise(
        scripted_llm.respond, {0.9: (0.0, 1.0), 1.5: (1.0, 0.0)}
    )
    transport = (
        Fault.rate_limited(0.05),
        Fault.http(500, "upstream failed"),
        Fault.hang(1.5),
    )
    with FakeLLMServer(
        with_faults(noise, transport, every=5),
        latency_s=lambda body: (len(body["messages"][-1]["content"]) % 5) * 0.03,
    ) as server:
        code = main(
            [
                "traj",
                "benchmark",
                "--out",
                str(tmp_path / "tb"),
                "--individuals",
                "10",
                "--weeks",
                "2",
                "--hold-out",
                "2",
                "--baselines",
                "rules,llm",
                "--detectors",
                "visit",
                "--study-individuals",
                "4",
                "--no-progress",
                *_llm_flags(server),
                "--temperature",
                "0.2",
            ]
        )
        received = server.request_count
    assert code == 0
    run = RunDirectory.open(tmp_path / "tb")
    study = run.read_table("temperature").set_index("temperature")
    assert list(study.index) == [0.5, 0.9, 1.5]
    # the paper's per-visit worker: a chain and one duration per visit in each daily run
    assert (study["daily_runs"] == 4).all() and (study["decisions"] > 3 * 4).all()
    assert study.loc[0.5, "total"] == 0.0  # transport faults are not the verifier's
    assert study.loc[0.9, "constraint"] == 1.0 and study.loc[0.9, "schema"] == 0.0
    assert study.loc[1.5, "schema"] == 1.0 and study.loc[1.5, "constraint"] == 0.0
    # every answer broken: every decision fell back to the rule policy, and is recorded so
    for temperature in (0.9, 1.5):
        assert (
            study.loc[temperature, "fallbacks"] == study.loc[temperature, "decisions"]
        )
    assert study.loc[0.9, "paper_total"] == 0.091
    cost = run.read_table("cost").set_index("baseline")
    ledgers = [run.ledger_path, *sorted((run.path / "temperature").glob("*.jsonl"))]
    assert len(ledgers) == 4
    calls = [Ledger.summarize_file(path).loc["all", "http_calls"] for path in ledgers]
    assert cost.loc["llm", "http_calls"] == calls[0] > 0
    assert sum(calls) == received
    visits = len(run.read_table("generated_llm"))
    assert cost.loc["llm", "llm_decisions"] == 2 * 10 + visits  # chains, then durations
    assert cost.loc["rules", "http_calls"] == 0
    assert (run.plots_dir / "temperature.png").is_file()
    assert "Table VIII" in (run.path / "report.md").read_text()
    printed = capsys.readouterr().out
    assert "constraint" in printed
    assert not any(
        b"sk-traj-bench-local" in path.read_bytes()
        for path in tmp_path.rglob("*")
        if path.is_file()
    )
