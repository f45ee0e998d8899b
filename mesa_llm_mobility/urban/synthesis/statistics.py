"""GATSim's Table 2 as data, and the same table counted from any population.

:data:`TARGET_STATISTICS` is Table 2 (70 people) plus the text's 10 % elderly;
:func:`population_statistics` counts the same table from a
:class:`~mesa_llm_mobility.urban.population.Population`, :func:`statistics_table` and
:func:`statistics_mismatches` compare it with targets, and :func:`proportional_targets` scales
Table 2 to ``n`` people with largest-remainder rounding (:func:`largest_remainder`), keeping the
statistics consistent. How Table 2 is read is told in :mod:`mesa_llm_mobility.urban.synthesis`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from mesa_llm_mobility.urban.population import ELDERLY_AGE, Population

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
class HouseholdStructure:
    """Household counts by type: singles and couples with 0, 1 or 2 children."""

    singles: int
    couples: tuple[int, int, int]

    @property
    def n_couples(self) -> int:
        """Couples (households of two or more)."""
        return sum(self.couples)

    @property
    def n_children(self) -> int:
        """Children (in couples' households)."""
        return self.couples[1] + 2 * self.couples[2]


def structure_of(n: int) -> HouseholdStructure:
    """Household counts of ``n`` people: Table 2's structure apportioned, leftovers single."""
    family = TARGET_STATISTICS["family_structure"]
    people_by_size = largest_remainder(
        n, {size: int(size) * family[f"{size}-member"] for size in "1234"}
    )
    with_no, with_one, with_two = (people_by_size[size] // int(size) for size in "234")
    singles = n - 2 * with_no - 3 * with_one - 4 * with_two
    return HouseholdStructure(singles, (with_no, with_one, with_two))


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
    structure = structure_of(n)
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
