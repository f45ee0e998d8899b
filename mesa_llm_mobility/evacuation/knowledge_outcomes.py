"""Exit knowledge against evacuation outcomes (paper Sec. 4.1.3, Fig. 9).

Over the pooled pedestrians (one row each with the columns of
:func:`~.exit_knowledge.exit_knowledge_measure`):

- :func:`knowledge_outcomes`: evacuation with and without usable-exit knowledge (Fisher's exact
  test; paper 89.5 % vs 1.05 %, odds ratio 800.7), graded by the number known (0 / 1 / 2+;
  paper 1.05 / 64.3 / 95.7 %), for the paper's measure, the exits-only variant and, for
  contrast, the measure that counts every sight (true by construction);
- :func:`outcomes_by_source`: rescue by information content and source (Fig. 9b; paper: seen
  91.2 % of 491, told by a peer 52.2 % of 23, only a closed gate 0 of 58, 87.9 % killed);
- :func:`time_to_knowledge`: time to the first usable-exit knowledge by outcome (Fig. 9c; paper
  medians 5.17 s evacuated, 32.33 s killed);
- :func:`knowers_vs_rescued`: Spearman's rho between knowers and rescued per run (paper 0.607,
  p = 1.0e-7 over 64 runs);
- :func:`knowledge_rescue_test`: usable-exit knowledge for the evacuated against the killed,
  Mann-Whitney (paper p = 7e-98).

The paper's group sizes follow from its percentages: 514 knew a usable exit (460 evacuated,
50 killed, 4 unresolved) and 190 did not (2, 152, 36); of the knowers 491 had seen one
(448 evacuated) and 23 only heard of one (12); of the others 58 knew only a closed gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.analysis import outcome_shares
from mesa_llm_mobility.evacuation.exit_knowledge import KNOWLEDGE_SOURCES
from mesa_llm_mobility.evacuation.statistics import (
    RankTest,
    fisher_exact_2x2,
    mann_whitney,
    spearman,
)

KNOWLEDGE_MEASURES = {
    "usable_exits_known": "usable exits known before the final approach (the paper's measure)",
    "exits_known": "exits known before the final approach (the three that never close)",
    "usable_exits_known_any_sight": "usable openings ever seen (true by construction)",
}
"""Knowledge columns and what they count."""


@dataclass(frozen=True)
class KnowledgeResult:
    """Evacuation by exit knowledge for one measure.

    Attributes:
        measure: The knowledge column.
        by_exits_known: Outcome shares by the number known (``0``, ``1``, ``2+``).
        table: ``[[knew & evacuated, knew & not], [none & evacuated, none & not]]``.
        odds_ratio: Fisher's sample odds ratio of that table.
        p_value: Fisher's exact two-sided p-value.
    """

    measure: str
    by_exits_known: pd.DataFrame
    table: list[list[int]]
    odds_ratio: float
    p_value: float

    def evacuated_share(self, knew: bool) -> float:
        """Evacuated share of those who knew (``True``) or did not know an exit."""
        evacuated, other = self.table[0] if knew else self.table[1]
        return evacuated / (evacuated + other) if evacuated + other else np.nan


def exits_known_band(count: pd.Series) -> pd.Series:
    """``0``, ``1`` or ``2+`` for a count of exits known."""
    return pd.Series(
        np.where(count >= 2, "2+", count.astype(int).astype(str)), index=count.index
    )


def knowledge_outcomes(
    pedestrians: pd.DataFrame, measure: str = "usable_exits_known"
) -> KnowledgeResult:
    """Evacuation by the exits known under ``measure``, with Fisher's exact test.

    Args:
        pedestrians: Pooled pedestrians with ``outcome`` and the ``measure`` column.
        measure: One of :data:`KNOWLEDGE_MEASURES`.

    Returns:
        The graded shares, the 2 x 2 table and Fisher's test.
    """
    peds = pedestrians.assign(exits_known_band=exits_known_band(pedestrians[measure]))
    knew = peds[measure] > 0
    evacuated = peds["outcome"] == "evacuated"
    table = [
        [int((knew & evacuated).sum()), int((knew & ~evacuated).sum())],
        [int((~knew & evacuated).sum()), int((~knew & ~evacuated).sum())],
    ]
    fisher = fisher_exact_2x2(table)
    graded = outcome_shares(peds, "exits_known_band").rename(
        columns={"exits_known_band": "exits_known"}
    )
    return KnowledgeResult(measure, graded, table, fisher.odds_ratio, fisher.p_value)


def outcomes_by_source(pedestrians: pd.DataFrame) -> pd.DataFrame:
    """Outcome shares by information source (:data:`~.exit_knowledge.KNOWLEDGE_SOURCES`)."""
    frame = outcome_shares(pedestrians, "knowledge_source")
    order = {g: k for k, g in enumerate(KNOWLEDGE_SOURCES)}
    return frame.sort_values(
        "knowledge_source", key=lambda s: s.map(order)
    ).reset_index(drop=True)


def time_to_knowledge(pedestrians: pd.DataFrame) -> pd.DataFrame:
    """Time to the first usable-exit knowledge among those who acquired it, by outcome.

    Returns:
        One row per outcome: ``outcome, n, median_s, mean_s, q25_s, q75_s``.
    """
    known = pedestrians.dropna(subset=["first_usable_s"])
    rows = []
    for outcome, times in known.groupby("outcome")["first_usable_s"]:
        rows.append(
            {
                "outcome": outcome,
                "n": len(times),
                "median_s": float(times.median()),
                "mean_s": float(times.mean()),
                "q25_s": float(times.quantile(0.25)),
                "q75_s": float(times.quantile(0.75)),
            }
        )
    return pd.DataFrame(rows)


def knowers_vs_rescued(pedestrians: pd.DataFrame, run_keys: Sequence[str]) -> RankTest:
    """Spearman's rho between the pedestrians who knew a usable exit and the rescued, per run."""
    per_run = pedestrians.groupby(list(run_keys)).agg(
        knowers=("usable_exits_known", lambda s: int((s > 0).sum())),
        rescued=("outcome", lambda s: int((s == "evacuated").sum())),
    )
    return spearman(per_run["knowers"], per_run["rescued"])


def knowledge_rescue_test(pedestrians: pd.DataFrame) -> RankTest:
    """Usable-exit knowledge (known or not) of the evacuated against the killed: AUC and p."""
    knew = (pedestrians["usable_exits_known"] > 0).astype(float)
    return mann_whitney(
        knew[pedestrians["outcome"] == "evacuated"],
        knew[pedestrians["outcome"] == "killed"],
    )
