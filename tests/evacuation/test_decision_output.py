"""Answers as real models write them: any case and punctuation, fields left out, fields added."""

import pytest
from pydantic import ValidationError

from mesa_llm_mobility.evacuation.decision_output import (
    GOAL_CATEGORIES,
    EvacuationDecision,
    enumerated,
)


def test_enumerated_values_are_read_whatever_their_case_and_punctuation():
    assert enumerated("Seek exit") == enumerated("SEEK-EXIT.") == "seek_exit"
    assert enumerated(" Turn and observe! ") == "turn_and_observe"
    assert enumerated(3) == 3  # not a string: the schema refuses it
    out = EvacuationDecision.model_validate(
        {
            "action": "MOVE",
            "situation": "Danger!",
            "goal": "Follow others",
            "urgency": "0.8",
            "route_id": "R1",
        }
    )
    assert (out.action, out.situation, out.goal, out.urgency) == (
        "move",
        "danger",
        "follow_others",
        0.8,
    )


def test_optional_fields_may_be_left_out_and_unknown_ones_are_ignored():
    out = EvacuationDecision.model_validate(
        {
            "action": "wait",
            "situation": "unsure",
            "goal": "observe",
            "urgency": 0.4,
            "reasoning": "I hear shouting, better look first",
            "shout": False,
            "confidence": 0.7,
        }
    )
    assert out.intent is None and out.context_capsule is None
    assert not hasattr(out, "shout") and "reasoning" not in out.model_dump()


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"action": "move", "situation": "danger", "urgency": 0.9}, "goal"),
        (
            {"action": "move", "situation": "danger", "urgency": 0.9, "goal": "panic"},
            "goal",
        ),
        (
            {"action": "run", "situation": "danger", "urgency": 0.9, "goal": "escape"},
            "action",
        ),
    ],
)
def test_the_goal_category_is_required_and_must_be_one_of_the_categories(answer, field):
    with pytest.raises(ValidationError) as error:
        EvacuationDecision.model_validate(answer)
    assert error.value.errors()[0]["loc"] == (field,)
    assert set(GOAL_CATEGORIES) >= {"escape", "seek_exit", "follow_others"}
