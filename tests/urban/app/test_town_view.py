from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.urban.app.town_view import (
    TownView,
    empty_link_states,
    train_positions,
    trips_by,
    view_of_model,
)
from mesa_llm_mobility.urban.metro import metro_timetable
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.scenario import load_scenario


@pytest.fixture(scope="module")
def town():
    return load_scenario("nguyen_dupuis")


def test_trains_stand_at_their_timetabled_stops(town):
    line = next(iter(town.metro_lines.values()))
    timetable = metro_timetable(line)
    sample = timetable[(timetable["train"] % 17 == 3)].dropna(subset=["arrival"])
    for row in sample.itertuples():
        trains = train_positions(town, row.arrival)
        mine = trains[
            (trains["line"] == line.name)
            & (trains["direction"] == row.direction)
            & (trains["train"] == row.train)
        ]
        assert len(mine) == 1, row
        node = town.nodes[row.node]
        assert mine["at_stop"].iloc[0] == row.node
        assert (mine["x"].iloc[0], mine["y"].iloc[0]) == pytest.approx((node.x, node.y))


def test_trains_move_at_constant_speed_between_stops(town):
    line = next(iter(town.metro_lines.values()))
    leave = line.service_start + 5 * line.headway  # train 5 leaves stop 0
    half = train_positions(town, leave + line.travel_time / 2)
    mine = half[
        (half["direction"] == 0) & (half["train"] == 5) & (half["line"] == line.name)
    ]
    a, b = town.nodes[line.stops[0]], town.nodes[line.stops[1]]
    assert pd.isna(mine["at_stop"].iloc[0])
    assert mine["segment"].iloc[0] == 0 and mine["share"].iloc[0] == pytest.approx(0.5)
    assert mine["x"].iloc[0] == pytest.approx((a.x + b.x) / 2)
    assert mine["y"].iloc[0] == pytest.approx((a.y + b.y) / 2)
    back = half[
        (half["direction"] == 1) & (half["train"] == 5) & (half["line"] == line.name)
    ]
    last = len(line.stops) - 1
    assert back["segment"].iloc[0] == last - 1  # direction 1 starts on the last link
    assert back["share"].iloc[0] == pytest.approx(0.5)


def test_trains_run_only_in_service_hours(town):
    name, line = next(iter(town.metro_lines.items()))
    short = dataclasses.replace(line, service_start=300.0, service_end=600.0)
    town = dataclasses.replace(town, metro_lines={name: short})
    run_time = (len(short.stops) - 1) * (short.travel_time + short.dwell) - short.dwell
    assert train_positions(town, 299).empty
    assert train_positions(town, 600 + run_time + 1).empty
    # at 05:00 + run_time every train that left since 05:00 is on the line, in each direction
    running = train_positions(town, 300 + run_time)
    per_direction = int(run_time // short.headway) + 1
    assert len(running) == 2 * per_direction


def test_facility_counts_and_trips_by(town):
    travellers = pd.DataFrame(
        [
            ("a", "staying", "Gym"),
            ("b", "waiting_at_door", "Gym"),
            ("c", "driving", "x"),
        ],
        columns=["agent", "state", "place"],
    )
    view = TownView(town, 61, empty_link_states(town), travellers, pd.DataFrame())
    counts = view.facility_counts().set_index("facility")
    assert counts.loc["Gym"].to_dict() == {"staying": 1, "queue": 1}
    assert counts.drop("Gym").sum().sum() == 0 and len(counts) == len(town.facilities)
    assert view.clock == "Day 1, 01:01" and view.day == 1

    trips = pd.DataFrame(
        {"departure": [10.0, 20.0, 50.0], "arrival": [15.0, 40.0, 60.0],
         "delay": [1.0, 2.0, 3.0], "state": ["arrived"] * 3}
    )  # fmt: skip
    cut = trips_by(trips, 30)
    assert list(cut["departure"]) == [10.0, 20.0]
    assert cut["arrival"].iloc[0] == 15.0 and np.isnan(cut["arrival"].iloc[1])
    assert list(trips_by(trips, 20)["departure"]) == [10.0]  # departs in step 20
    assert trips_by(trips, 15)["arrival"].isna().all()  # arrives in step 15
    assert trips_by(trips, 16)["arrival"].iloc[0] == 15.0
    assert np.isnan(cut["delay"].iloc[1]) and cut["state"].iloc[1] == "under way"


def test_view_of_model_follows_the_engine():
    model = UrbanMobilityModel(n_agents=20, rng=1)
    first = view_of_model(model)
    assert first.minute == 0 and len(first.link_states) == len(
        empty_link_states(model.town)
    )
    for _ in range(7 * 60 + 30):
        model.step()
    view = view_of_model(model)
    assert view.minute == model.minute == 450 and view.clock == "Day 1, 07:30"
    assert set(view.link_states["time"]) == {449}
    for name, state, place in view.travellers.itertuples(index=False):
        agent = model.travellers[name]
        assert (agent.state, agent.place) == (state, place)
    assert (view.trips["departure"] < 450).all()
    assert len(view.trips) == int((model.trips_frame()["departure"] < 450).sum())


def test_travellers_on_the_move_have_a_trip_under_way():
    model = UrbanMobilityModel(n_agents=20, rng=2)
    checked = 0
    while model.minute < 20 * 60:
        model.step()
        if model.minute % 7:
            continue
        view = view_of_model(model)
        under_way = set(view.trips[view.trips["arrival"].isna()]["agent"])
        moving = view.travellers["state"].isin(
            ["driving", "riding", "walking", "waiting_at_node"]
        )
        assert set(view.travellers[moving]["agent"]) == under_way, view.clock
        checked += len(under_way)
    assert checked > 0
