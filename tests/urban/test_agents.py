from __future__ import annotations

from types import SimpleNamespace

import pytest

from mesa_llm_mobility.urban.agents import (
    TripRecord,
    experience_of,
    persona_from_person,
    personas_from_population,
    traveller_state,
)
from mesa_llm_mobility.urban.plans import Activity
from mesa_llm_mobility.urban.trips import Location, TravelState

PERSON = {
    "name": "Maria Lopez",
    "gender": "female",
    "age": 38,
    "family_role": "wife",
    "licensed_driver": True,
    "work_facility": "Office",
    "occupation": "accountant",
    "work_time": "8:00-17:00",
    "preferences_in_transportation": "prefers driving",
    "innate": ["calm", "punctual"],
    "lifestyle": "yoga on weekends",
    "home_facility": "Midtown apartment",
    "household_income": "middle",
    "friends": ["Sam Park"],
    "other_description": "",
    "household": "H7",
    "household_vehicles": 1,
}


class FakePopulation:
    def __init__(self, people, children):
        self.people, self.children = people, children

    def travellers(self):
        return self.people

    def children_of(self, person):
        return self.children.get(person.name, [])


def test_persona_from_a_population_person():
    persona = persona_from_person(
        PERSON, family=("Luis Lopez",), facilities={"Office", "Midtown apartment"}
    )
    assert (persona.work_start, persona.work_end) == (480, 1020)
    assert persona.home == "Midtown apartment" and persona.vehicles == 1
    assert persona.traits == "calm, punctual" and persona.friends == ("Sam Park",)
    assert "Maria Lopez, 38, female" in persona.profile_text()
    jobless = persona_from_person({**PERSON, "work_facility": None, "work_time": None})
    assert jobless.work_facility is None and jobless.work_start is None


def test_personas_resolve_family_and_children():
    maria = SimpleNamespace(**PERSON)
    luis = SimpleNamespace(**{**PERSON, "name": "Luis Lopez", "friends": []})
    single = SimpleNamespace(
        **{**PERSON, "name": "Sam Park", "household": "H8", "friends": []}
    )
    population = FakePopulation(
        [maria, luis, single], {"Maria Lopez": [SimpleNamespace(name="Ana Lopez")]}
    )
    by_name = {p.name: p for p in personas_from_population(population)}
    assert by_name["Maria Lopez"].family == ("Luis Lopez",)
    assert by_name["Maria Lopez"].children == ("Ana Lopez",)
    assert by_name["Luis Lopez"].children == ()
    assert by_name["Sam Park"].family == ()


def test_states_mirror_the_engine():
    assert (
        traveller_state(Location("facility", "Office", TravelState.STAYING))
        == "staying"
    )
    assert (
        traveller_state(Location("facility", "Office", TravelState.FACILITY_QUEUE))
        == "waiting_at_door"
    )
    assert (
        traveller_state(
            Location("node", "Node_1", TravelState.WAITING, 0, "Ave_1_link_1")
        )
        == "waiting_at_node"
    )
    assert (
        traveller_state(Location("link", "Ave_1_link_1", TravelState.TRAVERSING, 0))
        == "driving"
    )
    assert (
        traveller_state(Location("link", "Metro_1_link_1", TravelState.RIDING, 0))
        == "riding"
    )
    assert (
        traveller_state(Location("link", "Ave_1_link_1", TravelState.WALKING, 0))
        == "walking"
    )


def test_experience_of_a_trip_record():
    record = TripRecord(
        "t", 2, Activity(facility="Office", departure_time="07:10"), "Uptown apartment", "Office",
        1440 + 430, planned_arrival=1440 + 480, departure=1440 + 430, arrival=1440 + 492, delay=28,
    )  # fmt: skip
    experience = experience_of(record)
    assert (
        experience.departure,
        experience.travel_time,
        experience.late,
        experience.day,
    ) == (430, 62, 12, 2)


def test_traveler_agent_is_a_deprecated_alias() -> None:
    from mesa_llm_mobility.urban import agents  # noqa: PLC0415

    with pytest.warns(DeprecationWarning, match="TravellerAgent"):
        alias = agents.TravelerAgent
    assert alias is agents.TravellerAgent


def test_the_urban_package_exports_its_public_names_lazily() -> None:
    import mesa_llm_mobility.urban as urban  # noqa: PLC0415

    for name in urban.__all__:
        assert getattr(urban, name) is not None
    with pytest.warns(DeprecationWarning, match="TravellerAgent"):
        assert urban.TravelerAgent is urban.TravellerAgent
    with pytest.raises(AttributeError):
        _ = urban.NoSuchName
