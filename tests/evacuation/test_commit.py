"""Committing answers: goal revisions on the goal layer, whatever the words; derived shouting.

Under the paper's rejection semantics an invalid answer is rejected and its reason is the
pedestrian's feedback on the next turn (and part of the turn its memory role remembers). A call
that failed (a dropped connection) is no answer of the model: its error text must appear in no
later prompt and no memory, while the model's own invalid answers are still fed back.
"""

from __future__ import annotations

import pytest

from mesa_llm_mobility.cognition.kinds import DecisionResult, Outcome
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, with_faults
from mesa_llm_mobility.evacuation import scripted_llm
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


INFRASTRUCTURE_WORDS = (
    "transport",
    "no answer",
    "ServerDisconnected",
    "ClientOSError",
    "Connection",
    "gave up",
    "HTTP",
)


@pytest.mark.slow
def test_transport_failures_reach_no_prompt_and_no_memory(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    # every third request loses its connection (not retried: max_attempts 1); the scripted
    # pedestrian also names an unoffered route now and then (rejected: the model's own error)
    responder = with_faults(
        scripted_llm.with_unoffered_routes(scripted_llm.respond, every=4),
        (Fault.reset(),),
        every=3,
    )
    with FakeLLMServer(responder) as server:
        model = EvacuationModel(
            composition={"average": 4},
            rng=3,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": "sk-commit-local",
                "timeout_s": 2.0,
                "max_attempts": 1,
                "ledger": ledger,
            },
            time_limit_s=10,
        )
        model.run()
        bodies = server.requests
        model.close()
    records = Ledger.read(ledger)
    failed = [r for r in records if r["rounds"] and r["rounds"][-1]["raw"] is None]
    invalid = [
        r
        for r in records
        if r["outcome"] == "rejected" and r["rounds"][-1]["raw"] is not None
    ]
    assert failed and invalid  # both cases happened
    prompts = "\n".join(
        str(message["content"]) for body in bodies for message in body["messages"]
    )
    assert "was not offered" in prompts  # the model's own errors are fed back
    for word in INFRASTRUCTURE_WORDS:
        assert word not in prompts, word
    memories = "\n".join(model.memory_versions_frame()["memory"])
    assert memories
    for word in INFRASTRUCTURE_WORDS:
        assert word not in memories, word
