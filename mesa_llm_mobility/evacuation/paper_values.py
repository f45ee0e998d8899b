"""Every statistic the report computes, with its label, format and the paper's value.

:data:`STATISTICS` is the one registry the report (:mod:`.report`) and the documentation page
(:mod:`.experiment_doc`) read: a key of the report's numbers -> what it measures, how to print
it, the paper's value (GLM LLM agents, 8 x 8 design, 704 pedestrians; ``None`` when the paper
gives none) and where in the paper it is. Shares are fractions; counts that grow with the
number of pedestrians are given as shares of the pedestrians (the paper's 311 of 704 as 0.442).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RELATIVE_AGREEMENT = 0.10
"""Without a between-seed interval, a value within this relative distance of the paper's agrees."""

SIGNIFICANCE = 0.05
"""Two p-values agree when both are below it or both are not."""


@dataclass(frozen=True)
class Statistic:
    """One reported statistic.

    Attributes:
        label: What it measures.
        kind: ``share`` (printed as a percentage), ``number``, ``p`` (a p-value) or ``count``.
        paper: The paper's value (``None``: the paper gives none).
        section: Where the paper reports it.
        paper_text: The paper's value as printed when it is not one number (e.g. a range).
        comparable: Whether ours can be compared with the paper's (not for counts that grow
            with the number of runs).
    """

    label: str
    kind: str
    paper: float | None
    section: str
    paper_text: str | None = None
    comparable: bool = True

    def clip(self, low: float, high: float) -> tuple[float, float]:
        """A t-interval kept within what the statistic can be ([0, 1] for shares and p)."""
        if math.isnan(low) or math.isnan(high):
            return low, high
        if self.kind in ("share", "p"):
            return min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)
        if self.kind == "count":
            return max(low, 0.0), max(high, 0.0)
        return low, high

    def agrees(
        self, ours: float, low: float = math.nan, high: float = math.nan
    ) -> bool | None:
        """Whether ``ours`` agrees with the paper's value (``None``: nothing to compare).

        A p-value agrees when both are on the same side of 0.05 (their size grows with the
        number of pedestrians). Otherwise, with a between-seed interval ``[low, high]``, the
        paper's value must lie inside it; without one, ``ours`` must lie within
        :data:`RELATIVE_AGREEMENT` of the paper's value.
        """
        if self.paper is None or not self.comparable or math.isnan(ours):
            return None
        if self.kind == "p":
            return (ours < SIGNIFICANCE) == (self.paper < SIGNIFICANCE)
        if not math.isnan(low) and not math.isnan(high):
            return low <= self.paper <= high
        return abs(ours - self.paper) <= RELATIVE_AGREEMENT * abs(self.paper)

    def format(self, value: float | None) -> str:
        """``value`` printed for this statistic (``n/a`` for a missing one)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "n/a"
        if isinstance(value, float) and math.isinf(value):
            return "inf"
        if self.kind == "share":
            return f"{100 * value:.1f} %"
        if self.kind == "p":
            return f"{value:.2g}"
        if self.kind == "count":
            return f"{value:,.0f}"
        return f"{value:.3f}"

    def paper_string(self) -> str:
        """The paper's value as printed (``-`` when it gives none)."""
        if self.paper_text is not None:
            return self.paper_text
        return "-" if self.paper is None else self.format(self.paper)


def _s(
    label: str, paper: float | None, section: str, text: str | None = None
) -> Statistic:
    return Statistic(label, "share", paper, section, text)


def _n(
    label: str, paper: float | None, section: str, text: str | None = None
) -> Statistic:
    return Statistic(label, "number", paper, section, text)


def _p(label: str, paper: float | None, section: str) -> Statistic:
    return Statistic(label, "p", paper, section)


def _c(
    label: str, paper: float | None, section: str, *, comparable: bool = True
) -> Statistic:
    return Statistic(label, "count", paper, section, comparable=comparable)


S41, S411, S412, S413, S414 = "4.1", "4.1.1", "4.1.2", "4.1.3", "4.1.4"

STATISTICS: dict[str, Statistic] = {
    # outcomes
    "pedestrians": _c("pedestrians", 704, S41, comparable=False),
    "decisions_evaluated": _c(
        "decisions after the initial ones", 10947, S411, comparable=False
    ),
    "evacuated_share": _s("evacuated", 0.656, S41),
    "killed_share": _s("killed (reached by the threat)", 0.287, S41),
    "unresolved_share": _s("unresolved at 240 s", 0.057, S41),
    "move_share": _s("decisions selecting movement", 0.998, "abstract"),
    # revisions (Fig. 6)
    "goal_revision_share": _s(
        "goal-level revisions (ours: highest level of the epoch)", 0.088, S411
    ),
    "plan_revision_share": _s(
        "plan-level revisions (ours: highest level of the epoch)", 0.645, S411
    ),
    "execution_revision_share": _s(
        "execution-level revisions (ours: highest level)", 0.099, S411
    ),
    "no_revision_share": _s("decisions retaining the previous one", None, S411),
    "goal_rate_large_urgency_change": _s(
        "goal revision, absolute urgency change >= 0.15", 0.586, S411
    ),
    "goal_rate_small_urgency_change": _s(
        "goal revision, absolute urgency change < 0.15", 0.043, S411
    ),
    "risk_ratio_0.10": _n(
        "risk ratio of goal revision, threshold 0.10", None, S411, "12.27-14.37"
    ),
    "risk_ratio_0.15": _n(
        "risk ratio of goal revision, threshold 0.15",
        0.586 / 0.043,
        S411,
        "13.6 (58.6 / 4.3)",
    ),
    "risk_ratio_0.20": _n(
        "risk ratio of goal revision, threshold 0.20", None, S411, "12.27-14.37"
    ),
    "goal_rate_new_direct_evidence": _s(
        "goal revision with new direct threat evidence", 0.441, S411
    ),
    "goal_rate_first_receipt": _s(
        "goal revision on first receipt of peer information", 0.376, S411
    ),
    "goal_rate_later_receipt": _s(
        "goal revision on later receipt of peer information", 0.063, S411
    ),
    "physical_plan_or_above": _s(
        "physical constraint: plan-level revision or above", 0.543, S411
    ),
    "physical_goal": _s("physical constraint: goal-level revision", 0.076, S411),
    "retention_threat_avoidance": _n(
        "threat avoidance kept at the next decision", 0.982, S411
    ),
    "retention_exit_seeking": _n(
        "movement toward an exit kept at the next decision", 0.931, S411
    ),
    "returns_to_ordinary": _c("pedestrians returning to ordinary activity", 0, S411),
    # appraisal
    "danger_direct_share": _s("danger appraisal with a direct sighting", 0.996, S412),
    "danger_gap_none": _n(
        "danger-rate gap across the 5 homogeneous, no evidence", 0.002, S412
    ),
    "danger_gap_remembered": _n(
        "danger-rate gap across the 5 homogeneous, remembered", 0.265, S412
    ),
    "danger_gap_direct": _n(
        "danger-rate gap across the 5 homogeneous, direct", 0.033, S412
    ),
    "danger_remembered_H": _s("danger appraisal, remembered evidence, H", 0.528, S412),
    "danger_remembered_B": _s("danger appraisal, remembered evidence, B", 0.263, S412),
    # urgency x directness (Fig. 7)
    "urgency_median": _n("pooled median urgency", 0.60, S412),
    "directness_median": _n("pooled median directness", 0.606, S412),
    "share_high_urgency_high_directness": _s(
        "decisions with high urgency, high directness", 0.325, S412
    ),
    "hu_ld_killed": _s(
        "mean share of high-urgency low-directness decisions, killed", 0.316, S412
    ),
    "hu_ld_evacuated": _s(
        "mean share of high-urgency low-directness decisions, evacuated", 0.070, S412
    ),
    "auc_hu_ld": _n("AUC of that share, killed vs evacuated", 0.839, S412),
    "lu_hd_evacuated": _s(
        "mean share of low-urgency high-directness decisions, evacuated", 0.629, S412
    ),
    "lu_hd_killed": _s(
        "mean share of low-urgency high-directness decisions, killed", 0.150, S412
    ),
    "auc_lu_hd": _n("AUC of that share, evacuated vs killed", 0.802, S412),
    "centroid_evacuated_urgency": _n("centroid urgency, evacuated", 0.358, S412),
    "centroid_evacuated_directness": _n("centroid directness, evacuated", 0.867, S412),
    "centroid_killed_urgency": _n("centroid urgency, killed", 0.653, S412),
    "centroid_killed_directness": _n("centroid directness, killed", 0.630, S412),
    "centroid_unresolved_urgency": _n("centroid urgency, unresolved", 0.587, S412),
    "centroid_unresolved_directness": _n(
        "centroid directness, unresolved", 0.416, S412
    ),
    "hu_ld_run_A": _s("run-level high-urgency low-directness share, A", 0.2945, S412),
    "hu_ld_run_B": _s("run-level high-urgency low-directness share, B", 0.1141, S412),
    "hu_ld_run_C": _s("run-level high-urgency low-directness share, C", 0.2252, S412),
    "hu_ld_run_D": _s("run-level high-urgency low-directness share, D", 0.3433, S412),
    "hu_ld_run_H": _s("run-level high-urgency low-directness share, H", 0.3332, S412),
    "lu_hd_run_B": _s("run-level low-urgency high-directness share, B", 0.3108, S412),
    "lu_hd_run_H": _s("run-level low-urgency high-directness share, H", 0.1272, S412),
    "holm_p_hu_ld_B_D": _p(
        "Holm p, high-urgency low-directness share, B vs D", 0.078, S412
    ),
    "holm_p_hu_ld_B_H": _p(
        "Holm p, high-urgency low-directness share, B vs H", 0.078, S412
    ),
    # exit knowledge (Fig. 9)
    "evacuated_if_usable_known": _s("evacuated, knew a usable exit", 0.895, S413),
    "evacuated_if_none_known": _s("evacuated, knew none", 0.0105, S413),
    "killed_if_none_known": _s("killed, knew none", 0.800, S413),
    "usable_known_share": _s(
        "pedestrians who knew a usable exit",
        514 / 704,
        S413,
        "73.0 % (514, from its shares)",
    ),
    "odds_ratio": _n("Fisher odds ratio, knowledge vs evacuation", 800.7, S413),
    "fisher_p": _p("Fisher p", 6.1e-118, S413),
    "knowledge_rescue_p": _p(
        "Mann-Whitney p, knowledge of evacuated vs killed", 7e-98, S413
    ),
    "evacuated_known_0": _s("evacuated, 0 usable exits known", 0.0105, S413),
    "evacuated_known_1": _s("evacuated, 1 usable exit known", 0.643, S413),
    "evacuated_known_2plus": _s(
        "evacuated, 2+ usable exits known", 0.957, S413, "95.7 % (2)"
    ),
    "exits_only_evacuated_if_known": _s(
        "exits only: evacuated, knew an exit", None, S413
    ),
    "exits_only_evacuated_if_none": _s("exits only: evacuated, knew none", None, S413),
    "exits_only_odds_ratio": _n("exits only: Fisher odds ratio", None, S413),
    "any_sight_evacuated_if_none": _s(
        "every sight counted: evacuated, knew none", None, S413
    ),
    "any_sight_odds_ratio": _n("every sight counted: Fisher odds ratio", None, S413),
    "rescued_observed": _s("rescued, saw a usable exit", 0.912, S413),
    "rescued_told": _s("rescued, told of one by a peer only", 0.522, S413),
    "rescued_system": _s("rescued, given one by the system only", None, "Fig. 9b"),
    "rescued_only_closed_gate": _s("rescued, knew only a closed gate", 0.0, S413),
    "killed_only_closed_gate": _s("killed, knew only a closed gate", 0.879, S413),
    "only_closed_gate_share": _s(
        "pedestrians who knew only a closed gate", 58 / 704, S413, "8.2 % (58)"
    ),
    "median_first_usable_evacuated": _n(
        "median s to usable-exit knowledge, evacuated", 5.17, S413
    ),
    "median_first_usable_killed": _n(
        "median s to usable-exit knowledge, killed", 32.33, S413
    ),
    "gate_evacuations_per_run": _n(
        "evacuations through the closing entrance gates per run",
        None,
        S413,
        "about 1 (Fig. 8's run: 'merely one person')",
    ),
    "last_gate_evacuation_s": _n(
        "latest evacuation through a gate (s; gates closed at 11.67 s)", None, S413
    ),
    "gate_evacuations_before_closing_share": _s(
        "gate evacuations before the gates start closing (5 s)", None, S413
    ),
    "gate_evacuation_start_cells": _c(
        "distinct start cells of the pedestrians who left through a gate", None, S413
    ),
    "spearman_rho": _n("Spearman rho, knowers vs rescued per run", 0.607, S413),
    "spearman_p": _p("Spearman p", 1.0e-7, S413),
    # channels (Fig. S1)
    "auc_shouts_reached": _n(
        "AUC, pedestrians reached by own shouts, killed vs evacuated", 0.808, S413
    ),
    "p_shouts_reached": _p("Mann-Whitney p of that AUC", 6e-42, S413),
    "auc_shouters_heard": _n("AUC, shouters heard, killed vs evacuated", 0.791, S413),
    "p_shouters_heard": _p("Mann-Whitney p of that AUC", 2e-34, S413),
    "auc_exit_info_receivers": _n(
        "AUC, pedestrians told of an exit, evacuated vs killed", 0.651, "Fig. S1"
    ),
    "mean_senders_per_run": _n("exit-information senders per run", 2.1, S413),
    "top_two_share": _s(
        "two most active senders' share of receiving relations", 0.901, S413
    ),
    "max_hops": _c("hops of exit information (max)", 1, S413),
    "observed_directly_share": _s(
        "pedestrians who saw an opening themselves", 591 / 704, S413, "83.9 % (591)"
    ),
    "told_by_observer_share": _s(
        "pedestrians told of an exit by an observer", 64 / 704, S413, "9.1 % (64)"
    ),
    "shout_response_share": _s(
        "pedestrians: first shout, previously normal, no threat evidence",
        311 / 704,
        S413,
        "44.2 % (311)",
    ),
    "shout_response_higher_urgency": _s(
        "... of them reporting higher urgency", 0.920, S413
    ),
    "shout_response_unsure": _s("... of them appraising unsure", 0.817, S413),
    "shout_response_danger": _c("... of them appraising danger", 1, S413),
    "shouts_heard_per_run": _n(
        "distinct (listener, shouter) pairs per run", None, S413
    ),
    "exit_messages_per_run": _n("exit-information messages per run", None, S413),
    # directional mismatch
    "mismatch_steps": _c(
        "first steps evaluated (threat avoidance, remembered evidence)", None, "3.2"
    ),
    "mismatch_rate": _s(
        "directional mismatch among steps away from the last sighting", None, "3.2"
    ),
    # factor models
    "logit_r2_information": _n("McFadden R2, information", 0.6650, S413),
    "logit_r2_affect": _n("McFadden R2, affect", 0.3541, S413),
    "logit_r2_geometry": _n("McFadden R2, geometry", 0.0537, S413),
    "logit_r2_personality": _n("McFadden R2, personality", 0.0036, S413),
    "logit_r2_combined": _n("McFadden R2, combined", 0.7020, S413),
    "ols_r2_geometry": _n("R2 of log evacuation time, geometry", 0.6608, S414),
    "ols_r2_information": _n("R2 of log evacuation time, information", 0.6864, S414),
    "ols_r2_affect": _n("R2 of log evacuation time, affect", 0.6859, S414),
    "ols_r2_personality": _n("R2 of log evacuation time, personality", 0.0031, S414),
    "ols_r2_combined": _n("R2 of log evacuation time, combined", 0.8738, S414),
}
"""Key of the report's numbers -> :class:`Statistic`."""
