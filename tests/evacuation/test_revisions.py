"""Decision revisions and their stimuli (mesa_llm_mobility/evacuation/revisions.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.revisions import (
    EXIT_SEEKING,
    FOLLOWING,
    ORDINARY,
    OTHER,
    THREAT_AVOIDANCE,
    decision_epochs,
    goal_category,
    goal_retention,
    returns_to_ordinary,
    shout_response,
    stimulus_revisions,
    urgency_goal_revisions,
)


@pytest.mark.parametrize(
    ("intent", "category"),
    [
        ("seek_exit", EXIT_SEEKING),
        ("Seek exit!", EXIT_SEEKING),
        ("head for the nearest EXIT", EXIT_SEEKING),
        ("leave the plaza through the south gate", EXIT_SEEKING),
        ("escape", THREAT_AVOIDANCE),
        ("Escape from the armed person toward the exit.", THREAT_AVOIDANCE),
        ("get away from the attacker", THREAT_AVOIDANCE),
        ("follow_others", FOLLOWING),
        ("Follow the crowd", FOLLOWING),
        ("tour", ORDINARY),
        ("Explore the plaza", ORDINARY),
        ("keep strolling", ORDINARY),
        ("", OTHER),
        (None, OTHER),
        ("xyzzy", OTHER),
    ],
)
def test_goal_category_whatever_the_wording(intent, category):
    assert goal_category(intent) == category


def _decisions(rows):
    columns = [
        "agent_id",
        "request_step",
        "applied_step",
        "trigger",
        "intent",
        "urgency",
        "situation",
        "sees_threat",
        "remembered_threat",
        "heard_shouts",
        "accepted",
        "revision_level",
    ]
    return pd.DataFrame(rows, columns=columns)


def test_decision_epochs_by_hand():
    decisions = _decisions(
        [
            [1, 0, 0, "initial", "tour", 0.1, "normal", False, False, 0, True, "none"],
            [
                1,
                9,
                12,
                "route_end",
                "tour",
                0.1,
                "normal",
                False,
                False,
                2,
                True,
                "plan",
            ],
            [
                1,
                18,
                21,
                "route_end",
                "seek exit",
                0.5,
                "unsure",
                False,
                False,
                1,
                False,
                "goal",
            ],
            [
                1,
                21,
                24,
                "blocked",
                "escape",
                0.9,
                "danger",
                True,
                True,
                0,
                True,
                "goal",
            ],
            [
                1,
                30,
                33,
                "route_end",
                "escape!",
                0.9,
                "danger",
                False,
                True,
                0,
                True,
                "execution",
            ],
            [2, 0, 0, "initial", "tour", 0.1, "normal", False, False, 0, True, "none"],
            [
                2,
                12,
                15,
                "route_end",
                "tour",
                0.2,
                "normal",
                False,
                False,
                0,
                True,
                "plan",
            ],
        ]
    )
    events = pd.DataFrame(
        {"event": ["exit_info_received"], "agent_id": [2], "step": [12]}
    )
    observations = pd.DataFrame(
        {"agent_id": [1], "kind": ["gate"], "state": ["closing"], "step": [20]}
    )
    epochs = decision_epochs(decisions, events, observations).set_index(
        ["agent_id", "request_step"]
    )
    assert len(epochs) == 5  # the initial decisions are not epochs
    assert epochs["urgency_change"].round(3).tolist() == [0.0, 0.4, 0.4, 0.0, 0.1]
    assert epochs["goal"].tolist() == [
        ORDINARY,
        EXIT_SEEKING,
        THREAT_AVOIDANCE,
        THREAT_AVOIDANCE,
        ORDINARY,
    ]
    assert epochs.loc[(1, 30), "previous_goal"] == THREAT_AVOIDANCE
    assert epochs["new_direct_evidence"].tolist() == [False, False, True, False, False]
    # pedestrian 1 heard shouts at 9 and 18, pedestrian 2 was told at 12
    assert epochs["peer_information"].tolist() == [True, True, False, False, True]
    assert epochs["first_receipt"].tolist() == [True, False, False, False, True]
    assert epochs["later_receipt"].tolist() == [False, True, False, False, False]
    # 21: saw the gate closing at 20, after the request at 18, and its previous answer was
    # rejected; 30: nothing
    assert epochs["physical_constraint"].tolist() == [False, False, True, False, False]


def test_urgency_goal_revisions_and_risk_ratio_by_hand():
    epochs = pd.DataFrame(
        {
            "urgency_change": [0.3, 0.2, 0.15, 0.0, 0.05, 0.1, 0.0, 0.0],
            "revision_level": [
                "goal",
                "goal",
                "plan",
                "goal",
                "plan",
                "none",
                "plan",
                "plan",
            ],
        }
    )
    table = urgency_goal_revisions(epochs).set_index("threshold")
    # 0.15: large = 0.3, 0.2, 0.15 (2 goals of 3); small = 5 with 1 goal
    assert table.loc[0.15, "n_large"] == 3 and table.loc[0.15, "goal_large"] == 2
    assert table.loc[0.15, "rate_small"] == pytest.approx(1 / 5)
    assert table.loc[0.15, "risk_ratio"] == pytest.approx((2 / 3) / (1 / 5))
    # 0.10 puts 0.1 among the large ones
    assert table.loc[0.10, "n_large"] == 4
    # the paper's 58.6 % vs 4.3 % is a risk ratio within its 12.27-14.37
    assert 12.27 <= 0.586 / 0.043 <= 14.37


def test_stimulus_revisions_are_cumulative():
    epochs = pd.DataFrame(
        {
            "urgency_change": [0.5, 0.0, 0.0, 0.0],
            "new_direct_evidence": [True, False, False, False],
            "first_receipt": [False, True, False, False],
            "later_receipt": [False, False, True, False],
            "physical_constraint": [False, False, False, True],
            "revision_level": ["goal", "plan", "execution", "none"],
        }
    )
    table = stimulus_revisions(epochs).set_index("stimulus")
    assert table.loc["urgency change >= 0.15", "goal"] == 1.0
    small = table.loc["urgency change < 0.15"]
    assert small["epochs"] == 3 and small["plan_or_above"] == pytest.approx(1 / 3)
    assert small["any_revision"] == pytest.approx(2 / 3)
    assert table.loc["physical constraint", "any_revision"] == 0.0


def test_goal_retention_and_returns_to_ordinary():
    epochs = pd.DataFrame(
        {
            "agent_id": [1, 1, 1, 2, 2],
            "previous_goal": [
                ORDINARY,
                THREAT_AVOIDANCE,
                THREAT_AVOIDANCE,
                EXIT_SEEKING,
                EXIT_SEEKING,
            ],
            "goal": [
                THREAT_AVOIDANCE,
                THREAT_AVOIDANCE,
                THREAT_AVOIDANCE,
                EXIT_SEEKING,
                ORDINARY,
            ],
        }
    )
    table = goal_retention(epochs).set_index("previous_goal")
    assert table.loc[THREAT_AVOIDANCE, "retained"] == 1.0
    assert table.loc[EXIT_SEEKING, "retained"] == 0.5
    assert table.loc[ORDINARY, f"to {THREAT_AVOIDANCE}"] == 1.0
    assert returns_to_ordinary(epochs) == 1


def test_shout_response_by_hand():
    epochs = pd.DataFrame(
        {
            "agent_id": [1, 1, 2, 3, 4],
            "request_step": [3, 6, 3, 3, 3],
            "heard_shouts": [1, 2, 1, 1, 1],
            "previous_situation": ["normal", "unsure", "normal", "unsure", "normal"],
            "sees_threat": [False, False, False, False, True],
            "remembered_threat": [False, False, False, False, False],
            "previous_urgency": [0.1, 0.4, 0.5, 0.1, 0.1],
            "urgency": [0.4, 0.6, 0.3, 0.5, 0.9],
            "situation": ["unsure", "danger", "danger", "unsure", "danger"],
        }
    )
    # kept: 1 (its first shout decision) and 2; 3 was unsure before, 4 saw the threat
    result = shout_response(epochs, ["agent_id"])
    assert result["pedestrians"] == 2 and result["higher_urgency"] == 1
    assert result["unsure"] == 1 and result["danger"] == 1
