"""Population synthesis for the urban model: GATSim's Table 2 as data, a rule sampler and an LLM.

GATSim synthesises its 70 residents with GPT-4o, prompted with demographic statistics (paper,
section 4.1.2 and Table 2). This module offers both routes through one decision kind:

- :data:`TARGET_STATISTICS`: Table 2 as data, and :func:`population_statistics`, which computes
  the same table from any :class:`~mesa_llm_mobility.urban.population.Population`;
- :func:`synthesize_population`: a seeded rule sampler that matches the table exactly at
  ``n = 70`` and proportionally otherwise (:func:`proportional_targets`), with template
  narratives in the style of the paper's Listing 1;
- :data:`POPULATION_BATCH`: a decision kind whose prompt states the target statistics and whose
  output is the profile list, checked by the population's domain validation and the statistics;
  errors go back to the LLM for repair, and the rule sampler is its rule policy (fallback).
  :func:`synthesize_with_brain` runs it through any brain (``"rules"`` or ``"llm:<model>"``).

Reading of Table 2 (see ``docs/population.md``):

- "Young" are people aged 18 or more (adults), "Children" are under 18; the paper's "10 %
  elderly (ages 60-75)" are 7 of the 60 "Young" adults (Table 2 has no elderly row, so "Young"
  means "not a child"). The text's "30 % single / 50 % married / 20 % children" does not match
  the table (26 / 34 / 10 of 70); the table wins.
- The 43 families are 26 singles living alone, 8 childless couples, 8 couples with one child and
  1 couple with two children: this is the only reading in which 17 husbands, 17 wives and 10
  children fill families of 1, 2, 3 and 4 members.
- Household income sums to 70, so it is counted per person; every member of a household shares
  its income.
- Workers per facility sum to 60: every adult works, children do not.
- 14 two-vehicle and 25 one-vehicle families would need 53 drivers for one driver per vehicle,
  but Table 2 has 50 licensed drivers; so a household needs one licensed driver to own vehicles,
  and no more vehicles than adults.

Proportional targets for other ``n`` use largest-remainder (Hamilton) rounding: each group gets
the floor of its exact quota ``n * weight / total``, and the units left go to the largest
fractional parts (ties to the group listed first). Household structure is apportioned first (over
people, then rounded down to whole families, leftovers becoming singles), and the other
statistics are derived from it so that they stay mutually consistent (husbands = wives, children
in families with parents, two-vehicle families only among couples, enough drivers).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    DecisionResult,
    Message,
)
from mesa_llm_mobility.cognition.settings import make_brain
from mesa_llm_mobility.urban.clock import spoken_clock
from mesa_llm_mobility.urban.population import (
    ADULT_AGE,
    ELDERLY_AGE,
    MAX_FRIENDS,
    Person,
    Population,
    facility_names,
    parse_work_time,
    population_errors,
    validate_population,
)

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition.brain import Brain
    from mesa_llm_mobility.urban.scenario import Scenario

logger = logging.getLogger(__name__)

Statistics = dict[str, dict[str, int]]

TARGET_STATISTICS: Statistics = {
    "gender": {"female": 36, "male": 34},
    "age_group": {"young": 60, "children": 10},
    "elderly": {"60-75": 7},
    "family_role": {"single": 26, "husband": 17, "wife": 17, "son": 5, "daughter": 5},
    "family_structure": {
        "total families": 43,
        "1-member": 26,
        "2-member": 8,
        "3-member": 8,
        "4-member": 1,
    },
    "household_income": {"low": 10, "middle": 43, "high": 17},
    "licensed_drivers": {"licensed": 50},
    "vehicles_per_family": {"0 vehicles": 4, "1 vehicle": 25, "2 vehicles": 14},
    "workers_per_facility": {
        "Coffee shop": 3,
        "Factory": 20,
        "Hospital": 3,
        "Gym": 3,
        "Office": 17,
        "Food court": 3,
        "Amusement park": 2,
        "Museum": 2,
        "Cinema": 2,
        "Supermarket": 3,
        "School": 2,
    },
    "residents": {"Uptown apartment": 36, "Midtown apartment": 34},
}
"""GATSim Table 2 (70 people), plus the text's 10 % elderly (``"elderly"``, 7 of 70).

Income is counted per person; see the module docstring for every reading of the table.
"""

REFERENCE_SIZE = 70


def _vehicle_label(vehicles: int) -> str:
    return f"{vehicles} vehicle" if vehicles == 1 else f"{vehicles} vehicles"


def population_statistics(population: Population) -> Statistics:
    """Table 2's statistics of ``population`` (the shape of :data:`TARGET_STATISTICS`).

    Every subcategory of the targets is present (zero when absent); values met outside them (a
    third vehicle, another workplace) are appended.
    """
    people = population.people
    households = population.households.values()
    observed: dict[str, Counter[str]] = {
        "gender": Counter(person.gender for person in people),
        "age_group": Counter(
            "children" if person.is_child else "young" for person in people
        ),
        "elderly": Counter("60-75" for person in people if person.age >= ELDERLY_AGE),
        "family_role": Counter(person.family_role for person in people),
        "family_structure": Counter(
            f"{len(household.members)}-member" for household in households
        ),
        "household_income": Counter(person.household_income for person in people),
        "licensed_drivers": Counter(
            "licensed" for person in people if person.licensed_driver
        ),
        "vehicles_per_family": Counter(
            _vehicle_label(household.vehicles) for household in households
        ),
        "workers_per_facility": Counter(
            person.work_facility for person in people if person.work_facility
        ),
        "residents": Counter(person.home_facility for person in people),
    }
    observed["family_structure"]["total families"] = len(population.households)
    statistics: Statistics = {}
    for category, counts in observed.items():
        row = {key: counts.get(key, 0) for key in TARGET_STATISTICS[category]}
        for key in sorted(set(counts) - set(row)):
            row[key] = counts[key]
        statistics[category] = row
    return statistics


def statistics_table(
    statistics: Statistics, targets: Statistics | None = None
) -> pd.DataFrame:
    """One row per (category, subcategory): count, target and whether they match.

    Args:
        statistics: Computed statistics (:func:`population_statistics`).
        targets: Targets (default :data:`TARGET_STATISTICS`).
    """
    targets = TARGET_STATISTICS if targets is None else targets
    rows = []
    for category in dict.fromkeys([*targets, *statistics]):
        counts, wanted = statistics.get(category, {}), targets.get(category, {})
        for key in dict.fromkeys([*wanted, *counts]):
            count, target = counts.get(key, 0), wanted.get(key, 0)
            rows.append(
                {
                    "category": category,
                    "subcategory": key,
                    "count": count,
                    "target": target,
                    "match": count == target,
                }
            )
    return pd.DataFrame(rows)


def statistics_mismatches(statistics: Statistics, targets: Statistics) -> list[str]:
    """Human-readable differences between ``statistics`` and ``targets`` (empty if equal)."""
    table = statistics_table(statistics, targets)
    return [
        f"statistic {row.category}/{row.subcategory}: got {row.count}, target {row.target}"
        for row in table.itertuples()
        if not row.match
    ]


def largest_remainder(total: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Apportion ``total`` among ``weights`` by largest remainder (Hamilton) rounding.

    Each key gets ``floor(total * w / W)``; the units left go to the largest remainders, ties to
    the key listed first. The result sums to ``total``.

    Args:
        total: Units to apportion (>= 0).
        weights: Non-negative integer weights with a positive sum.
    """
    weight_sum = sum(weights.values())
    if total < 0 or weight_sum <= 0:
        raise ValueError(f"cannot apportion {total} among weights {dict(weights)}")
    shares = {key: total * weight // weight_sum for key, weight in weights.items()}
    remainders = {key: total * weight % weight_sum for key, weight in weights.items()}
    left = total - sum(shares.values())
    for key in sorted(weights, key=lambda k: -remainders[k])[:left]:
        shares[key] += 1
    return shares


@dataclass(frozen=True)
class _Structure:
    """Household counts by type: singles and couples with 0, 1 or 2 children."""

    singles: int
    couples: tuple[int, int, int]

    @property
    def n_couples(self) -> int:
        return sum(self.couples)

    @property
    def n_children(self) -> int:
        return self.couples[1] + 2 * self.couples[2]


def _structure(n: int) -> _Structure:
    family = TARGET_STATISTICS["family_structure"]
    people_by_size = largest_remainder(
        n, {size: int(size) * family[f"{size}-member"] for size in "1234"}
    )
    with_no, with_one, with_two = (people_by_size[size] // int(size) for size in "234")
    singles = n - 2 * with_no - 3 * with_one - 4 * with_two
    return _Structure(singles, (with_no, with_one, with_two))


def proportional_targets(n: int) -> Statistics:
    """Table 2 scaled to ``n`` people with largest-remainder rounding, kept consistent.

    Equals :data:`TARGET_STATISTICS` at ``n = 70`` (and exactly doubles it at 140). Household
    structure is apportioned over people and rounded down to whole families (leftovers live
    alone); roles and age groups follow from it; female, elderly, income, licence and vehicle
    counts are apportioned and then clamped to what the structure allows; workers are the adults
    apportioned over the workplaces.

    Args:
        n: Population size (>= 1).
    """
    if n < 1:
        raise ValueError(f"population size must be >= 1, got {n}")
    target = TARGET_STATISTICS
    structure = _structure(n)
    couples, children = structure.n_couples, structure.n_children
    adults = n - children
    children_split = largest_remainder(
        children,
        {
            "son": target["family_role"]["son"],
            "daughter": target["family_role"]["daughter"],
        },
    )
    female_wanted = largest_remainder(n, target["gender"])["female"]
    fixed_female = couples + children_split["daughter"]
    female = fixed_female + min(max(female_wanted - fixed_female, 0), structure.singles)
    elderly_pool = structure.singles + 2 * structure.couples[0]
    elderly_weight = target["elderly"]["60-75"]
    elderly = min(
        largest_remainder(
            n, {"e": elderly_weight, "rest": REFERENCE_SIZE - elderly_weight}
        )["e"],
        elderly_pool,
    )
    households = structure.singles + couples
    vehicles = largest_remainder(households, target["vehicles_per_family"])
    excess = max(vehicles["2 vehicles"] - couples, 0)
    vehicles["2 vehicles"] -= excess
    vehicles["1 vehicle"] += excess
    licensed_weight = target["licensed_drivers"]["licensed"]
    licensed = largest_remainder(
        n, {"l": licensed_weight, "rest": REFERENCE_SIZE - licensed_weight}
    )["l"]
    owning = vehicles["1 vehicle"] + vehicles["2 vehicles"]
    licensed = min(max(licensed, owning), adults)
    family_structure = {"total families": households, "1-member": structure.singles}
    family_structure.update(
        {
            f"{size}-member": count
            for size, count in zip((2, 3, 4), structure.couples, strict=True)
        }
    )
    return {
        "gender": {"female": female, "male": n - female},
        "age_group": {"young": adults, "children": children},
        "elderly": {"60-75": elderly},
        "family_role": {
            "single": structure.singles,
            "husband": couples,
            "wife": couples,
            **children_split,
        },
        "family_structure": family_structure,
        "household_income": largest_remainder(n, target["household_income"]),
        "licensed_drivers": {"licensed": licensed},
        "vehicles_per_family": vehicles,
        "workers_per_facility": largest_remainder(
            adults, target["workers_per_facility"]
        ),
        "residents": largest_remainder(n, target["residents"]),
    }


# ---------------------------------------------------------------------------- rule sampler


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_FEMALE_NAMES = _words(
    "Isabella Olivia Sofia Amelia Grace Chloe Hannah Mia Nora Leah Zoe Ava Emma Lucia Maya "
    "Priya Aisha Mei Yuki Elena Clara Rosa Ingrid Fatima Naomi Laura Julia Sara Alice Irene "
    "Gloria Helen Martha Ruth Diana Ana Carmen Lina Vera Tessa Paula Nadia Keiko Amara Freya "
    "Iris Lea Dalia Maren Selma Bianca Celia Esther Farah Gemma Hana Ines Joy Kira"
)
_MALE_NAMES = _words(
    "Michael James Daniel David Lucas Noah Ethan Samuel Omar Hiro Ravi Wei Mateo Diego Tomas "
    "Victor Felix Oscar Hugo Leo Adam Jonas Peter Paul Marco Andre Kofi Yusuf Arjun Kenji "
    "Ivan Luis Carlos Ahmed Simon Henry George Arthur Owen Isaac Theo Rafael Emil Nils Pablo "
    "Stefan Tariq Bruno Caleb Dmitri Elias Fabio Gabriel Hamza Ian Jamal Karl Liam Milo"
)
_SURNAMES = _words(
    "Rodriguez Campbell Chen Nguyen Patel Kim Garcia Müller Rossi Kowalski Okafor Silva "
    "Johansson Tanaka Haddad Novak Dubois Schmidt Lopez Moreau Brown Wilson Martin Ahmed "
    "Singh Ivanov Park Costa Jensen Larsen Fischer Weber Romero Hughes Bennett Foster Reyes "
    "Morales Ortiz Santos Ali Khan Sato Suzuki Wang Li Zhang Liu Yilmaz Demir Kaya Mensah "
    "Owusu Diallo Bakker Visser Janssen Peeters Horvat Popescu Nagy Kovacs Murphy Kelly "
    "Walsh Byrne Ryan Doyle Lindqvist Berg Dahl Holm Sandoval Castro Vargas Rojas Mendoza "
    "Herrera Flores Rivera Torres Ramos Cruz Gomez Diaz Alvarez Ruiz Navarro Molina Delgado "
    "Ibrahim Hassan Mahmoud Farouk Abe Mori Ito Shah Mehta Iyer"
)

_OCCUPATIONS: dict[str, tuple[str, ...]] = {
    "Factory": (
        "machine operator",
        "assembly technician",
        "quality inspector",
        "maintenance engineer",
        "forklift driver",
        "production supervisor",
        "welder",
        "logistics planner",
    ),
    "Office": (
        "accountant",
        "software developer",
        "project manager",
        "HR specialist",
        "marketing analyst",
        "administrative assistant",
        "lawyer",
        "insurance agent",
    ),
    "Hospital": ("nurse", "physician", "pharmacist", "lab technician"),
    "Coffee shop": ("barista", "cafe manager", "pastry cook"),
    "Gym": ("fitness instructor", "personal trainer", "front desk attendant"),
    "Food court": ("line cook", "cashier", "food stall owner"),
    "Amusement park": ("ride operator", "park technician"),
    "Museum": ("curator", "museum guide", "conservator"),
    "Cinema": ("projectionist", "ticket clerk", "cinema manager"),
    "Supermarket": ("cashier", "stock clerk", "store manager"),
    "School": ("teacher", "school administrator"),
}
# Factory and Office staff "predominantly follow 8:00-17:00 schedules" (GATSim section 4.4): the
# choice is uniform, so three entries in four give that shift; this concentration is what makes
# the paper's day-1 morning peak.
_WORK_TIMES: dict[str, tuple[str, ...]] = {
    "Factory": ("8:00-17:00", "8:00-17:00", "8:00-17:00", "7:00-16:00"),
    "Office": ("8:00-17:00", "8:00-17:00", "8:00-17:00", "9:00-17:30"),
    "Hospital": ("7:00-15:00", "8:00-16:00", "14:00-22:00"),
    "Coffee shop": ("6:30-14:30", "7:00-16:00", "11:00-19:00"),
    "Gym": ("6:00-14:00", "12:00-20:00", "9:00-17:00"),
    "Food court": ("10:00-19:00", "11:00-20:00", "9:00-17:00"),
    "Amusement park": ("9:30-18:30", "10:00-19:00"),
    "Museum": ("9:00-17:00", "9:30-17:30"),
    "Cinema": ("13:00-22:00", "12:00-21:00"),
    "Supermarket": ("7:00-15:00", "8:00-17:00", "12:00-20:00"),
    "School": ("7:30-15:30", "8:00-16:00"),
}
_DEFAULT_OCCUPATIONS = ("staff member", "assistant", "manager")
_DEFAULT_WORK_TIMES = ("8:00-16:00", "9:00-17:00")
_TRAITS = _words(
    "friendly outgoing hospitable patient curious punctual meticulous cheerful calm reserved "
    "thoughtful ambitious generous practical witty stubborn easygoing organized creative "
    "talkative cautious energetic loyal independent optimistic pragmatic gentle sociable "
    "adventurous disciplined warm spontaneous analytical modest determined kind quiet "
    "responsible playful dependable"
)
_HOBBIES = (
    "plays chess at the coffee shop on weekends",
    "runs along the river every other morning",
    "collects old vinyl records",
    "volunteers at the museum's weekend workshops",
    "bakes bread for the neighbours",
    "practises yoga at the gym after work",
    "grows tomatoes on the apartment balcony",
    "reads mystery novels late into the evening",
    "watches every new release at the cinema",
    "plays five-a-side football on Saturdays",
    "paints watercolour landscapes",
    "is learning to play the guitar",
    "cooks elaborate dinners for friends",
    "follows local history and old photographs of the town",
    "goes cycling on quiet streets on Sundays",
    "sings in a community choir",
    "keeps a detailed budget and loves bargain hunting at the supermarket",
    "enjoys board-game nights",
    "takes photographs of the town at dawn",
    "swims at the gym pool before work",
)
_TOPICS = (
    "local history",
    "new recipes",
    "football results",
    "gardening tips",
    "films",
    "books",
    "travel plans",
    "their children's schooling",
    "work gossip",
    "cycling routes",
    "music",
    "the town's traffic",
)
_CHILD_TOPICS = (
    "football",
    "video games",
    "their favourite cartoons",
    "the school trip",
    "the new rides at the amusement park",
    "homework",
)
_DRIVER_PREFERENCES = (
    "prefers driving alone for the flexibility",
    "drives, but avoids congested roads whenever possible",
    "likes driving on safer, quieter routes",
    "drives, and takes the metro when traffic is bad",
    "prefers the car on rainy days and walks short distances",
    "values a predictable commute and leaves early to avoid queues",
)
_TRANSIT_PREFERENCES = (
    "relies on the metro and prefers short walks",
    "takes public transit and avoids crowded trains when possible",
    "walks whenever the weather allows",
    "uses the metro and enjoys reading on the way",
    "prefers the cheapest option, usually the metro",
    "likes walking for exercise and takes the metro for longer trips",
)
_FRIEND_DEGREE_PROBABILITIES = (0.15, 0.3, 0.35, 0.2)


_CHILD_HOBBIES = (
    "loves drawing dinosaurs",
    "plays football in the courtyard after school",
    "is mad about the amusement park's roller coaster",
    "collects stickers and trades them at school",
    "practises the piano every evening",
    "reads comics before bed",
    "builds elaborate block towns",
    "swims at the gym with a parent on Saturdays",
    "wants to be a scientist and asks endless questions",
    "plays video games a little more than allowed",
)


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _pack(
    sizes: Sequence[int],
    capacities: Mapping[str, int],
    rng: np.random.Generator,
    max_nodes: int = 200_000,
) -> list[str]:
    """Put every item (of ``sizes``) into a bin so that each bin is filled exactly.

    Items larger than one are placed by depth-first search in decreasing size, trying bins in a
    random order weighted by their room; items of size one then fill the room left (exactly,
    when the sizes and capacities have the same sum). Falls back to the roomiest bin per item
    when no exact packing exists.
    """
    order = sorted(rng.permutation(len(sizes)).tolist(), key=lambda i: -sizes[i])
    large = [item for item in order if sizes[item] > 1]
    ones = [item for item in order if sizes[item] <= 1]
    bins = list(capacities)
    room = [capacities[b] for b in bins]
    assignment: list[int] = [-1] * len(sizes)
    nodes = 0

    def search(position: int) -> bool:
        nonlocal nodes
        if position == len(large):
            return True
        nodes += 1
        if nodes > max_nodes:
            return False
        item = large[position]
        fitting = [b for b in range(len(bins)) if room[b] >= sizes[item]]
        if not fitting:
            return False
        weights = np.array([room[b] for b in fitting], dtype=float)
        tries = rng.choice(
            fitting, size=len(fitting), replace=False, p=weights / weights.sum()
        )
        for b in tries.tolist():
            room[b] -= sizes[item]
            assignment[item] = b
            if search(position + 1):
                return True
            room[b] += sizes[item]
        return False

    exact = sum(sizes) == sum(room) and search(0)
    if exact:
        slots = [b for b in range(len(bins)) for _ in range(room[b])]
        for item, slot in zip(ones, rng.permutation(slots).tolist(), strict=True):
            assignment[item] = slot
    else:
        logger.warning(
            "no exact packing of %s into %s; using the closest", sizes, dict(capacities)
        )
        room = [capacities[b] for b in bins]
        for item in order:
            b = int(np.argmax(room))
            room[b] -= sizes[item]
            assignment[item] = b
    return [bins[b] for b in assignment]


def _weighted_sample(
    rng: np.random.Generator, items: Sequence[int], weights: Sequence[float], k: int
) -> list[int]:
    if k <= 0 or not items:
        return []
    p = np.asarray(weights, dtype=float)
    return rng.choice(
        list(items), size=min(k, len(items)), replace=False, p=p / p.sum()
    ).tolist()


@dataclass(eq=False)
class _Draft:
    """A mutable profile while the sampler fills it in."""

    household: int
    role: str
    gender: str = ""
    age: int = 0
    first: str = ""
    surname: str = ""
    licensed: bool = False
    work_facility: str | None = None
    occupation: str = "student"
    work_time: str | None = None
    elderly: bool = False

    @property
    def name(self) -> str:
        return f"{self.first} {self.surname}"

    @property
    def is_child(self) -> bool:
        return self.age < ADULT_AGE


def synthesize_population(
    n: int,
    rng: np.random.Generator | int | None,
    scenario: Scenario | Collection[str],
    *,
    name: str | None = None,
) -> Population:
    """Sample ``n`` narrative profiles matching :func:`proportional_targets` (Table 2 at 70).

    Households are built first (singles and couples with 0-2 children), then homes and incomes
    are packed exactly onto the targets, vehicles and licences assigned (one licensed adult in
    every household with vehicles), adults given the targets' workplaces and shifts, friendships
    drawn (0-3, mutual, among adults or among children of other households), and narratives
    filled from templates.

    Args:
        n: Population size (>= 1).
        rng: Generator or seed; the result is deterministic given it.
        scenario: The scenario (or its facility names); it must have every workplace and home of
            the targets.
        name: Population name (default ``"synthetic_<n>"``).

    Returns:
        A validated :class:`~mesa_llm_mobility.urban.population.Population`.

    Raises:
        ValueError: If ``n < 1`` or a target facility is missing from the scenario.
    """
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    facilities = facility_names(scenario)
    targets = proportional_targets(n)
    missing = [
        facility
        for category in ("workers_per_facility", "residents")
        for facility in targets[category]
        if facility not in facilities
    ]
    if missing:
        raise ValueError(f"scenario lacks the target facilities {missing}")
    structure = _structure(n)

    # households: 0 = single, 1..3 = couple with 0..2 children, in random order
    kinds = [0] * structure.singles + [
        1 + children
        for children, count in enumerate(structure.couples)
        for _ in range(count)
    ]
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]
    drafts: list[_Draft] = []
    members: list[list[_Draft]] = []
    for household, kind in enumerate(kinds):
        roles = (
            ["single"] if kind == 0 else ["husband", "wife"] + ["child"] * (kind - 1)
        )
        group = [_Draft(household, role) for role in roles]
        members.append(group)
        drafts.extend(group)
    sizes = [len(group) for group in members]

    homes = _pack(sizes, targets["residents"], rng)
    incomes = _pack(sizes, targets["household_income"], rng)

    # genders: children by the son/daughter split, singles by the female target
    children = [d for d in drafts if d.role == "child"]
    daughters = (
        set(
            rng.choice(
                len(children), targets["family_role"]["daughter"], replace=False
            ).tolist()
        )
        if children
        else set()
    )
    for index, child in enumerate(children):
        child.role, child.gender = (
            ("daughter", "female") if index in daughters else ("son", "male")
        )
    singles = [d for d in drafts if d.role == "single"]
    single_female = targets["gender"]["female"] - sum(
        d.role in ("wife", "daughter") for d in drafts
    )
    female_singles = set(
        rng.choice(len(singles), single_female, replace=False).tolist()
    )
    for index, single in enumerate(singles):
        single.gender = "female" if index in female_singles else "male"
    for d in drafts:
        if d.role in ("husband", "wife"):
            d.gender = "male" if d.role == "husband" else "female"

    _assign_ages(drafts, members, targets["elderly"]["60-75"], rng)

    # vehicles: two only for couples (richer first), none preferably for poorer households
    income_weight = {"low": 1.0, "middle": 2.0, "high": 3.0}
    vehicles = [1] * len(members)
    couple_households = [h for h, kind in enumerate(kinds) if kind > 0]
    for h in _weighted_sample(
        rng,
        couple_households,
        [income_weight[incomes[h]] for h in couple_households],
        targets["vehicles_per_family"]["2 vehicles"],
    ):
        vehicles[h] = 2
    others = [h for h in range(len(members)) if vehicles[h] == 1]
    for h in _weighted_sample(
        rng,
        others,
        [4.0 / income_weight[incomes[h]] ** 2 for h in others],
        targets["vehicles_per_family"]["0 vehicles"],
    ):
        vehicles[h] = 0

    # licences: one adult per household with vehicles, the rest mostly where a second car waits
    adults = [i for i, d in enumerate(drafts) if not d.is_child]
    for h, group in enumerate(members):
        if vehicles[h] > 0:
            grown = [d for d in group if not d.is_child]
            grown[int(rng.integers(len(grown)))].licensed = True
    unlicensed = [i for i in adults if not drafts[i].licensed]
    extra = targets["licensed_drivers"]["licensed"] - (len(adults) - len(unlicensed))
    for i in _weighted_sample(
        rng,
        unlicensed,
        [(1.0, 2.0, 8.0)[min(vehicles[drafts[i].household], 2)] for i in unlicensed],
        extra,
    ):
        drafts[i].licensed = True

    # work: every adult takes one of the targets' jobs
    jobs = [
        facility
        for facility, count in targets["workers_per_facility"].items()
        for _ in range(count)
    ]
    for i, job in zip(adults, rng.permutation(jobs).tolist(), strict=True):
        drafts[i].work_facility = job
        drafts[i].occupation = _pick(rng, _OCCUPATIONS.get(job, _DEFAULT_OCCUPATIONS))
        drafts[i].work_time = _pick(rng, _WORK_TIMES.get(job, _DEFAULT_WORK_TIMES))

    _assign_names(drafts, members, rng)
    friends = _draw_friends(drafts, rng)
    people = [
        _profile(
            d,
            members[d.household],
            vehicles[d.household],
            homes[d.household],
            incomes[d.household],
            [drafts[j].name for j in friends[i]],
            len(members),
            rng,
        )
        for i, d in enumerate(drafts)
    ]
    population = Population.from_people(
        people,
        name=name or f"synthetic_{n}",
        source=f"{name or f'synthetic_{n}'}.json",
        description=(
            f"{n} residents synthesised by the rule sampler of mesa_llm_mobility.urban.synthesis "
            "to match GATSim's Table 2"
            + (" exactly." if n == REFERENCE_SIZE else " proportionally.")
        ),
    )
    return validate_population(population, facilities)


def _assign_ages(
    drafts: list[_Draft],
    members: list[list[_Draft]],
    elderly: int,
    rng: np.random.Generator,
) -> None:
    """Ages: elderly (60-75) among singles and childless couples; parents >= 22 years older."""
    pool = [
        i
        for i, d in enumerate(drafts)
        if d.role == "single"
        or (d.role in ("husband", "wife") and len(members[d.household]) == 2)
    ]
    for i in rng.choice(pool, size=min(elderly, len(pool)), replace=False).tolist():
        drafts[i].elderly = True
    for group in members:
        if group[0].role == "single":
            single = group[0]
            single.age = int(
                rng.integers(60, 76) if single.elderly else rng.integers(20, 60)
            )
            continue
        husband, wife, *kids = group
        if kids:
            husband.age = int(rng.integers(30, 53))
            wife.age = int(np.clip(husband.age + rng.integers(-5, 4), 27, 55))
            oldest = min(17, min(husband.age, wife.age) - 22)
            for kid in kids:
                kid.age = int(rng.integers(5, oldest + 1))
        elif husband.elderly or wife.elderly:
            for spouse in (husband, wife):
                spouse.age = int(
                    rng.integers(60, 76) if spouse.elderly else rng.integers(52, 60)
                )
        else:
            husband.age = int(rng.integers(24, 58))
            wife.age = int(np.clip(husband.age + rng.integers(-5, 5), 22, 59))


def _assign_names(
    drafts: list[_Draft], members: list[list[_Draft]], rng: np.random.Generator
) -> None:
    surnames = rng.permutation(_SURNAMES).tolist()
    used: set[str] = set()
    for h, group in enumerate(members):
        surname = surnames[h % len(surnames)]
        for d in group:
            names = _FEMALE_NAMES if d.gender == "female" else _MALE_NAMES
            d.surname = surname
            for attempt in range(50):
                d.first = _pick(rng, names)
                if d.name not in used and not any(
                    o.first == d.first for o in group if o is not d
                ):
                    break
                if attempt == 49:
                    d.first = f"{d.first} {chr(ord('A') + h % 26)}."
            used.add(d.name)


def _draw_friends(drafts: list[_Draft], rng: np.random.Generator) -> list[list[int]]:
    """Mutual friendships, 0-3 each, among adults or among children of other households."""
    wanted = rng.choice(4, size=len(drafts), p=_FRIEND_DEGREE_PROBABILITIES).tolist()
    friends: list[list[int]] = [[] for _ in drafts]
    for i in rng.permutation(len(drafts)).tolist():
        while len(friends[i]) < wanted[i]:
            candidates = [
                j
                for j, other in enumerate(drafts)
                if j != i
                and len(friends[j]) < wanted[j]
                and other.household != drafts[i].household
                and other.is_child == drafts[i].is_child
                and j not in friends[i]
            ]
            if not candidates:
                break
            j = candidates[int(rng.integers(len(candidates)))]
            friends[i].append(j)
            friends[j].append(i)
    return friends


def _profile(
    d: _Draft,
    group: list[_Draft],
    vehicles: int,
    home: str,
    income: str,
    friends: list[str],
    n_households: int,
    rng: np.random.Generator,
) -> Person:
    pronoun, possessive = ("She", "her") if d.gender == "female" else ("He", "his")
    traits = rng.choice(_TRAITS, size=3, replace=False).tolist()
    kids = [o for o in group if o.role in ("son", "daughter")]
    parents = [o for o in group if o.role in ("husband", "wife")]
    if d.is_child:
        wake = 420 + 15 * int(rng.integers(-2, 3))
        bed = 1200 + 30 * int(rng.integers(0, 3)) + (60 if d.age >= 13 else 0)
        lifestyle = f"goes to bed around {spoken_clock(bed)}, wakes up around {spoken_clock(wake)}"
        preference = (
            "rides with " + possessive + " parents or walks with them to the metro"
        )
        driver = _pick(rng, [p.first for p in parents])
        description = (
            f"{d.first} is a {d.age}-year-old pupil at the School. {driver} usually drops "
            f"{'her' if d.gender == 'female' else 'him'} off in the morning and picks "
            f"{'her' if d.gender == 'female' else 'him'} up after class. {pronoun} "
            f"{_pick(rng, _CHILD_HOBBIES)}."
        )
    else:
        start = parse_work_time(d.work_time)[0]
        wake = start - 60 - 15 * int(rng.integers(0, 5))
        bed = wake - 450 - 30 * int(rng.integers(0, 3))
        lifestyle = f"goes to bed around {spoken_clock(bed)}, wakes up around {spoken_clock(wake)}"
        if d.age >= ELDERLY_AGE:
            lifestyle += ", takes a slow walk after lunch"
        elif rng.random() < 0.4:
            lifestyle += _pick(
                rng,
                [
                    ", works out before dinner",
                    ", cooks at home most evenings",
                    ", meets friends on Friday nights",
                    ", likes a long breakfast on weekends",
                ],
            )
        preference = _pick(
            rng,
            _DRIVER_PREFERENCES
            if d.licensed and vehicles > 0
            else _TRANSIT_PREFERENCES,
        )
        if not d.licensed:
            preference += "; does not drive"
        family = ""
        if d.role in ("husband", "wife"):
            partner = next(o for o in parents if o is not d)
            family = f" {pronoun} lives with {possessive} {'wife' if d.role == 'husband' else 'husband'} {partner.first}"
            if kids:
                names = " and ".join(k.first for k in kids)
                family += f" and {'their children' if len(kids) > 1 else 'their child'} {names}, and shares the school run"
            family += "."
        description = (
            f"{d.first} works as {_article(d.occupation)} {d.occupation} at the {d.work_facility}.{family} {pronoun} "
            f"{_pick(rng, _HOBBIES)}."
        )
    if friends:
        topic = _pick(rng, _CHILD_TOPICS if d.is_child else _TOPICS)
        description += f" {pronoun} likes to talk with {friends[0]} about {topic}"
        description += (
            f" and often sees {' and '.join(friends[1:])}." if len(friends) > 1 else "."
        )
    household_id = f"H{d.household + 1:0{len(str(n_households))}d}"
    return Person(
        name=d.name,
        gender=d.gender,
        age=d.age,
        family_role=d.role,
        household=household_id,
        household_vehicles=vehicles,
        licensed_driver=d.licensed,
        work_facility=d.work_facility,
        occupation=d.occupation,
        work_time=d.work_time,
        preferences_in_transportation=preference,
        innate=", ".join(traits),
        lifestyle=lifestyle,
        home_facility=home,
        household_income=income,
        friends=friends,
        other_description=description,
    )


# ---------------------------------------------------------------------------- LLM synthesis

EXAMPLE_PROFILE: dict[str, Any] = {
    "name": "Isabella Rodriguez",
    "gender": "female",
    "age": 34,
    "family_role": "single",
    "household": "H07",
    "household_vehicles": 1,
    "licensed_driver": True,
    "work_facility": "Coffee shop",
    "occupation": "barista",
    "work_time": "7:00-16:00",
    "preferences_in_transportation": "prefer to travel alone and safer routes",
    "innate": "friendly, outgoing, hospitable",
    "lifestyle": "goes to bed around 11pm, wakes up around 6am",
    "home_facility": "Uptown apartment",
    "household_income": "middle",
    "friends": ["Gloria Campbell", "Michael Chen"],
    "other_description": (
        "Isabella is a cafe owner who loves making people feel welcome and creating a relaxing "
        "atmosphere. She likes to discuss historical research with Gloria Campbell and learns "
        "from Michael Chen about artifact preservation."
    ),
}
"""The paper's Listing 1 in this package's format (shown to the LLM as an example)."""

MAX_ERRORS_SHOWN = 40
"""Domain errors sent back to the LLM per repair round (the rest are counted)."""


class PopulationBrief(BaseModel):
    """What the population synthesiser is asked for.

    Attributes:
        n: Number of people.
        targets: Statistics to meet (the shape of :data:`TARGET_STATISTICS`).
        facilities: Facility names of the scenario (homes and workplaces must be among them).
        match_statistics: Treat every statistic that misses its target as an error to repair.
    """

    n: int = Field(ge=1)
    targets: dict[str, dict[str, int]]
    facilities: list[str]
    match_statistics: bool = True


class PopulationProfiles(BaseModel):
    """The synthesiser's answer: every profile of the population."""

    people: list[Person]


def _targets_text(targets: Statistics) -> str:
    lines = []
    for category, counts in targets.items():
        parts = ", ".join(f"{key}: {count}" for key, count in counts.items())
        lines.append(f"- {category.replace('_', ' ')}: {parts}")
    return "\n".join(lines)


def render_population_prompt(brief: PopulationBrief) -> list[Message]:
    """Ask for ``brief.n`` narrative profiles meeting the target statistics."""
    system = (
        "You synthesise the resident population of a small town for an urban mobility "
        "simulation. Each person is a narrative profile: demographics plus a short, specific, "
        "varied description of character, habits and social ties that shapes how they travel."
    )
    user = f"""Create exactly {brief.n} people in {brief.targets["family_structure"]["total families"]} households.

Target statistics (counts of people unless stated; families are households):
{_targets_text(brief.targets)}

Rules:
- "young" means aged {ADULT_AGE} or more, "children" under {ADULT_AGE}; "elderly 60-75" counts adults aged 60 or more.
- household_income is counted per person and shared by every member of a household; so are home_facility and household_vehicles.
- A "single" lives alone. A household of 2 or more is a husband and a wife with their sons and daughters.
- A husband or son is male, a wife or daughter female. Children are sons or daughters, are not licensed drivers and have no work_facility (occupation "student", work_time null).
- A household owns no more vehicles than adults, and only if one of its adults is a licensed driver.
- Every adult works at one of the workplaces counted under workers per facility, with work_time "H:MM-H:MM".
- friends are 0 to {MAX_FRIENDS} full names of other people in this population.
- Facilities: {", ".join(brief.facilities)}. Homes are among: {", ".join(brief.targets["residents"])}.
- Names are unique full names. Vary the narratives; do not copy the example.

Example profile:
{json.dumps(EXAMPLE_PROFILE, ensure_ascii=False)}

Answer with {{"people": [ ...{brief.n} profiles... ]}}."""
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def validate_population_batch(
    brief: PopulationBrief, profiles: PopulationProfiles
) -> list[str]:
    """Domain checks of an answer: size, every population rule, and the target statistics."""
    population = Population.from_people(profiles.people, source="answer")
    errors: list[str] = []
    if len(population) != brief.n:
        errors.append(f"answer has {len(population)} people, expected {brief.n}")
    errors.extend(population_errors(population, brief.facilities))
    if brief.match_statistics:
        errors.extend(
            statistics_mismatches(population_statistics(population), brief.targets)
        )
    if len(errors) > MAX_ERRORS_SHOWN:
        hidden = len(errors) - MAX_ERRORS_SHOWN
        errors = [*errors[:MAX_ERRORS_SHOWN], f"... and {hidden} more errors"]
    return errors


def population_rule_policy(
    brief: PopulationBrief, rng: np.random.Generator
) -> PopulationProfiles:
    """The rule sampler (:func:`synthesize_population`) as the kind's rule policy."""
    population = synthesize_population(brief.n, rng, brief.facilities)
    return PopulationProfiles(people=list(population.people))


POPULATION_BATCH: DecisionKind[PopulationBrief, PopulationProfiles] = DecisionKind(
    name="PopulationBatch",
    context_type=PopulationBrief,
    output_schema=PopulationProfiles,
    render_prompt=render_population_prompt,
    rule_policy=population_rule_policy,
    validate=validate_population_batch,
)
"""The whole population in one decision: GATSim prompts GPT-4o once with the statistics."""


@dataclass(frozen=True)
class SynthesisReport:
    """A synthesised population and how it was reached.

    Attributes:
        population: The validated population.
        result: The brain's decision (outcome ``ok``, ``repaired`` or ``fallback``).
        brain: The brain's name (``"rules"`` or the LLM model).
    """

    population: Population
    result: DecisionResult
    brain: str

    def statistics(self) -> pd.DataFrame:
        """The population's statistics against the brief's targets."""
        return statistics_table(
            population_statistics(self.population),
            self.result.request.context.targets,
        )


def synthesize_with_brain(
    n: int,
    scenario: Scenario | Collection[str],
    *,
    brain: str | Brain | None = "rules",
    rng: np.random.Generator | int | None = None,
    match_statistics: bool = True,
    name: str | None = None,
    **brain_options: Any,
) -> SynthesisReport:
    """Synthesise ``n`` people through a brain answering :data:`POPULATION_BATCH`.

    With ``"rules"`` this is :func:`synthesize_population` (the same population for the same
    seed); with ``"llm:<model>"`` the LLM is prompted with :func:`proportional_targets`, its
    answer validated and repaired, and the rule sampler answers when it cannot be repaired.

    Args:
        n: Population size.
        scenario: The scenario (or its facility names).
        brain: Brain setting or a :class:`~mesa_llm_mobility.cognition.brain.Brain` (not closed
            here when passed in; its own generator then serves the rule policy).
        rng: Generator or seed for the rule policy of a brain built from a setting.
        match_statistics: Ask the LLM to meet every target exactly (mismatches are repaired).
        name: Population name (default ``"synthetic_<n>"``).
        **brain_options: Passed to :func:`~mesa_llm_mobility.cognition.settings.make_brain`
            (``api_base``, ``max_repairs``, ``ledger``, ...).
    """
    facilities = facility_names(scenario)
    brief = PopulationBrief(
        n=n,
        targets=proportional_targets(n),
        facilities=facilities,
        match_statistics=match_statistics,
    )
    request = DecisionRequest(POPULATION_BATCH, "population", brief)
    chosen = make_brain(brain, rng=rng, **brain_options)
    try:
        result = chosen.decide(request)
    finally:
        if chosen is not brain:
            chosen.close()
    label = name or f"synthetic_{n}"
    population = Population.from_people(
        result.output.people,
        name=label,
        source=f"{label}.json",
        description=f"{n} residents synthesised by {chosen.name} ({result.outcome}).",
    )
    logger.info("population synthesis by %s: %s", chosen.name, result.outcome)
    return SynthesisReport(
        validate_population(population, facilities), result, chosen.name
    )
