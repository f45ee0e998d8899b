"""The synthetic city: seeded, valid, NumoSim-like days (7-9 stays), anchors and speeds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.staypoints import STAY_COLUMNS, validate_staypoints
from mesa_llm_mobility.trajectory.synth import regime_speed_kmh, synthesize


@pytest.fixture(scope="module")
def city():
    return synthesize(150, 1, seed=11)


def test_same_seed_same_city_other_seed_other_city(small_city):
    again = synthesize(30, 2, seed=3)
    pd.testing.assert_frame_equal(again.stays, small_city.stays)
    other = synthesize(30, 2, seed=4)
    assert not other.stays["poi_id"].equals(small_city.stays["poi_id"])


def test_history_is_valid_and_at_the_papers_density(city):
    stays = validate_staypoints(city.stays)
    assert list(stays.columns) == list(STAY_COLUMNS)
    per_day = stays.groupby(["agent_id", stays["start"].dt.date]).size()
    assert len(per_day) == 150 * 7  # every individual, every day
    assert 7.0 <= per_day.mean() <= 9.0
    assert stays["activity"].nunique() >= 12


def test_days_start_and_end_at_the_own_home_at_midnight(city):
    stays = city.stays
    day = stays["start"].dt.normalize()
    first = stays.groupby(["agent_id", day]).head(1)
    last = stays.groupby(["agent_id", day]).tail(1)
    homes = city.people.set_index("agent_id")["home_poi"]
    for ends in (first, last):
        assert (ends["activity"] == "Home").all()
        assert (
            ends["poi_id"].to_numpy() == homes.loc[ends["agent_id"]].to_numpy()
        ).all()
    assert (first["start"] == first["start"].dt.normalize()).all()
    assert (last["end"] - last["start"].dt.normalize() == pd.Timedelta(days=1)).all()


def test_workers_go_to_their_own_workplace_on_weekdays(city):
    stays = city.stays
    workers = city.people[city.people["role"] == "worker"].set_index("agent_id")
    work = stays[stays["activity"] == "Work"]
    assert (
        work["poi_id"].to_numpy()
        == workers.loc[work["agent_id"], "anchor_poi"].to_numpy()
    ).all()
    assert (work["start"].dt.day_of_week < 5).all()


def test_no_activity_twice_in_a_row_within_a_day(city):
    stays = city.stays
    day = stays["start"].dt.normalize()
    same_day = (stays["agent_id"].shift() == stays["agent_id"]) & (day.shift() == day)
    assert not (same_day & (stays["activity"].shift() == stays["activity"])).any()


def test_speed_regimes_and_travel_times(city):
    assert regime_speed_kmh(np.array([1.0, 5.0, 20.0])).tolist() == [4.5, 18.0, 35.0]
    stays = city.stays
    day = stays["start"].dt.normalize()
    same_day = (
        (stays["agent_id"].shift(-1) == stays["agent_id"]) & (day.shift(-1) == day)
    ).to_numpy()
    gap = (stays["start"].shift(-1) - stays["end"]).dt.total_seconds().to_numpy() / 60
    distance = haversine_km(
        stays["latitude"],
        stays["longitude"],
        stays["latitude"].shift(-1),
        stays["longitude"].shift(-1),
    )
    # 5-180 min, rounded; a visit running to 23:55 may leave less for the way home
    before_late = (
        same_day
        & (
            stays["end"] - stays["start"].dt.normalize() < pd.Timedelta(hours=23)
        ).to_numpy()
    )
    assert (gap[before_late] >= 4.5).all() and (gap[same_day] <= 181).all()
    long = same_day & (distance > 15) & (gap > 0)
    speed = distance[long] / (gap[long] / 60)
    assert 15 < np.median(speed) < 45  # driving


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="individuals"):
        synthesize(1, 1)
    with pytest.raises(ValueError, match="weeks"):
        synthesize(5, 0)
