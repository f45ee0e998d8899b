"""Factor models of outcome and time (mesa_llm_mobility/evacuation/factor_models.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.factor_models import (
    design_matrix,
    factor_table,
    fit_factor_models,
)


def _bernoulli_ll(successes: int, n: int) -> float:
    p = successes / n
    return successes * math.log(p) + (n - successes) * math.log(1 - p)


@pytest.fixture
def pedestrians():
    rng = np.random.default_rng(0)
    n = 200
    composition = np.where(np.arange(n) % 2 == 0, "A", "H")
    # the outcome depends on the composition only: A evacuates 30 of 100, H 70 of 100
    outcome = np.array(["killed"] * n, dtype=object)
    outcome[np.flatnonzero(composition == "A")[:30]] = "evacuated"
    outcome[np.flatnonzero(composition == "H")[:70]] = "evacuated"
    distance = rng.uniform(5, 40, n)
    time = np.where(outcome == "evacuated", 2.0 * distance, np.nan)
    return pd.DataFrame(
        {
            "composition": composition,
            "outcome": outcome,
            "evacuation_time_s": time,
            "shortest_exit_m": distance,
            "knowledge_source": "observed",
            "shouters_heard": 0,
            "shouts_reached": 0,
            "threat_evidence": False,
            "threat_evidence_s": 0.0,
            "mean_urgency": rng.uniform(0, 1, n),
            "mean_fear": rng.uniform(0, 1, n),
            "high_urgency_low_directness": rng.uniform(0, 1, n),
        }
    )


def test_mcfadden_r2_of_one_binary_factor_by_hand(pedestrians):
    table = factor_table(fit_factor_models(pedestrians)).set_index("group")
    # the fitted probabilities are the group shares: llf = ll(30/100) + ll(70/100)
    llf = _bernoulli_ll(30, 100) + _bernoulli_ll(70, 100)
    llnull = _bernoulli_ll(100, 200)
    assert table.loc["personality", "mcfadden_r2"] == pytest.approx(1 - llf / llnull)
    assert table.loc["personality", "n_logit"] == 200
    assert not table.loc["personality", "separation"]


def test_ols_r2_of_log_time(pedestrians):
    table = factor_table(fit_factor_models(pedestrians)).set_index("group")
    evacuated = pedestrians[pedestrians["outcome"] == "evacuated"]
    r = np.corrcoef(
        evacuated["shortest_exit_m"], np.log(evacuated["evacuation_time_s"])
    )[0, 1]
    assert table.loc["geometry", "ols_r2"] == pytest.approx(r**2)
    assert table.loc["geometry", "n_ols"] == 100
    # time = 2 x distance: log time is log distance + const, nearly linear in distance
    assert table.loc["geometry", "ols_r2"] > 0.9
    assert table.loc["combined", "ols_r2"] >= table.loc["geometry", "ols_r2"] - 1e-12


def test_a_category_that_predicts_the_outcome_perfectly_is_flagged(pedestrians):
    # half of the killed knew only a closed gate, nobody else did: quasi-separation
    peds = pedestrians.copy()
    killed = np.flatnonzero(peds["outcome"] == "killed")
    peds.loc[peds.index[killed[::2]], "knowledge_source"] = "only closed gate"
    table = factor_table(fit_factor_models(peds)).set_index("group")
    assert table.loc["information", "separation"]
    assert 0.0 < table.loc["information", "mcfadden_r2"] < 1.0
    assert not table.loc["geometry", "separation"]


def test_design_matrix_drops_constant_columns_and_codes_categories():
    frame = pd.DataFrame(
        {
            "composition": ["A", "B", "C", "A"],
            "x": [1.0, 2.0, 3.0, 4.0],
            "z": [0, 0, 0, 0],
        }
    )
    design = design_matrix(frame, ["composition", "x", "z"])
    assert list(design.columns) == ["const", "composition_B", "composition_C", "x"]
