"""The experiment's analysis frames on hand-made tables (mesa_llm_mobility/evacuation/analysis.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.analysis import (
    HIGH_URGENCY_LOW_DIRECTNESS,
    danger_appraisal,
    exit_knowledge,
    gate_closed_step,
    knowledge_outcomes,
    outcome_shares,
    propagation,
    threat_evidence,
    urgency_directness,
)
from mesa_llm_mobility.evacuation.statistics import auc, fisher_exact_2x2

OBS = ["step", "agent_id", "opening_id", "kind", "usable"]
INFO = ["step", "sender_id", "receiver_id", "opening_id", "kind", "usable", "hops"]


def _knowledge():
    pedestrians = pd.DataFrame(
        {
            "agent_id": [1, 2, 3, 4, 5, 6, 7],
            "resolved_step": [40, 50, 60, 20, None, 90, 80],
        }
    )
    observations = pd.DataFrame(
        [
            [3, 1, "exit1", "exit", True],  # 1: saw an exit
            [0, 3, "gate1", "gate", True],  # 3: saw a gate open, killed after it closed
            [
                0,
                4,
                "gate1",
                "gate",
                True,
            ],  # 4: saw the gate, left through it before closure
            [5, 6, "exit1", "exit", True],  # 6: saw exit1 ...
            [40, 6, "gate2", "gate", False],  # ... and a closed gate
        ],
        columns=OBS,
    )
    information = pd.DataFrame(
        [
            [10, 1, 2, "exit1", "exit", True, 1],  # 2: told
            [12, 9, 6, "exit2", "exit", True, 1],  # 6: ... and told of exit2
            [100, 1, 7, "exit2", "exit", True, 1],  # 7: told after it was killed
        ],
        columns=INFO,
    )
    return exit_knowledge(
        pedestrians, observations, information, gate_closed_at_step=35, end_step=720
    ).set_index("agent_id")


def test_usable_exits_known_and_information_groups_by_hand():
    k = _knowledge()
    assert k["usable_exits_known"].to_dict() == {
        1: 1,
        2: 1,
        3: 0,
        4: 1,
        5: 0,
        6: 2,
        7: 0,
    }
    assert k["information_group"].to_dict() == {
        1: "own sight",
        2: "told",
        3: "only unusable",
        4: "own sight",
        5: "none",
        6: "both",
        7: "none",
    }
    assert k.loc[1, "first_usable_s"] == pytest.approx(1.0)  # step 3 = 1 s
    assert k.loc[6, "first_usable_s"] == pytest.approx(5 / 3)
    assert pd.isna(k.loc[5, "first_usable_s"])


def test_gate_closed_step_from_the_events():
    events = pd.DataFrame(
        {
            "event": ["gate_state", "gate_state", "evacuated", "gate_state"],
            "step": [0, 15, 20, 35],
            "detail": ["gate1:open", "gate1:closing", "exit1", "gate1:closed"],
        }
    )
    assert gate_closed_step(events) == 35
    assert gate_closed_step(events.iloc[:3]) == float("inf")


def test_knowledge_outcomes_table_and_fisher():
    k = _knowledge().reset_index()
    k["outcome"] = [
        "evacuated",
        "evacuated",
        "killed",
        "evacuated",
        "unresolved",
        "evacuated",
        "killed",
    ]
    result = knowledge_outcomes(k)
    # knew: 1, 2, 4, 6 all evacuated; none: 3, 5, 7, none evacuated
    assert result.table == [[4, 0], [0, 3]]
    assert result.p_value == pytest.approx(fisher_exact_2x2([[4, 0], [0, 3]]).p_value)
    by_known = result.by_exits_known.set_index("exits_known")
    assert (
        by_known.loc["0", "n"] == 3
        and by_known.loc["1", "n"] == 3
        and by_known.loc["2+", "n"] == 1
    )
    assert by_known.loc["1", "evacuated_share"] == 1.0
    groups = result.by_group.set_index("information_group")
    assert groups.loc["only unusable", "killed"] == 1


def test_outcome_shares():
    peds = pd.DataFrame(
        {
            "composition": list("AAAB"),
            "outcome": ["evacuated", "killed", "evacuated", "unresolved"],
        }
    )
    overall = outcome_shares(peds).iloc[0]
    assert overall["n"] == 4 and overall["evacuated_share"] == 0.5
    by = outcome_shares(peds, "composition").set_index("composition")
    assert by.loc["A", "killed_share"] == pytest.approx(1 / 3)
    assert by.loc["B", "unresolved"] == 1


def test_quadrants_medians_shares_and_auc_by_hand():
    # two killed pedestrians with high urgency & low directness, two evacuated the opposite
    rows = [
        # agent, urgency, directness, outcome
        (1, 0.9, 0.1, "killed"),
        (1, 0.8, 0.2, "killed"),
        (2, 0.9, 0.2, "killed"),
        (2, 0.2, 0.9, "killed"),
        (3, 0.1, 0.9, "evacuated"),
        (3, 0.2, 0.8, "evacuated"),
        (4, 0.3, 0.9, "evacuated"),
        (4, 0.9, 0.95, "evacuated"),
    ]
    decisions = pd.DataFrame(
        rows, columns=["agent_id", "urgency", "directness", "outcome"]
    ).assign(composition="A", block=1)
    result = urgency_directness(decisions, ["composition", "block", "agent_id"])
    assert result.urgency_median == pytest.approx(0.55)
    assert result.directness_median == pytest.approx(0.85)
    per = result.per_pedestrian.set_index("agent_id")[HIGH_URGENCY_LOW_DIRECTNESS]
    assert per.to_dict() == {1: 1.0, 2: 0.5, 3: 0.0, 4: 0.0}
    assert (
        result.auc_killed_vs_evacuated[HIGH_URGENCY_LOW_DIRECTNESS]
        == auc([1.0, 0.5], [0.0, 0.0])
        == 1.0
    )
    assert result.shares[HIGH_URGENCY_LOW_DIRECTNESS] == pytest.approx(3 / 8)
    assert result.centroids.loc["killed", "urgency"] == pytest.approx((0.85 + 0.55) / 2)


def test_threat_evidence_and_danger_appraisal():
    decisions = pd.DataFrame(
        {
            "composition": ["A", "A", "A", "H", "H", "H"],
            "sees_threat": [True, False, False, False, False, True],
            "remembered_threat": [True, True, False, True, True, False],
            "situation": ["danger", "unsure", "normal", "danger", "unsure", "danger"],
        }
    )
    decisions["evidence"] = threat_evidence(decisions)
    assert decisions["evidence"].tolist() == [
        "direct",
        "remembered",
        "none",
        "remembered",
        "remembered",
        "direct",
    ]
    table = danger_appraisal(decisions)
    assert table.loc["A", "remembered"] == 0.0 and table.loc["H", "remembered"] == 0.5
    assert table.loc["A", "direct"] == 1.0 and table.loc["H", "n_remembered"] == 2


def test_propagation_senders_and_top_two():
    information = pd.DataFrame(
        {
            "composition": ["A"] * 5 + ["B"],
            "block": [1] * 6,
            "sender_id": [1, 1, 1, 2, 3, 4],
            "receiver_id": [5, 6, 6, 7, 8, 9],
            "hops": pd.array([1, 1, 1, 1, 2, 1], dtype="Int64"),
        }
    )
    pedestrians = pd.DataFrame(
        {"information_group": ["own sight", "both", "told", "none"]}
    )
    result = propagation(
        information, pedestrians, runs=2, run_keys=["composition", "block"]
    )
    # run A: relations 1-5, 1-6, 2-7, 3-8 (1-6 twice): top two senders 1 (2) + 2 or 3 (1) = 3 of 4
    # run B: 4-9: 1 of 1 -> (3 + 1) / 5
    assert result.mean_senders_per_run == pytest.approx((3 + 1) / 2)
    assert result.top_two_share == pytest.approx(4 / 5)
    assert result.messages == 6 and result.hops.to_dict() == {1: 5, 2: 1}
    assert result.observed_directly == 2 and result.told_only == 1
