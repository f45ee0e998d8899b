"""Every result of the report from the pooled frames: detail tables and one flat dict of numbers.

:func:`analyse` computes the paper's results (Sec. 4) from an experiment's pooled frames
(:mod:`.experiment`) and returns them as a :class:`ReportData`; :attr:`ReportData.numbers`
holds each scalar under its key in :data:`~.paper_values.STATISTICS`. The report runs it on all
seeds pooled and on every seed alone (:mod:`.replicates`), so every number also has a
between-seed interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.analysis import (
    EVIDENCE_LEVELS,
    HIGH_URGENCY_LOW_DIRECTNESS,
    HOMOGENEOUS,
    LOW_URGENCY_HIGH_DIRECTNESS,
    QUADRANTS,
    QuadrantResult,
    block_comparisons,
    danger_appraisal,
    outcome_shares,
    revision_levels,
    urgency_directness,
)
from mesa_llm_mobility.evacuation.channels import (
    PropagationResult,
    channel_aucs,
    propagation,
)
from mesa_llm_mobility.evacuation.factor_models import factor_table, fit_factor_models
from mesa_llm_mobility.evacuation.knowledge_outcomes import (
    KNOWLEDGE_MEASURES,
    KnowledgeResult,
    knowers_vs_rescued,
    knowledge_outcomes,
    knowledge_rescue_test,
    outcomes_by_source,
    time_to_knowledge,
)
from mesa_llm_mobility.evacuation.revisions import (
    EXIT_SEEKING,
    THREAT_AVOIDANCE,
    goal_retention,
    returns_to_ordinary,
    shout_response,
    stimulus_revisions,
    urgency_goal_revisions,
)
from mesa_llm_mobility.evacuation.statistics import block_bootstrap_ci

GATES_CLOSING_S = 5.0
"""When the gates start closing (the default schedule: closing at 5 s, closed at 11.67 s)."""

RUN_MEASURES = (
    "evacuated_share",
    "high_urgency_low_directness_share",
    "low_urgency_high_directness_share",
)
"""Run-level measures compared between compositions."""


@dataclass
class ReportData:
    """The report's results for one set of runs (all seeds, or one)."""

    numbers: dict[str, float] = field(default_factory=dict)
    by_composition: pd.DataFrame | None = None
    knowledge: dict[str, KnowledgeResult] = field(default_factory=dict)
    by_source: pd.DataFrame | None = None
    time_to_knowledge: pd.DataFrame | None = None
    quadrants: QuadrantResult | None = None
    appraisal: pd.DataFrame | None = None
    per_run: pd.DataFrame | None = None
    comparisons: pd.DataFrame | None = None
    composition_intervals: pd.DataFrame | None = None
    revisions: pd.DataFrame | None = None
    urgency_revisions: pd.DataFrame | None = None
    stimuli: pd.DataFrame | None = None
    retention: pd.DataFrame | None = None
    propagation: PropagationResult | None = None
    factor_models: pd.DataFrame | None = None
    mismatch: pd.DataFrame | None = None


def _share(mask: pd.Series) -> float:
    return float(mask.mean()) if len(mask) else np.nan


def per_run_measures(
    pedestrians: pd.DataFrame, quadrants: QuadrantResult, run_keys: Sequence[str]
) -> pd.DataFrame:
    """One row per run: evacuated share and the mean per-pedestrian quadrant shares."""
    keys = list(run_keys)
    evacuated = pedestrians.groupby(keys)["outcome"].apply(
        lambda s: float((s == "evacuated").mean())
    )
    shares = quadrants.per_pedestrian.groupby(keys)[
        [HIGH_URGENCY_LOW_DIRECTNESS, LOW_URGENCY_HIGH_DIRECTNESS]
    ].mean()
    frame = pd.DataFrame({"evacuated_share": evacuated}).join(
        shares.rename(
            columns={
                HIGH_URGENCY_LOW_DIRECTNESS: "high_urgency_low_directness_share",
                LOW_URGENCY_HIGH_DIRECTNESS: "low_urgency_high_directness_share",
            }
        )
    )
    return frame.reset_index()


def composition_intervals(
    per_run: pd.DataFrame, measure: str, *, seed: int = 0
) -> pd.DataFrame:
    """Mean run-level ``measure`` per composition with its paired-block bootstrap interval.

    The paired blocks (with several seeds: every seed's blocks) are resampled with replacement
    (:func:`~.statistics.block_bootstrap_ci`, 2,000 draws), as for the paper's Fig. 7 intervals.
    """
    rows = []
    for composition, runs in per_run.groupby("composition"):
        by_block = runs.set_index(["seed", "block"])[measure]
        low, high = block_bootstrap_ci(by_block, seed=seed)
        rows.append(
            {
                "composition": composition,
                "measure": measure,
                "mean": float(by_block.mean()),
                "ci_low": low,
                "ci_high": high,
                "runs": int(by_block.notna().sum()),
            }
        )
    return pd.DataFrame(rows)


def _danger_numbers(appraisal: pd.DataFrame, numbers: dict[str, float]) -> None:
    homogeneous = appraisal.reindex([c for c in HOMOGENEOUS if c in appraisal.index])
    for level in EVIDENCE_LEVELS:
        rates = homogeneous[level].dropna()
        numbers[f"danger_gap_{level}"] = (
            float(rates.max() - rates.min()) if len(rates) > 1 else np.nan
        )
    for composition in ("H", "B"):
        numbers[f"danger_remembered_{composition}"] = (
            float(appraisal.loc[composition, "remembered"])
            if composition in appraisal.index
            else np.nan
        )


def _quadrant_numbers(q: QuadrantResult, numbers: dict[str, float]) -> None:
    numbers["urgency_median"] = q.urgency_median
    numbers["directness_median"] = q.directness_median
    numbers["share_high_urgency_high_directness"] = float(q.shares[QUADRANTS[0]])
    by = q.by_outcome
    for key, quadrant in (("hu_ld", QUADRANTS[1]), ("lu_hd", QUADRANTS[2])):
        for outcome in ("killed", "evacuated"):
            numbers[f"{key}_{outcome}"] = (
                float(by.loc[outcome, quadrant]) if outcome in by.index else np.nan
            )
    numbers["auc_hu_ld"] = float(q.auc_killed_vs_evacuated[QUADRANTS[1]])
    numbers["auc_lu_hd"] = 1.0 - float(q.auc_killed_vs_evacuated[QUADRANTS[2]])
    for outcome in ("evacuated", "killed", "unresolved"):
        for column in ("urgency", "directness"):
            numbers[f"centroid_{outcome}_{column}"] = (
                float(q.centroids.loc[outcome, column])
                if outcome in q.centroids.index
                else np.nan
            )


def _knowledge_numbers(data: ReportData, numbers: dict[str, float]) -> None:
    usable = data.knowledge["usable_exits_known"]
    numbers["evacuated_if_usable_known"] = usable.evacuated_share(True)
    numbers["evacuated_if_none_known"] = usable.evacuated_share(False)
    numbers["odds_ratio"] = usable.odds_ratio
    numbers["fisher_p"] = usable.p_value
    graded = usable.by_exits_known.set_index("exits_known")["evacuated_share"]
    for band, key in (("0", "0"), ("1", "1"), ("2+", "2plus")):
        numbers[f"evacuated_known_{key}"] = float(graded.get(band, np.nan))
    for prefix, measure in (
        ("exits_only", "exits_known"),
        ("any_sight", "usable_exits_known_any_sight"),
    ):
        result = data.knowledge[measure]
        numbers[f"{prefix}_evacuated_if_known"] = result.evacuated_share(True)
        numbers[f"{prefix}_evacuated_if_none"] = result.evacuated_share(False)
        numbers[f"{prefix}_odds_ratio"] = result.odds_ratio
    source = data.by_source.set_index("knowledge_source")
    for group, key in (
        ("observed", "observed"),
        ("told", "told"),
        ("system", "system"),
        ("only closed gate", "only_closed_gate"),
    ):
        numbers[f"rescued_{key}"] = (
            float(source.loc[group, "evacuated_share"])
            if group in source.index
            else np.nan
        )
    numbers["killed_only_closed_gate"] = (
        float(source.loc["only closed gate", "killed_share"])
        if "only closed gate" in source.index
        else np.nan
    )
    timing = (
        data.time_to_knowledge.set_index("outcome")
        if len(data.time_to_knowledge)
        else None
    )
    for outcome in ("evacuated", "killed"):
        numbers[f"median_first_usable_{outcome}"] = (
            float(timing.loc[outcome, "median_s"])
            if timing is not None and outcome in timing.index
            else np.nan
        )


def analyse(pooled: dict[str, pd.DataFrame], run_keys: Sequence[str]) -> ReportData:
    """Every result of the report for the runs in ``pooled``.

    Args:
        pooled: The pooled frames (``pedestrians``, ``decisions``, ``information``,
            ``shouts``, ``mismatch``) of the runs to analyse.
        run_keys: The columns naming a run.

    Returns:
        The detail tables and :attr:`ReportData.numbers`.
    """
    keys = list(run_keys)
    peds = pooled["pedestrians"]
    decisions = pooled["decisions"]
    information = pooled["information"]
    data = ReportData()
    n = data.numbers
    runs = int(peds.groupby(keys).ngroups)
    n["runs"] = runs
    n["pedestrians"] = len(peds)
    evaluated = decisions.dropna(subset=["urgency", "directness"])
    n["decisions_evaluated"] = len(evaluated)
    overall = outcome_shares(peds).iloc[0]
    for outcome in ("evacuated", "killed", "unresolved"):
        n[f"{outcome}_share"] = float(overall[f"{outcome}_share"])
    n["move_share"] = _share(decisions["action"] == "move")
    data.by_composition = outcome_shares(peds, "composition")
    # revisions
    levels = decisions["revision_level"]
    for level in ("goal", "plan", "execution"):
        n[f"{level}_revision_share"] = _share(levels == level)
    n["no_revision_share"] = _share(levels == "none")
    data.revisions = revision_levels(decisions)
    data.urgency_revisions = urgency_goal_revisions(decisions)
    by_threshold = data.urgency_revisions.set_index("threshold")
    n["goal_rate_large_urgency_change"] = float(by_threshold.loc[0.15, "rate_large"])
    n["goal_rate_small_urgency_change"] = float(by_threshold.loc[0.15, "rate_small"])
    for threshold in (0.10, 0.15, 0.20):
        n[f"risk_ratio_{threshold:.2f}"] = float(
            by_threshold.loc[threshold, "risk_ratio"]
        )
    data.stimuli = stimulus_revisions(decisions)
    stimuli = data.stimuli.set_index("stimulus")
    n["goal_rate_new_direct_evidence"] = float(
        stimuli.loc["new direct threat evidence", "goal"]
    )
    n["goal_rate_first_receipt"] = float(stimuli.loc["first peer information", "goal"])
    n["goal_rate_later_receipt"] = float(stimuli.loc["later peer information", "goal"])
    n["physical_plan_or_above"] = float(
        stimuli.loc["physical constraint", "plan_or_above"]
    )
    n["physical_goal"] = float(stimuli.loc["physical constraint", "goal"])
    data.retention = goal_retention(decisions)
    retained = data.retention.set_index("previous_goal")["retained"]
    n["retention_threat_avoidance"] = float(retained.get(THREAT_AVOIDANCE, np.nan))
    n["retention_exit_seeking"] = float(retained.get(EXIT_SEEKING, np.nan))
    n["returns_to_ordinary"] = returns_to_ordinary(decisions)
    # appraisal and urgency x directness
    data.appraisal = danger_appraisal(decisions)
    direct = decisions[decisions["evidence"] == "direct"]
    n["danger_direct_share"] = _share(direct["situation"] == "danger")
    _danger_numbers(data.appraisal, n)
    data.quadrants = urgency_directness(decisions, [*keys, "agent_id"])
    _quadrant_numbers(data.quadrants, n)
    data.per_run = per_run_measures(peds, data.quadrants, keys)
    data.composition_intervals = pd.concat(
        [composition_intervals(data.per_run, m) for m in RUN_MEASURES[1:]],
        ignore_index=True,
    )
    means = data.composition_intervals.set_index(["measure", "composition"])["mean"]
    for composition in HOMOGENEOUS:
        n[f"hu_ld_run_{composition}"] = float(
            means.get(("high_urgency_low_directness_share", composition), np.nan)
        )
    for composition in ("B", "H"):
        n[f"lu_hd_run_{composition}"] = float(
            means.get(("low_urgency_high_directness_share", composition), np.nan)
        )
    paired = data.per_run.assign(
        block=data.per_run["seed"].astype(str) + ":" + data.per_run["block"].astype(str)
    )
    data.comparisons = block_comparisons(paired, list(RUN_MEASURES))
    for other in ("D", "H"):
        hit = (
            data.comparisons[
                (data.comparisons["measure"] == "high_urgency_low_directness_share")
                & (data.comparisons["first"] == "B")
                & (data.comparisons["second"] == other)
            ]
            if len(data.comparisons)
            else data.comparisons
        )
        n[f"holm_p_hu_ld_B_{other}"] = (
            float(hit["p_holm"].iloc[0]) if len(hit) else np.nan
        )
    # exit knowledge
    data.knowledge = {m: knowledge_outcomes(peds, m) for m in KNOWLEDGE_MEASURES}
    data.by_source = outcomes_by_source(peds)
    data.time_to_knowledge = time_to_knowledge(peds)
    _knowledge_numbers(data, n)
    through_gate = peds["exit_used"].astype(str).str.startswith("gate")
    n["gate_evacuations_per_run"] = float(through_gate.sum()) / runs if runs else np.nan
    gate_leavers = peds[through_gate]
    n["last_gate_evacuation_s"] = (
        float(gate_leavers["evacuation_time_s"].max()) if len(gate_leavers) else np.nan
    )
    n["gate_evacuations_before_closing_share"] = _share(
        gate_leavers["evacuation_time_s"] < GATES_CLOSING_S
    )
    n["gate_evacuation_start_cells"] = len(
        gate_leavers[["start_x", "start_y"]].drop_duplicates()
    )
    knew = peds["usable_exits_known"] > 0
    n["usable_known_share"] = _share(knew)
    n["killed_if_none_known"] = _share(peds.loc[~knew, "outcome"] == "killed")
    n["only_closed_gate_share"] = _share(peds["knowledge_source"] == "only closed gate")
    rho = knowers_vs_rescued(peds, keys)
    n["spearman_rho"], n["spearman_p"] = rho.statistic, rho.p_value
    n["knowledge_rescue_p"] = knowledge_rescue_test(peds).p_value
    # channels
    for column, test in channel_aucs(peds).items():
        n[f"auc_{column}"] = test.statistic
        n[f"p_{column}"] = test.p_value
    data.propagation = propagation(information, peds, runs, keys)
    spread = data.propagation
    n["mean_senders_per_run"] = spread.mean_senders_per_run
    n["top_two_share"] = spread.top_two_share
    n["max_hops"] = (
        float(spread.hops.index.max()) if len(spread.hops.dropna()) else np.nan
    )
    n["observed_directly_share"] = (
        spread.observed_directly / len(peds) if len(peds) else np.nan
    )
    n["told_by_observer_share"] = (
        spread.told_by_observer / len(peds) if len(peds) else np.nan
    )
    n["shouts_heard_per_run"] = len(pooled["shouts"]) / runs if runs else np.nan
    n["exit_messages_per_run"] = spread.messages / runs if runs else np.nan
    response = shout_response(decisions, [*keys, "agent_id"])
    n["shout_response_share"] = (
        response["pedestrians"] / len(peds) if len(peds) else np.nan
    )
    n["shout_response_higher_urgency"] = response["higher_urgency_share"]
    n["shout_response_unsure"] = response["unsure_share"]
    n["shout_response_danger"] = response["danger"]
    # directional mismatch
    mismatch = pooled["mismatch"]
    away = (
        mismatch[mismatch["away_from_last_seen"].astype(bool)]
        if len(mismatch)
        else mismatch
    )
    n["mismatch_steps"] = len(mismatch)
    n["mismatch_rate"] = _share(away["mismatch"].astype(bool)) if len(away) else np.nan
    data.mismatch = away
    # factor models
    features = peds.merge(
        data.quadrants.per_pedestrian[[*keys, "agent_id", HIGH_URGENCY_LOW_DIRECTNESS]],
        on=[*keys, "agent_id"],
        how="left",
    ).rename(columns={HIGH_URGENCY_LOW_DIRECTNESS: "high_urgency_low_directness"})
    features["high_urgency_low_directness"] = features[
        "high_urgency_low_directness"
    ].fillna(0.0)
    data.factor_models = factor_table(fit_factor_models(features))
    for row in data.factor_models.itertuples(index=False):
        n[f"logit_r2_{row.group}"] = row.mcfadden_r2
        n[f"ols_r2_{row.group}"] = row.ols_r2
    return data
