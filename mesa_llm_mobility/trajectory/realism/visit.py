"""Visit-level detector in the spirit of ICAD: an autoregressive next-visit model of real days.

ICAD (Sec. IV-C2 of the TrajGenAgent paper) decomposes each visit into location, arrival time
and departure time, learns next-visit regularities from normal trajectories, scores the
location by a top-k deviation and the times by a mode-margin density score, and fuses them,
which lets it say whether a visit is abnormal in space, in time or both. Ours is a small,
transparent proxy of that idea (no neural network): the next-visit model of
:mod:`.next_visit`, fitted on the real training days of a :class:`~.frames.DetectionSplit`,
gives each visit a spatial deviation (place and activity) and a temporal one (arrival,
departure, travel gap), in nats.

* **score** = spatial + temporal deviation (nats below the model's best guess);
* **attribution**: a component is anomalous when it exceeds the 95th percentile of that
  component over the real evaluation visits, so a visit is ``spatial``, ``temporal``, ``both``
  or ``none`` (by construction 5 % of real visits are flagged per component).

Per day and per individual, scores are the mean (and max) of their visits' scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.realism.frames import (
    DAY_KEY,
    DetectionSplit,
    split_for_detection,
)
from mesa_llm_mobility.trajectory.realism.next_visit import NextVisitModel

ATTRIBUTIONS = ("none", "spatial", "temporal", "both")
ANOMALY_QUANTILE = 0.95


VISIT_SCORE_COLUMNS = (
    "agent_id",
    "day",
    "visit",
    "activity",
    "poi_id",
    "source",
    "spatial",
    "temporal",
    "score",
    "attribution",
)


def score_split(split: DetectionSplit, *, top_k: int = 3) -> pd.DataFrame:
    """Score every real evaluation and generated visit of a split.

    Returns:
        :data:`VISIT_SCORE_COLUMNS`, real visits first (``source`` ``"real"`` or
        ``"generated"``).
    """
    model = NextVisitModel.fit(split.train, top_k=top_k)
    frames = []
    for source in ("real", "generated"):
        visits = getattr(split, source)
        scored = visits[["agent_id", "day", "visit", "activity", "poi_id"]].copy()
        scored["source"] = source
        deviations = model.deviations(visits)
        scored["spatial"] = deviations["spatial"].to_numpy()
        scored["temporal"] = deviations["temporal"].to_numpy()
        frames.append(scored)
    scored = pd.concat(frames, ignore_index=True)
    scored["score"] = scored["spatial"] + scored["temporal"]
    real = scored["source"] == "real"
    flags = []
    for component in ("spatial", "temporal"):
        threshold = float(np.quantile(scored.loc[real, component], ANOMALY_QUANTILE))
        flags.append((scored[component] > threshold).to_numpy())
    scored["attribution"] = np.array(ATTRIBUTIONS, dtype=object)[
        flags[0].astype(int) + 2 * flags[1].astype(int)
    ]
    return scored[list(VISIT_SCORE_COLUMNS)]


def visit_scores(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    top_k: int = 3,
    include_real: bool = False,
) -> pd.DataFrame:
    """Anomaly score and attribution of every generated visit (the visit-level detector).

    Args:
        real: Real stay points (the detector learns from part of each individual's days).
        generated: Generated stay points of the same individuals.
        seed: Seed of the split (:func:`~.frames.split_for_detection`).
        top_k: Guesses that count as a hit for the location.
        include_real: Also return the scored real evaluation visits.

    Returns:
        One row per visit: ``agent_id, day`` (a date), ``visit`` (0-based index in the day),
        ``activity, poi_id, source, spatial, temporal, score`` and ``attribution`` (one of
        ``none, spatial, temporal, both``).
    """
    scored = score_split(split_for_detection(real, generated, seed=seed), top_k=top_k)
    if not include_real:
        scored = scored[scored["source"] == "generated"].reset_index(drop=True)
    return scored


DAY_SCORE_COLUMNS = (
    "agent_id",
    "day",
    "source",
    "visits",
    "score_mean",
    "score_max",
    "anomalous_share",
    "attribution",
    "percentile",
)


def aggregate_days(scored: pd.DataFrame) -> pd.DataFrame:
    """Per (agent, day, source): the mean and max visit score and the main attribution.

    ``attribution`` is the most frequent attribution among the day's anomalous visits (``none``
    without any); ``percentile`` is the share of real days whose mean score is lower.
    """
    keys = [*DAY_KEY, "source"]
    grouped = scored.groupby(keys, sort=False)
    days = grouped.agg(
        visits=("score", "size"),
        score_mean=("score", "mean"),
        score_max=("score", "max"),
        anomalous_share=(
            "attribution",
            lambda values: float((values != "none").mean()),
        ),
    ).reset_index()
    flagged = scored[scored["attribution"] != "none"]
    main = (
        flagged.groupby(keys, sort=False)["attribution"]
        .agg(lambda values: values.value_counts().index[0])
        .rename("attribution")
    )
    days = days.merge(main.reset_index(), on=keys, how="left")
    days["attribution"] = days["attribution"].fillna("none")
    reference = np.sort(days.loc[days["source"] == "real", "score_mean"].to_numpy())
    days["percentile"] = np.searchsorted(
        reference, days["score_mean"], side="left"
    ) / max(len(reference), 1)
    return days[list(DAY_SCORE_COLUMNS)]


def day_scores(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    top_k: int = 3,
    include_real: bool = False,
) -> pd.DataFrame:
    """The visit detector's score of every generated day (for the app).

    Takes the arguments of :func:`visit_scores` and returns :data:`DAY_SCORE_COLUMNS`: per
    ``agent_id, day``: ``visits``, ``score_mean``, ``score_max``, ``anomalous_share`` (visits
    flagged spatial, temporal or both), ``attribution`` (the day's main one) and
    ``percentile`` (share of real days with a lower mean score: about 0.5 is typical, near 1
    unusual). ``include_real`` adds the real evaluation days.
    """
    days = aggregate_days(
        visit_scores(real, generated, seed=seed, top_k=top_k, include_real=True)
    )
    if not include_real:
        days = days[days["source"] == "generated"].reset_index(drop=True)
    return days
