import dataclasses
import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest

from mesa_llm_mobility.urban.metro import (
    metro_timetable,
    next_train,
    train_departure,
    transit_journey,
)
from mesa_llm_mobility.urban.routing import NetworkIndex, PathError, Router
from mesa_llm_mobility.urban.scenario import load_scenario, scenario_from_dict
from mesa_llm_mobility.urban.traffic import TrafficEngine, TravelState


def chain(*links, nodes=("A", "B", "C", "D")):
    """A one-way chain A -> B -> C ... with the given link specs."""
    doc = {
        "nodes": [{"id": n, "x": k, "y": 0} for k, n in enumerate(nodes)],
        "road_links": [
            {
                "name": f"L{k}",
                "from": nodes[k],
                "to": nodes[k + 1],
                "two_way": False,
                **spec,
            }
            for k, spec in enumerate(links)
        ],
    }
    return scenario_from_dict(doc, "chain.json")


@pytest.fixture(scope="module")
def town():
    return load_scenario("nguyen_dupuis")


def test_occupancy_platoon_closed_form():
    # capacity c = 2, travel time T = 5: vehicle i leaves at t0 + (i // c + 1) T
    engine = TrafficEngine(chain({"free_time": 5, "capacity": 2}))
    for i in range(7):
        engine.add_trip(i, "A", "B", depart=10)
    engine.run_until(60)
    trips = engine.trips_frame()
    assert list(trips.arrival) == [10 + (i // 2 + 1) * 5 for i in range(7)]
    assert list(trips.delay) == [(i // 2) * 5 for i in range(7)]
    states = engine.link_states_frame()
    assert states.traversing.max() == 2
    assert states.query("time == 10").queue.item() == 5


def test_occupancy_fifo_across_links():
    engine = TrafficEngine(
        chain({"free_time": 3, "capacity": 1}, {"free_time": 2, "capacity": 1})
    )
    for i in range(5):
        engine.add_trip(i, "A", "C", depart=i % 2)  # two departure waves interleave
    engine.run_until(40)
    trips = engine.trips_frame().sort_values("arrival")
    # FIFO: departure order (time, insertion) is kept through both links
    assert list(trips.trip_id) == [0, 2, 4, 1, 3]
    # link 1 is the bottleneck (3 min per vehicle): arrivals 5, 8, 11, 14, 17
    assert list(trips.arrival) == [5, 8, 11, 14, 17]


def test_flow_platoon_release_times():
    # Vickrey: e_i = max(a_i + f, e_{i-1} + 1/q); platoon at t0: e_i = t0 + f + i / q
    engine = TrafficEngine(chain({"free_time": 5, "capacity": 40, "model": "flow"}))
    for i in range(6):
        engine.add_trip(i, "A", "B", depart=0)
    engine.run_until(30)
    trips = engine.trips_frame()
    assert list(trips.arrival) == pytest.approx([5 + 1.5 * i for i in range(6)])
    assert list(trips.delay) == pytest.approx([1.5 * i for i in range(6)])


def test_flow_queue_grows_at_arrivals_minus_capacity():
    # 3 arrivals per minute, capacity 60 veh/h = 1 per minute, free time 2 minutes
    engine = TrafficEngine(chain({"free_time": 2, "capacity": 60, "model": "flow"}))
    for minute in range(20):
        for j in range(3):
            engine.add_trip(f"{minute}-{j}", "A", "B", depart=minute)
    engine.run_until(21)
    states = engine.link_states_frame().set_index("time")
    for t in range(2, 22):
        assert states.loc[t, "queue"] == 2 * (t - 1)  # growth rate 3 - 1 = 2 per minute
        assert states.loc[t, "exited"] == 1  # capacity every step


def test_flow_spillback_respects_storage():
    scenario = chain(
        {"free_time": 1, "capacity": 600, "model": "flow"},
        {"free_time": 1, "capacity": 6, "model": "flow", "storage_capacity": 2},
    )
    engine = TrafficEngine(scenario)
    for i in range(6):
        engine.add_trip(i, "A", "C", depart=0)
    engine.run_until(60)
    trips = engine.trips_frame()
    assert list(trips.arrival) == pytest.approx([2 + 10 * i for i in range(6)])
    states = engine.link_states_frame()
    downstream = states[states.link == "L1"]
    assert (downstream.queue + downstream.traversing).max() == 2
    upstream = states[states.link == "L0"]
    assert upstream.queue.max() >= 3  # the queue spilled back onto the first link


def test_flow_matches_with_steps_of_any_length():
    scenario = chain(
        {"free_time": 2, "capacity": 120, "model": "flow"},
        {"free_time": 1, "capacity": 40, "model": "flow"},
    )
    results = []
    for dt in (0.25, 0.5):
        engine = TrafficEngine(scenario, dt=dt)
        for i in range(8):
            engine.add_trip(i, "A", "C", depart=0)
        engine.run_until(40)
        results.append(list(engine.trips_frame().arrival))
    # second link: e_i = max(2.5 + 0.5 i + 1, e_{i-1} + 1.5) -> 3 + 1.5 i
    assert results[0] == pytest.approx([3 + 1.5 * i for i in range(8)])
    assert results[1] == results[0]


def test_metro_timetable(town):
    table = metro_timetable(town.metro_lines["Metro_1"])
    assert len(table) == 2 * 144 * 6
    first = table.query("direction == 0 and train == 0")
    assert list(first.node) == [
        "Node_4",
        "Node_5",
        "Node_6",
        "Node_7",
        "Node_8",
        "Node_2",
    ]
    assert list(first.departure[:-1]) == [0, 9, 18, 27, 36]
    assert list(first.arrival[1:]) == [8, 17, 26, 35, 44]
    reverse = table.query("direction == 1 and train == 3")
    assert reverse.node.iloc[0] == "Node_2" and reverse.departure.iloc[0] == 30
    assert table.departure.max() == 1430 + 36
    assert train_departure(town.metro_lines["Metro_2"], 1, 2, 1) == 1440 + 20 + 9


def test_metro_boarding_limits_and_ride_through(town):
    engine = TrafficEngine(town)
    full = [
        "Metro_1_link_1",
        "Metro_1_link_2",
        "Metro_1_link_3",
        "Metro_1_link_4",
        "Metro_1_link_5",
    ]
    for i in range(6):
        engine.add_trip(
            f"a{i}", "Node_4", "Node_2", depart=420, mode="transit", path=full
        )
    for i in range(2):
        engine.add_trip(
            f"b{i}",
            "Node_5",
            "Node_6",
            depart=421,
            mode="transit",
            path=["Metro_1_link_2"],
        )
    engine.run_until(520)
    trips = engine.trips_frame().set_index("trip_id")
    # 4 board the 07:00 train (capacity 4) and ride through 4 stops: 420 + 5 x 8 + 4 x 1
    assert [trips.loc[f"a{i}", "arrival"] for i in range(6)] == [464] * 4 + [474] * 2
    # at Node_5 the 07:00 train (leaves 429) is full; the 07:10 one leaves 439, arrives 447
    assert list(trips.loc[["b0", "b1"], "arrival"]) == [447, 447]
    assert trips.loc["a0", "free_flow_time"] == 44 and trips.loc["a4", "delay"] == 10
    loads = engine.metro_loads_frame()
    assert loads.load.max() == 4
    ride = loads[
        (loads.line == "Metro_1") & (loads.direction == 0) & (loads.train == (0, 42))
    ]
    assert list(ride.load) == [4, 4, 4, 4, 4]
    assert list(ride.boarded) == [4, 0, 0, 0, 0]


def test_event_capacity_drop(town):
    def arrivals(apply_events):
        engine = TrafficEngine(town, apply_events=apply_events)
        for i in range(6):
            engine.add_trip(
                i, "School", "Supermarket", depart=480, path=["Ave_2_link_2"]
            )
        engine.run_until(560)
        return list(engine.trips_frame().arrival)

    assert arrivals(False) == [488, 488, 496, 496, 504, 504]
    engine = TrafficEngine(town)
    for i in range(6):
        engine.add_trip(i, "School", "Supermarket", depart=480, path=["Ave_2_link_2"])
    engine.run_until(480)
    # capacity 1 during the road works: 1 traversing, 5 queued -> (5 / 1 + 0.5) x 8 capped at 40
    report = engine.congestion()
    assert report.values.tolist() == [["road", "Ave_2_link_2", 0, 40.0, "severe"]]
    assert arrivals(True) == [
        488,
        496,
        504,
        512,
        520,
        528,
    ]  # capacity 1 from 08:00 to 09:00


def test_closure_and_reopening():
    engine = TrafficEngine(chain({"free_time": 2, "capacity": 60, "model": "flow"}))
    engine.add_trip(0, "A", "B", depart=0)
    engine.set_capacity("L0", 0)
    engine.run_until(9)
    assert math.isnan(engine.trip(0).arrival)
    assert engine.location(0).state is TravelState.QUEUED
    engine.set_capacity("L0", 60)
    engine.run_until(12)
    assert engine.trip(0).arrival == 10


def test_announced_events(town):
    engine = TrafficEngine(town)
    assert [e.place for e in engine.announced_events(430)] == ["Ave_2_link_2"]
    assert [e.place for e in engine.announced_events(500)] == ["Ave_2_link_2", "Museum"]
    assert [e.place for e in engine.announced_events(500, broadcast_only=True)] == [
        "Ave_2_link_2"
    ]
    assert [e.place for e in engine.announced_events(540)] == [
        "Museum"
    ]  # road works over


def test_facility_admission_queue(town):
    engine = TrafficEngine(town)
    for i in range(10):
        engine.add_trip(
            f"go{i}",
            "School",
            "Supermarket",
            600 + i % 2,
            "walk",
            ["Ave_2_link_2"],
            agent=i,
        )
    engine.add_trip("leave", "Supermarket", "School", depart=640, mode="walk", agent=0)
    engine.run_until(650)
    facilities = engine.facility_states_frame().set_index(["time", "facility"])
    assert (
        facilities.loc[(616, "Supermarket"), "staying"] == 5
    )  # walkers of 600 arrive at 616
    assert facilities.loc[(620, "Supermarket"), "staying"] == 8  # capacity 8
    assert facilities.loc[(620, "Supermarket"), "queue"] == 2
    assert facilities.loc[(620, "Supermarket"), "wait_indicator"] == (2 / 8 + 0.5) * 60
    assert (
        facilities.loc[(640, "Supermarket"), "staying"] == 8
    )  # agent 0 left, one admitted
    assert facilities.loc[(640, "Supermarket"), "queue"] == 1
    trips = engine.trips_frame().set_index("trip_id")
    assert trips.admitted.notna().sum() == 9
    assert (
        trips.loc["go7", "admitted"] == 640
        and trips.loc["go9", "state"] == "facility_queue"
    )
    assert (
        engine.location(9).kind == "facility"
        and engine.location(9).state is TravelState.FACILITY_QUEUE
    )
    assert (
        engine.location(0).kind == "link"
        and engine.location(0).state is TravelState.WALKING
    )


def test_hooks_and_reroute(town):
    engine = TrafficEngine(town)
    seen = []

    def detour(eng, trip, node, time):
        seen.append((trip.trip_id, node, time))
        if node == "Node_12":
            eng.reroute(
                trip, ["St_3_link_1", "Ave_2_link_3", "Ave_2_link_4", "St_5_link_2"]
            )

    completed = []
    engine.on_node_arrival.append(detour)
    engine.on_trip_complete.append(
        lambda eng, trip, node, time: completed.append((trip.trip_id, time))
    )
    engine.add_trip(
        "x",
        "Uptown apartment",
        "Office",
        depart=0,
        path="free_flow",
        planned_arrival=35,
    )
    engine.run_until(60)
    assert seen[0] == ("x", "Node_12", 8)
    trip = engine.trip("x")
    assert trip.path == [
        "Ave_1_link_1",
        "St_3_link_1",
        "Ave_2_link_3",
        "Ave_2_link_4",
        "St_5_link_2",
    ]
    assert completed == [("x", 40)]
    row = engine.trips_frame().iloc[0]
    assert (row.planned_arrival, row.arrival, row.free_flow_time, row.delay) == (
        35,
        40,
        40,
        0,
    )
    with pytest.raises(ValueError, match="not at a node"):
        engine.reroute("x", [])


def test_bad_trips(town):
    engine = TrafficEngine(town)
    with pytest.raises(
        PathError,
        match=r"trip 't': path link 1 \('St_4_link_1'\): does not continue from 'Node_12'",
    ):
        engine.add_trip(
            "t", "Node_1", "Node_2", 0, path=["Ave_1_link_1", "St_4_link_1"]
        )
    with pytest.raises(ValueError, match="unknown node or facility 'Mars'"):
        engine.add_trip("u", "Mars", "Node_2", 0)
    engine.add_trip("v", "Node_1", "Node_2", 0, agent="ann")
    with pytest.raises(
        ValueError, match="agent 'ann' will be at 'Node_2', not at the origin 'Node_1'"
    ):
        engine.add_trip("w", "Node_1", "Node_3", 10, agent="ann")
    with pytest.raises(ValueError, match="trip 'x': unknown mode 'bike'"):
        engine.add_trip("x", "Node_1", "Node_2", 0, mode="bike")
    with pytest.raises(
        PathError, match="trip 'y': a transit path needs at least one metro link"
    ):
        engine.add_trip(
            "y", "Node_1", "Node_12", 0, mode="transit", path=["Ave_1_link_1"]
        )
    with pytest.raises(ValueError, match="duplicate trip id 'v'"):
        engine.add_trip("v", "Node_2", "Node_3", 10, agent="ann")


def test_conservation_and_capacity_every_step(town):
    rng = random.Random(4)
    engine = TrafficEngine(town)
    places = list(town.facilities)
    n_agents = 60
    for a in range(n_agents):
        here = rng.choice(places)
        depart = 400
        for k in range(3):
            there = rng.choice([p for p in places if p != here])
            depart += rng.randint(0, 60)
            mode = rng.choice(["drive", "drive", "walk", "transit"])
            engine.add_trip(f"{a}-{k}", here, there, depart, mode, agent=a)
            here = there
    capacities = {name: link.capacity for name, link in town.road_links.items()}
    while engine.time <= 900:
        engine.step()
        from_agents = dict.fromkeys((str(state) for state in TravelState), 0)
        for a in range(n_agents):
            from_agents[str(engine.location(a).state)] += 1
        # counted from queues, links, trains and facilities: nobody lost, nobody twice
        census = engine.census()
        assert sum(census.values()) == n_agents
        assert census == from_agents
    trips = engine.trips_frame()
    departed = trips.departure.notna()
    en_route = departed & trips.arrival.isna()
    for a in range(n_agents):
        assert en_route[trips.agent == a].sum() <= 1  # nobody is on two trips at once
    assert (trips.arrival.notna() <= departed).all()
    assert (trips.arrival[departed] >= trips.departure[departed]).all()
    assert trips.arrival.notna().sum() > 150
    states = engine.link_states_frame()
    road = states[states.kind == "road"]
    assert (road.traversing <= road.link.map(capacities)).all()
    metro = states[states.kind == "metro"]
    assert (metro.traversing <= 4).all()
    assert (trips.delay.dropna() >= -1e-9).all()


def test_walking_has_no_queue(town):
    engine = TrafficEngine(town)
    for i in range(10):
        engine.add_trip(
            i, "Node_4", "Node_5", depart=100, mode="walk"
        )  # Ave_2_link_1, 8 min
    engine.run_until(130)
    trips = engine.trips_frame()
    assert set(trips.arrival) == {100 + 2 * 8}
    assert set(trips.delay) == {0}


def test_routes_are_cached_not_recomputed_per_step(town):
    engine = TrafficEngine(town)
    for k in range(3):
        engine.add_trip(k, "Uptown apartment", "Office", depart=100 * k, agent=k)
    engine.run_until(300)
    # one search per origin-destination while the wait indicators do not change
    assert engine.router.computations == 1
    assert engine.router.cache_hits == 2


def test_facility_capacity_event():
    path = (
        Path(__file__).parents[2]
        / "mesa_llm_mobility/urban/scenarios/nguyen_dupuis.json"
    )
    doc = json.loads(path.read_text())
    doc["events"] = [
        {
            "place": "Supermarket",
            "attribute": "capacity",
            "old_value": 8,
            "new_value": 3,
            "start_time": "10:00",
            "duration": 60,
        }
    ]
    engine = TrafficEngine(scenario_from_dict(doc))
    for i in range(6):
        engine.add_trip(i, "School", "Supermarket", 600, "walk", ["Ave_2_link_2"])
    engine.run_until(700)
    facilities = engine.facility_states_frame().set_index(["time", "facility"])
    assert facilities.loc[
        (616, "Supermarket"), ["staying", "queue", "capacity"]
    ].tolist() == [3, 3, 3]
    assert facilities.loc[
        (660, "Supermarket"), ["staying", "queue", "capacity"]
    ].tolist() == [6, 0, 8]


def test_cancel_and_replace_future_trips(town):
    engine = TrafficEngine(town)
    engine.add_trip("work", "Uptown apartment", "Office", 420, agent="ann")
    engine.add_trip("lunch", "Office", "Food court", 720, agent="ann")
    engine.add_trip("back", "Food court", "Office", 780, agent="ann")
    engine.run_until(600)
    assert engine.cancel_trip("lunch") == ["lunch", "back"]
    with pytest.raises(
        ValueError,
        match="agent 'ann' will be at 'Office', not at the origin 'Food court'",
    ):
        engine.add_trip("x", "Food court", "Office", 800, agent="ann")
    engine.add_trip("gym", "Office", "Gym", 1020, mode="walk", agent="ann")
    with pytest.raises(ValueError, match="trip 'work' has departed"):
        engine.cancel_trip("work")
    engine.run_until_done(2000)
    trips = engine.trips_frame().set_index("trip_id")
    assert trips.loc[["lunch", "back"], "state"].tolist() == ["cancelled", "cancelled"]
    assert trips.loc[["lunch", "back"], "departure"].isna().all()
    assert (
        trips.loc["gym", "departure"] == 1020 and trips.loc["gym", "state"] == "staying"
    )
    assert engine.location("ann").place == "Gym"
    assert sum(engine.census().values()) == 1


@pytest.mark.parametrize(("dt", "day"), [(1.0, 1), (0.5, 0), (2.0, 0)])
def test_metro_on_later_days_and_other_steps(town, dt, day):
    start = day * 1440 + 423  # between trains: the next leaves Node_1 at 430
    engine = TrafficEngine(town, dt=dt, start_time=start)
    engine.add_trip(
        "r",
        "Node_1",
        "Node_6",
        start,
        mode="transit",
        path=["Metro_2_link_1", "Metro_2_link_2"],
    )
    engine.run_until(start + 60)
    trip = engine.trip("r")
    # leaves Node_1 at 430, rides through Node_12 (dwell 1), arrives at Node_6 at 430 + 8 + 1 + 8
    assert trip.arrival == day * 1440 + 447
    loads = engine.metro_loads_frame()
    ride = loads[loads.boarded > 0]
    assert ride.train.tolist() == [(day, 43)] and ride.departure.tolist() == [
        day * 1440 + 430
    ]


def test_link_states_since_a_minute_are_the_tail_of_the_table():
    engine = TrafficEngine(load_scenario("nguyen_dupuis"))
    for _ in range(30):
        engine.step()
    full = engine.link_states_frame()
    tail = engine.link_states_frame(since=12)
    expected = full[full["time"] >= 12].reset_index(drop=True)
    pd.testing.assert_frame_equal(tail, expected)
    assert engine.link_states_frame(since=1000).empty
    assert (
        len(engine.latest_link_states()) == (full["time"] == full["time"].max()).sum()
    )


def test_redirect_goes_to_the_next_destination_and_drops_later_trips():
    # A - B - C - D, two-way: heading for D, the traveller turns at B for C
    scenario = scenario_from_dict(
        {
            "nodes": [{"id": n, "x": k, "y": 0} for k, n in enumerate("ABCD")],
            "road_links": [
                {
                    "name": f"L{k}",
                    "from": a,
                    "to": b,
                    "free_time": k + 2,
                    "capacity": 10,
                }
                for k, (a, b) in enumerate(["AB", "BC", "CD"])
            ],
        },
        "chain.json",
    )
    engine = TrafficEngine(scenario)
    engine.add_trip("gym", "A", "D", depart=0, agent="ann")
    engine.add_trip("shop", "D", "C", depart=3, agent="ann", planned_arrival=20)
    engine.add_trip("home", "C", "A", depart=30, agent="ann")
    seen = []

    def interrupt(eng, trip, node, when):
        seen.append((node, when))
        if trip.trip_id == "gym":
            dropped = eng.redirect(trip, "C", planned_arrival=20)
            assert dropped == ["shop", "home"]
            eng.add_trip("home2", "C", "A", depart=30, agent="ann")

    engine.on_node_arrival.append(interrupt)
    places = set()
    while engine.time <= 60:
        engine.step()
        places.add(engine.location("ann").place)
    assert seen == [("B", 2), ("B", 33)]
    trips = engine.trips_frame().set_index("trip_id")
    # uncongested: arrival at the new destination = now + free time of the new path (L1: 3)
    gym = trips.loc["gym"]
    assert (gym.destination, gym.arrival, gym.planned_arrival) == ("C", 5, 20)
    assert gym.path == ("L0", "L1") and gym.free_flow_time == 5 and gym.delay == 0
    assert trips.loc[["shop", "home"], "state"].tolist() == ["cancelled"] * 2
    assert (trips.loc["home2", "departure"], trips.loc["home2", "arrival"]) == (30, 35)
    assert "D" not in places and "L2" not in places
    assert sum(engine.census().values()) == 1


def test_redirect_errors(town):
    engine = TrafficEngine(town)
    engine.add_trip("x", "Uptown apartment", "Office", depart=0, path="free_flow")
    failures = []

    def bad(eng, trip, node, when):
        with pytest.raises(ValueError, match="unknown node or facility 'Nowhere'"):
            eng.redirect(trip, "Nowhere")
        with pytest.raises(ValueError, match="unknown route 'fastest'"):
            eng.redirect(trip, "Gym", "fastest")
        with pytest.raises(PathError, match=r"trip 'x': path link 0 \('St_4_link_1'\)"):
            eng.redirect(trip, "Gym", ["St_4_link_1"])
        failures.append(node)

    engine.on_node_arrival.append(bad)
    engine.run_until(8)
    assert failures == ["Node_12"]
    assert engine.trip("x").destination == "Office"  # nothing changed
    with pytest.raises(ValueError, match="not at a node"):
        engine.redirect("x", "Gym")


def test_next_train_follows_the_timetable(town):
    metro_1 = town.metro_lines["Metro_1"]
    assert next_train(metro_1, 0, 423) == 430
    assert next_train(metro_1, 0, 430) == 430  # leaving now: that train
    assert next_train(metro_1, 2, 423) == 428  # stop 2 is served 18 min after the first
    assert next_train(metro_1, 2, 1440 + 423) == 1440 + 428
    short = dataclasses.replace(metro_1, service_start=360.0, service_end=1320.0)
    assert next_train(short, 0, 1305) == 1310  # the last train of the day
    assert next_train(short, 0, 1312) == 1440 + 360  # then the first of the next day
    assert next_train(short, 0, 100) == 360


@pytest.mark.parametrize(
    ("origin", "destination"),
    [
        ("Uptown apartment", "Office"),  # a change at Node_6
        ("Uptown apartment", "School"),  # a change to the other direction
        ("Factory", "Museum"),
        ("Gym", "Office"),  # walking legs
    ],
)
def test_transit_journey_matches_the_engine(town, origin, destination):
    index = NetworkIndex(town)
    links = Router(index).path(origin, destination, "transit")
    engine = TrafficEngine(town)
    departures = [420 + k * 3 for k in range(8)]
    for k, depart in enumerate(departures):
        engine.add_trip(
            f"t{k}", origin, destination, depart, mode="transit",
            path=[link.name for link in links],
        )  # fmt: skip
    engine.run_until(720)
    trips = engine.trips_frame().set_index("trip_id")
    for k, depart in enumerate(departures):
        arrival, wait = transit_journey(index, links, depart)
        assert trips.loc[f"t{k}", "arrival"] == pytest.approx(arrival), depart
        assert 0 <= wait < 2 * 10 * len({link.line for link in links if link.line})


def test_approaching_node_is_the_head_of_the_link_left_next():
    engine = TrafficEngine(
        chain({"free_time": 3, "capacity": 10}, {"free_time": 2, "capacity": 10})
    )
    engine.add_trip("t", "A", "C", depart=0)
    seen = {}
    for minute in range(6):  # asked before each step, as the model asks
        seen[minute] = engine.approaching_node("t", minute)
        engine.step()
    assert seen[0] is None  # not on a link yet
    node, ahead = next(found for found in seen.values() if found is not None)
    assert node == "B" and [link.name for link in ahead] == ["L1"]
    assert seen[5] is None  # on the last link: nothing left to change


def test_a_walker_approaches_nodes_as_a_driver_does_in_its_own_state():
    engine = TrafficEngine(
        chain({"free_time": 3, "capacity": 10}, {"free_time": 2, "capacity": 10})
    )
    engine.add_trip("w", "A", "C", depart=0, mode="walk")
    walking, driving = {}, {}
    for minute in range(30):
        trip = engine.trip("w")
        walking[minute] = trip.approaching_node(TravelState.WALKING, minute)
        driving[minute] = engine.approaching_node("w", minute)  # drivers only
        engine.step()
    assert all(found is None for found in driving.values())  # a walker never drives
    found = [(m, a) for m, a in walking.items() if a is not None]
    assert found, "the walker reaches B with L1 still ahead"
    node, ahead = found[0][1]
    assert node == "B" and [link.name for link in ahead] == ["L1"]
    assert walking[29] is None  # arrived: nothing left to change
