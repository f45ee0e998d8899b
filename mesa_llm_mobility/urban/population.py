"""The urban model's population: narrative person profiles grouped into households.

A population file is JSON: ``{"name": ..., "description": ..., "people": [profile, ...]}``. Each
profile follows GATSim's narrative format (the paper's Listing 1) plus two household fields:

``name, gender, age, family_role, licensed_driver, work_facility, occupation, work_time
("7:00-16:00"), preferences_in_transportation, innate, lifestyle, home_facility,
household_income, friends, other_description, household, household_vehicles``.

Members of one household share its home, its income and its vehicles. People under
:data:`ADULT_AGE` are children: they are not simulated as travellers; their parents' plans carry
school drop-off and pick-up (:meth:`Population.children_of`).

:func:`load_population` parses a file (or a bundled population such as ``"population_70"``) into a
:class:`Population` and validates it against a scenario. Every error names the file, the person
and the field, e.g.
``population_70.json: person 'Ana Diaz': field 'friends': 'Bo Li' is not in the population``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mesa_llm_mobility.urban.data_files import read_json_data

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.scenario import Scenario

ADULT_AGE = 18
"""People younger than this are children (Table 2's "Children"); the rest are "Young"."""

ELDERLY_AGE = 60
"""Adults of this age or older are elderly (the paper's "10 % elderly (ages 60-75)")."""

MAX_FRIENDS = 3
"""The paper gives everyone 0 to 3 friends."""

FamilyRole = Literal["single", "husband", "wife", "son", "daughter"]
Gender = Literal["female", "male"]
Income = Literal["low", "middle", "high"]

FAMILY_ROLES: tuple[str, ...] = ("single", "husband", "wife", "son", "daughter")
INCOME_LEVELS: tuple[str, ...] = ("low", "middle", "high")
PARENT_ROLES = frozenset({"husband", "wife"})
CHILD_ROLES = frozenset({"son", "daughter"})
_ROLE_GENDER = {
    "husband": "male",
    "son": "male",
    "wife": "female",
    "daughter": "female",
}
_WORK_TIME = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


class PopulationError(ValueError):
    """A population is invalid; the message names the file, the person and the field."""


def parse_work_time(text: str) -> tuple[int, int]:
    """Parse a work time ``"H:MM-H:MM"`` into start and end minutes after midnight.

    An end before the start is a night shift ending the next day (``"22:00-6:00"`` gives
    ``(1320, 360)``); ``"24:00"`` is accepted as an end.

    Args:
        text: The work time, e.g. ``"7:00-16:00"``.

    Returns:
        ``(start_minute, end_minute)``, each in ``[0, 1440]``.

    Raises:
        ValueError: If the text is not two ``H:MM`` clock times or they are equal.
    """
    match = _WORK_TIME.match(text)
    if match is None:
        raise ValueError(f"work_time {text!r} is not 'H:MM-H:MM' (e.g. '7:00-16:00')")
    start_h, start_m, end_h, end_m = (int(group) for group in match.groups())
    for hours, minutes in ((start_h, start_m), (end_h, end_m)):
        if minutes >= 60 or hours > 24 or (hours == 24 and minutes > 0):
            raise ValueError(
                f"work_time {text!r}: {hours}:{minutes:02d} is not a clock time"
            )
    start, end = start_h * 60 + start_m, end_h * 60 + end_m
    if start == 1440:
        raise ValueError(f"work_time {text!r}: a shift cannot start at 24:00")
    if start == end:
        raise ValueError(f"work_time {text!r}: start and end are equal")
    return start, end


class Person(BaseModel):
    """One narrative profile (GATSim Listing 1) with its household.

    Attributes:
        name: Unique full name.
        gender: ``"female"`` or ``"male"``.
        age: Age in years; under :data:`ADULT_AGE` is a child.
        family_role: ``single``, ``husband``, ``wife``, ``son`` or ``daughter``.
        household: Household id shared by the members of one family (e.g. ``"H07"``).
        household_vehicles: Vehicles the household owns (shared by its licensed members).
        licensed_driver: Holds a driving licence.
        work_facility: Facility where the person works, or ``None`` (children, the retired).
        occupation: Job title (``"student"`` for children).
        work_time: Working hours ``"H:MM-H:MM"``, or ``None`` when not working.
        preferences_in_transportation: Free text, e.g. "prefers driving alone on safe routes".
        innate: Innate traits, e.g. "friendly, outgoing, hospitable".
        lifestyle: Daily rhythm, e.g. "goes to bed around 11pm, wakes up around 6am".
        home_facility: Residential facility the household lives in.
        household_income: ``low``, ``middle`` or ``high`` (``"medium"`` is read as ``middle``).
        friends: Names of friends in the same population.
        other_description: Further narrative.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    gender: Gender
    age: int = Field(ge=0, le=120)
    family_role: FamilyRole
    household: str = Field(min_length=1)
    household_vehicles: int
    licensed_driver: bool
    work_facility: str | None = None
    occupation: str
    work_time: str | None = None
    preferences_in_transportation: str
    innate: str
    lifestyle: str
    home_facility: str
    household_income: Income
    friends: list[str] = Field(default_factory=list)
    other_description: str = ""

    @field_validator("household_income", mode="before")
    @classmethod
    def _medium_is_middle(cls, value: Any) -> Any:
        return "middle" if value == "medium" else value

    @field_validator("work_time")
    @classmethod
    def _check_work_time(cls, value: str | None) -> str | None:
        if value is not None:
            parse_work_time(value)
        return value

    @property
    def is_child(self) -> bool:
        """Whether the person is under :data:`ADULT_AGE` (not simulated as a traveller)."""
        return self.age < ADULT_AGE

    @property
    def work_start_minute(self) -> int | None:
        """Start of work in minutes after midnight, or ``None`` when not working."""
        return None if self.work_time is None else parse_work_time(self.work_time)[0]

    @property
    def work_end_minute(self) -> int | None:
        """End of work in minutes after midnight (earlier than the start for night shifts)."""
        return None if self.work_time is None else parse_work_time(self.work_time)[1]


@dataclass(frozen=True)
class Household:
    """A family sharing a home, an income and vehicles.

    Attributes:
        id: Household id.
        members: Members in file order.
        vehicles: Vehicles owned (the first member's ``household_vehicles``).
        home_facility: Home (the first member's).
        income: Household income (the first member's).
    """

    id: str
    members: tuple[Person, ...]
    vehicles: int
    home_facility: str
    income: str

    @property
    def adults(self) -> tuple[Person, ...]:
        """Members aged :data:`ADULT_AGE` or more."""
        return tuple(person for person in self.members if not person.is_child)

    @property
    def licensed_drivers(self) -> tuple[Person, ...]:
        """Members holding a driving licence."""
        return tuple(person for person in self.members if person.licensed_driver)


@dataclass(frozen=True)
class Population:
    """People and their households.

    Attributes:
        people: Profiles in file order.
        households: Households by id, in order of first appearance.
        name: Population name.
        source: File it was read from (or ``"<population>"``), used in error messages.
        description: Free text.
    """

    people: tuple[Person, ...]
    households: dict[str, Household] = field(default_factory=dict)
    name: str = "population"
    source: str = "<population>"
    description: str = ""
    _by_name: dict[str, Person] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_by_name", {person.name: person for person in self.people}
        )

    @classmethod
    def from_people(
        cls,
        people: Sequence[Person],
        *,
        name: str = "population",
        source: str = "<population>",
        description: str = "",
    ) -> Population:
        """Group profiles into households by their ``household`` id (no validation)."""
        members: dict[str, list[Person]] = {}
        for person in people:
            members.setdefault(person.household, []).append(person)
        households = {
            household_id: Household(
                id=household_id,
                members=tuple(group),
                vehicles=group[0].household_vehicles,
                home_facility=group[0].home_facility,
                income=group[0].household_income,
            )
            for household_id, group in members.items()
        }
        return cls(tuple(people), households, name, source, description)

    def __len__(self) -> int:
        return len(self.people)

    def __iter__(self) -> Iterator[Person]:
        return iter(self.people)

    def person(self, name: str) -> Person:
        """The person called ``name``.

        Raises:
            KeyError: If nobody has that name.
        """
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.source}: no person named {name!r}") from None

    def household_of(self, person: Person) -> Household:
        """The household ``person`` belongs to."""
        return self.households[person.household]

    def travellers(self) -> list[Person]:
        """The adults: the people simulated as travellers (children ride with their parents)."""
        return [person for person in self.people if not person.is_child]

    def children_of(self, person: Person) -> list[Person]:
        """Children of ``person``'s household when ``person`` is a parent (husband or wife).

        These are the children a parent drops off at and picks up from school.
        """
        if person.family_role not in PARENT_ROLES:
            return []
        return [
            member
            for member in self.household_of(person).members
            if member.family_role in CHILD_ROLES
        ]

    def to_dict(self) -> dict[str, Any]:
        """The population as a JSON-ready dict in the file format."""
        return {
            "name": self.name,
            "description": self.description,
            "people": [person.model_dump(mode="json") for person in self.people],
        }

    def save(self, path: str | Path) -> Path:
        """Write the population as JSON (the format :func:`load_population` reads)."""
        path = Path(path)
        path.write_text(
            json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", "utf-8"
        )
        return path


def _where(source: str, person: str, field_name: str) -> str:
    return f"{source}: person {person!r}: field {field_name!r}"


def population_errors(
    population: Population,
    facilities: Collection[str],
    *,
    require_driver_per_vehicle: bool = False,
) -> list[str]:
    """Every domain error of ``population``, each naming the source, the person and the field.

    Checks: unique names; friends exist, are not oneself, are not repeated, at most
    :data:`MAX_FRIENDS`; home and work facilities exist; workers have a work time; children (age
    under :data:`ADULT_AGE`) are sons or daughters, unlicensed and not workers; roles match
    genders; per household: at most one husband and one wife, a single lives alone, a son or
    daughter lives with a parent, members share home, income and vehicle count, vehicles are not
    negative, not more than the adults, and only in a household with a licensed driver.

    Args:
        population: The population to check.
        facilities: Names of the facilities of the scenario.
        require_driver_per_vehicle: Also require a licensed driver for each vehicle. GATSim's
            Table 2 cannot meet this (14 two-vehicle and 25 one-vehicle families need 53 drivers,
            the table has 50), so it is off by default.

    Returns:
        Error strings, empty when the population is valid.
    """
    source = population.source
    errors: list[str] = []
    names = Counter(person.name for person in population.people)
    for name, count in names.items():
        if count > 1:
            errors.append(
                f"{_where(source, name, 'name')}: {count} people share this name"
            )
    facility_set = set(facilities)
    for person in population.people:
        where = lambda field_name, p=person: _where(source, p.name, field_name)  # noqa: E731
        for friend, count in Counter(person.friends).items():
            if friend == person.name:
                errors.append(
                    f"{where('friends')}: a person cannot be their own friend"
                )
            elif friend not in names:
                errors.append(
                    f"{where('friends')}: {friend!r} is not in the population"
                )
            if count > 1:
                errors.append(f"{where('friends')}: {friend!r} is listed {count} times")
        if len(person.friends) > MAX_FRIENDS:
            errors.append(
                f"{where('friends')}: {len(person.friends)} friends, at most {MAX_FRIENDS} allowed"
            )
        if person.home_facility not in facility_set:
            errors.append(
                f"{where('home_facility')}: unknown facility {person.home_facility!r} "
                f"(known: {', '.join(sorted(facility_set))})"
            )
        if (
            person.work_facility is not None
            and person.work_facility not in facility_set
        ):
            errors.append(
                f"{where('work_facility')}: unknown facility {person.work_facility!r} "
                f"(known: {', '.join(sorted(facility_set))})"
            )
        if person.work_facility is not None and person.work_time is None:
            errors.append(
                f"{where('work_time')}: a worker needs a work_time 'H:MM-H:MM'"
            )
        expected_gender = _ROLE_GENDER.get(person.family_role)
        if expected_gender is not None and person.gender != expected_gender:
            errors.append(
                f"{where('gender')}: a {person.family_role} must be {expected_gender}, "
                f"got {person.gender!r}"
            )
        if person.is_child:
            if person.licensed_driver:
                errors.append(
                    f"{where('licensed_driver')}: a child (age {person.age}) cannot be licensed"
                )
            if person.family_role not in CHILD_ROLES:
                errors.append(
                    f"{where('family_role')}: a child (age {person.age}) must be a son or "
                    f"daughter, got {person.family_role!r}"
                )
            if person.work_facility is not None:
                errors.append(
                    f"{where('work_facility')}: a child (age {person.age}) is not a worker"
                )
    for household in population.households.values():
        errors.extend(_household_errors(source, household, require_driver_per_vehicle))
    return errors


def _household_errors(
    source: str, household: Household, require_driver_per_vehicle: bool
) -> list[str]:
    errors: list[str] = []
    members = household.members
    first = members[0]
    roles = Counter(person.family_role for person in members)
    seen_roles: dict[str, str] = {}
    for person in members:
        where = _where(source, person.name, "family_role")
        role = person.family_role
        if role in PARENT_ROLES and role in seen_roles:
            errors.append(
                f"{where}: household {household.id!r} already has a {role} "
                f"({seen_roles[role]!r})"
            )
        seen_roles.setdefault(role, person.name)
        if role == "single" and len(members) > 1:
            others = ", ".join(repr(p.name) for p in members if p is not person)
            errors.append(
                f"{where}: a single lives alone, but household {household.id!r} also has {others}"
            )
        if role in CHILD_ROLES and not any(roles[parent] for parent in PARENT_ROLES):
            errors.append(
                f"{where}: a {role} needs a parent (husband or wife) in household "
                f"{household.id!r}"
            )
        for field_name, value, expected in (
            ("home_facility", person.home_facility, first.home_facility),
            ("household_income", person.household_income, first.household_income),
            ("household_vehicles", person.household_vehicles, first.household_vehicles),
        ):
            if value != expected:
                errors.append(
                    f"{_where(source, person.name, field_name)}: {value!r} differs from "
                    f"{expected!r} of {first.name!r} in household {household.id!r}"
                )
    if not household.adults:
        errors.append(
            f"{_where(source, first.name, 'household')}: household {household.id!r} has no adult"
        )
    vehicles = household.vehicles
    where = _where(source, first.name, "household_vehicles")
    adults, drivers = len(household.adults), len(household.licensed_drivers)
    if vehicles < 0:
        errors.append(f"{where}: household {household.id!r} has {vehicles} vehicles")
    elif vehicles > adults:
        errors.append(
            f"{where}: household {household.id!r} has {vehicles} vehicles but {adults} adult(s)"
        )
    elif vehicles > 0 and drivers == 0:
        errors.append(
            f"{where}: household {household.id!r} has {vehicles} vehicle(s) but no licensed driver"
        )
    elif require_driver_per_vehicle and vehicles > drivers:
        errors.append(
            f"{where}: household {household.id!r} has {vehicles} vehicles but {drivers} "
            "licensed driver(s)"
        )
    return errors


def facility_names(scenario: Scenario | Collection[str]) -> list[str]:
    """The facility names of a scenario (or the given names, when not a scenario)."""
    facilities = getattr(scenario, "facilities", None)
    return list(facilities if facilities is not None else scenario)


def validate_population(
    population: Population,
    scenario: Scenario | Collection[str],
    *,
    require_driver_per_vehicle: bool = False,
) -> Population:
    """Check ``population`` against ``scenario`` (see :func:`population_errors`).

    Args:
        population: The population to check.
        scenario: The scenario (or just its facility names).
        require_driver_per_vehicle: See :func:`population_errors`.

    Returns:
        The population, unchanged.

    Raises:
        PopulationError: listing every error, each naming the file, the person and the field.
    """
    errors = population_errors(
        population,
        facility_names(scenario),
        require_driver_per_vehicle=require_driver_per_vehicle,
    )
    if errors:
        raise PopulationError("\n".join(errors))
    return population


def population_from_dict(
    data: dict[str, Any], source: str = "<population>"
) -> Population:
    """Parse a population dict (the file format) without domain validation.

    Raises:
        PopulationError: naming the source, the person and the field for schema errors.
    """
    if not isinstance(data, dict) or not isinstance(data.get("people"), list):
        raise PopulationError(f"{source}: expected an object with a 'people' list")
    people: list[Person] = []
    errors: list[str] = []
    for index, item in enumerate(data["people"]):
        label = (
            item.get("name")
            if isinstance(item, dict) and item.get("name")
            else f"#{index}"
        )
        try:
            people.append(Person.model_validate(item))
        except ValidationError as error:
            for detail in error.errors():
                location = (
                    ".".join(str(part) for part in detail.get("loc", ())) or "(root)"
                )
                message = detail.get("msg", "invalid").removeprefix("Value error, ")
                errors.append(f"{_where(source, str(label), location)}: {message}")
    if errors:
        raise PopulationError("\n".join(errors))
    return Population.from_people(
        people,
        name=str(data.get("name", Path(source).stem)),
        source=source,
        description=str(data.get("description", "")),
    )


def load_population(path: str | Path, scenario: Scenario | str | Path) -> Population:
    """Load a population file and validate it against a scenario.

    Args:
        path: A JSON file, or the name of a bundled population (``"population_70"``).
        scenario: A :class:`~mesa_llm_mobility.urban.scenario.Scenario`, or a scenario file or
            bundled scenario name for :func:`~mesa_llm_mobility.urban.scenario.load_scenario`.

    Returns:
        The validated population.

    Raises:
        PopulationError: If the file is missing, not JSON, or invalid; messages name the file,
            the person and the field.
    """
    if isinstance(scenario, str | Path):
        from mesa_llm_mobility.urban.scenario import load_scenario  # noqa: PLC0415

        scenario = load_scenario(scenario)
    data, source = read_json_data(path, "population", PopulationError)
    source = Path(source).name
    return validate_population(population_from_dict(data, source), scenario)
