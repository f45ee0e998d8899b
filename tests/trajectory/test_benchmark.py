"""The benchmark's table builder, the verifier's failure rates, and the report."""

from __future__ import annotations

import functools

import pandas as pd
import pytest

from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.trajectory.baselines import (
    BASELINE_LABELS,
    NEURAL_BASELINES,
    run_baseline,
)
from mesa_llm_mobility.trajectory.benchmark import (
    COST_COLUMNS,
    PAPER_FAILURE_RATES,
    REALISM_COLUMNS,
    REFERENCE,
    benchmark_config,
    benchmark_tables,
    reference_days,
    temperature_table,
    verifier_failure_rates,
)
from mesa_llm_mobility.trajectory.benchmark_report import write_report
from mesa_llm_mobility.trajectory.metrics import METRICS
from mesa_llm_mobility.trajectory.realism import realism
from mesa_llm_mobility.trajectory.spatial import SPATIAL_METRICS
from mesa_llm_mobility.trajectory.staypoints import local_dates

OFFLINE = ("markov", "historical", "rules")


@pytest.fixture(scope="module")
def fixture_runs(small_split):
    dates = sorted(set(local_dates(small_split.held_out)))
    return [run_baseline(name, small_split.history, dates, seed=1) for name in OFFLINE]


def _verification(rows):
    return pd.DataFrame(
        rows,
        columns=[
            "date",
            "agent_id",
            "kind",
            "outcome",
            "json",
            "schema",
            "domain",
            "transport",
        ],
    )


def test_failure_rates_count_daily_runs_once_schema_first():
    verification = _verification(
        [
            # a: its chain broke the schema and its durations a constraint -> schema
            ("d1", "a", "ActivityChain", "repaired", 1, 0, 0, 0),
            ("d1", "a", "DayDurations", "repaired", 0, 0, 1, 0),
            # b: a constraint only -> constraint
            ("d1", "b", "ActivityChain", "fallback", 0, 0, 3, 0),
            ("d1", "b", "DayDurations", "ok", 0, 0, 0, 0),
            # c: a transport failure is not the verifier's
            ("d1", "c", "ActivityChain", "fallback", 0, 0, 0, 2),
            ("d1", "c", "DayDurations", "ok", 0, 0, 0, 0),
            # a again, on another day: clean
            ("d2", "a", "ActivityChain", "ok", 0, 0, 0, 0),
            ("d2", "a", "DayDurations", "ok", 0, 1, 0, 0),
        ]
    )
    rates = verifier_failure_rates(verification)
    assert (
        rates["daily_runs"] == 4 and rates["decisions"] == 8 and rates["fallbacks"] == 2
    )
    assert rates["schema"] == 2 / 4  # (d1, a) and (d2, a)
    assert rates["constraint"] == 1 / 4  # (d1, b)
    assert rates["total"] == rates["schema"] + rates["constraint"]
    empty = verifier_failure_rates(_verification([]))
    assert empty["daily_runs"] == 0 and pd.isna(empty["total"])


def test_the_papers_failure_rates_are_exclusive_categories():
    # Table VIII: Total = Schema + Constr. at every temperature (14.3 = 1.8 + 12.5, ...), the
    # classification verifier_failure_rates uses
    for rates in PAPER_FAILURE_RATES.values():
        assert rates["total"] == pytest.approx(rates["schema"] + rates["constraint"])
    table = temperature_table(
        {0.9: _verification([("d", "a", "ActivityChain", "ok", 0, 0, 0, 0)])}
    )
    assert table.loc[0, "paper_total"] == 0.091 and table.loc[0, "total"] == 0.0


def test_table_builder_has_every_baseline(small_split, fixture_runs):
    reference = reference_days(small_split.history, small_split.held_out)
    held_weekdays = sorted(set(local_dates(small_split.held_out).dt.day_of_week))
    assert sorted(set(local_dates(reference).dt.day_of_week)) == held_weekdays
    assert local_dates(reference).max() < local_dates(small_split.held_out).min()
    detectors = functools.partial(realism, detectors=("visit", "individual"))
    tables = benchmark_tables(
        small_split.held_out,
        fixture_runs,
        reference=reference,
        realism=detectors,
        seed=0,
    )
    assert list(tables.metrics.index) == [*OFFLINE, REFERENCE]
    assert list(tables.metrics.columns) == list(METRICS)
    assert tables.metrics.notna().all().all() and (tables.metrics >= 0).all().all()
    assert set(REALISM_COLUMNS) <= set(tables.realism.columns)
    assert list(tables.realism["baseline"]) == [
        name for name in [*OFFLINE, REFERENCE] for _ in range(2)
    ]
    assert list(tables.realism["detector"].unique()) == ["visit", "individual"]
    assert tables.realism["auroc"].between(0, 1).all()
    assert list(tables.cost.columns) == list(COST_COLUMNS)
    assert list(tables.cost["baseline"]) == list(OFFLINE)
    assert tables.cost["train_s"].isna().all()  # no neural baseline here
    assert list(tables.spatial.index) == [*OFFLINE, REFERENCE]
    assert list(tables.spatial.columns) == list(SPATIAL_METRICS)
    # the workflow runs ground every planned visit in code: Table V's deterministic rows
    assert list(tables.tools["baseline"]) == ["historical", "rules"]
    assert (tables.tools["visit_success"] == 1.0).all()
    days = small_split.history["agent_id"].nunique() * 3
    assert (tables.cost["trajectories"] == days).all()
    assert (tables.cost["http_calls"] == 0).all()
    assert tables.temperature.empty
    assert any("temperature study" in note for note in tables.notes)


def test_without_detectors_table_iii_is_empty_with_a_note(small_split, fixture_runs):
    tables = benchmark_tables(small_split.held_out, fixture_runs, realism=None)
    assert tables.realism.empty and list(tables.realism.columns) == list(
        REALISM_COLUMNS
    )
    assert any("realism detectors" in note for note in tables.notes)


def test_report_holds_every_table_and_the_papers_rows(
    tmp_path, small_split, fixture_runs
):
    tables = benchmark_tables(
        small_split.held_out,
        fixture_runs,
        realism=functools.partial(realism, detectors=("visit",)),
    )
    run = RunDirectory.create(
        tmp_path / "tb", {"history": None, "hold_out": 3}, model="trajectory_benchmark"
    )
    report = write_report(run, tables).read_text()
    for name in OFFLINE:
        assert BASELINE_LABELS[name] in report
    assert (
        "| paper: TrajGenAgent, NumoSim (another dataset) | 0.0006 | 0.0993 |" in report
    )
    assert (
        "0.537" in report
    )  # the paper's ICAD visit-level AUROC under our visit detector
    # every published NumoSim row of Table II, the baselines not run here marked as such
    assert "| paper: Geo-Llama, NumoSim (another dataset) | 0.0075 | 0.2361 |" in report
    assert "| paper: GRU, NumoSim (another dataset) | 0.0111 |" in report
    assert "paper: TrajGenAgent w/o kin., NumoSim (another dataset)" in report
    assert "where the visits are" in report and "EMD km" in report
    assert "Table V: tool-invocation success" in report
    assert "| paper: Free-form tool calling, Qwen2.5-32B |" in report
    assert "SeqGAN 20.62" in report  # the paper's GPU hours
    assert (run.plots_dir / "metrics.png").stat().st_size > 0
    assert (run.plots_dir / "realism.png").stat().st_size > 0


def test_config_refuses_what_cannot_run():
    with pytest.raises(ValueError, match="needs --brain llm"):
        benchmark_config(baselines=["llm"])
    with pytest.raises(ValueError, match="unknown baselines"):
        benchmark_config(baselines=["gan"])
    with pytest.raises(ValueError, match="unknown detectors"):
        benchmark_config(detectors=["icad"])
    with pytest.raises(ValueError, match="needs --brain llm"):
        benchmark_config(baselines=["tool_calling"])
    with pytest.raises(ValueError, match="neural_epochs"):
        benchmark_config(neural_epochs=0)
    workflow = [*OFFLINE, "no_kinematics"]
    assert benchmark_config()["baselines"] == [*NEURAL_BASELINES, *workflow]
    assert benchmark_config(brain="llm:openai/x")["baselines"] == [
        *NEURAL_BASELINES,
        *workflow,
        "llm",
        "tool_calling",
    ]


def test_detectors_that_cannot_score_leave_a_note(small_split, fixture_runs):
    last_day = (
        local_dates(small_split.held_out) == local_dates(small_split.held_out).max()
    )
    tables = benchmark_tables(
        small_split.held_out[last_day],  # one real day each: nothing to learn from
        fixture_runs,
        realism=functools.partial(realism, detectors=("visit",)),
    )
    assert tables.realism.empty
    assert any("could not score" in note for note in tables.notes)
