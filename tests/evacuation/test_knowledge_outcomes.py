"""Exit knowledge against outcomes (mesa_llm_mobility/evacuation/knowledge_outcomes.py).

The paper's pedestrians, rebuilt from its percentages (Sec. 4.1.3): 514 knew a usable exit
(460 evacuated, 50 killed, 4 unresolved) and 190 did not (2, 152, 36); of the knowers 491 had
seen one (448 evacuated) and 23 only heard of one (12); 58 of the others knew only a closed
gate (51 killed). Every number the paper prints must come back from these tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.knowledge_outcomes import (
    knowers_vs_rescued,
    knowledge_outcomes,
    knowledge_rescue_test,
    outcomes_by_source,
    time_to_knowledge,
)


def _group(source: str, known: int, evacuated: int, killed: int, unresolved: int):
    outcomes = (
        ["evacuated"] * evacuated + ["killed"] * killed + ["unresolved"] * unresolved
    )
    return pd.DataFrame(
        {"knowledge_source": source, "usable_exits_known": known, "outcome": outcomes}
    )


@pytest.fixture(scope="module")
def paper_pedestrians():
    return pd.concat(
        [
            _group("observed", 2, 448, 40, 3),
            _group("told", 1, 12, 10, 1),
            _group("only closed gate", 0, 0, 51, 7),
            _group("none", 0, 2, 101, 29),
        ],
        ignore_index=True,
    )


def test_the_papers_knowledge_numbers_come_back(paper_pedestrians):
    peds = paper_pedestrians
    assert len(peds) == 704 and (peds["outcome"] == "evacuated").sum() == 462
    result = knowledge_outcomes(peds)
    assert result.table == [[460, 54], [2, 188]]
    assert round(100 * result.evacuated_share(True), 1) == 89.5
    assert round(100 * result.evacuated_share(False), 2) == 1.05
    assert result.odds_ratio == pytest.approx(800.7, abs=0.05)
    assert f"{result.p_value:.1e}" == "6.1e-118"
    killed_without = (
        (peds["usable_exits_known"] == 0) & (peds["outcome"] == "killed")
    ).sum() / (peds["usable_exits_known"] == 0).sum()
    assert round(100 * killed_without, 1) == 80.0
    by_source = outcomes_by_source(peds).set_index("knowledge_source")
    assert round(100 * by_source.loc["observed", "evacuated_share"], 1) == 91.2
    assert round(100 * by_source.loc["told", "evacuated_share"], 1) == 52.2
    assert by_source.loc["only closed gate", "evacuated"] == 0
    assert round(100 * by_source.loc["only closed gate", "killed_share"], 1) == 87.9
    assert list(by_source.index) == ["observed", "told", "only closed gate", "none"]


def test_usable_exit_knowledge_separates_evacuated_from_killed_as_in_the_paper(
    paper_pedestrians,
):
    # "usable-exit knowledge predicted rescue (p = 7e-98)": Mann-Whitney, evacuated vs killed
    test = knowledge_rescue_test(paper_pedestrians)
    assert f"{test.p_value:.0e}" == "7e-98"
    assert test.n == 462 + 202
    assert test.statistic == pytest.approx(0.5 * (460 / 462 + 152 / 202))


def test_graded_knowledge_by_hand():
    peds = pd.DataFrame(
        {
            "usable_exits_known": [0, 0, 1, 1, 1, 2, 3],
            "outcome": [
                "killed",
                "evacuated",
                "evacuated",
                "killed",
                "unresolved",
                "evacuated",
                "evacuated",
            ],
        }
    )
    graded = knowledge_outcomes(peds).by_exits_known.set_index("exits_known")
    assert graded["n"].to_dict() == {"0": 2, "1": 3, "2+": 2}
    assert graded.loc["1", "evacuated_share"] == pytest.approx(1 / 3)
    assert graded.loc["2+", "evacuated_share"] == 1.0
    exits_only = knowledge_outcomes(
        peds.assign(exits_known=[0, 0, 0, 1, 1, 2, 0]), "exits_known"
    )
    assert exits_only.table == [[1, 2], [3, 1]]


def test_time_to_knowledge_by_outcome():
    peds = pd.DataFrame(
        {
            "outcome": ["evacuated", "evacuated", "evacuated", "killed", "killed"],
            "first_usable_s": [1.0, 5.0, 9.0, 30.0, np.nan],
        }
    )
    table = time_to_knowledge(peds).set_index("outcome")
    assert table.loc["evacuated", "median_s"] == 5.0
    assert table.loc["killed", "n"] == 1 and table.loc["killed", "median_s"] == 30.0


def test_knowers_vs_rescued_per_run_by_hand():
    # four runs: knowers 1, 2, 3, 4; rescued 0, 2, 1, 3 -> ranks (1,2,3,4) vs (1,3,2,4)
    rows = []
    for run, (knowers, rescued) in enumerate([(1, 0), (2, 2), (3, 1), (4, 3)]):
        for k in range(5):
            rows.append(
                {
                    "seed": 0,
                    "composition": "A",
                    "block": run,
                    "usable_exits_known": int(k < knowers),
                    "outcome": "evacuated" if k < rescued else "killed",
                }
            )
    test = knowers_vs_rescued(pd.DataFrame(rows), ["seed", "composition", "block"])
    # rho = 1 - 6 sum d^2 / (n (n^2 - 1)) = 1 - 6 * 2 / 60
    assert test.statistic == pytest.approx(0.8) and test.n == 4
