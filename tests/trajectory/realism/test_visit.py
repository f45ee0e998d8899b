"""The visit-level (ICAD-like) detector: deviations, attribution, per-day scores."""

import datetime

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.realism import day_scores, visit_scores
from mesa_llm_mobility.trajectory.realism.controls import (
    permute_locations,
    shuffle_times,
)
from mesa_llm_mobility.trajectory.realism.visit import (
    ATTRIBUTIONS,
    DAY_SCORE_COLUMNS,
    VISIT_SCORE_COLUMNS,
)


@pytest.fixture(scope="module")
def scored(halves):
    real, other = halves
    return {
        "halves": visit_scores(real, other, include_real=True),
        "locations": visit_scores(
            real, permute_locations(other, seed=2), include_real=True
        ),
        "times": visit_scores(real, shuffle_times(other, seed=2), include_real=True),
    }


def test_visit_scores_name_the_visit(scored, halves):
    frame = scored["halves"]
    assert list(frame.columns) == list(VISIT_SCORE_COLUMNS)
    assert isinstance(frame["day"].iloc[0], datetime.date)
    assert set(frame["attribution"]) <= set(ATTRIBUTIONS)
    assert (frame["score"] == frame["spatial"] + frame["temporal"]).all()
    assert (frame[["spatial", "temporal"]] >= 0).all().all()
    first = frame.groupby(["source", "agent_id", "day"])["visit"].min()
    assert (first == 0).all()
    generated_only = visit_scores(*halves)
    assert set(generated_only["source"]) == {"generated"}
    pd.testing.assert_frame_equal(
        generated_only, frame[frame["source"] == "generated"].reset_index(drop=True)
    )


def _flagged_share(frame, component):
    generated = frame[frame["source"] == "generated"]
    return float(generated["attribution"].isin((component, "both")).mean())


def test_attribution_points_at_what_was_broken(scored):
    halves = scored["halves"]
    real = halves[halves["source"] == "real"]
    # 5 % of real visits exceed the 95th percentile of real visits, per component
    assert real["attribution"].isin(("spatial", "both")).mean() == pytest.approx(
        0.05, abs=0.01
    )
    baseline = {c: _flagged_share(halves, c) for c in ("spatial", "temporal")}
    assert _flagged_share(scored["locations"], "spatial") > 5 * baseline["spatial"]
    assert _flagged_share(scored["locations"], "temporal") < 4 * baseline["temporal"]
    assert _flagged_share(scored["times"], "temporal") > 2 * baseline["temporal"]
    assert _flagged_share(scored["times"], "spatial") < 2 * baseline["spatial"]


def test_day_scores_aggregate_the_visits(halves, scored):
    days = day_scores(*halves, include_real=True)
    assert list(days.columns) == list(DAY_SCORE_COLUMNS)
    visits = scored["halves"]
    expected = visits.groupby(["source", "agent_id", "day"])["score"].agg(
        ["mean", "max", "size"]
    )
    got = days.set_index(["source", "agent_id", "day"]).loc[expected.index]
    np.testing.assert_allclose(got["score_mean"], expected["mean"])
    np.testing.assert_allclose(got["score_max"], expected["max"])
    assert (got["visits"] == expected["size"]).all()
    real = days[days["source"] == "real"]
    assert real["percentile"].between(0, 1).all()
    assert real["percentile"].median() == pytest.approx(0.5, abs=0.05)
    generated = day_scores(*halves)
    assert set(generated["source"]) == {"generated"}
    assert len(generated) == (days["source"] == "generated").sum()
