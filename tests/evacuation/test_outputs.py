import math

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.outputs import outcome_measures


def frame(rows):
    return pd.DataFrame(
        rows, columns=["step", "agent_id", "kind", "x", "y", "situation"]
    ).assign(time_s=lambda f: f["step"] / 3, heading=0.0, fear=0.0)


@pytest.fixture
def mini_run():
    rows = []
    for step in range(6):  # pedestrian 1 walks east along y = 0 and exits at step 5
        rows.append(
            (step, 1, "pedestrian", step, 0, "evacuated" if step == 5 else "danger")
        )
    track2 = [
        (0, 2),
        (1, 2),
        (2, 2),
        (1, 2),
        (2, 2),
        (3, 2),
        (3, 2),
    ]  # E, E, W, E, E, stay
    for step, (x, y) in enumerate(track2):
        rows.append((step, 2, "pedestrian", x, y, "normal"))
    for step in range(7):
        rows.append((step, 99, "adversary", 0, 3, "patrol"))
    positions = frame(rows)
    decisions = pd.DataFrame(
        [
            {
                "agent_id": 1,
                "request_step": 0,
                "applied_step": 0,
                "action": "move",
                "accepted": True,
                "situation": "danger",
                "nearest_known_opening": "exit2",
            },
            {
                "agent_id": 1,
                "request_step": 0,
                "applied_step": 3,
                "action": "move",
                "accepted": True,
                "situation": "danger",
                "nearest_known_opening": "exit1",
            },
            {
                "agent_id": 2,
                "request_step": 0,
                "applied_step": 0,
                "action": "move",
                "accepted": True,
                "situation": "normal",
                "nearest_known_opening": None,
            },
        ]
    )
    events = pd.DataFrame(
        [
            {
                "step": 0,
                "time_s": 0.0,
                "event": "sighting_adversary",
                "agent_id": 1,
                "other_id": 99,
                "detail": "",
            },
            {
                "step": 0,
                "time_s": 0.0,
                "event": "shout_heard",
                "agent_id": 1,
                "other_id": 2,
                "detail": "",
            },
            {
                "step": 5,
                "time_s": 5 / 3,
                "event": "evacuated",
                "agent_id": 1,
                "other_id": None,
                "detail": "exit1",
            },
        ]
    )
    pedestrians = pd.DataFrame(
        {
            "agent_id": [1, 2],
            "shortest_exit_m": [1.6, 3.0],
            "outcome": ["evacuated", "unresolved"],
            "resolved_step": [5, None],
            "exit_used": ["exit1", None],
        }
    )
    pocket = np.zeros((8, 5), dtype=bool)
    pocket[3, 0] = True
    return outcome_measures(
        positions, decisions, events, pedestrians, pocket, 0.4
    ).set_index("agent_id")


def test_every_measure_on_a_hand_built_run(mini_run):
    one, two = mini_run.loc[1], mini_run.loc[2]
    assert one["outcome"] == "evacuated" and two["outcome"] == "unresolved"
    assert one["evacuation_turns"] == 5
    assert one["evacuation_time_s"] == pytest.approx(5 / 3, abs=1e-4)
    assert pd.isna(two["evacuation_turns"])
    assert one["trajectory_length_m"] == pytest.approx(2.0)
    assert two["trajectory_length_m"] == pytest.approx(2.0)
    assert one["evacuation_efficiency"] == pytest.approx(
        0.8
    )  # 1.6 m shortest / 2.0 m walked
    assert two["evacuation_efficiency"] == 0.0  # unresolved
    assert one["critical_safety_margin_m"] == pytest.approx(1.2)  # 3 cells at the start
    expected_mean = np.mean([math.hypot(x, 3) * 0.4 for x in range(6)])
    assert one["mean_threat_distance_m"] == pytest.approx(expected_mean, abs=1e-4)
    assert (
        one["pre_movement_delay_turns"] == 1
    )  # evidence at 0, first move under a decision at step 1
    assert pd.isna(two["pre_movement_delay_turns"])  # no evidence
    assert one["movement_directness"] == pytest.approx(1.0)
    assert two["movement_directness"] == pytest.approx(0.6)  # 3 cells net over 5 walked
    assert one["reversals_per_100m"] == 0.0
    assert two["reversals_per_100m"] == pytest.approx(100.0)  # two reversals over 2 m
    assert one["herding_rate"] == pytest.approx(
        0.8
    )  # aligned with 2 except when 2 stepped back
    assert two["herding_rate"] == pytest.approx(0.8)
    assert one["pocket_cells_entered"] == 1 and two["pocket_cells_entered"] == 0
    assert one["exit_used"] == "exit1"
    assert bool(one["familiar_exit_use"]) is True  # nearest known at the last decision
    assert (
        one["threat_response_situation"] == "danger"
        and one["threat_response_action"] == "move"
    )
    assert pd.isna(two["threat_response_situation"])
