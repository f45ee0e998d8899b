"""Committing answers: goal revisions on the goal layer, whatever the words; derived shouting."""

import pytest

from mesa_llm_mobility.cognition.kinds import DecisionResult, Outcome
from mesa_llm_mobility.evacuation.decision_output import EvacuationDecision
from mesa_llm_mobility.evacuation.model import EvacuationModel


@pytest.fixture
def model():
    with EvacuationModel(composition={"average": 1}, rng=0, time_limit_s=2) as m:
        yield m


def apply(model, **answer):
    agent = model.pedestrians[0]
    request = model.decision_request(agent, "test")
    out = EvacuationDecision(
        action="move", route_id=request.context.options[0].route_id, **answer
    )
    model.apply_decision(DecisionResult(request, out, Outcome.OK))
    return model.decisions_frame().iloc[-1], agent


def test_a_goal_revision_is_a_change_of_the_goal_category_not_of_its_words(model):
    apply(model, situation="unsure", goal="seek_exit", intent="leave", urgency=0.4)
    row, agent = apply(
        model,
        situation="danger",  # the appraisal changes, the goal does not
        goal="seek_exit",
        intent="Get OUT through the exit I saw!!",
        urgency=0.9,
    )
    assert row["revision_level"] != "goal"
    assert row["goal"] == "seek_exit" and agent.goal == "seek_exit"
    row, agent = apply(model, situation="danger", goal="escape", urgency=0.9)
    assert row["revision_level"] == "goal"
    # the intent left out: the standing words stay, and so does the goal's record
    assert agent.intent == "Get OUT through the exit I saw!!" == row["intent"]
    assert agent.previous.goal == "escape"


def test_shouting_follows_the_decision_to_escape_not_an_answer_field(model):
    row, agent = apply(model, situation="unsure", goal="seek_exit", urgency=1.0)
    assert not agent.shouting and not row["shout"]
    row, agent = apply(model, situation="danger", goal="seek_exit", urgency=0.2)
    assert agent.shouting and row["shout"]
    row, agent = apply(model, situation="unsure", goal="escape", urgency=0.5)
    assert agent.shouting and row["shout"]


def test_a_left_out_capsule_keeps_the_notes(model):
    _, agent = apply(
        model,
        situation="unsure",
        goal="observe",
        urgency=0.3,
        context_capsule="R1 looked clear",
    )
    _, agent = apply(model, situation="unsure", goal="observe", urgency=0.3)
    assert agent.capsule == "R1 looked clear"
