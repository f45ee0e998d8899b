"""A population for an imported city: homes within their room, jobs at facilities of their kind."""

from __future__ import annotations

from collections import Counter

import pytest

from mesa_llm_mobility.urban.cities import population as population_module
from mesa_llm_mobility.urban.cities.population import (
    city_population,
    is_city,
    people_for_travellers,
)
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.scenario import load_scenario


def test_people_are_placed_on_the_citys_homes_and_workplaces(helsinki):
    _, town = helsinki
    population = city_population(town, 400, 3)
    facilities = town.facilities
    residents = Counter(p.home_facility for p in population)
    for home, count in residents.items():
        assert facilities[home].kind == "home"
        assert count <= facilities[home].capacity
    assert len(residents) > 20  # spread over the city, not one block
    kinds = Counter(
        facilities[p.work_facility].kind for p in population if p.work_facility
    )
    # the reference town's jobs, on the city's facilities of the same kind (or the fallback)
    assert kinds["Office"] > 0 and kinds["Supermarket"] > 0 and kinds["School"] > 0
    assert set(kinds) <= {f.kind for f in facilities.values()}
    assert len({p.household for p in population}) == len(population.households)
    again = city_population(town, 400, 3)
    assert [p.model_dump() for p in again] == [p.model_dump() for p in population]


def test_a_city_too_small_for_its_people_is_refused(helsinki):
    _, town = helsinki
    room = sum(f.capacity for f in town.facilities.values() if f.kind == "home")
    with pytest.raises(
        ValueError, match=f"homes hold {room} people, {room + 1} asked for"
    ):
        city_population(town, room + 1, 0)


def test_the_reference_town_is_not_a_city():
    assert not is_city(load_scenario("nguyen_dupuis"))
    assert people_for_travellers(60) == 70


def test_a_run_on_the_city_synthesises_its_travellers(helsinki):
    path, town = helsinki
    with UrbanMobilityModel(
        scenario=path, n_agents=40, rng=1, embedding="hash", days=1
    ) as model:
        assert len(model.travellers) == 40
        homes = {a.persona.home for a in model.travellers.values()}
        assert all(town.facilities[h].kind == "home" for h in homes)
        model.run()
        trips = model.trips_frame()
    assert len(trips) > 40
    assert trips["arrival"].notna().mean() > 0.95


def test_a_large_population_is_synthesised_in_parts_with_unique_names(
    helsinki, monkeypatch
):
    _, town = helsinki
    monkeypatch.setattr(population_module, "SYNTHESIS_PART", 100)
    population = city_population(town, 250, 5)  # three parts: 84, 83, 83
    names = [p.name for p in population]
    assert len(names) == len(set(names)) == 250
    assert any(name.endswith(" #3") for name in names)
    for person in population:  # friends and households stay within a part
        suffix = person.name.rpartition(" #")[2] if " #" in person.name else None
        for friend in person.friends:
            assert (friend.rpartition(" #")[2] if " #" in friend else None) == suffix
