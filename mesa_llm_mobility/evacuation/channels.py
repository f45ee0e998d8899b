"""The two propagation channels, shouts and exit information (paper Sec. 4.1.3, Fig. S1).

- :func:`channel_aucs`: AUCs with two-sided Mann-Whitney p-values, killed against evacuated,
  of the number of distinct pedestrians a pedestrian's shouts reached (paper 0.808,
  p = 6e-42) and of distinct shouters heard (0.791, p = 2e-34); and, evacuated against killed,
  of the number of distinct pedestrians it told of an exit (Fig. S1's "exit knowledge" AUC
  0.651 for rescue: with 2.1 senders per run, nearly all rescued, 134 senders among 462
  rescued give 0.645, so the out-degree is the only reading of that AUC that fits the
  paper's other numbers).
- :func:`propagation`: senders per run (paper 2.1), the two most active senders' share of
  receiving relations (90.1 %), hops (at most 1), pedestrians who saw an exit directly
  (591) and who learned of one from someone who had (64).
- :func:`network_edges`: the deduplicated sender -> receiver pairs of one run for Fig. S1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.statistics import RankTest, mann_whitney

CHANNEL_SCORES = {
    "shouts_reached": ("killed", "distinct pedestrians reached by its shouts"),
    "shouters_heard": ("killed", "distinct shouters heard"),
    "exit_info_receivers": ("evacuated", "distinct pedestrians it told of an exit"),
    "exit_info_senders": ("evacuated", "distinct pedestrians who told it of an exit"),
}
"""Score column -> (the outcome ranked higher, what it counts)."""


def channel_aucs(pedestrians: pd.DataFrame) -> dict[str, RankTest]:
    """The AUC and Mann-Whitney p of each :data:`CHANNEL_SCORES` score, killed vs evacuated.

    Args:
        pedestrians: Pooled pedestrians with ``outcome`` and the score columns.

    Returns:
        Score column -> AUC (the named outcome as the positive group) and p-value.
    """
    out = {}
    for column, (positive, _) in CHANNEL_SCORES.items():
        negative = "evacuated" if positive == "killed" else "killed"
        out[column] = mann_whitney(
            pedestrians.loc[pedestrians["outcome"] == positive, column],
            pedestrians.loc[pedestrians["outcome"] == negative, column],
        )
    return out


@dataclass(frozen=True)
class PropagationResult:
    """Exit-information propagation (paper Sec. 4.1.3, Fig. S1).

    Attributes:
        messages: Messages passed by pedestrians in all runs.
        mean_senders_per_run: Distinct senders per run, averaged over the runs.
        top_two_share: Share of receiving relations sent by each run's two most active senders.
        hops: Messages by hops.
        observed_directly: Pedestrians who saw an opening (in any state) from outside its Moore
            neighbourhood before they resolved.
        told_by_observer: Pedestrians told of an exit by a sender who had seen it (hops 1).
        told_only: Pedestrians whose usable-exit knowledge came only from others.
    """

    messages: int
    mean_senders_per_run: float
    top_two_share: float
    hops: pd.Series
    observed_directly: int
    told_by_observer: int
    told_only: int


def propagation(
    information: pd.DataFrame,
    pedestrians: pd.DataFrame,
    runs: int,
    run_keys: Sequence[str],
) -> PropagationResult:
    """Senders per run, the two most active senders' share, hops, seen vs told."""
    keys = list(run_keys)
    peer = (
        information[information["sender_id"].notna()]
        if len(information)
        else information
    )
    senders = (
        peer.groupby(keys)["sender_id"].nunique()
        if len(peer)
        else pd.Series(dtype=float)
    )
    relations = (
        peer.drop_duplicates([*keys, "sender_id", "receiver_id"]) if len(peer) else peer
    )
    top_two = sum(
        int(run["sender_id"].value_counts().head(2).sum())
        for _, run in (relations.groupby(keys) if len(relations) else [])
    )
    told_by_observer = (
        relations[relations["hops"] == 1].drop_duplicates([*keys, "receiver_id"])
        if len(relations)
        else relations
    )
    return PropagationResult(
        messages=len(peer),
        mean_senders_per_run=float(senders.sum()) / runs if runs else np.nan,
        top_two_share=top_two / len(relations) if len(relations) else np.nan,
        hops=peer["hops"].value_counts(dropna=False).sort_index()
        if len(peer)
        else pd.Series(dtype=int),
        observed_directly=int((pedestrians["openings_seen"] > 0).sum()),
        told_by_observer=len(told_by_observer),
        told_only=int((pedestrians["knowledge_source"] == "told").sum()),
    )


def network_edges(
    shouts: pd.DataFrame, information: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run's deduplicated sender -> receiver pairs: heard shouts and exit information.

    Args:
        shouts: The run's shout pairs (``listener_id``, ``shouter_id``).
        information: Its exit-information messages.

    Returns:
        ``(shout_edges, information_edges)``, each ``source, target``.
    """
    shout_edges = (
        pd.DataFrame(
            {
                "source": shouts["shouter_id"].astype(int).to_numpy(),
                "target": shouts["listener_id"].astype(int).to_numpy(),
            }
        )
        .drop_duplicates()
        .reset_index(drop=True)
    )
    peer = information[information["sender_id"].notna()]
    info_edges = (
        pd.DataFrame(
            {
                "source": peer["sender_id"].astype(int).to_numpy(),
                "target": peer["receiver_id"].astype(int).to_numpy(),
            }
        )
        .drop_duplicates()
        .reset_index(drop=True)
    )
    return shout_edges, info_edges
