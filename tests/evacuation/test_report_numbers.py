"""The report's numbers from pooled frames (mesa_llm_mobility/evacuation/report_numbers.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.report_numbers import (
    _danger_numbers,
    composition_intervals,
)
from mesa_llm_mobility.evacuation.statistics import block_bootstrap_ci


def test_danger_gaps_span_the_homogeneous_compositions_only():
    appraisal = pd.DataFrame(
        {
            "none": [0.10, 0.11, 0.10, 0.12, 0.10, 0.90],
            "remembered": [0.30, 0.263, 0.40, 0.45, 0.528, 0.99],
            "direct": [1.0, 0.98, 1.0, 0.99, 1.0, 0.0],
        },
        index=["A", "B", "C", "D", "H", "E"],  # E is not homogeneous: left out
    )
    numbers: dict[str, float] = {}
    _danger_numbers(appraisal, numbers)
    assert numbers["danger_gap_none"] == pytest.approx(0.02)
    assert numbers["danger_gap_remembered"] == pytest.approx(
        0.528 - 0.263
    )  # paper 0.265
    assert numbers["danger_gap_direct"] == pytest.approx(0.02)
    assert numbers["danger_remembered_H"] == 0.528
    assert numbers["danger_remembered_B"] == 0.263


def test_composition_intervals_resample_the_paired_blocks():
    per_run = pd.DataFrame(
        {
            "seed": [0] * 8,
            "block": [1, 2, 3, 4] * 2,
            "composition": ["B"] * 4 + ["D"] * 4,
            "high_urgency_low_directness_share": [
                0.1,
                0.2,
                0.1,
                0.06,
                0.3,
                0.4,
                0.35,
                0.32,
            ],
        }
    )
    table = composition_intervals(
        per_run, "high_urgency_low_directness_share"
    ).set_index("composition")
    assert table.loc["B", "mean"] == pytest.approx(0.115)
    assert table.loc["B", "runs"] == 4
    low, high = block_bootstrap_ci(
        per_run[per_run["composition"] == "D"].set_index(["seed", "block"])[
            "high_urgency_low_directness_share"
        ]
    )
    assert (table.loc["D", "ci_low"], table.loc["D", "ci_high"]) == (low, high)
    assert 0.3 <= low <= table.loc["D", "mean"] <= high <= 0.4
