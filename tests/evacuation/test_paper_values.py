"""The registry of statistics and the paper's values (mesa_llm_mobility/evacuation/paper_values.py)."""

from __future__ import annotations

import math

from mesa_llm_mobility.evacuation.paper_values import STATISTICS


def test_agreement_rules():
    share = STATISTICS["evacuated_share"]  # paper 65.6 %
    assert share.agrees(0.70) is True  # within 10 % without an interval
    assert share.agrees(0.75) is False
    assert (
        share.agrees(0.75, 0.60, 0.80) is True
    )  # the paper's value inside the interval
    assert share.agrees(0.70, 0.68, 0.72) is False
    p = STATISTICS["fisher_p"]  # paper 6.1e-118
    assert p.agrees(3e-20) is True and p.agrees(0.2) is False
    assert STATISTICS["pedestrians"].agrees(7040) is None  # grows with the runs
    assert STATISTICS["mismatch_rate"].agrees(0.1) is None  # the paper gives none
    assert share.agrees(math.nan) is None


def test_the_registry_holds_the_papers_headline_numbers():
    assert STATISTICS["odds_ratio"].paper == 800.7
    assert STATISTICS["logit_r2_combined"].paper == 0.7020
    assert STATISTICS["ols_r2_combined"].paper == 0.8738
    assert STATISTICS["median_first_usable_killed"].paper == 32.33
    assert STATISTICS["share_high_urgency_high_directness"].format(0.325) == "32.5 %"
    assert STATISTICS["risk_ratio_0.10"].paper_string() == "12.27-14.37"


def test_a_between_seed_interval_is_kept_within_what_the_statistic_can_be():
    by_kind = {stat.kind: stat for stat in STATISTICS.values()}
    assert by_kind["share"].clip(-0.054, 0.65) == (0.0, 0.65)
    assert by_kind["p"].clip(-7.5e-30, 1.1) == (0.0, 1.0)
    assert by_kind["count"].clip(-2.0, 5.0) == (0.0, 5.0)
    assert by_kind["number"].clip(-0.5, 0.7) == (-0.5, 0.7)
