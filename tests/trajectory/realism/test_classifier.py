"""The classifier two-sample test, with tiny inputs."""

import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.realism import (
    RealismError,
    classifier_scores,
    realism,
)
from mesa_llm_mobility.trajectory.realism.classifier import MIN_DAYS_PER_CLASS


def _first_days(stays, agents, days):
    stays = stays[stays["agent_id"].isin(agents)]
    dates = stays["start"].dt.normalize()
    keep = dates.groupby(stays["agent_id"]).rank(method="dense") <= days
    return stays[keep.to_numpy()].reset_index(drop=True)


def test_fewer_than_two_days_per_class_is_refused(halves):
    real, other = halves
    # one individual: two real days (one to learn from, one to compare), one generated day
    tiny_real = _first_days(real, [0], 2)
    tiny_generated = _first_days(other, [0], 1)
    with pytest.raises(
        RealismError, match=r"at least 2 days of each class \(got 1 real, 1 generated\)"
    ):
        classifier_scores(tiny_real, tiny_generated)
    assert MIN_DAYS_PER_CLASS == 2


def test_a_few_days_give_a_defined_result_with_fewer_folds(halves):
    real, other = halves
    # three individuals with four real days (two compared) and two generated days each
    small_real = _first_days(real, [0, 1, 2], 4)
    small_generated = _first_days(other, [0, 1, 2], 2)
    scores = classifier_scores(small_real, small_generated, seed=1)
    assert scores.groupby("source").size().to_dict() == {"generated": 6, "real": 6}
    assert scores["score"].between(0, 1).all()
    table = realism(small_real, small_generated, detectors=("classifier",), seed=1)
    assert 0.0 <= table["auroc"].item() <= 1.0
    assert table["n_real"].item() == 6


def test_both_classifiers_run_and_an_unknown_one_is_refused(halves):
    real, other = halves
    real = _first_days(real, range(8), 6)
    other = _first_days(other, range(8), 3)
    logistic = classifier_scores(real, other, classifier="logistic")
    boosting = classifier_scores(real, other, classifier="boosting")
    pd.testing.assert_frame_equal(
        logistic[["agent_id", "day", "source"]], boosting[["agent_id", "day", "source"]]
    )
    with pytest.raises(RealismError, match="unknown classifier 'svm'"):
        classifier_scores(real, other, classifier="svm")
