"""The trajectory app's views of one individual: days, map, timeline, metric table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.collections import PathCollection

from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.app.session import SessionSettings, synthetic_session
from mesa_llm_mobility.trajectory.app.views import (
    ACTIVITY_COLOURS,
    SOURCES,
    day_rows,
    individual_days,
    map_figure,
    metrics_table,
    timeline_figure,
)
from mesa_llm_mobility.trajectory.metrics import METRICS, evaluate


@pytest.fixture(scope="module")
def session():
    return synthetic_session(
        SessionSettings(individuals=12, weeks=2, hold_out=3, seed=4)
    )


def _markers(figure, panel: int) -> np.ndarray:
    """The activity markers (the last scatter) of a map panel: (longitude, latitude) rows."""
    scatters = [
        c for c in figure.axes[panel].collections if isinstance(c, PathCollection)
    ]
    return np.asarray(scatters[-1].get_offsets())


def test_an_individuals_days_are_its_visits_of_each_table(session):
    first, second = session.individuals()[:2]
    days = individual_days(session, first)
    counts = days["source"].value_counts()
    for source, table in zip(
        SOURCES, (session.history, session.held_out, session.generated), strict=True
    ):
        assert counts[source] == (table["agent_id"] == first).sum()
    assert (
        days["start_hour"].between(0, 24).all()
        and days["end_hour"].between(0, 24).all()
    )
    assert (days["end_hour"] >= days["start_hour"]).all()
    first_visits = days.groupby(["source", "date"])["visit"].min()
    assert (first_visits == 0).all()
    assert not days[["poi_id"]].equals(individual_days(session, second)[["poi_id"]])


def test_the_map_draws_the_selected_individuals_visits(session):
    first, second = session.individuals()[:2]
    days = individual_days(session, first)
    figure = map_figure(days, session.pois, title="x")
    generated = days[days["source"] == "generated"]
    real = days[days["source"] != "generated"]
    np.testing.assert_allclose(
        _markers(figure, 1), generated[["longitude", "latitude"]].to_numpy()
    )
    np.testing.assert_allclose(
        _markers(figure, 0), real[["longitude", "latitude"]].to_numpy()
    )
    lines = figure.axes[1].get_lines()
    assert len(lines) == generated["date"].nunique()  # one line per generated day
    colours = {tuple(c) for c in _colours(figure, 1)}
    assert colours == {_rgba(ACTIVITY_COLOURS[a]) for a in generated["activity"]}
    other = map_figure(individual_days(session, second), session.pois)
    assert not np.array_equal(_markers(other, 1), _markers(figure, 1))
    low, high = figure.axes[1].get_xlim()
    assert low <= days["longitude"].min() and days["longitude"].max() <= high


def _colours(figure, panel):
    scatters = [
        c for c in figure.axes[panel].collections if isinstance(c, PathCollection)
    ]
    return [tuple(np.round(c, 4)) for c in scatters[-1].get_facecolors()]


def _rgba(colour):
    from matplotlib.colors import to_rgba  # noqa: PLC0415

    return tuple(np.round(to_rgba(colour), 4))


def test_the_timeline_has_one_row_per_day_and_a_bar_per_visit(session):
    agent = session.individuals()[3]
    days = individual_days(session, agent)
    rows = day_rows(days)
    assert list(rows["source"].drop_duplicates()) == list(SOURCES)
    assert (
        rows.groupby("source")["date"].apply(lambda d: d.is_monotonic_increasing).all()
    )
    scores = (
        days[days["source"] == "generated"][["date"]]
        .drop_duplicates()
        .assign(percentile=[0.25, 0.5, 0.75])
    )
    figure = timeline_figure(days, scores)
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == len(rows)
    assert labels[-1].startswith("generated ") and labels[0].startswith("history ")
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars == len(days)
    texts = [t.get_text() for t in ax.texts]
    assert {"0.25", "0.50", "0.75"} <= set(texts)


def test_metric_table_values_are_evaluates(session):
    agent = session.individuals()[0]
    table = metrics_table(session, agent).set_index("metric")
    assert list(table.index) == list(METRICS)
    assert table["all individuals"].to_dict() == evaluate(
        session.held_out, session.generated
    )
    mine = evaluate(
        session.held_out[session.held_out["agent_id"] == agent],
        session.generated[session.generated["agent_id"] == agent],
    )
    assert table["this individual"].to_dict() == mine
    assert list(metrics_table(session).columns) == ["metric", "all individuals"]


def test_an_individual_without_generated_days_gets_nan_not_an_error(session):
    table = metrics_table(session, "nobody")
    assert table["this individual"].map(math.isnan).all()


def test_every_activity_has_its_own_colour():
    assert set(ACTIVITY_COLOURS) == set(ACTIVITIES)
    assert len(set(ACTIVITY_COLOURS.values())) == len(ACTIVITIES)
