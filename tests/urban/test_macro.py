"""The macroscopic experiment's measures (urban/macro.py), on hand-made trips."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.urban.macro import (
    commute_costs,
    day_metrics,
    interval,
    relative_gap,
    run_macro_experiment,
    summarise,
    summary_table,
)


def trip(agent, departure, travel, target=480.0, mode="drive", delay=0.0, path=("a",)):
    arrival = departure + travel
    late = None if target is None else max(0.0, math.ceil(arrival - target))
    return {
        "agent": agent, "origin": "Home", "destination": "Work", "mode": mode,
        "departure": departure, "arrival": arrival, "travel_time": travel,
        "planned_arrival": target, "late": late, "delay": delay, "path": path, "day": 1,
    }  # fmt: skip


def test_commute_cost_is_smalls_cost_in_travel_minutes():
    frame = pd.DataFrame([trip("a", 430, 40), trip("b", 445, 40)])
    # a: 40 + 0.613*10 early; b: 40 + 2.396*5 late + 5.47 for being late
    costs = commute_costs(frame)
    assert costs.iloc[0] == pytest.approx(40 + 0.065 / 0.106 * 10)
    assert costs.iloc[1] == pytest.approx(40 + 0.254 / 0.106 * 5 + 0.58 / 0.106)


def test_relative_gap_by_hand():
    costs = pd.Series([40.0, 50.0, 30.0, 30.0])
    groups = pd.Series(["x", "x", "y", "y"])
    assert relative_gap(costs, groups) == pytest.approx(10 / 150)
    assert relative_gap(pd.Series([30.0, 30.0]), pd.Series(["y", "y"])) == 0.0


def test_day_metrics():
    trips = pd.DataFrame(
        [
            trip("a", 430, 40, path=("p", "q")),
            trip("b", 445, 40, delay=6.0),
            trip("c", 400, 50, target=540.0, mode="transit"),
            trip("a", 1020, 40, target=None, delay=2.0),
        ]
    )
    row = day_metrics(trips).iloc[0]
    assert row["starters"] == 2 and row["starters_on_time"] == 1
    assert row["starters_mean_departure"] == pytest.approx(437.5)
    assert row["punctuality"] == pytest.approx(2 / 3)
    assert row["mean_delay_min"] == pytest.approx(2.0)
    assert row["share_transit"] == pytest.approx(0.25)
    assert row["distinct_peak_paths"] == 2  # (p, q) and (a,) leave in 06:30-09:00
    early, late = 40 + 0.065 / 0.106 * 10, 40 + 0.254 / 0.106 * 5 + 0.58 / 0.106
    alone = 50 + 0.065 / 0.106 * 90  # c, 90 min early, alone in its group: no gap
    assert row["relative_gap"] == pytest.approx((late - early) / (early + late + alone))


def test_interval_is_student_t():
    mean, low, high = interval([1.0, 2.0, 3.0])
    # s = 1, t(0.975, 2) = 4.303: 2 +- 4.303 / sqrt(3)
    assert (mean, low, high) == pytest.approx((2.0, 2 - 2.4842, 2 + 2.4842), abs=1e-3)
    assert math.isnan(interval([5.0])[1])
    summary = summarise(
        pd.DataFrame({"day": [1, 1], **{m: [1.0, 3.0] for m in ("starters",)}}).assign(
            **{m: [480.0, 490.0] for m in ("starters_mean_departure",)},
            starters_on_time=[1, 2],
            punctuality=[0.5, 1.0],
            mean_delay_min=[1.0, 2.0],
            share_drive=[1.0, 1.0],
            share_transit=[0.0, 0.0],
            share_walk=[0.0, 0.0],
            distinct_peak_paths=[3, 4],
            relative_gap=[0.1, 0.2],
        )
    )
    table = summary_table(summary)
    assert table.loc["starters_mean_departure", "day 1"].startswith("08:05 [")
    assert table.loc["relative_gap", "day 1"].startswith("0.150 [")


def test_experiment_runs_seeds_on_the_sweep_engine(tmp_path, capsys):
    code = main(
        ["urban", "experiment", "--days", "1", "--seeds", "2", "--out", str(tmp_path),
         "--no-progress"]
    )  # fmt: skip
    assert code == 0
    assert "relative_gap" in capsys.readouterr().out
    per_run = pd.read_csv(tmp_path / "macro_runs.csv")
    assert sorted(per_run["seed"]) == [0, 1]
    summary = pd.read_csv(tmp_path / "macro_summary.csv")
    assert set(summary["metric"]) >= {"relative_gap", "punctuality"}
    assert (tmp_path / "figure10.png").is_file()
    assert (per_run["relative_gap"] >= 0).all()
    # a second call reads the finished runs back: same numbers
    again, _ = run_macro_experiment(tmp_path, days=1, seeds=2, progress=False)
    pd.testing.assert_frame_equal(
        again.reset_index(drop=True), per_run, check_dtype=False
    )


def test_experiment_takes_the_sweep_executor_flags(tmp_path, monkeypatch):
    from mesa_llm_mobility.experiment import sweeps as sweep_module  # noqa: PLC0415

    asked = {}

    def no_sweep(model_cls, parameters, **options):
        asked.update(options)
        raise RuntimeError("no runs in this test")

    monkeypatch.setattr(sweep_module, "sweep", no_sweep)
    with pytest.raises(RuntimeError, match="no runs in this test"):
        main(
            ["urban", "experiment", "--days", "1", "--seeds", "2", "--out", str(tmp_path),
             "--executor", "ray", "--ray-address", "auto", "--num-cpus", "3",
             "--workers", "2", "--no-progress"]
        )  # fmt: skip
    assert asked["executor"] == "ray" and asked["max_workers"] == 2
    assert asked["ray_address"] == "auto" and asked["num_cpus"] == 3
    asked.clear()
    with pytest.raises(RuntimeError):
        main(["urban", "experiment", "--out", str(tmp_path), "--no-progress"])
    assert asked["executor"] == "serial" and asked["ray_address"] is None
