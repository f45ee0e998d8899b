"""The experiment's analysis frames on hand-made tables (mesa_llm_mobility/evacuation/analysis.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.analysis import (
    HIGH_URGENCY_LOW_DIRECTNESS,
    communication_degrees,
    danger_appraisal,
    gate_closed_step,
    outcome_shares,
    run_tables_for_analysis,
    threat_evidence,
    urgency_directness,
)
from mesa_llm_mobility.evacuation.statistics import auc


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


# ------------------------------------------------------------ one hand-made run
EXIT1_CELL = (154, 133)  # a cell of the reference plaza's exit1


def _run_tables(
    observations: list[list], *, steps: int = 12
) -> dict[str, pd.DataFrame]:
    """One pedestrian walking east onto exit1 at step ``steps`` (and the adversary far away)."""
    x0 = EXIT1_CELL[0] - steps
    rows = []
    for step in range(steps + 1):
        rows.append(
            [
                step,
                step / 3,
                1,
                "pedestrian",
                x0 + step,
                EXIT1_CELL[1],
                0.0,
                0.0,
                "normal",
            ]
        )
        rows.append([step, step / 3, 2, "adversary", 20, 20, 0.0, np.nan, "patrol"])
    positions = pd.DataFrame(
        rows,
        columns=[
            "step",
            "time_s",
            "agent_id",
            "kind",
            "x",
            "y",
            "heading",
            "fear",
            "situation",
        ],
    )
    decisions = pd.DataFrame(
        {
            "request_step": [0],
            "applied_step": [0],
            "time_s": [0.0],
            "agent_id": [1],
            "outcome": ["ok"],
            "trigger": ["initial"],
            "fear": [0.0],
            "sees_threat": [False],
            "remembered_threat": [False],
            "heard_shouts": [0],
            "action": ["move"],
            "situation": ["normal"],
            "intent": ["tour"],
            "urgency": [0.1],
            "accepted": [True],
            "revision_level": ["none"],
        }
    )
    events = pd.DataFrame(
        {
            "step": [steps],
            "time_s": [steps / 3],
            "event": ["evacuated"],
            "agent_id": [1.0],
            "other_id": [np.nan],
            "detail": ["exit1"],
        }
    )
    pedestrians = pd.DataFrame(
        {
            "agent_id": [1],
            "archetype": ["average"],
            "start_x": [x0],
            "start_y": [EXIT1_CELL[1]],
            "shortest_exit_m": [steps * 0.4],
            "outcome": ["evacuated"],
            "resolved_step": [steps],
            "exit_used": ["exit1"],
        }
    )
    seen = pd.DataFrame(
        observations,
        columns=[
            "step",
            "agent_id",
            "opening_id",
            "kind",
            "state",
            "usable",
            "adjacent",
        ],
    ).assign(time_s=lambda f: f["step"] / 3)
    information = pd.DataFrame(
        columns=[
            "step",
            "time_s",
            "sender_id",
            "receiver_id",
            "opening_id",
            "kind",
            "state",
            "usable",
            "hops",
        ]
    )
    return {
        "positions": positions,
        "decisions": decisions,
        "events": events,
        "pedestrians": pedestrians,
        "opening_observations": seen,
        "exit_information": information,
    }


def test_a_pedestrian_who_first_sees_its_exit_when_adjacent_did_not_know_it():
    # the first sight of exit1 is from the cell next to it, one step before stepping out:
    # every perception map holds the Moore neighbourhood, so this is no knowledge
    tables = _run_tables([[11, 1, "exit1", "exit", "open", True, True]])
    peds = run_tables_for_analysis(tables).pedestrians.set_index("agent_id")
    assert peds.loc[1, "outcome"] == "evacuated"
    assert peds.loc[1, "usable_exits_known"] == 0


def test_a_pedestrian_who_saw_its_exit_from_afar_knew_it():
    tables = _run_tables([[2, 1, "exit1", "exit", "open", True, False]])
    peds = run_tables_for_analysis(tables).pedestrians.set_index("agent_id")
    assert peds.loc[1, "usable_exits_known"] == 1
    assert peds.loc[1, "first_usable_s"] == pytest.approx(2 / 3)
    assert peds.loc[1, "evacuation_time_s"] == pytest.approx(4.0)


def test_runs_recorded_without_the_adjacent_column_get_it_from_the_positions():
    tables = _run_tables([[11, 1, "exit1", "exit", "open", True, True]])
    tables["opening_observations"] = tables["opening_observations"].drop(
        columns="adjacent"
    )
    peds = run_tables_for_analysis(tables).pedestrians.set_index("agent_id")
    assert peds.loc[1, "usable_exits_known"] == 0
    assert peds.loc[1, "usable_exits_known_any_sight"] == 1


def test_communication_degrees_count_distinct_partners():
    shouts = pd.DataFrame(
        {"step": [3, 3, 6, 9], "listener_id": [2, 3, 2, 1], "shouter_id": [1, 1, 4, 2]}
    )
    information = pd.DataFrame(
        {
            "sender_id": pd.array([1, 1, pd.NA], dtype="Int64"),
            "receiver_id": [2, 2, 3],
        }
    )
    degrees = communication_degrees(shouts, information, pd.Series([1, 2, 3, 4]))
    assert degrees.set_index("agent_id").to_dict("index") == {
        1: {
            "shouters_heard": 1,
            "shouts_reached": 2,
            "exit_info_senders": 0,
            "exit_info_receivers": 1,
        },
        2: {
            "shouters_heard": 2,
            "shouts_reached": 1,
            "exit_info_senders": 1,
            "exit_info_receivers": 0,
        },
        3: {
            "shouters_heard": 1,
            "shouts_reached": 0,
            "exit_info_senders": 0,
            "exit_info_receivers": 0,
        },
        4: {
            "shouters_heard": 0,
            "shouts_reached": 1,
            "exit_info_senders": 0,
            "exit_info_receivers": 0,
        },
    }
