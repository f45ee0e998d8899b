import numpy as np
import pytest

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.cognition.demo import DEPARTURE_CHOICE, CommuteFacts
from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    Outcome,
    RulePolicyError,
    dispatch,
)
from mesa_llm_mobility.cognition.ledger import Ledger
from tests.cognition.conftest import Value


def test_rule_brain_is_deterministic_given_the_rng(batch):
    first = RuleBrain(rng=np.random.default_rng(3)).decide_all(batch)
    second = RuleBrain(rng=np.random.default_rng(3)).decide_all(batch)
    other = RuleBrain(rng=np.random.default_rng(4)).decide_all(batch)
    assert [r.output for r in first] == [r.output for r in second]
    assert [r.output for r in first] != [r.output for r in other]
    assert all(r.outcome is Outcome.OK for r in first)
    assert [r.agent_id for r in first] == [request.agent_id for request in batch]


def test_a_request_with_its_own_rng_draws_from_it_not_from_the_brain(batch):
    def streams():
        return [np.random.default_rng(100 + index) for index in range(len(batch))]

    own = [
        DecisionRequest(r.kind, r.agent_id, r.context, rng=g)
        for r, g in zip(batch, streams(), strict=True)
    ]
    brain = RuleBrain(rng=np.random.default_rng(3))
    answered = brain.decide_all(own)
    # the brain's generator was not touched: it still gives its first numbers
    assert brain.rng.random() == np.random.default_rng(3).random()
    alone = [  # each request answered on its own, with a fresh copy of its stream
        RuleBrain(rng=np.random.default_rng(999)).decide(
            DecisionRequest(r.kind, r.agent_id, r.context, rng=g)
        )
        for r, g in zip(batch, streams(), strict=True)
    ]
    assert [r.output for r in answered] == [r.output for r in alone]
    shared = RuleBrain(rng=np.random.default_rng(3)).decide_all(batch)
    assert [r.output for r in answered] != [r.output for r in shared]


def test_rule_brain_records_when_given_a_ledger(batch):
    ledger = Ledger()
    RuleBrain(rng=0, ledger=ledger).decide_all(batch, tags={"step": 5})
    rows = ledger.rows()
    assert len(rows) == len(batch)
    assert set(rows["model"]) == {"rules"}


def test_rule_brain_raises_policy_errors(facts, broken_kind):
    with pytest.raises(RulePolicyError, match="'Broken' failed for agent 9"):
        RuleBrain(rng=0).decide_all([DecisionRequest(broken_kind, 9, facts)])


def _odd_only(facts, output):
    return [] if output.value % 2 else [f"field value: {output.value} is even"]


def test_a_rule_answer_its_own_validator_rejects_is_an_error_naming_it(facts):
    kind = DecisionKind(
        name="OddValue",
        context_type=CommuteFacts,
        output_schema=Value,
        render_prompt=lambda facts: [{"role": "user", "content": "?"}],
        rule_policy=lambda facts, rng: Value(value=2),
        validate=_odd_only,
    )
    ledger = Ledger()
    with pytest.raises(RulePolicyError) as raised:
        RuleBrain(rng=0, ledger=ledger).decide(DecisionRequest(kind, "ada", facts))
    message = str(raised.value)
    assert "'OddValue'" in message and "'ada'" in message
    assert "field value: 2 is even" in message


def test_results_are_dispatched_by_kind_identity(facts):
    look_alike = DecisionKind(
        name=DEPARTURE_CHOICE.name,  # same name, another kind: never confused
        context_type=CommuteFacts,
        output_schema=Value,
        render_prompt=lambda facts: [{"role": "user", "content": "?"}],
        rule_policy=lambda facts, rng: Value(value=1),
    )
    brain = RuleBrain(rng=0)
    results = brain.decide_all(
        [
            DecisionRequest(DEPARTURE_CHOICE, "a", facts),
            DecisionRequest(look_alike, "b", facts),
        ]
    )
    seen = dispatch(
        results,
        {
            DEPARTURE_CHOICE: lambda r: ("departure", r.agent_id),
            look_alike: lambda r: ("value", r.agent_id),
        },
    )
    assert seen == [("departure", "a"), ("value", "b")]
    assert results[0].is_kind(DEPARTURE_CHOICE) and not results[0].is_kind(look_alike)
    with pytest.raises(KeyError, match="no handler for decision kind"):
        dispatch(results, {DEPARTURE_CHOICE: lambda r: None})
