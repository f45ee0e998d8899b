"""A population for an imported city: the synthesis's people placed on the city's facilities.

The rule sampler (:func:`~mesa_llm_mobility.urban.synthesis.synthesize_population`) draws
households, ages, licences, incomes, friends and jobs by the reference town's facility names,
which are the model's facility kinds (``"Office"``, ``"School"``, ...; the two apartments are
homes). :func:`city_population` then places them on the city: each household in a home
facility with room for it (drawn in proportion to the room left), each worker at a facility of
their workplace's kind (in proportion to capacity; a kind the city lacks falls back to
:data:`WORK_FALLBACK`). Children go to the facility named ``"School"`` (the importer names one
per shared kind, see :mod:`.osm`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mesa_llm_mobility.urban.population import Person, Population, validate_population
from mesa_llm_mobility.urban.scenario import Facility, Scenario
from mesa_llm_mobility.urban.synthesis import TARGET_STATISTICS, synthesize_population

HOME_KIND = "home"
"""The kind of the facilities people live in."""
WORK_FALLBACK = ("Office", "Supermarket", "Food court")
"""Kinds a worker is placed at, in order, when the city has no facility of their job's kind."""
SYNTHESIS_PART = 2000
"""Most people the rule sampler synthesises at once (see :func:`_synthesized_in_parts`)."""
TRAVELLERS_PER_PERSON = 60 / 70
"""Share of the synthesised people who travel (adults; GATSim's 60 of 70)."""


def is_city(scenario: Scenario) -> bool:
    """Whether the scenario's facilities carry kinds (an imported city), with homes among them."""
    return any(f.kind == HOME_KIND for f in scenario.facilities.values())


def people_for_travellers(n_travellers: int) -> int:
    """How many people to synthesise for ``n_travellers`` adults (GATSim's 70 per 60)."""
    return max(1, math.ceil(n_travellers / TRAVELLERS_PER_PERSON))


def city_population(
    scenario: Scenario,
    n_people: int,
    rng: np.random.Generator | int | None,
    *,
    name: str | None = None,
) -> Population:
    """Synthesise ``n_people`` and place their homes and jobs on ``scenario``'s facilities.

    Args:
        scenario: An imported city (facilities with kinds, homes among them).
        n_people: People to synthesise (children included).
        rng: Generator or seed.
        name: Population name (default ``"<scenario>_<n>"``).

    Returns:
        The validated population.

    Raises:
        ValueError: If the city has no homes, too little room in them, or no workplaces.
    """
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    by_kind: dict[str, list[Facility]] = {}
    for facility in scenario.facilities.values():
        by_kind.setdefault(facility.kind, []).append(facility)
    homes = by_kind.get(HOME_KIND, [])
    if not homes:
        raise ValueError(f"{scenario.source}: the city has no home facility")
    room = sum(f.capacity for f in homes)
    if room < n_people:
        raise ValueError(
            f"{scenario.source}: the city's homes hold {room} people, {n_people} asked for"
        )
    kinds = [
        *TARGET_STATISTICS["workers_per_facility"],
        *TARGET_STATISTICS["residents"],
    ]
    name = name or f"{scenario.name}_{n_people}"
    drafted = Population.from_people(
        _synthesized_in_parts(n_people, rng, kinds), name=name, source=f"{name}.json"
    )
    home_of = _place_households(drafted, homes, rng)
    jobs = {kind: _workplaces(kind, by_kind) for kind in set(kinds)}
    people = []
    for person in drafted:
        update: dict[str, str | None] = {"home_facility": home_of[person.household]}
        if person.work_facility is not None:
            options, weights = jobs[person.work_facility]
            if not options:
                raise ValueError(
                    f"{scenario.source}: no facility for the job kind {person.work_facility!r}"
                )
            update["work_facility"] = options[int(rng.choice(len(options), p=weights))]
        people.append(person.model_copy(update=update))
    population = Population.from_people(
        people,
        name=drafted.name,
        source=drafted.source,
        description=(
            f"{n_people} residents of {scenario.name} synthesised by the rule sampler and "
            "placed on its facilities by mesa_llm_mobility.urban.cities.city_population."
        ),
    )
    return validate_population(population, scenario)


def _synthesized_in_parts(
    n_people: int, rng: np.random.Generator, kinds: Sequence[str]
) -> list[Person]:
    """``n_people`` from the rule sampler, in parts of at most :data:`SYNTHESIS_PART` people.

    The sampler packs households into homes by a recursive search, which a large population
    would take too deep; each part is a whole population of its own (its households, friends
    and Table 2 proportions), and the people of part ``k > 1`` are renamed ``"<name> #k"``
    (households ``"<id>-k"``) so that names stay unique.
    """
    parts = math.ceil(n_people / SYNTHESIS_PART)
    people: list[Person] = []
    for part in range(parts):
        size = n_people // parts + (1 if part < n_people % parts else 0)
        drafted = synthesize_population(size, rng, kinds)
        if part == 0:
            people.extend(drafted)
            continue

        def renamed(name: str, part: int = part) -> str:
            return f"{name} #{part + 1}"

        people.extend(
            person.model_copy(
                update={
                    "name": renamed(person.name),
                    "household": f"{person.household}-{part + 1}",
                    "friends": [renamed(friend) for friend in person.friends],
                }
            )
            for person in drafted
        )
    return people


def _place_households(
    population: Population, homes: Sequence[Facility], rng: np.random.Generator
) -> dict[str, str]:
    free = np.array([f.capacity for f in homes], dtype=float)
    placed: dict[str, str] = {}
    for household in population.households.values():
        size = len(household.members)
        fits = np.where(free >= size, free, 0.0)
        if fits.sum() <= 0:  # the last households fill what is left
            fits = free.copy()
        k = int(rng.choice(len(homes), p=fits / fits.sum()))
        free[k] -= size
        placed[household.id] = homes[k].name
    return placed


def _workplaces(
    kind: str, by_kind: dict[str, list[Facility]]
) -> tuple[list[str], np.ndarray]:
    for candidate in (kind, *WORK_FALLBACK):
        members = [f for f in by_kind.get(candidate, []) if f.capacity > 0]
        if members and candidate != HOME_KIND:
            weights = np.array([f.capacity for f in members], dtype=float)
            return [f.name for f in members], weights / weights.sum()
    return [], np.array([])
