import math

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.realism.scoring import (
    ROW_COLUMNS,
    balanced,
    detection_row,
    hanley_mcneil_se,
)

# Hanley and McNeil (1982), Radiology 143:29-36: one reader's five-point ratings of 109 CT
# images (1 = definitely normal ... 5 = definitely abnormal); the paper's area is 0.893.
NORMAL_RATINGS = np.repeat(np.arange(1, 6), [33, 6, 6, 11, 2])
ABNORMAL_RATINGS = np.repeat(np.arange(1, 6), [3, 2, 2, 11, 33])


def test_the_papers_ratings_give_its_area_and_a_matching_error():
    row = detection_row("ct", "image", NORMAL_RATINGS, ABNORMAL_RATINGS)
    assert row["auroc"] == pytest.approx(0.893, abs=0.0005)
    # the exact standard error of these ratings (Q1, Q2 counted from the data, ties half)
    wins = (ABNORMAL_RATINGS[:, None] > NORMAL_RATINGS[None, :]) + 0.5 * (
        ABNORMAL_RATINGS[:, None] == NORMAL_RATINGS[None, :]
    )
    n_a, n_n = wins.shape
    area = wins.mean()
    q1 = ((wins.sum(0) ** 2 - (wins**2).sum(0)) / (n_a * (n_a - 1))).mean()
    q2 = ((wins.sum(1) ** 2 - (wins**2).sum(1)) / (n_n * (n_n - 1))).mean()
    exact = math.sqrt(
        (area * (1 - area) + (n_a - 1) * (q1 - area**2) + (n_n - 1) * (q2 - area**2))
        / (n_a * n_n)
    )
    # eq. 2's exponential approximations of Q1 and Q2 stay within 10 % of it
    assert row["auroc_se"] == pytest.approx(exact, rel=0.1)
    assert row["auroc_se"] == pytest.approx(hanley_mcneil_se(0.893, 51, 58), abs=1e-3)


def test_hanley_mcneil_matches_the_spread_of_null_aurocs():
    rng = np.random.default_rng(0)
    aurocs = [
        detection_row("null", "unit", rng.normal(size=60), rng.normal(size=40))["auroc"]
        for _ in range(400)
    ]
    assert np.std(aurocs) == pytest.approx(hanley_mcneil_se(0.5, 40, 60), rel=0.15)


def test_hanley_mcneil_at_chance_has_the_closed_form():
    n_p, n_n = 200, 150
    expected = math.sqrt((0.25 + (n_p + n_n - 2) / 12) / (n_p * n_n))
    assert hanley_mcneil_se(0.5, n_p, n_n) == pytest.approx(expected, rel=1e-12)
    assert (
        hanley_mcneil_se(0.5, 4 * n_p, 4 * n_n) < hanley_mcneil_se(0.5, n_p, n_n) / 1.9
    )


def test_hanley_mcneil_refuses_nonsense():
    with pytest.raises(ValueError, match="at least one unit"):
        hanley_mcneil_se(0.5, 0, 3)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        hanley_mcneil_se(1.2, 3, 3)


def test_detection_row_orients_generated_as_positive():
    separated = detection_row("d", "visit", np.zeros(5), np.ones(5))
    assert separated["auroc"] == 1.0
    assert separated["ap"] == 1.0
    reversed_ = detection_row("d", "visit", np.ones(5), np.zeros(5))
    assert reversed_["auroc"] == 0.0
    tied = detection_row("d", "visit", np.ones(4), np.ones(4))
    assert tied["auroc"] == 0.5
    assert tied["ap"] == 0.5
    assert set(separated) == set(ROW_COLUMNS)
    assert tied["auroc_ci_low"] < 0.5 < tied["auroc_ci_high"]


def test_detection_row_needs_both_classes_and_finite_scores():
    with pytest.raises(ValueError, match="both classes"):
        detection_row("visit", "visit", np.array([]), np.ones(3))
    with pytest.raises(ValueError, match="not finite"):
        detection_row("visit", "visit", np.array([np.nan]), np.ones(1))


def test_balanced_subsamples_the_larger_side():
    rng = np.random.default_rng(0)
    real, generated = balanced(np.arange(10.0), np.arange(3.0), rng)
    assert len(real) == len(generated) == 3
    assert set(real) <= set(range(10))
