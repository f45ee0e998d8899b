"""The LLM route of population synthesis: the :data:`POPULATION_BATCH` decision kind.

Its prompt states the target statistics, the population rules and the paper's Listing 1 as an
example; its answer, the whole profile list, is checked by the population's domain validation
and the statistics, errors go back to the LLM for repair, and the rule sampler
(:func:`~.sampler.synthesize_population`) is its rule policy (fallback).
:func:`synthesize_with_brain` runs it through any brain (``"rules"`` or ``"llm:<model>"``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
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
from mesa_llm_mobility.urban.population import (
    ADULT_AGE,
    MAX_FRIENDS,
    Person,
    Population,
    facility_names,
    population_errors,
    validate_population,
)
from mesa_llm_mobility.urban.synthesis.sampler import synthesize_population
from mesa_llm_mobility.urban.synthesis.statistics import (
    Statistics,
    population_statistics,
    proportional_targets,
    statistics_mismatches,
    statistics_table,
)

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition.brain import Brain
    from mesa_llm_mobility.urban.scenario import Scenario

logger = logging.getLogger(__name__)


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
