import copy
import json
from pathlib import Path

import pytest

from mesa_llm_mobility.urban.scenario import (
    ScenarioError,
    grid_scenario_from_uxsim,
    load_scenario,
    parse_clock,
    scenario_from_dict,
)

GRID = Path("/work/shared/bench/grid11_scenario.json")


@pytest.fixture(scope="module")
def reference():
    return load_scenario("nguyen_dupuis")


@pytest.fixture
def doc():
    scenario = load_scenario("nguyen_dupuis")
    path = (
        Path(__file__).parents[2]
        / "mesa_llm_mobility/urban/scenarios/nguyen_dupuis.json"
    )
    assert scenario.name == "nguyen_dupuis"
    return json.loads(path.read_text())


def test_reference_nodes_and_facilities(reference):
    assert len(reference.nodes) == 13
    assert (reference.nodes["Node_2"].x, reference.nodes["Node_2"].y) == (48, 29)
    assert (reference.nodes["Node_13"].x, reference.nodes["Node_13"].y) == (24, 40)
    expected = {
        "Uptown apartment": ("Node_1", 50, 600),
        "Office": ("Node_2", 30, 480),
        "Factory": ("Node_3", 30, 480),
        "Midtown apartment": ("Node_4", 50, 600),
        "School": ("Node_5", 30, 480),
        "Supermarket": ("Node_6", 8, 60),
        "Food court": ("Node_7", 8, 80),
        "Amusement park": ("Node_8", 8, 240),
        "Hospital": ("Node_9", 8, 120),
        "Cinema": ("Node_10", 8, 100),
        "Coffee shop": ("Node_11", 8, 120),
        "Museum": ("Node_12", 8, 180),
        "Gym": ("Node_13", 8, 120),
    }
    got = {
        f.name: (f.node, f.capacity, f.average_stay)
        for f in reference.facilities.values()
    }
    assert got == expected


def test_reference_links_and_metro(reference):
    links = reference.road_links
    assert len(links) == 19
    assert all(
        link.capacity == 2 and link.two_way and link.model == "occupancy"
        for link in links.values()
    )
    assert (
        links["St_1_link_1"].from_node,
        links["St_1_link_1"].to_node,
        links["St_1_link_1"].free_time,
    ) == (
        "Node_4",
        "Node_9",
        11,
    )
    assert links["St_5_link_1"].free_time == 18
    assert sum(link.free_time for link in links.values()) == 8 * 16 + 11 * 2 + 18
    assert reference.walking_factor == 2
    m1, m2 = reference.metro_lines["Metro_1"], reference.metro_lines["Metro_2"]
    assert m1.stops == ("Node_4", "Node_5", "Node_6", "Node_7", "Node_8", "Node_2")
    assert m2.stops == ("Node_1", "Node_12", "Node_6", "Node_10", "Node_11", "Node_3")
    assert (
        m1.link_names[0] == "Metro_1_link_1" and m2.link_names[-1] == "Metro_2_link_5"
    )
    for line in (m1, m2):
        assert (
            line.travel_time,
            line.dwell,
            line.headway,
            line.train_capacity,
            line.static_wait,
        ) == (8, 1, 10, 4, 5)
        assert (line.service_start, line.service_end) == (0, 1440)


def test_reference_event(reference):
    event = reference.events[0]
    assert (event.place, event.attribute, event.old_value, event.new_value) == (
        "Ave_2_link_2",
        "capacity",
        2,
        1,
    )
    assert (event.start_time, event.duration, event.end_time) == (480, 60, 540)
    assert event.broadcast


def test_parse_clock():
    assert parse_clock("07:30", "x") == 450
    assert parse_clock("24:00", "x") == 1440
    assert parse_clock(12, "x") == 12
    with pytest.raises(ScenarioError, match="x: expected 'HH:MM'"):
        parse_clock("7h30", "x")


def _error(doc, source="town.json"):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(doc, source)
    return str(info.value)


def test_unknown_node_names_file_entry_field(doc):
    doc["road_links"][2]["to"] = "Node_99"
    message = _error(doc)
    assert message == (
        f"town.json: road_links[2] ({doc['road_links'][2]['name']}): field 'to': unknown node 'Node_99'"
    )


def test_duplicate_link_name_and_endpoints(doc):
    bad = copy.deepcopy(doc)
    bad["road_links"].append(dict(bad["road_links"][0]))
    assert (
        "road_links[19] (Ave_1_link_1): field 'name': duplicate link 'Ave_1_link_1'"
        in _error(bad)
    )
    bad = copy.deepcopy(doc)
    bad["road_links"].append(
        {**bad["road_links"][0], "name": "Other", "from": "Node_12", "to": "Node_1"}
    )
    assert (
        "road_links[19] (Other): field 'to': duplicate link Node_12 -> Node_1"
        in _error(bad)
    )


def test_negative_capacity(doc):
    doc["road_links"][0]["capacity"] = -2
    assert (
        "road_links[0] (Ave_1_link_1): field 'capacity': negative value -2.0"
        in _error(doc)
    )
    doc["road_links"][0]["capacity"] = 2
    doc["facilities"][3]["capacity"] = -1
    assert (
        "facilities[3] (Midtown apartment): field 'capacity': negative value"
        in _error(doc)
    )


def test_metro_stop_off_network(doc):
    doc["metro_lines"][1]["stops"][2] = "Node_42"
    assert (
        "metro_lines[1] (Metro_2): field 'stops'[2]: stop 'Node_42' is not a network node"
        in _error(doc)
    )


def test_other_field_errors(doc):
    bad = copy.deepcopy(doc)
    del bad["road_links"][4]["free_time"]
    assert (
        "road_links[4] (Ave_2_link_4): field 'free_time': give free_time or both length and speed"
        in _error(bad)
    )
    bad = copy.deepcopy(doc)
    bad["road_links"][0]["model"] = "ctm"
    assert "field 'model': expected one of" in _error(bad)
    bad = copy.deepcopy(doc)
    bad["events"][0]["place"] = "Nowhere"
    assert (
        "events[0] (Nowhere): field 'place': unknown link, facility or node 'Nowhere'"
        in _error(bad)
    )
    bad = copy.deepcopy(doc)
    bad["nodes"][0]["x"] = "left"
    assert "nodes[0] (Node_1): field 'x': expected int or float, got 'left'" in _error(
        bad
    )
    bad = copy.deepcopy(doc)
    bad["facilities"][0]["name"] = "Node_3"
    assert "field 'name': 'Node_3' is also a node id" in _error(bad)
    bad = copy.deepcopy(doc)
    del bad["nodes"]
    assert _error(bad) == "town.json: missing top-level field 'nodes'"


def test_a_link_geometry_is_kept_and_a_bad_one_is_one_line_naming_the_link(doc):
    # Ave_1_link_1 runs from Node_1 (14, 6) to Node_12 (25, 6)
    doc["road_links"][0]["geometry"] = [[14, 6], [19.5, 4], [25.0, 6.0]]
    link = scenario_from_dict(doc, "town.json").road_links["Ave_1_link_1"]
    assert link.geometry == ((14.0, 6.0), (19.5, 4.0), (25.0, 6.0))
    assert load_scenario("nguyen_dupuis").road_links["Ave_2_link_1"].geometry is None
    for points, problem in [
        (
            [[14, 6], [19.5, "north"], [25, 6]],
            "field 'geometry'[1]: expected [x, y] (two numbers), got [19.5, 'north']",
        ),
        (
            [[14, 6], [19.5], [25, 6]],
            "field 'geometry'[1]: expected [x, y] (two numbers), got [19.5]",
        ),
        ([[14, 6]], "field 'geometry': expected at least two [x, y] points"),
        ("straight", "field 'geometry': expected list, got 'straight'"),
        (
            [[14, 6], [19.5, 4], [30, 6]],
            "field 'geometry'[2]: (30, 6) is not at node 'Node_12' (25, 6)",
        ),
    ]:
        doc["road_links"][0]["geometry"] = points
        message = _error(doc)
        assert message == f"town.json: road_links[0] (Ave_1_link_1): {problem}"
        assert "\n" not in message


def test_length_and_speed(doc):
    link = doc["road_links"][0]
    del link["free_time"]
    link.update(length=2.0, speed=0.5)
    assert scenario_from_dict(doc).road_links["Ave_1_link_1"].free_time == 4.0


def test_load_file_errors(tmp_path):
    with pytest.raises(ScenarioError, match=r"missing\.json: no such scenario"):
        load_scenario(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{ nodes: }")
    with pytest.raises(
        ScenarioError, match=r"bad.json: not valid JSON \(line 1, column 3\)"
    ):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="no such bundled scenario"):
        load_scenario("atlantis")


def test_load_copy_from_file(tmp_path, doc):
    path = tmp_path / "mytown.json"
    path.write_text(json.dumps(doc))
    assert (
        load_scenario(path).road_links.keys()
        == load_scenario("nguyen_dupuis").road_links.keys()
    )


@pytest.mark.skipif(not GRID.exists(), reason="benchmark data not present")
def test_grid_adapter():
    scenario, windows = grid_scenario_from_uxsim(GRID)
    assert len(scenario.nodes) == 121 and len(scenario.road_links) == 440
    link = scenario.road_links["l0_0-1_0"]
    assert link.model == "flow" and not link.two_way and not link.capacity_for_trip_ends
    assert link.free_time == pytest.approx(50 / 60)
    assert link.capacity == pytest.approx(0.8 * 3600)
    assert len(windows) == 484


def test_grid_adapter_inline_export():
    export = {
        "nodes": [{"name": "a", "x": 0, "y": 0}, {"name": "b", "x": 1, "y": 0}],
        "links": [
            {
                "name": "ab",
                "from": "a",
                "to": "b",
                "length": 1000.0,
                "free_flow_speed": 20.0,
                "number_of_lanes": 1,
                "capacity": 0.8,
            }
        ],
        "links_pq_variant": [
            {"name": "ab", "jam_density": 1000.0, "capacity_out": 0.5}
        ],
        "demand": [{"orig": "a", "dest": "b", "t_start": 0, "t_end": 60, "flow": 0.1}],
    }
    scenario, windows = grid_scenario_from_uxsim(export)
    link = scenario.road_links["ab"]
    assert link.free_time == pytest.approx(50 / 60) and link.capacity == pytest.approx(
        1800
    )
    base, _ = grid_scenario_from_uxsim(export, point_queue=False)
    assert base.road_links["ab"].capacity == pytest.approx(2880)
    assert windows == export["demand"]
    with pytest.raises(ScenarioError, match="<dict>: missing top-level field 'demand'"):
        grid_scenario_from_uxsim({"nodes": [], "links": []})
