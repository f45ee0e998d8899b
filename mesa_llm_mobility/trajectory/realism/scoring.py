"""AUROC and AP of anomaly scores, real (negative) vs generated (positive), with their error.

Every detector ends here: it gives one anomaly score per unit (visit, day or individual) of the
real evaluation data and of the generated data, :func:`balanced` subsamples the larger side to
the size of the smaller (the paper's balanced split, where chance is AUROC = AP = 0.5), and
:func:`detection_row` reports AUROC and average precision with the Hanley-McNeil standard error
of the AUROC (:func:`hanley_mcneil_se`) and a normal 95 % interval.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

Z_95 = 1.959963984540054
"""The two-sided 95 % quantile of the standard normal."""


def hanley_mcneil_se(auroc: float, n_positive: int, n_negative: int) -> float:
    """Standard error of an AUROC (Hanley and McNeil 1982, eq. 2).

    ``SE = sqrt((A (1 - A) + (n_p - 1)(Q1 - A^2) + (n_n - 1)(Q2 - A^2)) / (n_p n_n))`` with
    ``Q1 = A / (2 - A)`` and ``Q2 = 2 A^2 / (1 + A)``. At chance (A = 0.5) this is
    ``sqrt((1/4 + (n_p + n_n - 2) / 12) / (n_p n_n))``, about ``sqrt((n_p + n_n) / (12 n_p n_n))``.

    Args:
        auroc: The area A, in [0, 1].
        n_positive: Positive (generated, "abnormal") units.
        n_negative: Negative (real, "normal") units.

    Returns:
        The standard error (it assumes independent units: visits of one individual are not,
        so at the visit level it understates the error).

    Raises:
        ValueError: If a count is below 1 or A is outside [0, 1].
    """
    if n_positive < 1 or n_negative < 1:
        raise ValueError(
            f"need at least one unit of each class (got {n_positive} positive, "
            f"{n_negative} negative)"
        )
    if not 0.0 <= auroc <= 1.0:
        raise ValueError(f"an AUROC is in [0, 1], got {auroc}")
    q1 = auroc / (2.0 - auroc)
    q2 = 2.0 * auroc**2 / (1.0 + auroc)
    variance = (
        auroc * (1.0 - auroc)
        + (n_positive - 1) * (q1 - auroc**2)
        + (n_negative - 1) * (q2 - auroc**2)
    ) / (n_positive * n_negative)
    return math.sqrt(max(variance, 0.0))


def balanced(
    real_scores: np.ndarray, generated_scores: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Subsample the larger side (without replacement) to the size of the smaller."""
    real_scores = np.asarray(real_scores, dtype=float)
    generated_scores = np.asarray(generated_scores, dtype=float)
    size = min(len(real_scores), len(generated_scores))
    if len(real_scores) > size:
        real_scores = real_scores[
            np.sort(rng.choice(len(real_scores), size, replace=False))
        ]
    if len(generated_scores) > size:
        generated_scores = generated_scores[
            np.sort(rng.choice(len(generated_scores), size, replace=False))
        ]
    return real_scores, generated_scores


ROW_COLUMNS = (
    "detector",
    "level",
    "auroc",
    "ap",
    "n_real",
    "n_generated",
    "auroc_se",
    "auroc_ci_low",
    "auroc_ci_high",
)
"""The columns of :func:`~.compare.realism`'s table, in order."""


def detection_row(
    detector: str, level: str, real_scores: np.ndarray, generated_scores: np.ndarray
) -> dict[str, object]:
    """AUROC and AP of scores where generated units are the positives.

    Args:
        detector: Its name, for the table.
        level: What one score is about (``"visit"``, ``"day"``, ``"individual"``).
        real_scores: Scores of real units (negatives); higher = more anomalous.
        generated_scores: Scores of generated units (positives).

    Returns:
        A row of :data:`ROW_COLUMNS`.

    Raises:
        ValueError: If a side has no score or a score is not finite.
    """
    real_scores = np.asarray(real_scores, dtype=float)
    generated_scores = np.asarray(generated_scores, dtype=float)
    if len(real_scores) == 0 or len(generated_scores) == 0:
        raise ValueError(
            f"{detector}: need scores of both classes (got {len(real_scores)} real, "
            f"{len(generated_scores)} generated)"
        )
    scores = np.concatenate([real_scores, generated_scores])
    if not np.isfinite(scores).all():
        raise ValueError(f"{detector}: a score is not finite")
    labels = np.concatenate(
        [
            np.zeros(len(real_scores), dtype=int),
            np.ones(len(generated_scores), dtype=int),
        ]
    )
    auroc = float(roc_auc_score(labels, scores))
    se = hanley_mcneil_se(auroc, len(generated_scores), len(real_scores))
    return {
        "detector": detector,
        "level": level,
        "auroc": auroc,
        "ap": float(average_precision_score(labels, scores)),
        "n_real": len(real_scores),
        "n_generated": len(generated_scores),
        "auroc_se": se,
        "auroc_ci_low": max(0.0, auroc - Z_95 * se),
        "auroc_ci_high": min(1.0, auroc + Z_95 * se),
    }
