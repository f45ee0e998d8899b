import random

import pandas as pd
import pytest

from mesa_llm_mobility.urban.demand import demand_from_windows, simulate_demand
from mesa_llm_mobility.urban.routing import PathError
from mesa_llm_mobility.urban.scenario import load_scenario, scenario_from_dict


def flow_grid(size=4, seed=1):
    rng = random.Random(seed)
    nodes = [
        {"id": f"n{i}_{j}", "x": i, "y": j} for i in range(size) for j in range(size)
    ]
    links = []
    for i in range(size):
        for j in range(size):
            for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                a, b = i + di, j + dj
                if 0 <= a < size and 0 <= b < size:
                    links.append(
                        {
                            "name": f"l{i}_{j}-{a}_{b}",
                            "from": f"n{i}_{j}",
                            "to": f"n{a}_{b}",
                            "free_time": rng.choice([1.0, 1.5, 2.0]),
                            "capacity": rng.choice(
                                [60.0, 120.0, 240.0]
                            ),  # headways 1, 0.5, 0.25
                            "model": "flow",
                            "two_way": False,
                            "capacity_for_trip_ends": rng.random() < 0.5,
                        }
                    )
    return scenario_from_dict({"name": "grid", "nodes": nodes, "road_links": links})


def random_demand(scenario, n, seed=2):
    rng = random.Random(seed)
    names = list(scenario.nodes)
    rows = []
    for k in range(n):
        origin, destination = rng.sample(names, 2)
        rows.append(
            {
                "trip_id": k,
                "origin": origin,
                "destination": destination,
                "depart": rng.randrange(0, 80) * 0.25,
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("routing", ["free_flow", "dynamic"])
def test_event_engine_equals_step_engine(routing):
    scenario = flow_grid()
    demand = random_demand(scenario, 400)
    kwargs = {
        "routing": routing,
        "route_interval": 2.0 if routing == "dynamic" else None,
    }
    event = simulate_demand(scenario, demand, engine="event", **kwargs)
    step = simulate_demand(scenario, demand, engine="step", dt=0.25, **kwargs)
    assert event.arrival.notna().all()
    assert list(event.trip_id) == list(step.trip_id)
    assert list(event.path) == list(step.path)
    assert list(event.departure) == list(step.departure)
    assert list(event.arrival) == list(step.arrival)
    assert list(event.free_flow_time) == list(step.free_flow_time)
    assert (event.delay > 0).sum() > 50  # the demand does congest the grid


def test_dynamic_routing_avoids_queues():
    scenario = flow_grid()
    demand = random_demand(scenario, 400)
    static = simulate_demand(scenario, demand, routing="free_flow")
    dynamic = simulate_demand(scenario, demand, routing="dynamic", route_interval=2.0)
    assert len({tuple(p) for p in dynamic.path}) > len({tuple(p) for p in static.path})


def test_simulate_demand_on_the_reference_town():
    town = load_scenario("nguyen_dupuis")
    demand = [
        {
            "trip_id": f"d{i}",
            "origin": "Uptown apartment",
            "destination": "Office",
            "depart": 420,
        }
        for i in range(6)
    ]
    demand.append(
        {
            "trip_id": "m",
            "origin": "Node_4",
            "destination": "Node_6",
            "depart": 421,
            "mode": "transit",
        }
    )
    demand.append(
        {
            "trip_id": "w",
            "origin": "School",
            "destination": "Hospital",
            "depart": 430,
            "mode": "walk",
            "path": ["St_2_link_2"],
        }
    )
    trips = simulate_demand(town, demand).set_index("trip_id")
    assert list(trips.loc[[f"d{i}" for i in range(6)], "arrival"]) == [
        454,
        454,
        472,
        472,
        490,
        490,
    ]
    assert trips.loc["m", "path"] == ("Metro_1_link_1", "Metro_1_link_2")
    assert trips.loc["m", "arrival"] == 430 + 8 + 1 + 8  # waits for the 07:10 train
    assert trips.loc["w", "arrival"] == 446 and trips.loc["w", "admitted"] == 446
    assert trips.loc["m", "state"] == "arrived"  # a plain node
    assert (trips.drop(index="m").state == "staying").all()


def test_demand_errors():
    town = load_scenario("nguyen_dupuis")
    with pytest.raises(ValueError, match="demand row 0: missing field 'depart'"):
        simulate_demand(town, [{"origin": "Node_1", "destination": "Node_2"}])
    with pytest.raises(
        ValueError, match="demand row 1: field 'depart': expected minutes, got '7:00'"
    ):
        simulate_demand(
            town,
            [
                {"origin": "Node_1", "destination": "Node_2", "depart": 0},
                {"origin": "Node_1", "destination": "Node_2", "depart": "7:00"},
            ],
        )
    with pytest.raises(
        ValueError, match=r"route_update_weight must be in \(0, 1\], got 0"
    ):
        simulate_demand(town, [], routing="dynamic", route_update_weight=0)
    with pytest.raises(ValueError, match="unknown routing 'fastest'"):
        simulate_demand(town, [], routing="fastest")
    with pytest.raises(
        ValueError,
        match="the event engine does not apply: link 'Ave_1_link_1' uses the occupancy model",
    ):
        simulate_demand(
            town,
            [{"origin": "Node_1", "destination": "Node_2", "depart": 0}],
            engine="event",
            routing="free_flow",
        )
    with pytest.raises(
        PathError,
        match=r"trip 7: path link 0 \('St_5_link_2'\): does not continue from 'Node_1'",
    ):
        simulate_demand(
            town,
            [
                {
                    "trip_id": 7,
                    "origin": "Node_1",
                    "destination": "Node_2",
                    "depart": 0,
                    "path": ["St_5_link_2"],
                }
            ],
        )


def test_demand_from_windows():
    demand = demand_from_windows(
        [
            {"orig": "a", "dest": "b", "t_start": 0, "t_end": 3600, "flow": 0.035},
            {"orig": "b", "dest": "a", "t_start": 600, "t_end": 1200, "flow": 0.1},
        ]
    )
    assert len(demand) == 126 + 60
    first = demand[demand.origin == "a"].depart
    assert first.iloc[0] == 0 and first.iloc[1] == pytest.approx(1 / 0.035 / 60)
    assert demand[demand.origin == "b"].depart.min() == 10
    assert list(demand.trip_id) == list(range(len(demand)))
    with pytest.raises(ValueError, match="demand window 0: missing field 'flow'"):
        demand_from_windows([{"orig": "a", "dest": "b", "t_start": 0, "t_end": 1}])


def test_unreachable_destination_is_reported():
    one_way = scenario_from_dict(
        {
            "nodes": [{"id": "A", "x": 0, "y": 0}, {"id": "B", "x": 1, "y": 0}],
            "road_links": [
                {
                    "name": "ab",
                    "from": "A",
                    "to": "B",
                    "free_time": 1,
                    "capacity": 60,
                    "model": "flow",
                    "two_way": False,
                }
            ],
        }
    )
    demand = [{"trip_id": "back", "origin": "B", "destination": "A", "depart": 0}]
    for engine in ("event", "step"):
        with pytest.raises(
            PathError, match="trip 'back': no drive path from 'B' to 'A'"
        ):
            simulate_demand(one_way, demand, routing="dynamic", engine=engine)
