"""The experiment's analysis tables, computed from the run directories' tables (paper Sec. 4).

:func:`run_tables_for_analysis` turns one run's tables into three tidy frames:

- pedestrians: one row each with ``outcome`` (``evacuated``, ``killed`` for the paper's "reached",
  ``unresolved``), ``usable_exits_known`` and ``information_group`` (:func:`exit_knowledge`);
- decisions: every decision after the initial one with its ``urgency``, ``directness`` over the
  following 10 s, its threat ``evidence`` (``none``, ``remembered``, ``direct``), the brain's
  ``brain_outcome`` (ok, repaired, fallback, or rejected under the paper's rejection rule) and the pedestrian's ``outcome``;
- exit information: every message with its ``hops``.

The pooled functions (:func:`outcome_shares`, :func:`knowledge_outcomes`,
:func:`urgency_directness`, :func:`danger_appraisal`, :func:`revision_levels`,
:func:`propagation`, :func:`block_comparisons`) compute the paper's results over the pooled
frames of every run; the statistics are in :mod:`.statistics`.

"Knew a usable exit": a pedestrian knows an opening when it saw it (``opening_observations``)
or was told about it (``exit_information``), at or before its resolving step, in a passable
state. An exit stays usable; a gate counts only when the pedestrian resolved before the gate
closed (a gate seen open that closed before the pedestrian could use it is the paper's "only a
closed gate" case).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.outputs import (
    directness_after,
    pedestrian_track,
    track_step_lengths,
)
from mesa_llm_mobility.evacuation.statistics import (
    auc,
    fisher_exact_2x2,
    paired_comparisons,
)
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
INFORMATION_GROUPS = ("own sight", "told", "both", "only unusable", "none")
HIGH_URGENCY_LOW_DIRECTNESS = "high urgency, low directness"
QUADRANTS = (
    "high urgency, high directness",
    HIGH_URGENCY_LOW_DIRECTNESS,
    "low urgency, high directness",
    "low urgency, low directness",
)


@dataclass(frozen=True)
class RunAnalysis:
    """One run's analysis frames (see the module docstring)."""

    pedestrians: pd.DataFrame
    decisions: pd.DataFrame
    information: pd.DataFrame


def gate_closed_step(events: pd.DataFrame) -> float:
    """The step at which the gates closed (``inf`` when they never did in the run)."""
    closed = events[
        (events["event"] == "gate_state") & events["detail"].str.endswith(":closed")
    ]
    return float(closed["step"].min()) if len(closed) else float("inf")


def exit_knowledge(
    pedestrians: pd.DataFrame,
    observations: pd.DataFrame,
    information: pd.DataFrame,
    *,
    gate_closed_at_step: float,
    end_step: int,
) -> pd.DataFrame:
    """Per pedestrian: usable exits known, the information group, time of first knowledge.

    Args:
        pedestrians: The run's ``pedestrians`` table.
        observations: Its ``opening_observations`` table.
        information: Its ``exit_information`` table.
        gate_closed_at_step: When the gates closed (:func:`gate_closed_step`).
        end_step: The run's last step (resolution of the unresolved).

    Returns:
        ``agent_id, usable_exits_known`` (distinct usable openings), ``information_group``
        (own sight / told / both / only unusable / none), ``first_usable_s``.
    """
    seen = observations.rename(columns={"agent_id": "who"}).assign(source="sight")
    told = information.rename(columns={"receiver_id": "who"}).assign(source="told")
    columns = ["who", "step", "opening_id", "kind", "usable", "source"]
    learned = pd.concat([seen[columns], told[columns]], ignore_index=True)
    resolved = pedestrians.set_index("agent_id")["resolved_step"]
    rows = []
    for agent_id, resolve in resolved.items():
        last = end_step if resolve is None or pd.isna(resolve) else int(resolve)
        mine = learned[(learned["who"] == agent_id) & (learned["step"] <= last)]
        usable = mine[
            mine["usable"].astype(bool)
            & ((mine["kind"] == "exit") | (last < gate_closed_at_step))
        ]
        sources = set(usable["source"])
        if sources == {"sight", "told"}:
            group = "both"
        elif sources == {"sight"}:
            group = "own sight"
        elif sources == {"told"}:
            group = "told"
        else:
            group = "only unusable" if len(mine) else "none"
        rows.append(
            {
                "agent_id": agent_id,
                "usable_exits_known": int(usable["opening_id"].nunique()),
                "information_group": group,
                "first_usable_s": float(usable["step"].min()) / STEPS_PER_SECOND
                if len(usable)
                else np.nan,
            }
        )
    return pd.DataFrame(rows)


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


def run_tables_for_analysis(
    tables: dict[str, pd.DataFrame], *, cell_size_m: float = 0.4
) -> RunAnalysis:
    """One run's analysis frames from its tables (as :func:`~.run_files.run_tables` names them).

    Args:
        tables: ``positions, decisions, events, pedestrians, opening_observations,
            exit_information``.
        cell_size_m: The plaza's cell size.

    Returns:
        The pedestrian, decision and information frames.
    """
    pedestrians = tables["pedestrians"]
    decisions = tables["decisions"]
    events = tables["events"]
    positions = tables["positions"]
    end_step = int(positions["step"].max()) if len(positions) else 0
    knowledge = exit_knowledge(
        pedestrians,
        tables["opening_observations"],
        tables["exit_information"],
        gate_closed_at_step=gate_closed_step(events),
        end_step=end_step,
    )
    peds = pedestrians[["agent_id", "archetype", "outcome", "shortest_exit_m"]].merge(
        knowledge, on="agent_id"
    )
    peds["outcome"] = peds["outcome"].map(OUTCOME_NAMES)
    later = decisions[decisions["trigger"] != "initial"].rename(
        columns={"outcome": "brain_outcome"}
    )
    later["directness"] = decision_directness(
        positions, later, pedestrians, cell_size_m
    )
    later["evidence"] = threat_evidence(later)
    later = later.merge(peds[["agent_id", "outcome"]], on="agent_id", how="left")
    columns = [
        "agent_id",
        "request_step",
        "trigger",
        "situation",
        "intent",
        "action",
        "urgency",
        "directness",
        "evidence",
        "revision_level",
        "brain_outcome",
        "outcome",
    ]
    return RunAnalysis(peds, later[columns], tables["exit_information"].copy())


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


@dataclass(frozen=True)
class KnowledgeResult:
    """Evacuation by usable-exit knowledge.

    Attributes:
        by_exits_known: Outcome shares by usable exits known (``0``, ``1``, ``2+``).
        by_group: Outcome shares by information group.
        table: ``[[known & evacuated, known & not], [unknown & evacuated, unknown & not]]``.
        odds_ratio: Fisher's sample odds ratio of that table.
        p_value: Fisher's exact two-sided p-value.
    """

    by_exits_known: pd.DataFrame
    by_group: pd.DataFrame
    table: list[list[int]]
    odds_ratio: float
    p_value: float


def knowledge_outcomes(pedestrians: pd.DataFrame) -> KnowledgeResult:
    """Evacuation by usable exits known and by information group, with Fisher's exact test."""
    peds = pedestrians.assign(
        exits_known=np.where(
            pedestrians["usable_exits_known"] >= 2,
            "2+",
            pedestrians["usable_exits_known"].astype(str),
        )
    )
    knew = peds["usable_exits_known"] > 0
    evacuated = peds["outcome"] == "evacuated"
    table = [
        [int((knew & evacuated).sum()), int((knew & ~evacuated).sum())],
        [int((~knew & evacuated).sum()), int((~knew & ~evacuated).sum())],
    ]
    fisher = fisher_exact_2x2(table)
    by_group = outcome_shares(peds, "information_group")
    order = {g: k for k, g in enumerate(INFORMATION_GROUPS)}
    by_group = by_group.sort_values(
        "information_group", key=lambda s: s.map(order)
    ).reset_index(drop=True)
    return KnowledgeResult(
        outcome_shares(peds, "exits_known"),
        by_group,
        table,
        fisher.odds_ratio,
        fisher.p_value,
    )


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


@dataclass(frozen=True)
class PropagationResult:
    """Exit-information propagation (paper Sec. 4.2, Fig. S1).

    Attributes:
        messages: Messages passed in all runs.
        mean_senders_per_run: Distinct senders per run, averaged over the runs.
        top_two_share: Share of receiving relations sent by each run's two most active senders.
        hops: Messages by hops.
        observed_directly: Pedestrians who saw a usable exit themselves.
        told_only: Pedestrians whose usable-exit knowledge came only from others.
    """

    messages: int
    mean_senders_per_run: float
    top_two_share: float
    hops: pd.Series
    observed_directly: int
    told_only: int


def propagation(
    information: pd.DataFrame, pedestrians: pd.DataFrame, runs: int, run_keys: list[str]
) -> PropagationResult:
    """Senders per run, the two most active senders' share, hops, sight vs told."""
    senders = (
        information.groupby(run_keys)["sender_id"].nunique()
        if len(information)
        else pd.Series(dtype=float)
    )
    top_two = 0
    for _, run in information.groupby(run_keys) if len(information) else []:
        relations = run.drop_duplicates(["sender_id", "receiver_id"])
        top_two += int(relations["sender_id"].value_counts().head(2).sum())
    relations_total = (
        len(information.drop_duplicates([*run_keys, "sender_id", "receiver_id"]))
        if len(information)
        else 0
    )
    return PropagationResult(
        messages=len(information),
        mean_senders_per_run=float(senders.sum()) / runs if runs else np.nan,
        top_two_share=top_two / relations_total if relations_total else np.nan,
        hops=information["hops"].value_counts(dropna=False).sort_index()
        if len(information)
        else pd.Series(dtype=int),
        observed_directly=int(
            pedestrians["information_group"].isin(["own sight", "both"]).sum()
        ),
        told_only=int((pedestrians["information_group"] == "told").sum()),
    )


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
