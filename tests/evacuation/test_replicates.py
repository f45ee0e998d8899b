"""Between-seed noise (mesa_llm_mobility/evacuation/replicates.py)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from mesa_llm_mobility.evacuation.replicates import (
    composition_differences,
    composition_means,
    seed_intervals,
)


def _per_run() -> pd.DataFrame:
    rows = []
    # per seed: A = B + 0.1 + a small seed effect; C = A with alternating +-0.05
    for seed, wobble in enumerate([0.0, 0.02, -0.01, 0.03, 0.01]):
        for block in (1, 2):
            b = 0.5 + wobble
            rows += [
                {
                    "seed": seed,
                    "block": block,
                    "composition": "B",
                    "evacuated_share": b,
                },
                {
                    "seed": seed,
                    "block": block,
                    "composition": "A",
                    "evacuated_share": b + 0.1,
                },
                {
                    "seed": seed,
                    "block": block,
                    "composition": "C",
                    "evacuated_share": b + 0.1 + (0.05 if seed % 2 else -0.05),
                },
            ]
    return pd.DataFrame(rows)


def test_composition_differences_by_hand():
    table = composition_differences(_per_run(), "evacuated_share").set_index(
        ["first", "second"]
    )
    ab = table.loc[("A", "B")]
    assert ab["mean_difference"] == pytest.approx(0.1)
    assert ab["seeds"] == 5 and ab["first_higher_in"] == 5
    assert ab["exceeds_seed_noise"]  # a constant difference: zero-width interval
    assert ab["p_value"] == pytest.approx(2 / 32)  # all 5 seeds of one sign
    ac = table.loc[("A", "C")]
    # differences -0.05 x 3 seeds (0, 2, 4) and +0.05 x 2: mean -0.01
    diffs = [0.05, -0.05, 0.05, -0.05, 0.05]
    mean = sum(diffs) / 5
    half = stats.t.ppf(0.975, 4) * pd.Series(diffs).std() / math.sqrt(5)
    assert ac["mean_difference"] == pytest.approx(mean)
    assert (ac["low"], ac["high"]) == pytest.approx((mean - half, mean + half))
    assert not ac["exceeds_seed_noise"]
    assert table["p_holm"].max() <= 1.0 and len(table) == 3


def test_seed_intervals_and_composition_means():
    per_seed = pd.DataFrame(
        {"evacuated_share": [0.6, 0.7, 0.8], "odds_ratio": [1.0, float("inf"), 3.0]}
    )
    intervals = seed_intervals(per_seed)
    assert intervals.loc["evacuated_share", "mean"] == pytest.approx(0.7)
    assert intervals.loc["evacuated_share", "seeds"] == 3
    assert (
        intervals.loc["odds_ratio", "seeds"] == 2
    )  # an infinite odds ratio is left out
    means = composition_means(_per_run(), "evacuated_share").set_index("composition")
    assert means.loc["B", "mean"] == pytest.approx(0.51)
    assert means.loc["A", "seeds"] == 5


def test_absent_compositions_are_left_out():
    table = composition_differences(_per_run(), "evacuated_share", ("A", "B", "D", "H"))
    assert table[["first", "second"]].values.tolist() == [["A", "B"]]
