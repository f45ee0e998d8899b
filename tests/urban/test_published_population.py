"""People, plans and the town of a GATSim run (urban/published_population.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from mesa_llm_mobility.urban.population import population_from_dict, validate_population
from mesa_llm_mobility.urban.published_movements import PublishedDataError, parse_time
from mesa_llm_mobility.urban.published_population import (
    population_from_profiles,
    read_profiles,
    remembered_trips,
    town_differences,
)
from mesa_llm_mobility.urban.scenario import load_scenario
from tests.urban.conftest import gatsim_profile


def family():
    husband = gatsim_profile(
        "Al Kim",
        gender="male",
        family_role="husband",
        household_income="medium",
        other_family_members={"wife": "Bo Kim", "son": "Cy Kim"},
        friends=["Nobody Else"],
        number_of_vehicles_in_family=1,
    )
    wife = gatsim_profile(
        "Bo Kim",
        family_role="wife",
        household_income="high",
        other_family_members={"husband": "Al Kim", "son": "Cy Kim"},
        number_of_vehicles_in_family=1,
        friends=["Al Kim"],
    )
    return {"Al Kim": husband, "Bo Kim": wife, "Di Ray": gatsim_profile("Di Ray")}


def test_a_family_becomes_one_household_with_its_child():
    mapped = population_from_profiles(family(), None, name="p", description="d")
    people = {p["name"]: p for p in mapped.data["people"]}
    assert people["Al Kim"]["household"] == people["Bo Kim"]["household"]
    assert people["Di Ray"]["household"] != people["Al Kim"]["household"]
    child = people["Cy Kim"]
    assert child["family_role"] == "son" and child["work_facility"] is None
    assert (
        child["household"] == people["Al Kim"]["household"]
        and not child["licensed_driver"]
    )
    # the household takes the first member's income ('medium' is our 'middle')
    assert people["Bo Kim"]["household_income"] == "middle"
    assert people["Al Kim"]["friends"] == []
    notes = " | ".join(mapped.notes)
    assert "Bo Kim: household_income 'high' differs from Al Kim's 'medium'" in notes
    assert "Cy Kim: no published profile; age 9 assumed" in notes
    assert "Al Kim: friend(s) Nobody Else not in the population, dropped" in notes
    population = population_from_dict(mapped.data, "p")
    validate_population(population, load_scenario("nguyen_dupuis"))


def test_children_come_from_the_complete_population_file(tmp_path):
    folder = tmp_path / "create_population"
    folder.mkdir()
    child = gatsim_profile(
        "Cy Kim",
        age=7,
        gender="male",
        family_role="son",
        licensed_driver=False,
        work_facility="School",
        work_time="8:00-17:00",
        occupation="pupil",
    )
    (folder / "population_info_complete.json").write_text(json.dumps({"Cy Kim": child}))
    mapped = population_from_profiles(family(), tmp_path, name="p", description="d")
    people = {p["name"]: p for p in mapped.data["people"]}
    assert people["Cy Kim"]["age"] == 7 and people["Cy Kim"]["occupation"] == "pupil"
    assert people["Cy Kim"]["work_time"] is None


def test_a_profile_without_a_field_is_named(gatsim_checkout):
    folder = gatsim_checkout / "gatsim" / "storage" / "experiment_2"
    path = folder / "personas" / "Ann Lee" / "short_term_memory.json"
    data = json.loads(path.read_text())
    del data["work_time"]
    path.write_text(json.dumps(data))
    with pytest.raises(
        PublishedDataError, match=r"short_term_memory\.json: missing field 'work_time'"
    ):
        read_profiles(folder, ["Ann Lee"])


def test_town_differences_field_by_field(tmp_path):
    town = load_scenario("nguyen_dupuis")
    maps = tmp_path / "gatsim" / "map"
    maps.mkdir(parents=True)
    nodes = {
        n: {"coord": [node.x, node.y], "facilities": []}
        for n, node in town.nodes.items()
    }
    for facility in town.facilities.values():
        nodes[facility.node]["facilities"].append(facility.name)
    nodes["Node_3"]["coord"] = [0, 0]
    (maps / "nodes_info.json").write_text(json.dumps(nodes))
    links = {
        name: {
            "endpoints": [road.from_node, road.to_node],
            "type": "road",
            "travel_time": road.free_time,
            "base_capacity": road.capacity,
        }
        for name, road in town.road_links.items()
    }
    links["St_1_link_1"]["base_capacity"] = 3
    (maps / "links_info.json").write_text(json.dumps(links))
    (maps / "events.json").write_text("[]")
    found = town_differences(tmp_path, town)
    assert "node Node_3: at [0, 0], ours at [36, 40]" in found
    assert "road link St_1_link_1: capacity 3, ours 2" in found
    assert "gatsim/map/facilities_info.json: not in the checkout, not compared" in found
    assert any(f.startswith("events: gatsim/map/events.json lists 0") for f in found)
    assert not any("Ave_1_link_1" in f for f in found)


def test_remembered_trips_are_read_from_event_memories():
    memories = pd.DataFrame(
        {
            "type": ["event", "event", "reflection"],
            "content": [
                (
                    "Ann Lee travels from Uptown apartment to Office by travel mode drive; start "
                    "time is Mon 2025-03-10 07:20; trip time is 40 minutes"
                ),
                "Ann Lee arrived at Office at Mon 2025-03-10 08:00",
                (
                    "Ann Lee travels from A to B by travel mode drive; start time is Mon "
                    "2025-03-10 07:20; trip time is 3 minutes"
                ),
            ],
        }
    )
    start = parse_time("2025-03-10 00:00:00", "test")
    trips = remembered_trips(memories, start)
    assert trips.to_dict("records") == [
        {
            "agent": "Ann Lee",
            "origin": "Uptown apartment",
            "destination": "Office",
            "mode": "drive",
            "start": 440,
            "minutes": 40,
        }
    ]
