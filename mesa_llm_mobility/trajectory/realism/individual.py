"""Individual-level detector in the spirit of BeSTAD: behaviour clusters and their later shift.

BeSTAD (Sec. IV-C2 of the TrajGenAgent paper) models each individual's behaviour clusters in a
past "normal" period and scores how well a later period aligns with them, using temporal
behaviour signals and multi-scale spatial semantics (OSM context on H3 cells). Our proxy, with no
map data: the normal period is an individual's real training days; each day is a vector of
temporal behaviour (shares of six four-hour blocks at home, at work or school, elsewhere, and
travelling; first departure and last arrival; visits; distance and radius) and multi-scale
spatial familiarity (share of the day's visits in 0.5, 2 and 8 km cells the individual visited
in the normal period; distance from their normal home), see :mod:`.features`. Per individual,
k-means (k = min(3, max(1, days // 4))) finds the normal clusters. A later set of days (the
individual's real evaluation days, or their generated days, equally many) is scored by

* ``alignment``: mean distance of each later day to its nearest normal centre, divided by the
  individual's normal spread (root mean square distance of normal days to their centre, plus
  0.1 so that very regular people do not divide by almost nothing);
* ``shift``: the Jensen-Shannon divergence (nats) between the normal cluster shares and the
  later days' nearest-cluster shares (a routine that moved from one habit to another);
* ``score = alignment + shift``, one per individual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from mesa_llm_mobility.trajectory.metrics import jensen_shannon
from mesa_llm_mobility.trajectory.realism.features import (
    BLOCK_HOURS,
    GROUPS,
    Profiles,
    day_features,
)
from mesa_llm_mobility.trajectory.realism.frames import (
    MINUTES_PER_DAY,
    DetectionSplit,
    split_for_detection,
)

MAX_CLUSTERS = 3
SPREAD_FLOOR = 0.1
OCCUPANCY_COLUMNS = tuple(
    f"b{block}_{group}" for block in range(int(24 / BLOCK_HOURS)) for group in GROUPS
)


def behaviour_vectors(days: pd.DataFrame) -> np.ndarray:
    """The clustering vector of each day of a :func:`~.features.day_features` table.

    Every coordinate is of order one: block shares and familiarities as they are, times as
    fractions of a day, counts and distances as log1p over the log1p of a generous maximum.
    """
    scaled = np.column_stack(
        [
            days["first_departure"] / MINUTES_PER_DAY,
            days["last_arrival"] / MINUTES_PER_DAY,
            np.log1p(days["visits"]) / np.log(20.0),
            days["log_km"] / np.log(100.0),
            days["log_radius"] / np.log(50.0),
            days["log_home_km"] / np.log(50.0),
        ]
    )
    familiar = days[["familiar_0", "familiar_1", "familiar_2"]].to_numpy(dtype=float)
    occupancy = days[list(OCCUPANCY_COLUMNS)].to_numpy(dtype=float)
    return np.hstack([occupancy, familiar, scaled]).astype(float)


@dataclass(frozen=True)
class BehaviourClusters:
    """An individual's normal-period clusters: centres, each normal day's label, the spread."""

    centres: np.ndarray
    labels: np.ndarray
    spread: float

    @classmethod
    def fit(cls, normal: np.ndarray, seed: int = 0) -> BehaviourClusters:
        """k-means (k = min(3, max(1, days // 4))) on the normal days' behaviour vectors."""
        k = min(MAX_CLUSTERS, max(1, len(normal) // 4))
        if k == 1:
            centres = normal.mean(axis=0, keepdims=True)
            labels = np.zeros(len(normal), dtype=int)
        else:
            with threadpool_limits(limits=1):  # a few days: threads only wait
                fitted = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(normal)
            centres, labels = fitted.cluster_centers_, fitted.labels_
        to_centre = np.linalg.norm(normal - centres[labels], axis=1)
        spread = float(np.sqrt(np.mean(to_centre**2))) + SPREAD_FLOOR
        return cls(centres, labels, spread)

    def alignment_shift(self, later: np.ndarray) -> tuple[float, float]:
        """``(alignment, shift)`` of later days' vectors (see the module docstring)."""
        distances = np.linalg.norm(later[:, None, :] - self.centres[None, :, :], axis=2)
        alignment = float(distances.min(axis=1).mean()) / self.spread
        k = len(self.centres)
        if k == 1:
            return alignment, 0.0
        shift = jensen_shannon(
            np.bincount(self.labels, minlength=k).astype(float),
            np.bincount(distances.argmin(axis=1), minlength=k).astype(float),
        )
        return alignment, shift


def alignment_shift(
    normal: np.ndarray, later: np.ndarray, seed: int = 0
) -> tuple[float, float, int]:
    """Alignment and cluster-share shift of ``later`` days against ``normal`` days.

    Args:
        normal: Behaviour vectors of the normal period (one row per day, at least one).
        later: Behaviour vectors of the later period (at least one).
        seed: Seed of k-means.

    Returns:
        ``(alignment, shift, clusters)`` as in the module docstring.
    """
    clusters = BehaviourClusters.fit(normal, seed)
    return (*clusters.alignment_shift(later), len(clusters.centres))


INDIVIDUAL_SCORE_COLUMNS = (
    "agent_id",
    "source",
    "days",
    "clusters",
    "alignment",
    "shift",
    "score",
)


def score_split(split: DetectionSplit) -> pd.DataFrame:
    """Score every compared individual's real evaluation days and generated days.

    Returns:
        :data:`INDIVIDUAL_SCORE_COLUMNS`, one row per individual and source.
    """
    profiles = Profiles.fit(split.train)
    normal = day_features(split.train, profiles)
    later = {
        source: day_features(getattr(split, source), profiles)
        for source in ("real", "generated")
    }
    vectors = {"normal": behaviour_vectors(normal)} | {
        source: behaviour_vectors(days) for source, days in later.items()
    }
    rows_of = {
        name: days.groupby("agent_id", sort=True).indices
        for name, days in (("normal", normal), *later.items())
    }
    return cluster_scores(vectors, rows_of, split.seed)


def cluster_scores(
    vectors: dict[str, np.ndarray],
    rows_of: dict[str, dict[object, np.ndarray]],
    seed: int,
) -> pd.DataFrame:
    """Each individual's normal clusters, and the alignment and shift of their later days.

    Args:
        vectors: ``normal``, ``real`` and ``generated`` -> one behaviour vector per day.
        rows_of: The same names -> agent -> the rows of their days in ``vectors``.
        seed: Seed of k-means.

    Returns:
        :data:`INDIVIDUAL_SCORE_COLUMNS`, one row per individual of ``real`` and source.
    """
    rows = []
    for agent in sorted(rows_of["real"]):
        clusters = BehaviourClusters.fit(
            vectors["normal"][rows_of["normal"][agent]], seed
        )
        for source in ("real", "generated"):
            chosen = vectors[source][rows_of[source][agent]]
            alignment, shift = clusters.alignment_shift(chosen)
            k = len(clusters.centres)
            rows.append(
                (agent, source, len(chosen), k, alignment, shift, alignment + shift)
            )
    return pd.DataFrame(rows, columns=list(INDIVIDUAL_SCORE_COLUMNS))


def individual_scores(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    include_real: bool = False,
) -> pd.DataFrame:
    """Behaviour-shift score of every individual's generated days (the individual detector).

    Args:
        real: Real stay points (part of each individual's days is their normal period).
        generated: Generated stay points of the same individuals.
        seed: Seed of the split and of k-means.
        include_real: Also return the score of each individual's real evaluation days (the
            same number of days as their generated ones), the reference to compare with.

    Returns:
        :data:`INDIVIDUAL_SCORE_COLUMNS`: ``agent_id, source, days, clusters, alignment,
        shift, score`` (higher = further from the individual's normal behaviour).
    """
    scored = score_split(split_for_detection(real, generated, seed=seed))
    if not include_real:
        scored = scored[scored["source"] == "generated"].reset_index(drop=True)
    return scored
