"""The macroscopic experiment's measures (urban/macro.py), on hand-made trips and short runs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.urban.macro import (
    commute_costs,
    comparison_table,
    day_metrics,
    departures_per_bin,
    interval,
    pooled_sd,
    run_macro_experiment,
    summarise,
    summary_table,
    wilson,
    within_group_gap,
)


def trip(agent, departure, travel, target=480.0, mode="drive", delay=0.0, path=("a",)):
    arrival = departure + travel
    late = None if target is None else max(0.0, math.ceil(arrival - target))
    return {
        "agent": agent,
        "origin": "Home",
        "destination": "Work",
        "mode": mode,
        "departure": departure,
        "arrival": arrival,
        "travel_time": travel,
        "free_flow_time": travel - delay,
        "planned_arrival": target,
        "late": late,
        "delay": delay,
        "path": path,
        "day": 1,
    }


def test_commute_cost_is_smalls_cost_in_travel_minutes():
    frame = pd.DataFrame([trip("a", 430, 40), trip("b", 445, 40)])
    # a: 40 + 0.613*10 early; b: 40 + 2.396*5 late + 5.47 for being late
    costs = commute_costs(frame)
    assert costs.iloc[0] == pytest.approx(40 + 0.065 / 0.106 * 10)
    assert costs.iloc[1] == pytest.approx(40 + 0.254 / 0.106 * 5 + 0.58 / 0.106)


def test_within_group_gap_by_hand():
    costs = pd.Series([40.0, 50.0, 30.0, 30.0])
    groups = pd.Series(["x", "x", "y", "y"])
    assert within_group_gap(costs, groups) == pytest.approx(10 / 150)
    assert within_group_gap(pd.Series([30.0, 30.0]), pd.Series(["y", "y"])) == 0.0


def test_day_metrics():
    trips = pd.DataFrame(
        [
            trip("a", 430, 40, path=("p", "q")),
            trip("b", 445, 40, delay=3.0),
            trip("c", 400, 50, target=540.0, mode="transit"),
            trip("a", 1020, 40, target=None, delay=2.0),
        ]
    )
    row = day_metrics(trips, {1: 0.25}).iloc[0]
    assert row["starters"] == 2 and row["starters_on_time"] == 1
    assert row["starters_mean_departure"] == pytest.approx(437.5)
    assert row["starters_sd_departure"] == pytest.approx(math.sqrt(2 * 7.5**2))
    # b would be 2 minutes late even without its 3 minutes of delay: late by plan; a is not
    assert row["starters_late_by_plan"] == 1
    assert row["punctuality"] == pytest.approx(2 / 3)
    assert row["mean_delay_min"] == pytest.approx(5 / 4)
    assert row["share_transit"] == pytest.approx(0.25)
    assert row["travel_drive_min"] == pytest.approx(40.0)
    assert row["distinct_peak_paths"] == 2  # (p, q) and (a,) leave in 06:30-09:00
    assert row["relative_gap"] == 0.25
    early, late = 40 + 0.065 / 0.106 * 10, 40 + 0.254 / 0.106 * 5 + 0.58 / 0.106
    alone = 50 + 0.065 / 0.106 * 90  # c, 90 min early, alone in its group: no gap
    assert row["within_group_gap"] == pytest.approx(
        (late - early) / (early + late + alone)
    )
    assert math.isnan(day_metrics(trips).iloc[0]["relative_gap"])


def test_pooled_sd_is_within_groups():
    values = pd.Series([0.0, 10.0, 100.0, 104.0, 7.0])
    groups = pd.Series(["x", "x", "y", "y", "z"])
    # squares 50 + 8 over 2 degrees of freedom; z alone adds nothing
    assert pooled_sd(values, groups) == pytest.approx(math.sqrt(58 / 2))
    assert math.isnan(pooled_sd(pd.Series([1.0]), pd.Series(["x"])))


def test_departures_per_bin_counts_commutes_with_zeros():
    trips = pd.DataFrame(
        [
            trip("a", 430, 40),
            trip("b", 444, 40),
            trip("c", 445, 40),
            trip("d", 1000, 30, None),
        ]
    )
    bins = departures_per_bin(trips, (420, 480, 15)).set_index("bin")["departures"]
    # 07:10 in 07:00-07:15; 07:24 and 07:25 in 07:15-07:30; d has no target (not a commute)
    assert bins.to_dict() == {420: 1, 435: 2, 450: 0, 465: 0}


def test_interval_is_student_t():
    mean, low, high = interval([1.0, 2.0, 3.0])
    # s = 1, t(0.975, 2) = 4.303: 2 +- 4.303 / sqrt(3)
    assert (mean, low, high) == pytest.approx((2.0, 2 - 2.4842, 2 + 2.4842), abs=1e-3)
    assert math.isnan(interval([5.0])[1])


def test_wilson_interval():
    low, high = wilson(7, 50)
    assert (low, high) == pytest.approx((0.0695, 0.2614), abs=1e-3)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)
    assert all(math.isnan(x) for x in wilson(0, 0))


def per_run_rows(values):
    base = {
        "starters": 31,
        "starters_mean_departure": 480.0,
        "starters_on_time": 10,
        "commutes": 60,
        "punctuality": 0.5,
        "mean_delay_min": 1.0,
        "completed": 150,
        "share_drive": 1.0,
        "share_transit": 0.0,
        "share_walk": 0.0,
        "distinct_peak_paths": 3,
        "relative_gap": 0.1,
        "within_group_gap": 0.1,
    }
    return pd.DataFrame([{**base, **v, "day": 1} for v in values])


def test_shares_are_clipped_and_a_single_run_gets_wilson():
    summary = summarise(
        per_run_rows([{"punctuality": 0.96, "share_drive": 1.0}, {"punctuality": 0.99}])
    ).set_index("metric")
    assert summary.loc["punctuality", "high"] == 1.0  # the t interval would pass 1
    assert summary.loc["punctuality", "low"] > 0.7
    single = summarise(per_run_rows([{"punctuality": 7 / 60}])).set_index("metric")
    assert (single.loc["punctuality", "low"], single.loc["punctuality", "high"]) == (
        pytest.approx(wilson(7, 60))
    )
    assert math.isnan(single.loc["mean_delay_min", "low"])
    table = summary_table(
        summarise(per_run_rows([{}, {"starters_mean_departure": 490.0}]))
    )
    assert table.loc["starters_mean_departure", "day 1"].startswith("08:05 [")
    assert table.loc["relative_gap", "day 1"] == "0.100 [0.100, 0.100]"


def test_comparison_table_puts_sources_side_by_side():
    first = summarise(per_run_rows([{}]))
    second = summarise(per_run_rows([{"starters": 47}, {"starters": 47}]))
    table = comparison_table({"published": first, "rules": second})
    assert list(table.columns) == ["published, day 1", "rules, day 1"]
    assert table.loc["starters", "rules, day 1"].startswith("47")


@pytest.mark.slow
def test_experiment_runs_seeds_on_the_sweep_engine(tmp_path, capsys):
    flags = "--days 1 --seeds 2 --no-events --no-progress --out"
    code = main(["urban", "experiment", *flags.split(), str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "published LLM run, day 1" in out and "rules (2 seeds), day 1" in out
    per_run = pd.read_csv(tmp_path / "macro_runs.csv")
    assert sorted(per_run["seed"]) == [0, 1]
    summary = pd.read_csv(tmp_path / "macro_summary.csv")
    assert set(summary["metric"]) >= {
        "relative_gap",
        "punctuality",
        "starters_group_sd",
    }
    for name in ("figure10.png", "peaks.png", "comparison.csv", "macro_peaks.csv"):
        assert (tmp_path / name).is_file()
    assert ((per_run["relative_gap"] >= 0) & (per_run["relative_gap"] <= 1)).all()
    # a second call reads the finished runs back: same numbers
    again, _ = run_macro_experiment(
        tmp_path, {"days": 1, "events": False}, seeds=2, progress=False
    )
    pd.testing.assert_frame_equal(
        again.reset_index(drop=True), per_run, check_dtype=False
    )


def test_experiment_takes_the_sweep_executor_flags(tmp_path, monkeypatch):
    from mesa_llm_mobility.urban import macro as macro_module  # noqa: PLC0415

    asked = {}

    def no_sweep(model_cls, parameters, **options):
        asked.update(options)
        asked["parameters"] = parameters
        raise RuntimeError("no runs in this test")

    monkeypatch.setattr(macro_module, "sweep", no_sweep)
    with pytest.raises(RuntimeError, match="no runs in this test"):
        flags = (
            "--days 1 --seeds 2 --executor ray --ray-address auto --num-cpus 3 --workers 2 "
            "--population population_gatsim --no-events --no-progress --out"
        )
        main(["urban", "experiment", *flags.split(), str(tmp_path)])
    assert asked["executor"] == "ray" and asked["max_workers"] == 2
    assert asked["ray_address"] == "auto" and asked["num_cpus"] == 3
    assert asked["parameters"] == {
        "days": 1,
        "population": "population_gatsim",
        "events": False,
        "brain": "rules",
    }
    asked.clear()
    with pytest.raises(RuntimeError):
        main(["urban", "experiment", "--out", str(tmp_path), "--no-progress"])
    assert asked["executor"] == "serial" and asked["ray_address"] is None
    assert asked["parameters"] == {"days": 3, "brain": "rules"}
