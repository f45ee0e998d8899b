"""The experiment's statistics against scipy, hand-computed values and the paper's own numbers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mesa_llm_mobility.evacuation.statistics import (
    auc,
    block_bootstrap_ci,
    fisher_exact_2x2,
    holm,
    mann_whitney,
    paired_comparisons,
    seed_interval,
    sign_flip_test,
    spearman,
)


def test_fisher_reproduces_the_papers_odds_ratio_and_p_value():
    # 704 pedestrians, 462 evacuated; 89.5 % of those who knew a usable exit evacuated, 1.05 %
    # of those who did not: 460 / 514 and 2 / 190 (the only split giving both percentages)
    table = [[460, 54], [2, 188]]
    result = fisher_exact_2x2(table)
    assert round(460 / 514, 3) == 0.895 and round(2 / 190, 4) == 0.0105
    assert result.odds_ratio == pytest.approx(800.7, abs=0.05)  # paper: 800.7
    assert f"{result.p_value:.1e}" == "6.1e-118"  # paper: p = 6.1 x 10^-118


@pytest.mark.parametrize(
    "table",
    [
        [[3, 1], [1, 3]],
        [[8, 2], [1, 5]],
        [[0, 5], [5, 0]],
        [[10, 10], [10, 10]],
        [[1, 0], [0, 0]],
        [[20, 3], [7, 40]],
    ],
)
def test_fisher_agrees_with_scipy(table):
    ours = fisher_exact_2x2(table)
    theirs = stats.fisher_exact(table)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)
    if math.isnan(ours.odds_ratio):
        assert math.isnan(theirs.statistic)
    else:
        assert ours.odds_ratio == pytest.approx(theirs.statistic)


def test_fisher_by_hand():
    # [[3, 1], [1, 3]]: margins 4, 4, 4; P(a) = C(4,a) C(4,4-a) / C(8,4) = 1,16,36,16,1 / 70
    # tables no more probable than a = 3 (16/70): a = 0, 1, 3, 4 -> 34/70
    assert fisher_exact_2x2([[3, 1], [1, 3]]).p_value == pytest.approx(34 / 70)
    assert fisher_exact_2x2([[3, 1], [1, 3]]).odds_ratio == 9.0
    assert fisher_exact_2x2([[2, 0], [1, 3]]).odds_ratio == math.inf


def test_fisher_refuses_a_bad_table():
    with pytest.raises(ValueError, match="2 x 2"):
        fisher_exact_2x2([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match="non-negative"):
        fisher_exact_2x2([[1, -2], [3, 4]])


def test_auc_by_hand_and_against_mann_whitney():
    # pairs (x, y): 3>1, 3>2, 3=3, 2>1, 2=2, 2<3 -> 3 greater, 2 ties: (3 + 2 * 0.5) / 6
    assert auc([3, 2], [1, 2, 3]) == pytest.approx(4 / 6)
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 6, 40) / 5, rng.integers(0, 6, 55) / 5  # many ties
    u = stats.mannwhitneyu(x, y).statistic
    assert auc(x, y) == pytest.approx(u / (40 * 55))
    assert auc([1.0], [0.0]) == 1.0 and auc([0.0], [1.0]) == 0.0
    assert math.isnan(auc([], [1.0]))


def test_sign_flip_gives_the_papers_holm_adjusted_p():
    # calm-independent lower than rule-following in all 8 blocks: 2 of 256 assignments are as
    # extreme; Holm over the 10 pairwise comparisons: 10 x 2/256 = 0.078 (paper: p = 0.078)
    p = sign_flip_test([0.1, 0.3, 0.2, 0.05, 0.15, 0.25, 0.12, 0.4])
    assert p == 2 / 256
    assert round(holm([p] * 10)[0], 3) == 0.078


def test_sign_flip_agrees_with_scipy_and_by_enumeration():
    d = np.array([0.3, -0.1, 0.2, 0.4, -0.05, 0.25, 0.1, -0.2])
    ours = sign_flip_test(d)
    theirs = stats.permutation_test(
        (d,),
        np.mean,
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    assert ours == pytest.approx(theirs)
    count = sum(
        abs(np.mean(np.array(s) * d)) >= abs(d.mean()) - 1e-12
        for s in itertools.product((1, -1), repeat=8)
    )
    assert ours == count / 256
    assert sign_flip_test([0.0, 0.0]) == 1.0 and sign_flip_test([]) == 1.0


def test_holm_by_hand():
    # sorted 0.01, 0.02, 0.03, 0.5 -> x4, x3, x2, x1 = 0.04, 0.06, 0.06 (monotone), 0.5
    assert holm([0.03, 0.01, 0.5, 0.02]) == pytest.approx([0.06, 0.04, 0.5, 0.06])
    assert holm([0.6, 0.9]) == [1.0, 1.0]


def test_paired_comparisons_match_blocks_and_adjust():
    rows = []
    for block in range(1, 9):
        rows += [
            {"composition": "B", "block": block, "m": 0.1 + block / 100},
            {"composition": "D", "block": block, "m": 0.3 + block / 100},
            {
                "composition": "H",
                "block": block,
                "m": 0.3 + block / 100 + (0.01 if block % 2 else -0.01),
            },
        ]
    table = paired_comparisons(pd.DataFrame(rows), measure="m")
    bd = table[(table["first"] == "B") & (table["second"] == "D")].iloc[0]
    assert bd["blocks"] == 8 and bd["first_higher_in"] == 0
    assert bd["mean_difference"] == pytest.approx(-0.2)
    assert bd["p_value"] == 2 / 256
    assert table["p_holm"].tolist() == pytest.approx(holm(table["p_value"].tolist()))
    dh = table[(table["first"] == "D") & (table["second"] == "H")].iloc[0]
    assert dh["p_value"] == 1.0  # +-0.01 alternating: mean 0


def test_block_bootstrap_interval_brackets_the_mean():
    values = pd.Series([0.1, 0.2, 0.3, 0.4, 0.2, 0.3, 0.25, 0.15], index=range(1, 9))
    low, high = block_bootstrap_ci(values)
    assert low < values.mean() < high
    assert block_bootstrap_ci(pd.Series([0.5] * 8)) == (0.5, 0.5)


def test_mann_whitney_auc_and_p_by_hand():
    # positives 3, 4 and negatives 1, 2, 3: pairs greater 5 of 6, one tie -> (5 + 0.5) / 6
    result = mann_whitney([3, 4], [1, 2, 3])
    assert result.statistic == pytest.approx(5.5 / 6) and result.n == 5
    expected = stats.mannwhitneyu(
        [3, 4], [1, 2, 3], alternative="two-sided", method="asymptotic"
    ).pvalue
    assert result.p_value == pytest.approx(expected)
    assert mann_whitney([1, 1], [1]).statistic == 0.5
    assert math.isnan(mann_whitney([], [1]).statistic)


def test_spearman_by_hand_and_the_papers_p():
    result = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    # d = (1, 1, 1, 1, 0): rho = 1 - 6 * 4 / (5 * 24)
    assert result.statistic == pytest.approx(0.8)
    # the paper's rho = 0.607 over 64 runs and p = 1.0e-7 agree under scipy's t
    # approximation (1.05e-7 from the rounded rho)
    t = 0.607 * math.sqrt(62 / (1 - 0.607**2))
    assert 0.95e-7 < 2 * stats.t.sf(t, 62) < 1.1e-7
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]).statistic)


def test_seed_interval_by_hand():
    interval = seed_interval([1.0, 2.0, 3.0, float("nan")])
    # mean 2, sd 1, t(0.975, 2) = 4.303: half-width 4.303 / sqrt(3)
    assert interval.mean == 2.0 and interval.seeds == 3 and interval.sd == 1.0
    assert interval.high - 2.0 == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert interval.excludes(-1.0) and not interval.excludes(0.0)
    single = seed_interval([4.0])
    assert single.mean == 4.0 and math.isnan(single.low) and not single.excludes(0.0)


def test_sign_flip_beyond_sixteen_blocks_estimates_the_exact_share():
    rng = np.random.default_rng(3)
    d = rng.normal(0.3, 1.0, size=18)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=18)))
    exact = float(np.mean(np.abs(signs @ d) / 18 >= abs(d.mean()) - 1e-12))
    assert sign_flip_test(d) == pytest.approx(exact, abs=0.005)
    assert sign_flip_test(d) == sign_flip_test(d)  # seeded
    # all 80 of one sign: never exactly 0, at most 1 / (draws + 1)
    assert 0 < sign_flip_test(np.ones(80)) <= 1 / 100_000
