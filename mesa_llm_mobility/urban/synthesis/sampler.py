"""The rule sampler: seeded narrative profiles that match Table 2 (exactly at 70 people).

:func:`synthesize_population` builds households first (singles and couples with 0-2 children),
packs homes and incomes exactly onto :func:`~.statistics.proportional_targets`, assigns
vehicles, licences, workplaces and shifts, draws friendships and fills template narratives in
the style of the paper's Listing 1. Names, occupations, shifts and the narrative phrases are
package data (``vocabularies/*.json``), read once on first use by :func:`vocabulary`.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from mesa_llm_mobility.urban.clock import spoken_clock
from mesa_llm_mobility.urban.population import (
    ADULT_AGE,
    ELDERLY_AGE,
    Person,
    Population,
    facility_names,
    parse_work_time,
    validate_population,
)
from mesa_llm_mobility.urban.synthesis.statistics import (
    REFERENCE_SIZE,
    proportional_targets,
    structure_of,
)

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.scenario import Scenario

logger = logging.getLogger(__name__)


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    return value


@functools.cache
def vocabulary(name: str) -> Mapping[str, Any]:
    """A vocabulary of the rule sampler, read from ``vocabularies/<name>.json`` once.

    Args:
        name: ``"names"`` (female, male, surnames), ``"workplaces"`` (occupations and
            work_times by facility, with defaults) or ``"narratives"`` (traits, hobbies,
            topics, transport preferences, lifestyle habits; adult and child variants).

    Returns:
        The file's mapping, read-only, with lists as tuples in file order.
    """
    path = resources.files(__package__) / "vocabularies" / f"{name}.json"
    return _frozen(json.loads(path.read_text("utf-8")))


_FRIEND_DEGREE_PROBABILITIES = (0.15, 0.3, 0.35, 0.2)


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
    structure = structure_of(n)

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

    # work: every adult takes one of the targets' jobs; Factory and Office staff
    # "predominantly follow 8:00-17:00 schedules" (GATSim section 4.4): the choice is uniform,
    # and three work times in four of workplaces.json give that shift, which makes the paper's
    # day-1 morning peak
    work = vocabulary("workplaces")
    jobs = [
        facility
        for facility, count in targets["workers_per_facility"].items()
        for _ in range(count)
    ]
    for i, job in zip(adults, rng.permutation(jobs).tolist(), strict=True):
        drafts[i].work_facility = job
        drafts[i].occupation = _pick(
            rng, work["occupations"].get(job, work["default_occupations"])
        )
        drafts[i].work_time = _pick(
            rng, work["work_times"].get(job, work["default_work_times"])
        )

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
    names = vocabulary("names")
    surnames = rng.permutation(names["surnames"]).tolist()
    used: set[str] = set()
    for h, group in enumerate(members):
        surname = surnames[h % len(surnames)]
        for d in group:
            first_names = names["female" if d.gender == "female" else "male"]
            d.surname = surname
            for attempt in range(50):
                d.first = _pick(rng, first_names)
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
    words = vocabulary("narratives")
    pronoun, possessive = ("She", "her") if d.gender == "female" else ("He", "his")
    traits = rng.choice(words["traits"], size=3, replace=False).tolist()
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
            f"{_pick(rng, words['child_hobbies'])}."
        )
    else:
        start = parse_work_time(d.work_time)[0]
        wake = start - 60 - 15 * int(rng.integers(0, 5))
        bed = wake - 450 - 30 * int(rng.integers(0, 3))
        lifestyle = f"goes to bed around {spoken_clock(bed)}, wakes up around {spoken_clock(wake)}"
        if d.age >= ELDERLY_AGE:
            lifestyle += ", takes a slow walk after lunch"
        elif rng.random() < 0.4:
            lifestyle += _pick(rng, words["lifestyle_habits"])
        preference = _pick(
            rng,
            words["driver_preferences"]
            if d.licensed and vehicles > 0
            else words["transit_preferences"],
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
            f"{_pick(rng, words['hobbies'])}."
        )
    if friends:
        topic = _pick(rng, words["child_topics" if d.is_child else "topics"])
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
