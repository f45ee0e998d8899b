import copy
import json
from pathlib import Path

import pytest

from mesa_llm_mobility.urban.population import (
    Person,
    Population,
    PopulationError,
    load_population,
    parse_work_time,
    population_from_dict,
    validate_population,
)
from mesa_llm_mobility.urban.scenario import load_scenario

SHIPPED = (
    Path(__file__).parents[2] / "mesa_llm_mobility/urban/scenarios/population_70.json"
)


@pytest.fixture(scope="module")
def scenario():
    return load_scenario("nguyen_dupuis")


@pytest.fixture(scope="module")
def shipped_doc():
    return json.loads(SHIPPED.read_text("utf-8"))


@pytest.fixture
def doc(shipped_doc):
    return copy.deepcopy(shipped_doc)


def first(doc, **fields):
    """The first profile (a dict in ``doc``) whose fields have the given values."""
    for person in doc["people"]:
        if all(person[key] == value for key, value in fields.items()):
            return person
    raise LookupError(fields)


def household(doc, household_id):
    return [p for p in doc["people"] if p["household"] == household_id]


def family_with_children(doc):
    for person in doc["people"]:
        if person["family_role"] == "son":
            return household(doc, person["household"])
    raise LookupError("no family with a son")


def errors_of(doc, scenario):
    with pytest.raises(PopulationError) as info:
        validate_population(population_from_dict(doc, "people.json"), scenario)
    return str(info.value)


def test_shipped_population_loads_and_validates(scenario):
    population = load_population("population_70", scenario)
    assert len(population) == 70
    assert population.name == "population_70"
    assert len(population.households) == 43
    assert load_population(SHIPPED, "nguyen_dupuis").people == population.people


def test_travellers_are_the_adults_and_parents_know_their_children(scenario):
    population = load_population("population_70", scenario)
    travellers = population.travellers()
    assert len(travellers) == 60
    assert all(person.age >= 18 for person in travellers)
    parents = [p for p in population if p.family_role in ("husband", "wife")]
    children = {c.name for parent in parents for c in population.children_of(parent)}
    assert len(children) == 10
    single = next(p for p in population if p.family_role == "single")
    assert population.children_of(single) == []
    child = next(p for p in population if p.family_role == "daughter")
    assert population.children_of(child) == []
    assert population.person(child.name) is child
    with pytest.raises(KeyError, match="no person named 'Nobody'"):
        population.person("Nobody")


def test_work_time_is_parsed_into_minutes(scenario):
    population = load_population("population_70", scenario)
    worker = next(p for p in population if p.work_time == "7:00-16:00")
    assert (worker.work_start_minute, worker.work_end_minute) == (420, 960)
    child = next(p for p in population if p.is_child)
    assert child.work_start_minute is None
    assert parse_work_time("22:00-6:00") == (1320, 360)
    assert parse_work_time("16:00-24:00") == (960, 1440)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("7-16", "is not 'H:MM-H:MM'"),
        ("7:00-16:75", "16:75 is not a clock time"),
        ("25:00-26:00", "25:00 is not a clock time"),
        ("8:00-8:00", "start and end are equal"),
        ("24:00-8:00", "cannot start at 24:00"),
    ],
)
def test_bad_work_time(text, message):
    with pytest.raises(ValueError, match=message):
        parse_work_time(text)


def test_bad_work_time_in_a_file_names_the_file_person_and_field(
    doc, tmp_path, scenario
):
    worker = first(doc, family_role="single")
    worker["work_time"] = "nine to five"
    path = tmp_path / "people.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(PopulationError) as info:
        load_population(path, scenario)
    assert f"people.json: person {worker['name']!r}: field 'work_time':" in str(
        info.value
    )
    assert "'nine to five' is not 'H:MM-H:MM'" in str(info.value)


def test_schema_errors_name_the_person_and_field(doc):
    person = doc["people"][3]
    person["family_role"] = "uncle"
    del person["innate"]
    with pytest.raises(PopulationError) as info:
        population_from_dict(doc, "people.json")
    text = str(info.value)
    assert f"people.json: person {person['name']!r}: field 'family_role':" in text
    assert (
        f"people.json: person {person['name']!r}: field 'innate': Field required"
        in text
    )


def test_medium_income_is_read_as_middle(doc):
    doc["people"][0]["household_income"] = "medium"
    assert population_from_dict(doc).people[0].household_income == "middle"


def test_friend_not_in_population(doc, scenario):
    person = doc["people"][5]
    person["friends"] = ["Gloria Campbell"]
    assert (
        f"people.json: person {person['name']!r}: field 'friends': 'Gloria Campbell' is not "
        "in the population"
    ) in errors_of(doc, scenario)


def test_friend_rules(doc, scenario):
    people = doc["people"]
    people[0]["friends"] = [people[0]["name"]]
    people[1]["friends"] = [people[2]["name"], people[2]["name"]]
    people[3]["friends"] = [p["name"] for p in people[10:14]]
    text = errors_of(doc, scenario)
    assert (
        f"person {people[0]['name']!r}: field 'friends': a person cannot be their own friend"
        in text
    )
    assert (
        f"person {people[1]['name']!r}: field 'friends': {people[2]['name']!r} is listed 2 times"
        in text
    )
    assert (
        f"person {people[3]['name']!r}: field 'friends': 4 friends, at most 3 allowed"
        in text
    )


def test_unknown_home_and_work_facility(doc, scenario):
    single = first(doc, family_role="single")
    single["home_facility"] = "Downtown loft"
    worker = first(doc, family_role="husband")
    worker["work_facility"] = "Bank"
    text = errors_of(doc, scenario)
    assert (
        f"people.json: person {single['name']!r}: field 'home_facility': unknown facility "
        "'Downtown loft'"
    ) in text
    assert (
        f"people.json: person {worker['name']!r}: field 'work_facility': unknown facility 'Bank'"
    ) in text


def test_worker_without_work_time(doc, scenario):
    worker = first(doc, family_role="wife")
    worker["work_time"] = None
    assert (
        f"person {worker['name']!r}: field 'work_time': a worker needs a work_time"
    ) in errors_of(doc, scenario)


def test_licensed_child(doc, scenario):
    child = first(doc, family_role="daughter")
    child["licensed_driver"] = True
    assert (
        f"people.json: person {child['name']!r}: field 'licensed_driver': a child (age "
        f"{child['age']}) cannot be licensed"
    ) in errors_of(doc, scenario)


def test_child_must_be_son_or_daughter_and_not_a_worker(doc, scenario):
    single = first(doc, family_role="single")
    single["age"] = 12
    single["licensed_driver"] = False
    text = errors_of(doc, scenario)
    assert (
        f"person {single['name']!r}: field 'family_role': a child (age 12) must be a son or "
        "daughter, got 'single'"
    ) in text
    assert (
        f"person {single['name']!r}: field 'work_facility': a child (age 12) is not a worker"
        in text
    )


def test_role_and_gender_must_agree(doc, scenario):
    husband = first(doc, family_role="husband")
    husband["gender"] = "female"
    assert (
        f"person {husband['name']!r}: field 'gender': a husband must be male, got 'female'"
    ) in errors_of(doc, scenario)


def test_two_husbands(doc, scenario):
    family = family_with_children(doc)
    son = next(p for p in family if p["family_role"] == "son")
    husband = next(p for p in family if p["family_role"] == "husband")
    son.update(
        age=30, family_role="husband", work_facility="Office", work_time="9:00-17:00"
    )
    text = errors_of(doc, scenario)
    first_name, second_name = (
        (husband["name"], son["name"])
        if family.index(husband) < family.index(son)
        else (son["name"], husband["name"])
    )
    assert (
        f"person {second_name!r}: field 'family_role': household {family[0]['household']!r} "
        f"already has a husband ({first_name!r})"
    ) in text


def test_son_without_parents(doc, scenario):
    family = family_with_children(doc)
    son = next(p for p in family if p["family_role"] == "son")
    son["household"] = "H_orphan"
    assert (
        f"person {son['name']!r}: field 'family_role': a son needs a parent (husband or wife) "
        "in household 'H_orphan'"
    ) in errors_of(doc, scenario)


def test_single_must_live_alone(doc, scenario):
    single = first(doc, family_role="single")
    husband = first(doc, family_role="husband")
    for key in ("household", "home_facility", "household_income", "household_vehicles"):
        single[key] = husband[key]
    assert (
        f"person {single['name']!r}: field 'family_role': a single lives alone, but household "
        f"{husband['household']!r} also has"
    ) in errors_of(doc, scenario)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("home_facility", "SWAP_HOME"),
        ("household_income", "SWAP_INCOME"),
        ("household_vehicles", 7),
    ],
)
def test_household_members_share_home_income_and_vehicles(doc, scenario, field, value):
    family = family_with_children(doc)
    member = family[-1]
    if value == "SWAP_HOME":
        value = next(
            home
            for home in ("Uptown apartment", "Midtown apartment")
            if home != member["home_facility"]
        )
    elif value == "SWAP_INCOME":
        value = "low" if member["household_income"] != "low" else "high"
    member[field] = value
    assert (
        f"person {member['name']!r}: field {field!r}: {value!r} differs from "
        f"{family[0][field]!r} of {family[0]['name']!r} in household {family[0]['household']!r}"
    ) in errors_of(doc, scenario)


def set_vehicles(members, vehicles):
    for member in members:
        member["household_vehicles"] = vehicles


def test_negative_vehicles(doc, scenario):
    single = first(doc, family_role="single")
    set_vehicles([single], -1)
    assert (
        f"person {single['name']!r}: field 'household_vehicles': household "
        f"{single['household']!r} has -1 vehicles"
    ) in errors_of(doc, scenario)


def test_more_vehicles_than_adults(doc, scenario):
    single = first(doc, family_role="single", licensed_driver=True)
    set_vehicles([single], 2)
    assert (
        f"person {single['name']!r}: field 'household_vehicles': household "
        f"{single['household']!r} has 2 vehicles but 1 adult(s)"
    ) in errors_of(doc, scenario)


def test_vehicles_without_a_licensed_driver(doc, scenario):
    single = first(doc, family_role="single", licensed_driver=False)
    set_vehicles([single], 1)
    assert (
        f"person {single['name']!r}: field 'household_vehicles': household "
        f"{single['household']!r} has 1 vehicle(s) but no licensed driver"
    ) in errors_of(doc, scenario)


def test_one_driver_per_vehicle_is_optional_and_table_2_cannot_meet_it(scenario):
    population = load_population("population_70", scenario)
    with pytest.raises(PopulationError) as info:
        validate_population(population, scenario, require_driver_per_vehicle=True)
    messages = str(info.value).splitlines()
    short_of_drivers = [
        h
        for h in population.households.values()
        if h.vehicles > len(h.licensed_drivers)
    ]
    assert len(messages) == len(short_of_drivers) >= 3  # 14 * 2 + 25 = 53 drivers > 50
    assert all("has 2 vehicles but 1 licensed driver(s)" in m for m in messages)


def test_duplicate_names(doc, scenario):
    doc["people"][1]["name"] = doc["people"][0]["name"]
    assert (
        f"person {doc['people'][0]['name']!r}: field 'name': 2 people share this name"
    ) in errors_of(doc, scenario)


def test_every_error_is_reported_at_once(doc, scenario):
    doc["people"][0]["friends"] = ["Ghost One"]
    doc["people"][1]["friends"] = ["Ghost Two"]
    text = errors_of(doc, scenario)
    assert "Ghost One" in text and "Ghost Two" in text


def test_file_errors(tmp_path, scenario):
    with pytest.raises(PopulationError, match="no such bundled population"):
        load_population("population_99", scenario)
    with pytest.raises(PopulationError, match=r"missing\.json: no such population"):
        load_population(tmp_path / "missing.json", scenario)
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(PopulationError, match=r"bad.json: not valid JSON \(line 1"):
        load_population(bad, scenario)
    bad.write_text("[]")
    with pytest.raises(
        PopulationError, match=r"bad\.json: expected an object with a 'people' list"
    ):
        load_population(bad, scenario)


def test_save_round_trips(tmp_path, scenario):
    population = load_population("population_70", scenario)
    path = population.save(tmp_path / "copy.json")
    again = load_population(path, scenario)
    assert again.people == population.people
    assert again.description == population.description


def test_population_from_people_groups_households():
    people = [
        Person(
            name=name,
            gender=gender,
            age=age,
            family_role=role,
            household="H1",
            household_vehicles=1,
            licensed_driver=age >= 18,
            work_facility="Office" if age >= 18 else None,
            occupation="clerk" if age >= 18 else "student",
            work_time="9:00-17:00" if age >= 18 else None,
            preferences_in_transportation="drives",
            innate="calm",
            lifestyle="early riser",
            home_facility="Uptown apartment",
            household_income="high",
        )
        for name, gender, age, role in (
            ("Ann Lee", "female", 40, "wife"),
            ("Bo Lee", "male", 9, "son"),
        )
    ]
    population = Population.from_people(people)
    assert list(population.households) == ["H1"]
    household = population.households["H1"]
    assert [p.name for p in household.adults] == ["Ann Lee"]
    assert [p.name for p in population.children_of(people[0])] == ["Bo Lee"]
    validate_population(population, ["Uptown apartment", "Office"])
