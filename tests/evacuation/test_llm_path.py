"""The EvacuationMove kind through the real LLM brain (litellm's offline ``mock_response``)."""

import json

import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.evacuation.model import EvacuationModel


def answering(answer, ledger_path, **options):
    """The real LLM brain, every completion of which is ``answer`` (litellm's mock)."""
    return LLMBrain(
        "openai/fake-model",
        api_key="sk-local-fake",
        extra_params={"mock_response": json.dumps(answer)},
        max_concurrency=8,
        timeout_s=10,
        max_attempts=1,
        ledger=Ledger(ledger_path),
        **options,
    )


@pytest.mark.parametrize(
    ("route_id", "rejection", "outcome"),
    [("R1", "paper", "ok"), ("R9", "repair", "fallback"), ("R9", "paper", "rejected")],
)
def test_llm_answers_are_validated_then_rejected_or_replaced_by_the_rule_policy(
    tmp_path, route_id, rejection, outcome
):
    answer = {
        "action": "move",
        "situation": "unsure",
        "goal": "seek_exit",
        "intent": "get out through the nearest exit",
        "urgency": 0.5,
        "route_id": route_id,
    }
    ledger_path = tmp_path / "ledger.jsonl"
    brain = answering(answer, ledger_path, max_repairs=1)
    model = EvacuationModel(
        composition={"average": 3},
        rng=0,
        brain=brain,
        time_limit_s=1,
        rejection=rejection,
    )
    model.run()
    decisions = model.decisions_frame()
    assert (decisions["outcome"] == outcome).all()
    assert decisions["accepted"].all() == (outcome != "rejected")
    if outcome == "rejected":  # the agent keeps its (empty) route and is told why
        assert (decisions["cells_committed"] == 0).all()
        assert decisions["commit_reason"].str.contains("R9").all()
        assert all(
            p.previous.feedback.startswith("rejected: route_id 'R9' was not offered")
            and p.route == []
            for p in model.pedestrians
        )
    elif outcome == "ok":
        assert (decisions["goal"] == "seek_exit").all() and (
            decisions["route_id"] == "R1"
        ).all()
    else:  # the offered ids were R1..R5 at most: the rule policy answered, and says why
        assert (
            decisions["reason"].notna().all() and (decisions["route_id"] != "R9").all()
        )
    records = [r for r in Ledger.read(ledger_path) if r["kind"] == "EvacuationMove"]
    assert len(records) == len(decisions)
    assert {r["outcome"] for r in records} == {outcome}
    assert all(len(r["rounds"]) == (2 if outcome == "fallback" else 1) for r in records)
    prompt = records[0]["messages"][-1]["content"]
    assert "Current view:" in prompt and "@" in prompt and "R1:" in prompt


def test_an_answer_worded_as_a_model_words_it_is_accepted_and_acted_on(tmp_path):
    """Other case and punctuation, an unknown field and a ``shout`` of false: the decision to
    escape still makes the pedestrians shout, and the goal is read from its category."""
    answer = {
        "action": "Move",
        "situation": "DANGER!",
        "goal": "Escape.",
        "intent": "run away from the man with the knife",
        "urgency": 0.9,
        "route_id": "R1",
        "reasoning": "Someone is screaming behind me.",
        "shout": False,
    }
    brain = answering(answer, tmp_path / "ledger.jsonl")
    model = EvacuationModel(
        composition={"average": 3}, rng=0, brain=brain, time_limit_s=1
    )
    model.run()
    decisions = model.decisions_frame()
    assert (decisions["outcome"] == "ok").all() and decisions["accepted"].all()
    assert (decisions["goal"] == "escape").all()
    assert (decisions["situation"] == "danger").all()
    assert decisions["shout"].all() and all(p.shouting for p in model.pedestrians)
