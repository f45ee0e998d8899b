from __future__ import annotations

import numpy as np
import pandas as pd

from mesa_llm_mobility.urban.app import charts
from mesa_llm_mobility.viz.panels import smallest_text_points


def test_timeline_counts_trips_queues_and_delays():
    trips = pd.DataFrame(
        {"departure": [1440 + 60.0, 1440 + 62, 1440 + 70], "arrival": [1440 + 66.0, np.nan, 1440 + 74],
         "delay": [2.0, np.nan, 4.0], "mode": ["drive"] * 3}
    )  # fmt: skip
    links = pd.DataFrame(
        {"time": [1440 + 64.0, 1440 + 64, 1440 + 64], "kind": ["road", "road", "metro"],
         "queue": [2, 3, 7]}
    )  # fmt: skip
    line = charts.timeline(trips, links, 1440 + 75, every=5)
    assert list(line.columns) == charts.TIMELINE_COLUMNS
    assert line["minute"].iloc[0] == 1440 and line["minute"].iloc[-1] == 1440 + 75
    at = line.set_index("minute")
    assert at.loc[1440 + 65, "trips_in_progress"] == 2  # 60-66 and 62-(under way)
    assert at.loc[1440 + 75, "trips_in_progress"] == 1
    assert at.loc[1440 + 70, "mean_delay"] == 2.0  # arrived 66, in (65, 70]
    assert at.loc[1440 + 75, "mean_delay"] == 4.0
    assert np.isnan(at.loc[1440 + 60, "mean_delay"])
    assert at.loc[1440 + 65, "vehicles_queued"] == 5  # metro riders left out
    assert np.isnan(at.loc[1440 + 60, "vehicles_queued"])  # before the first record


def test_charts_never_fail_on_empty_tables():
    empty = pd.DataFrame(columns=["departure", "arrival", "delay", "mode"])
    for figure in (
        charts.timeline_figure(charts.timeline(empty, None, 30)),
        charts.departures_figure(empty),
        charts.mode_shares_figure(empty),
        charts.decisions_figure(pd.DataFrame()),
    ):
        assert figure.axes


def test_decision_counts_by_kind_and_outcome():
    decisions = pd.DataFrame(
        {
            "kind": ["DailyPlan", "DailyPlan", "Chat"],
            "outcome": ["ok", "fallback", "ok"],
        }
    )
    counts = charts.decision_counts(decisions)
    assert counts.loc["DailyPlan"].to_dict() == {"fallback": 1, "ok": 1}
    figure = charts.decisions_figure(decisions)
    bars = figure.axes[0].patches
    assert sum(bar.get_width() for bar in bars) == 3


def test_every_chart_is_written_at_least_at_the_chart_size():
    trips = pd.DataFrame(
        {
            "day": [1, 1, 2],
            "departure": [420.0, 450.0, 1440 + 430.0],
            "arrival": [440.0, 470.0, 1440 + 455.0],
            "delay": [1.0, 0.0, 3.0],
            "mode": ["drive", "transit", "drive"],
        }
    )
    decisions = pd.DataFrame({"kind": ["DailyPlan", "Chat"], "outcome": ["ok", "ok"]})
    figures = {
        "timeline": charts.timeline_figure(charts.timeline(trips, None, 1440 + 480)),
        "departures": charts.departures_figure(trips),
        "modes": charts.mode_shares_figure(trips),
        "decisions": charts.decisions_figure(decisions),
    }
    for name, figure in figures.items():
        assert smallest_text_points(figure) >= charts.CHART_TEXT_POINTS, name
