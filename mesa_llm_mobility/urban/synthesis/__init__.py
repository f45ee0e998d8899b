"""Population synthesis for the urban model: GATSim's Table 2 as data, a rule sampler and an LLM.

GATSim synthesises its 70 residents with GPT-4o, prompted with demographic statistics (paper,
section 4.1.2 and Table 2). This package offers both routes through one decision kind:

- :mod:`.statistics`: :data:`TARGET_STATISTICS`: Table 2 as data, and :func:`population_statistics`, which computes
  the same table from any :class:`~mesa_llm_mobility.urban.population.Population`;
- :mod:`.sampler`: :func:`synthesize_population`, a seeded rule sampler that matches the table exactly at
  ``n = 70`` and proportionally otherwise (:func:`proportional_targets`), with template
  narratives in the style of the paper's Listing 1 (names, occupations and phrases are package
  data, ``vocabularies/*.json``);
- :mod:`.population_batch`: :data:`POPULATION_BATCH`, a decision kind whose prompt states the target statistics and whose
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

from mesa_llm_mobility.urban.synthesis.population_batch import (
    EXAMPLE_PROFILE,
    MAX_ERRORS_SHOWN,
    POPULATION_BATCH,
    PopulationBrief,
    PopulationProfiles,
    SynthesisReport,
    population_rule_policy,
    render_population_prompt,
    synthesize_with_brain,
    validate_population_batch,
)
from mesa_llm_mobility.urban.synthesis.sampler import synthesize_population
from mesa_llm_mobility.urban.synthesis.statistics import (
    REFERENCE_SIZE,
    TARGET_STATISTICS,
    Statistics,
    largest_remainder,
    population_statistics,
    proportional_targets,
    statistics_mismatches,
    statistics_table,
)

__all__ = [
    "EXAMPLE_PROFILE",
    "MAX_ERRORS_SHOWN",
    "POPULATION_BATCH",
    "REFERENCE_SIZE",
    "TARGET_STATISTICS",
    "PopulationBrief",
    "PopulationProfiles",
    "Statistics",
    "SynthesisReport",
    "largest_remainder",
    "population_rule_policy",
    "population_statistics",
    "proportional_targets",
    "render_population_prompt",
    "statistics_mismatches",
    "statistics_table",
    "synthesize_population",
    "synthesize_with_brain",
    "validate_population_batch",
]
