"""``realism(real, generated)``: every detector's AUROC and AP in one table.

The paper (Sec. IV-C2, Table III) treats real trajectories as normal and generated ones as
anomalies and reports AUROC and average precision on a balanced split: 0.5 means the detector
cannot tell them apart, which is the goal. The detectors here are proxies of the paper's (see
docs/trajectory_realism.md), not the paper's models, and a score near 0.5 says only that *these*
detectors are not fooled by nothing; it is no proof of realism.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.realism import classifier, individual, visit
from mesa_llm_mobility.trajectory.realism.choices import DEFAULT_DETECTORS, DETECTORS
from mesa_llm_mobility.trajectory.realism.frames import (
    RealismError,
    split_for_detection,
)
from mesa_llm_mobility.trajectory.realism.scoring import (
    ROW_COLUMNS,
    balanced,
    detection_row,
)


def _by_source(scored: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The ``score`` column of the real rows and of the generated rows."""
    source = scored["source"]
    return (
        scored.loc[source == "real", "score"].to_numpy(),
        scored.loc[source == "generated", "score"].to_numpy(),
    )


def _per_individual_mean(scored: pd.DataFrame, source: str) -> np.ndarray:
    chosen = scored[scored["source"] == source]
    return chosen.groupby("agent_id", sort=True)["score"].mean().to_numpy()


def realism(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    detectors: Sequence[str] = DEFAULT_DETECTORS,
    train_fraction: float = 0.5,
    top_k: int = 3,
    classifier_kind: str = "logistic",
) -> pd.DataFrame:
    """How well each detector separates generated trajectories from real ones.

    Each individual's real days are split (seeded) into days the detectors learn from and days
    they score; generated days of the same individuals are scored beside the latter, equally
    many per individual, and the larger side of each detector's units is subsampled to the
    smaller (a balanced split: chance is AUROC = AP = 0.5).

    Args:
        real: Real stay points (:data:`~.staypoints.STAY_COLUMNS`), at least two days for an
            individual to take part.
        generated: Generated stay points of the same individuals.
        seed: Seed of every split, subsample, clustering and classifier: the same seed gives
            the same table.
        detectors: Which of :data:`DETECTORS`, in the order of the rows.
        train_fraction: Share of each individual's real days the detectors learn from.
        top_k: Guesses that count as a hit for the visit detector's location.
        classifier_kind: ``"logistic"`` (default) or ``"boosting"`` for the two-sample test.

    Returns:
        One row per detector: ``detector, level, auroc, ap, n_real, n_generated`` (units
        scored on each side), ``auroc_se`` (Hanley-McNeil, assuming independent units),
        ``auroc_ci_low, auroc_ci_high`` (95 %), ``individuals`` (compared) and
        ``unmatched`` (individuals left out: on one side only or with a single real day).

    Raises:
        RealismError: For an unknown detector, or inputs a detector cannot score (no shared
            individual, too few days for the two-sample test), with the reason.
        StayPointError: If a table is not a valid stay-point table.
    """
    unknown = [name for name in detectors if name not in DETECTORS]
    if unknown:
        raise RealismError(
            f"unknown detector {unknown[0]!r} (use any of {', '.join(DETECTORS)})"
        )
    if not detectors:
        raise RealismError("no detector chosen")
    split = split_for_detection(
        real, generated, seed=seed, train_fraction=train_fraction
    )
    rng = np.random.default_rng(seed)
    rows = []
    visits = None
    for name in detectors:
        if name in ("visit", "visit_individual"):
            if visits is None:
                visits = visit.score_split(split, top_k=top_k)
            if name == "visit":
                real_scores, generated_scores = _by_source(visits)
                level = "visit"
            else:
                real_scores = _per_individual_mean(visits, "real")
                generated_scores = _per_individual_mean(visits, "generated")
                level = "individual"
        elif name == "visit_learned":
            try:
                from mesa_llm_mobility.trajectory.realism import (  # noqa: PLC0415  (JAX is optional)
                    learned_visit,
                )
            except ImportError as error:
                raise RealismError(
                    f"the visit_learned detector needs JAX, Flax and Optax: pip install "
                    f"'mesa-llm-mobility[neural]' ({error})"
                ) from None
            real_scores, generated_scores = _by_source(
                learned_visit.score_split(split, top_k=top_k)
            )
            level = "visit"
        elif name == "individual":
            real_scores, generated_scores = _by_source(individual.score_split(split))
            level = "individual"
        elif name == "individual_h3":
            try:
                from mesa_llm_mobility.trajectory.realism import (  # noqa: PLC0415  (h3 is optional)
                    semantic,
                )
            except ImportError as error:
                raise RealismError(
                    f"the individual_h3 detector needs h3: pip install "
                    f"'mesa-llm-mobility[realism]' ({error})"
                ) from None
            real_scores, generated_scores = _by_source(semantic.score_split(split))
            level = "individual"
        else:
            real_scores, generated_scores = _by_source(
                classifier.score_split(split, classifier=classifier_kind)
            )
            level = "day"
        real_scores, generated_scores = balanced(real_scores, generated_scores, rng)
        rows.append(detection_row(name, level, real_scores, generated_scores))
    table = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    table["individuals"] = split.real["agent_id"].nunique()
    table["unmatched"] = split.unmatched
    return table
