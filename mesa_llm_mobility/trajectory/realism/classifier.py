"""Classifier two-sample test: can a plain discriminator tell generated days from real ones?

Each individual-day becomes a feature vector (:func:`~.features.day_features`: the day's own
shape, plus how it compares with the same individual's real training days). A scikit-learn
classifier (a standardised logistic regression by default, or histogram gradient boosting)
predicts real (0) vs generated (1) out of fold: ``k``-fold cross-validation, stratified and, when
there are enough individuals, grouped by individual (a person's days never sit on both sides of
a fold, so the classifier cannot win by recognising people). The out-of-fold probabilities are
the anomaly scores; with both sides balanced per individual, chance is AUROC = AP = 0.5.

Tiny inputs are refused rather than guessed at: the test needs at least
:data:`MIN_DAYS_PER_CLASS` days of each class; below :data:`FOLDS` days per class it uses as many
folds as the smaller class has days.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    StratifiedGroupKFold,
    StratifiedKFold,
    cross_val_predict,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from mesa_llm_mobility.trajectory.realism.choices import CLASSIFIERS
from mesa_llm_mobility.trajectory.realism.features import Profiles, day_features
from mesa_llm_mobility.trajectory.realism.frames import (
    DAY_KEY,
    DetectionSplit,
    RealismError,
    split_for_detection,
)

FOLDS = 5
MIN_DAYS_PER_CLASS = 2


def _classifier(kind: str, seed: int):
    if kind == "boosting":
        return HistGradientBoostingClassifier(
            max_iter=100, learning_rate=0.1, max_leaf_nodes=15, random_state=seed
        )
    if kind == "logistic":
        return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    raise RealismError(
        f"unknown classifier {kind!r} (use one of {', '.join(CLASSIFIERS)})"
    )


def _folds(labels: np.ndarray, groups: np.ndarray, seed: int):
    smaller = int(min(np.sum(labels == 0), np.sum(labels == 1)))
    if smaller < MIN_DAYS_PER_CLASS:
        raise RealismError(
            f"classifier two-sample test: needs at least {MIN_DAYS_PER_CLASS} days of each "
            f"class (got {int(np.sum(labels == 0))} real, {int(np.sum(labels == 1))} generated)"
        )
    folds = min(FOLDS, smaller)
    if len(np.unique(groups)) >= folds:
        return StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    return StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)


def score_split(split: DetectionSplit, *, classifier: str = "logistic") -> pd.DataFrame:
    """Out-of-fold probability of 'generated' for every compared real and generated day.

    Returns:
        ``agent_id, day, source, score`` (real days first).

    Raises:
        RealismError: For an unknown classifier or fewer than :data:`MIN_DAYS_PER_CLASS` days
            of a class.
    """
    model = _classifier(classifier, split.seed)
    profiles = Profiles.fit(split.train)
    frames = []
    for label, source in enumerate(("real", "generated")):
        days = day_features(getattr(split, source), profiles)
        days.insert(2, "source", source)
        days["label"] = label
        frames.append(days)
    table = pd.concat(frames, ignore_index=True)
    labels = table["label"].to_numpy()
    groups = table["agent_id"].astype(str).to_numpy()
    folds = _folds(labels, groups, split.seed)
    features = table.drop(columns=[*DAY_KEY, "source", "label"]).to_numpy(dtype=float)
    # one thread: on these small tables OpenMP's threads only wait for each other
    with threadpool_limits(limits=1):
        probabilities = cross_val_predict(
            model,
            features,
            labels,
            cv=folds,
            groups=groups if isinstance(folds, StratifiedGroupKFold) else None,
            method="predict_proba",
        )[:, 1]
    result = table[[*DAY_KEY, "source"]].copy()
    result["score"] = probabilities
    return result


def classifier_scores(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    classifier: str = "logistic",
) -> pd.DataFrame:
    """The two-sample test's out-of-fold score of every compared real and generated day.

    Args:
        real: Real stay points (training days give the individual-relative features).
        generated: Generated stay points of the same individuals.
        seed: Seed of the split, the folds and the classifier.
        classifier: ``"logistic"`` (standardised logistic regression, the default) or
            ``"boosting"`` (histogram gradient boosting).

    Returns:
        ``agent_id, day, source, score`` (probability that the day is generated).
    """
    return score_split(
        split_for_detection(real, generated, seed=seed), classifier=classifier
    )
