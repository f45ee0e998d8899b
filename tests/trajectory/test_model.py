"""TrajectoryModel on the shared model shape, and the plain generate() function."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.experiment.base_model import DECISION_COLUMNS, MobilityModel
from mesa_llm_mobility.trajectory.model import (
    IndividualAgent,
    TrajectoryModel,
    generate,
)
from mesa_llm_mobility.trajectory.staypoints import (
    STAY_COLUMNS,
    StayPointError,
    validate_staypoints,
)
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings

from .conftest import assert_days_like_history


def _held_out_dates(split):
    return sorted(set(split.held_out["start"].dt.normalize()))


def test_model_shape_and_one_day_per_step(small_split):
    model = TrajectoryModel(
        small_split.history, dates=_held_out_dates(small_split), rng=2, durations="day"
    )
    assert isinstance(model, MobilityModel) and not model.uses_llm
    assert len(model.agents_by_type[IndividualAgent]) == 30
    assert model.decisions_frame().empty  # the constructor never calls the brain
    model.step()
    decisions = model.decisions_frame()
    assert list(decisions.columns) == ["day", "date", *DECISION_COLUMNS, "visit"]
    assert decisions["kind"].value_counts().to_dict() == {
        "ActivityChain": 30,
        "DayDurations": 30,
    }
    assert model.run() is model and not model.running
    assert model.day == 3
    model.close()


def test_generated_days_are_valid_stay_points_on_the_dates(small_split):
    with TrajectoryModel(
        small_split.history, dates=_held_out_dates(small_split), rng=2
    ) as model:
        model.run()
        generated = model.trajectories_frame()
        workflow = model.workflow_frame()
        success = model.workflow_success_rate()
    assert list(generated.columns) == list(STAY_COLUMNS)
    validate_staypoints(generated)  # no overlap, ends after starts, known activities
    dates = generated["start"].dt.normalize()
    assert set(dates) == set(_held_out_dates(small_split))
    assert (
        generated["end"] <= dates + pd.Timedelta(days=1)
    ).all()  # the day ends by midnight
    per_day = generated.groupby(["agent_id", dates]).size()
    assert len(per_day) == 30 * 3 and 4 <= per_day.mean() <= 10
    assert success == 1.0
    assert (
        workflow["grounded_visits"] == workflow["visits"] - workflow["trimmed_visits"]
    ).all()
    assert (
        workflow[["invalid_locations", "chain_fallbacks", "duration_fallbacks"]]
        .sum()
        .sum()
        == 0
    )
    # every visit is at a POI the individual or a peer has visited for that activity
    known = set(
        zip(small_split.history["poi_id"], small_split.history["activity"], strict=True)
    )
    assert set(zip(generated["poi_id"], generated["activity"], strict=True)) <= known


@pytest.mark.parametrize("durations", ["day", "visit"])
def test_rule_days_end_at_home_at_midnight_with_the_history_visit_counts(
    small_split, durations
):
    # the first-order chain alone ended a quarter of the days at the first Home (one visit)
    # and left the evening empty (mean last end 14:45 at 100 individuals)
    generated = generate(
        small_split.history,
        dates=_held_out_dates(small_split),
        rng=4,
        settings=WorkflowSettings(durations=durations),
    )
    assert_days_like_history(generated, small_split.history, mean_tolerance=0.6)


def test_same_seed_same_days(small_split):
    first = generate(small_split.history, 2, rng=9)
    second = generate(small_split.history, 2, rng=9)
    pd.testing.assert_frame_equal(first, second)
    assert not first.equals(generate(small_split.history, 2, rng=10))
    # by default the days follow the history
    assert first["start"].min().normalize() == small_split.history[
        "start"
    ].max().normalize() + pd.Timedelta(days=1)


def test_visit_mode_asks_one_duration_per_visit(small_split):
    with TrajectoryModel(
        small_split.history, days=1, durations="visit", rng=3
    ) as model:
        model.run()
        decisions = model.decisions_frame()
        generated = model.trajectories_frame()
        assert model.workflow_success_rate() == 1.0
    visits = decisions[decisions["kind"] == "VisitDuration"]
    assert len(visits) == len(generated)
    assert visits["visit"].min() == 0
    validate_staypoints(generated)


def test_too_few_history_days_is_refused(small_split):
    with pytest.raises(StayPointError, match="history day"):
        TrajectoryModel(
            small_split.history, settings=WorkflowSettings(min_history_days=30)
        )


def test_start_date_and_days(small_split):
    generated = generate(small_split.history, 2, start_date="2024-03-04", rng=0)
    assert sorted(set(generated["start"].dt.strftime("%Y-%m-%d"))) == [
        "2024-03-04",
        "2024-03-05",
    ]
    with pytest.raises(ValueError, match="days"):
        generate(small_split.history, -1)
