"""Reading a GATSim run's movements (urban/published_movements.py), on small synthetic runs."""

from __future__ import annotations

import json
import math

import pytest

from mesa_llm_mobility.urban.published_movements import (
    PublishedDataError,
    dense_link_states,
    describe_minutes,
    link_states_frame,
    link_traversals,
    positions_frame,
    read_movements,
    read_run_meta,
    trips_frame,
    uncongested_minutes,
    walk_trips,
)
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import load_scenario
from tests.urban.conftest import ANN, write_gatsim_run

RUN = ("gatsim", "storage", "experiment_2")


@pytest.fixture(scope="module")
def index():
    return NetworkIndex(load_scenario("nguyen_dupuis"))


def places(index):
    town = index.scenario
    return set(town.nodes) | set(town.facilities) | set(index.by_name)


def read(root, index, **options):
    meta = read_run_meta(root.joinpath(*RUN))
    return read_movements(meta, places(index), **options)


def test_segments_merge_unchanged_states(gatsim_checkout, index):
    movements = read(gatsim_checkout, index)
    assert movements.files == 501 and movements.missing == []
    ann = movements.segments["Ann Lee"]
    assert [s.start for s in ann] == [s[0] for s in ANN]
    assert ann[0].last_file == 440  # staying until file 440 (minute 439 simulated)


def test_a_drive_becomes_a_trip_with_its_links_and_the_door(gatsim_checkout, index):
    movements = read(gatsim_checkout, index)
    facilities = set(index.scenario.facilities)
    walks = {n: walk_trips(s, n, facilities) for n, s in movements.segments.items()}
    targets = {"Ann Lee": ("Office", 480, 1020), "Bea Roy": ("School", 480, 960)}
    trips = trips_frame(walks, index, targets).set_index("agent")
    ann = trips.loc["Ann Lee"]
    assert ann["path"] == ("Ave_1_link_1", "St_5_link_1", "St_5_link_2")
    assert (ann["departure"], ann["arrival"], ann["admitted"]) == (440, 480, 482)
    assert ann["mode"] == "drive" and ann["planned_arrival"] == 480
    assert ann["late"] == 2  # admitted at the door two minutes after 8:00
    # the prototype's uncongested time: 8 + 18 + 8 link minutes, a minute per node and the door
    assert ann["free_flow_time"] == 38 and ann["delay"] == 2
    bea = trips.loc["Bea Roy"]
    assert bea["mode"] == "walk" and bea["travel_time"] == 18
    assert bea["free_flow_time"] == 2 * 8 + 2 and bea["late"] == 0


def test_traversals_time_each_link_from_tail_to_head(gatsim_checkout, index):
    movements = read(gatsim_checkout, index)
    facilities = set(index.scenario.facilities)
    walks = {n: walk_trips(s, n, facilities) for n, s in movements.segments.items()}
    rows = link_traversals(walks, index)
    ann = rows[rows["agent"] == "Ann Lee"]
    assert ann["link"].tolist() == ["Ave_1_link_1", "St_5_link_1", "St_5_link_2"]
    assert ann["tail"].tolist() == [440, 449, 470]
    assert ann["entered"].tolist() == [
        441,
        452,
        471,
    ]  # St_5_link_1 after a 2-minute queue
    assert ann["head"].tolist() == [449, 470, 479]
    assert set(ann["how"]) == {"drive"} and set(ann["direction"]) == {0}


def test_positions_keep_the_prototype_status_and_put_queues_at_the_tail(
    gatsim_checkout, index
):
    movements = read(gatsim_checkout, index)
    positions = positions_frame(movements.segments, index)
    queued = positions[(positions["agent"] == "Ann Lee") & (positions["time"] == 450)]
    row = queued.iloc[0]
    assert row["state"] == "waiting_at_node" and row["place"] == "Node_12"
    assert row["gatsim_place"] == "St_5_link_1" and row["status"] == "waiting"
    door = positions[(positions["agent"] == "Ann Lee") & (positions["time"] == 480)]
    assert door.iloc[0]["state"] == "waiting_at_door"


def test_link_states_count_queue_and_vehicles_per_minute(gatsim_checkout, index):
    movements = read(gatsim_checkout, index)
    facilities = set(index.scenario.facilities)
    walks = {n: walk_trips(s, n, facilities) for n, s in movements.segments.items()}
    traversals = link_traversals(walks, index)
    states = link_states_frame(movements.segments, traversals, index, 499)
    link = states[states["link"] == "St_5_link_1"].set_index("time")
    assert link.loc[450, "queue"] == 1 and link.loc[451, "queue"] == 1
    assert link.loc[452, "traversing"] == 1 and link.loc[452, "entered"] == 1
    assert link.loc[470, "exited"] == 1
    assert link.loc[450, "wait_indicator"] == pytest.approx((1 / 2 + 0.5) * 18)
    assert "Ave_2_link_1" not in set(states["link"])  # walkers take no road capacity
    dense = dense_link_states(states, index, range(500))
    assert len(dense) == 500 * len(index.links)
    assert dense["queue"].sum() == states["queue"].sum()


def test_a_trip_still_under_way_has_no_arrival(tmp_path, index):
    cut = [s for s in ANN if s[0] < 460]
    write_gatsim_run(tmp_path, {"Ann Lee": cut}, 470)
    movements = read(tmp_path, index)
    walks = {
        "Ann Lee": walk_trips(
            movements.segments["Ann Lee"], "Ann Lee", set(index.scenario.facilities)
        )
    }
    trips = trips_frame(walks, index, {})
    assert len(trips) == 1 and math.isnan(trips.loc[0, "arrival"])
    assert trips.loc[0, "state"] == "en_route"


def test_uncongested_minutes_of_a_transit_path(index):
    # ride two metro links (8 each) and walk one road link (8 x 2), three node minutes + door
    links = [
        ("Metro_1_link_1", "Node_5", "ride"),
        ("Metro_1_link_2", "Node_6", "ride"),
        ("St_3_link_2", "Node_10", "walk"),
    ]
    assert uncongested_minutes(links, index) == 8 + 8 + 16 + 4


# ----------------------------------------------------------------------------- bad input
def test_a_folder_that_is_not_a_gatsim_run(tmp_path):
    with pytest.raises(PublishedDataError, match="not a GATSim run"):
        read_run_meta(tmp_path)


def test_missing_minutes_are_an_error_or_listed(tmp_path, index):
    write_gatsim_run(tmp_path, {"Ann Lee": ANN}, 500, skip=(431, 432, 433, 460))
    with pytest.raises(
        PublishedDataError, match=r"4 of 501 minutes missing \(431-433, 460\)"
    ):
        read(tmp_path, index)
    movements = read(tmp_path, index, allow_missing=True)
    assert movements.missing == [431, 432, 433, 460]
    # states come from their start times: the trip is whole although file 460 is missing
    walks = {
        "Ann Lee": walk_trips(
            movements.segments["Ann Lee"], "Ann Lee", set(index.scenario.facilities)
        )
    }
    trips = trips_frame(walks, index, {}, movements.missing)
    assert trips.loc[0, "arrival"] == 480 and bool(trips.loc[0, "spans_gap"])


def _edit_file(root, minute, change):
    path = root.joinpath(*RUN, "movements", f"{minute}.json")
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["mobility_events"]["Ann Lee"].update(status="flying"),
            r"persona 'Ann Lee': unknown status 'flying' \(known: staying",
        ),
        (
            lambda d: d["mobility_events"]["Ann Lee"].update(place="Moon base"),
            "persona 'Ann Lee': unknown place 'Moon base'",
        ),
        (
            lambda d: d["mobility_events"].pop("Bea Roy"),
            "persona 'Bea Roy' missing",
        ),
        (
            lambda d: d["meta"].update(curr_time="2025-03-10 09:00:00"),
            "is not minute 445 of a run",
        ),
        (
            lambda d: d["mobility_events"]["Ann Lee"].update(start_time="yesterday"),
            "'yesterday' is not a time",
        ),
    ],
)
def test_bad_files_name_the_file_and_the_problem(
    gatsim_checkout, index, change, message
):
    path = _edit_file(gatsim_checkout, 445, change)
    with pytest.raises(PublishedDataError, match=message) as error:
        read(gatsim_checkout, index)
    assert str(error.value).startswith(str(path))
    assert "\n" not in str(error.value)


def test_a_file_that_does_not_parse(gatsim_checkout, index):
    path = gatsim_checkout.joinpath(*RUN, "movements", "12.json")
    path.write_text('{"meta": {"curr_time": ')
    with pytest.raises(PublishedDataError, match=r"12\.json: not valid JSON \(line 1"):
        read(gatsim_checkout, index)


def test_describe_minutes():
    assert describe_minutes([5, 1, 2, 3, 9, 10]) == "1-3, 5, 9-10"
    assert describe_minutes([]) == ""
