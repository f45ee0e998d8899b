"""The experiment's analysis tables, computed from the run directories' tables (paper Sec. 4).

:func:`run_tables_for_analysis` turns one run's tables into tidy frames:

- pedestrians: one row each with ``outcome`` (``evacuated``, ``killed`` for the paper's
  "reached", ``unresolved``), ``evacuation_time_s``, the exit knowledge of
  :func:`~.exit_knowledge.exit_knowledge_measure` (known before the final approach, the
  exits-only variant, the source), the communication degrees (``shouters_heard``,
  ``shouts_reached``, ``exit_info_senders``, ``exit_info_receivers``), when threat evidence
  was first recorded, and mean urgency and fear;
- decisions: every decision after the initial one (an *epoch*, :func:`~.revisions.decision_epochs`)
  with its ``urgency``, ``directness`` over the following 10 s, threat ``evidence`` (``none``,
  ``remembered``, ``direct``), goal category and stimuli, the brain's ``brain_outcome`` and the
  pedestrian's ``outcome``;
- information: every exit-information message; shouts: every (listener, shouter) pair heard;
- mismatch: the first executed steps of threat-avoidance decisions on remembered evidence
  (:mod:`.threat_mismatch`).

The pooled functions here (:func:`outcome_shares`, :func:`urgency_directness`,
:func:`danger_appraisal`, :func:`revision_levels`, :func:`block_comparisons`) compute the
paper's results over the pooled frames of every run; exit knowledge is related to outcomes in
:mod:`.exit_knowledge`, the channels in :mod:`.channels`, the revisions in :mod:`.revisions`,
the factor models in :mod:`.factor_models`; the statistics are in :mod:`.statistics`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.exit_knowledge import (
    KnowledgeCutoff,
    exit_knowledge_measure,
    mark_adjacent,
)
from mesa_llm_mobility.evacuation.outputs import (
    directness_after,
    pedestrian_track,
    track_step_lengths,
)
from mesa_llm_mobility.evacuation.plaza import Plaza, load_plaza
from mesa_llm_mobility.evacuation.revisions import decision_epochs
from mesa_llm_mobility.evacuation.statistics import auc, paired_comparisons
from mesa_llm_mobility.evacuation.threat_mismatch import mismatch_steps
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND

OUTCOME_NAMES = {
    "evacuated": "evacuated",
    "reached": "killed",
    "unresolved": "unresolved",
}
"""Run-table outcomes -> the paper's words."""

OUTCOMES = ("evacuated", "killed", "unresolved")
HOMOGENEOUS = ("A", "B", "C", "D", "H")
"""The five homogeneous compositions the paper compares pairwise within blocks."""

EVIDENCE_LEVELS = ("none", "remembered", "direct")
HIGH_URGENCY_LOW_DIRECTNESS = "high urgency, low directness"
LOW_URGENCY_HIGH_DIRECTNESS = "low urgency, high directness"
QUADRANTS = (
    "high urgency, high directness",
    HIGH_URGENCY_LOW_DIRECTNESS,
    LOW_URGENCY_HIGH_DIRECTNESS,
    "low urgency, low directness",
)
SIGHTING_EVENTS = ("sighting_adversary", "sighting_casualty")


@dataclass(frozen=True)
class RunAnalysis:
    """One run's analysis frames (see the module docstring)."""

    pedestrians: pd.DataFrame
    decisions: pd.DataFrame
    information: pd.DataFrame
    shouts: pd.DataFrame
    mismatch: pd.DataFrame


def gate_closed_step(events: pd.DataFrame) -> float:
    """The step at which the gates closed (``inf`` when they never did in the run)."""
    closed = events[
        (events["event"] == "gate_state") & events["detail"].str.endswith(":closed")
    ]
    return float(closed["step"].min()) if len(closed) else float("inf")


def decision_directness(
    positions: pd.DataFrame,
    decisions: pd.DataFrame,
    pedestrians: pd.DataFrame,
    cell_size_m: float,
) -> pd.Series:
    """Directness over the 10 s after each decision (aligned with ``decisions``; NaN if none)."""
    peds = positions[positions["kind"] == "pedestrian"].sort_values(
        ["agent_id", "step"]
    )
    values = pd.Series(np.nan, index=decisions.index, dtype=float)
    for info in pedestrians.itertuples(index=False):
        mine = decisions[decisions["agent_id"] == info.agent_id]
        if not len(mine):
            continue
        track = pedestrian_track(peds, info.agent_id, info.resolved_step)
        xy = track[["x", "y"]].to_numpy(float)
        result = directness_after(
            track["step"].to_numpy(),
            xy,
            track_step_lengths(xy, cell_size_m),
            mine["applied_step"].tolist(),
            cell_size_m,
        )
        values.loc[mine.index] = [np.nan if v is None else v for v in result]
    return values


def threat_evidence(decisions: pd.DataFrame) -> pd.Series:
    """``direct`` (A or D in view), ``remembered`` (an earlier sighting) or ``none``."""
    return pd.Series(
        np.where(
            decisions["sees_threat"].astype(bool),
            "direct",
            np.where(decisions["remembered_threat"].astype(bool), "remembered", "none"),
        ),
        index=decisions.index,
    )


def _degree(pairs: pd.DataFrame, node: str, other: str) -> pd.Series:
    """Distinct ``other`` per ``node`` of a pair table."""
    if not len(pairs):
        return pd.Series(dtype=int)
    return pairs.drop_duplicates([node, other]).groupby(node)[other].nunique()


def communication_degrees(
    shouts: pd.DataFrame, information: pd.DataFrame, agent_ids: pd.Series
) -> pd.DataFrame:
    """Per pedestrian: distinct shouters heard, listeners reached, informants, receivers told.

    System-provided exit information has no sender and is left out.
    """
    peer = information[information["sender_id"].notna()]
    out = pd.DataFrame({"agent_id": agent_ids.to_numpy()})
    for column, degree in (
        ("shouters_heard", _degree(shouts, "listener_id", "shouter_id")),
        ("shouts_reached", _degree(shouts, "shouter_id", "listener_id")),
        ("exit_info_senders", _degree(peer, "receiver_id", "sender_id")),
        ("exit_info_receivers", _degree(peer, "sender_id", "receiver_id")),
    ):
        out[column] = out["agent_id"].map(degree).fillna(0).astype(int)
    return out


def shout_pairs(events: pd.DataFrame) -> pd.DataFrame:
    """``step, listener_id, shouter_id`` of every first hearing (the ``shout_heard`` events)."""
    heard = events[events["event"] == "shout_heard"]
    return pd.DataFrame(
        {
            "step": heard["step"].astype(int).to_numpy(),
            "listener_id": heard["agent_id"].astype(int).to_numpy(),
            "shouter_id": heard["other_id"].astype(int).to_numpy(),
        }
    )


def pedestrian_features(
    tables: dict[str, pd.DataFrame],
    knowledge: pd.DataFrame,
    shouts: pd.DataFrame,
) -> pd.DataFrame:
    """One row per pedestrian: outcome, time, geometry, knowledge, degrees, evidence, affect."""
    pedestrians = tables["pedestrians"]
    events = tables["events"]
    positions = tables["positions"]
    peds = pedestrians[
        [
            "agent_id",
            "archetype",
            "start_x",
            "start_y",
            "outcome",
            "resolved_step",
            "exit_used",
            "shortest_exit_m",
        ]
    ].copy()
    # a run where nobody resolved stores the column as None objects
    peds["resolved_step"] = pd.to_numeric(peds["resolved_step"], errors="coerce")
    peds["outcome"] = peds["outcome"].map(OUTCOME_NAMES)
    # one string type whether or not anybody left (runs pool with the same column types)
    peds["exit_used"] = pd.array(
        [None if pd.isna(v) else str(v) for v in peds["exit_used"]], dtype="string"
    )
    peds["evacuation_time_s"] = np.where(
        peds["outcome"] == "evacuated",
        peds["resolved_step"].astype(float) / STEPS_PER_SECOND,
        np.nan,
    )
    peds = peds.merge(knowledge, on="agent_id", how="left")
    peds = peds.merge(
        communication_degrees(shouts, tables["exit_information"], peds["agent_id"]),
        on="agent_id",
    )
    sighted = events[events["event"].isin(SIGHTING_EVENTS)]
    first = sighted.groupby("agent_id")["step"].min()
    first_s = peds["agent_id"].map(first) / STEPS_PER_SECOND
    peds["threat_evidence"] = first_s.notna()
    peds["threat_evidence_s"] = first_s.fillna(0.0)
    peds["first_threat_evidence_s"] = first_s
    walking = positions[positions["kind"] == "pedestrian"].merge(
        peds[["agent_id", "resolved_step"]], on="agent_id"
    )
    walking = walking[
        walking["resolved_step"].isna() | (walking["step"] <= walking["resolved_step"])
    ]
    peds["mean_fear"] = peds["agent_id"].map(walking.groupby("agent_id")["fear"].mean())
    peds["mean_urgency"] = peds["agent_id"].map(
        tables["decisions"].groupby("agent_id")["urgency"].mean()
    )
    return peds


def run_tables_for_analysis(
    tables: dict[str, pd.DataFrame],
    *,
    cell_size_m: float = 0.4,
    plaza: Plaza | None = None,
) -> RunAnalysis:
    """One run's analysis frames from its tables (as :func:`~.run_files.run_tables` names them).

    Args:
        tables: ``positions, decisions, events, pedestrians, opening_observations,
            exit_information``.
        cell_size_m: The plaza's cell size.
        plaza: The run's plaza (default: the reference plaza); for the Moore neighbourhoods of
            the openings of runs recorded without ``adjacent``, and the sight lines of the
            mismatch analysis.

    Returns:
        The pedestrian, decision, information, shout and mismatch frames.
    """
    plaza = plaza if plaza is not None else load_plaza()
    decisions = tables["decisions"]
    events = tables["events"]
    positions = tables["positions"]
    observations = tables["opening_observations"]
    if "adjacent" not in observations.columns:
        observations = mark_adjacent(observations, positions, plaza)
    end_step = int(positions["step"].max()) if len(positions) else 0
    knowledge = exit_knowledge_measure(
        tables["pedestrians"],
        observations,
        tables["exit_information"],
        KnowledgeCutoff(gate_closed_step(events), end_step),
    )
    shouts = shout_pairs(events)
    peds = pedestrian_features(tables, knowledge, shouts)
    epochs = decision_epochs(decisions, events, observations).rename(
        columns={"outcome": "brain_outcome"}
    )
    epochs["directness"] = decision_directness(
        positions, epochs, tables["pedestrians"], cell_size_m
    )
    epochs["evidence"] = threat_evidence(epochs)
    epochs = epochs.merge(peds[["agent_id", "outcome"]], on="agent_id", how="left")
    mismatch = mismatch_steps(epochs, positions, events, plaza)
    columns = [
        "agent_id",
        "request_step",
        "applied_step",
        "trigger",
        "situation",
        "intent",
        "goal",
        "action",
        "urgency",
        "directness",
        "evidence",
        "sees_threat",
        "remembered_threat",
        "heard_shouts",
        "revision_level",
        "brain_outcome",
        "outcome",
        "previous_urgency",
        "urgency_change",
        "previous_situation",
        "previous_goal",
        "new_direct_evidence",
        "peer_information",
        "first_receipt",
        "later_receipt",
        "physical_constraint",
    ]
    return RunAnalysis(
        peds,
        epochs[columns],
        tables["exit_information"].copy(),
        shouts,
        mismatch,
    )


# ---------------------------------------------------------------- pooled results
def outcome_shares(pedestrians: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Counts and shares of evacuated / killed / unresolved (overall or per ``by``)."""
    keys = [by] if by else []
    grouped = (
        pedestrians.groupby(keys)["outcome"]
        if keys
        else [("all", pedestrians["outcome"])]
    )
    rows = []
    for key, outcome in grouped:
        row = {
            by or "group": key[0] if isinstance(key, tuple) else key,
            "n": len(outcome),
        }
        for name in OUTCOMES:
            count = int((outcome == name).sum())
            row[name] = count
            row[f"{name}_share"] = count / len(outcome) if len(outcome) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def quadrant_of(
    urgency: pd.Series, directness: pd.Series, u_split: float, d_split: float
) -> pd.Series:
    """Quadrant labels: above the split is "high" (the median itself counts as low)."""
    high_u = urgency > u_split
    high_d = directness > d_split
    labels = np.select(
        [high_u & high_d, high_u & ~high_d, ~high_u & high_d],
        list(QUADRANTS[:3]),
        default=QUADRANTS[3],
    )
    return pd.Series(labels, index=urgency.index)


@dataclass(frozen=True)
class QuadrantResult:
    """Urgency x directness quadrants (paper Fig. 7).

    Attributes:
        urgency_median: Pooled median urgency of the evaluated decisions.
        directness_median: Pooled median directness.
        shares: Share of all evaluated decisions in each quadrant.
        by_outcome: Mean per-pedestrian share of each quadrant by outcome.
        auc_killed_vs_evacuated: AUC of each quadrant's per-pedestrian share (killed positive).
        centroids: Mean urgency and directness by outcome (each pedestrian weighted equally).
        per_pedestrian: The per-pedestrian shares (for the block comparisons).
    """

    urgency_median: float
    directness_median: float
    shares: pd.Series
    by_outcome: pd.DataFrame
    auc_killed_vs_evacuated: pd.Series
    centroids: pd.DataFrame
    per_pedestrian: pd.DataFrame


def urgency_directness(decisions: pd.DataFrame, keys: list[str]) -> QuadrantResult:
    """Quadrants at the pooled medians, per-pedestrian shares, AUC killed vs evacuated.

    Args:
        decisions: Pooled decisions (after the initial ones) with ``urgency``, ``directness``,
            ``outcome`` and the run keys.
        keys: The columns naming a pedestrian across runs (e.g. ``composition, block, agent_id``).
    """
    evaluated = decisions.dropna(subset=["urgency", "directness"])
    u_split = float(evaluated["urgency"].median()) if len(evaluated) else np.nan
    d_split = float(evaluated["directness"].median()) if len(evaluated) else np.nan
    quadrant = quadrant_of(
        evaluated["urgency"], evaluated["directness"], u_split, d_split
    )
    evaluated = evaluated.assign(quadrant=quadrant)
    shares = (
        evaluated["quadrant"]
        .value_counts(normalize=True)
        .reindex(QUADRANTS, fill_value=0.0)
    )
    per = (
        pd.crosstab(
            [evaluated[k] for k in keys], evaluated["quadrant"], normalize="index"
        )
        .reindex(columns=list(QUADRANTS), fill_value=0.0)
        .reset_index()
    )
    means = evaluated.groupby(keys)[["urgency", "directness"]].mean().reset_index()
    outcome = evaluated.groupby(keys)["outcome"].first().reset_index()
    per = per.merge(outcome, on=keys).merge(means, on=keys)
    by_outcome = per.groupby("outcome")[list(QUADRANTS)].mean()
    killed = per[per["outcome"] == "killed"]
    evacuated = per[per["outcome"] == "evacuated"]
    aucs = pd.Series({q: auc(killed[q], evacuated[q]) for q in QUADRANTS}, name="auc")
    centroids = per.groupby("outcome")[["urgency", "directness"]].mean()
    return QuadrantResult(u_split, d_split, shares, by_outcome, aucs, centroids, per)


def danger_appraisal(decisions: pd.DataFrame) -> pd.DataFrame:
    """Share of decisions appraising ``danger`` by composition and threat evidence."""
    table = (
        decisions.assign(danger=decisions["situation"] == "danger")
        .pivot_table(
            index="composition", columns="evidence", values="danger", aggfunc="mean"
        )
        .reindex(columns=list(EVIDENCE_LEVELS))
    )
    counts = decisions.pivot_table(
        index="composition", columns="evidence", values="situation", aggfunc="size"
    ).reindex(columns=list(EVIDENCE_LEVELS))
    return table.join(counts.add_prefix("n_"))


def revision_levels(decisions: pd.DataFrame) -> pd.DataFrame:
    """Counts and shares of decision revision levels (goal, plan, execution, none)."""
    counts = decisions["revision_level"].value_counts()
    return pd.DataFrame({"decisions": counts, "share": counts / counts.sum()})


def block_comparisons(
    per_run: pd.DataFrame,
    measures: list[str],
    compositions: tuple[str, ...] = HOMOGENEOUS,
) -> pd.DataFrame:
    """Paired sign-flip tests across blocks with Holm adjustment, one family per measure.

    Args:
        per_run: One row per run with ``composition``, ``block`` and the measures.
        measures: The run-level measures to compare.
        compositions: The compared compositions (default the five homogeneous ones).
    """
    present = [c for c in compositions if c in set(per_run["composition"])]
    frames = [
        paired_comparisons(per_run, measure=m, groups=present).assign(measure=m)
        for m in measures
    ]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, ignore_index=True)
    return out[["measure", *[c for c in out.columns if c != "measure"]]]
