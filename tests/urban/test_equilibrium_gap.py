"""The standard relative gap (urban/equilibrium_gap.py): hand-made loads and both engines' runs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mesa_llm_mobility.urban.decisions.learning import SMALL_1982
from mesa_llm_mobility.urban.equilibrium_gap import (
    TRAVERSAL_COLUMNS,
    Commute,
    LinkRecord,
    TimeDependentNetwork,
    commute_cost,
    relative_gaps,
    traversals_from_positions,
    usable_modes,
    with_directions,
)
from mesa_llm_mobility.urban.population import population_from_dict
from mesa_llm_mobility.urban.published import load_published_run
from mesa_llm_mobility.urban.routing import NetworkIndex, validate_path
from mesa_llm_mobility.urban.scenario import load_scenario


@pytest.fixture(scope="module")
def index():
    return NetworkIndex(load_scenario("nguyen_dupuis"))


def traversal(agent, link, direction, tail, entered, head, how="drive"):
    return {
        "trip_id": f"{agent}|{link}",
        "agent": agent,
        "link": link,
        "direction": direction,
        "how": how,
        "tail": tail,
        "entered": entered,
        "head": head,
    }


def test_link_record_first_in_first_out_and_occupancy():
    record = LinkRecord([100, 100, 102], [100, 108, 108], ["a", "b", "c"], 8, 300)
    assert record.fifo_bound(100) == -math.inf  # the same minute is not ahead
    assert record.fifo_bound(101) == 108
    assert record.fifo_bound(101, exclude="b") == 100
    assert record.on_link_at(100) == 1 and record.on_link_at(108) == 2
    assert record.on_link_at(108, exclude="c") == 1
    assert record.on_link_at(116) == 0


def test_a_full_link_delays_one_more_driver(index):
    # Ave_1_link_1 (capacity 2, 8 min): a and b enter at 400, c queues and enters at 408
    rows = [
        traversal("a", "Ave_1_link_1", 0, 400, 400, 408),
        traversal("b", "Ave_1_link_1", 0, 400, 400, 408),
        traversal("c", "Ave_1_link_1", 0, 401, 408, 416),
    ]
    network = TimeDependentNetwork(index, pd.DataFrame(rows))
    link = index.link("Ave_1_link_1", "Node_1")
    assert (
        network._head(link, 402, "drive") == 416
    )  # behind c, and the link is full till 408
    assert (
        network._head(link, 402, "drive", exclude="c") == 416
    )  # full with a and b till 408
    assert network._head(link, 399, "drive") == 407  # before them: free
    assert network._head(link, 402, "walk") == 402 + 16  # walking takes no capacity
    # the other direction is empty
    assert network._head(index.link("Ave_1_link_1", "Node_12"), 402, "drive") == 410


def test_capacity_events_apply(index):
    network = TimeDependentNetwork(index, pd.DataFrame(columns=list(TRAVERSAL_COLUMNS)))
    link = index.link("Ave_2_link_2", "Node_5")
    assert network.capacity(link, 8 * 60 + 5) == 1  # road works, 08:00-09:00 of day 1
    assert network.capacity(link, 9 * 60) == 2
    free = TimeDependentNetwork(
        index, pd.DataFrame(columns=list(TRAVERSAL_COLUMNS)), capacity_events=False
    )
    assert free.capacity(link, 8 * 60 + 5) == 2


def test_transit_waits_for_the_train(index):
    network = TimeDependentNetwork(index, pd.DataFrame(columns=list(TRAVERSAL_COLUMNS)))
    link = index.link("Metro_1_link_1", "Node_4")
    # trains leave Node_4 every 10 minutes from 00:00
    assert network._head(link, 401, "transit") == 410 + 8
    gatsim = TimeDependentNetwork(
        index, pd.DataFrame(columns=list(TRAVERSAL_COLUMNS)), node_minutes=1
    )
    assert gatsim._head(link, 400, "transit") == 410 + 8  # a minute at the node first


def test_the_best_available_cost_leaves_earlier_when_late(index):
    # alone on an empty town, leaving at 07:50 for 08:00 over 34 minutes is late; leaving at
    # 07:26 arrives on time: the gap is the lateness cost
    commute = Commute(
        "a", 1, "Uptown apartment", "Office", 470.0, 504.0, 480.0, ("drive",)
    )
    network = TimeDependentNetwork(index, pd.DataFrame(columns=list(TRAVERSAL_COLUMNS)))
    best, mode, depart = network.best_cost(commute)
    free = 34.0
    assert (best, mode, depart) == (pytest.approx(free), "drive", 480 - 34)
    late = free + (24 * SMALL_1982.late + SMALL_1982.late_penalty) / SMALL_1982.travel
    assert commute.cost == pytest.approx(late)


def test_no_gap_for_a_commuter_who_cannot_do_better(index):
    trips = pd.DataFrame(
        [
            {
                "trip_id": "a|d1|0",
                "agent": "a",
                "day": 1,
                "origin": "Uptown apartment",
                "destination": "Office",
                "mode": "drive",
                "departure": 446.0,
                "arrival": 480.0,
                "planned_arrival": 480.0,
            }
        ]
    )
    gaps = relative_gaps(
        trips, pd.DataFrame(columns=list(TRAVERSAL_COLUMNS)), index, {"a": ("drive",)}
    )
    assert gaps[0].gap == 0.0 and gaps[0].commuters == 1
    assert commute_cost(446, 480, 480) == 34.0


def test_the_network_replays_every_trip_of_our_run(index, tmp_path):
    from mesa_llm_mobility.urban.model import UrbanMobilityModel  # noqa: PLC0415 - heavy

    with UrbanMobilityModel(days=1, rng=3, n_agents=24, embedding="hash") as model:
        model.run()
        trips, positions = model.trips_frame(), model.positions_frame()
    traversals = with_directions(
        traversals_from_positions(positions, trips), trips, index
    )
    assert (traversals["direction"] >= 0).all()
    network = TimeDependentNetwork(index, traversals)
    replayed = 0
    for trip in trips[trips["arrival"].notna()].itertuples():
        links = validate_path(
            index, trip.origin, trip.destination, list(trip.path), trip.mode
        )
        t = trip.departure
        for link in links:
            t = network._head(link, t, trip.mode, exclude=trip.agent)
        assert t == trip.arrival, trip.trip_id
        replayed += 1
    assert replayed == len(trips[trips["arrival"].notna()]) > 30


def test_the_network_replays_the_published_trips(index):
    run = load_published_run()
    network = TimeDependentNetwork(index, run.tables["traversals"], node_minutes=1)
    directed = {(link.name, link.direction): link for link in index.links}
    mode_of = {"drive": "drive", "walk": "walk", "ride": "transit"}
    arrival = dict(zip(run.trips["trip_id"], run.trips["arrival"], strict=True))
    exact = total = 0
    for trip_id, links in run.tables["traversals"].groupby("trip_id", sort=False):
        if math.isnan(arrival[trip_id]):
            continue
        t = links["tail"].iloc[0]
        for row in links.itertuples():
            t = network._head(
                directed[(row.link, row.direction)],
                t,
                mode_of[row.how],
                exclude=row.agent,
            )
        total += 1
        exact += t + 1 == arrival[trip_id]
    # all but a few riders the prototype let board out of turn
    assert total > 700 and exact / total > 0.99


def test_usable_modes(index):
    people = load_published_run().population
    modes = usable_modes(population_from_dict(people, "p"), index)
    children = [p["name"] for p in people["people"] if p["age"] < 18]
    assert all("drive" not in modes[c] for c in children)
    assert all(set(m) >= {"walk", "transit"} for m in modes.values())
