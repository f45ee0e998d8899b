import numpy as np
import pytest

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionRequest, Outcome, RulePolicyError
from mesa_llm_mobility.cognition.ledger import Ledger


def test_rule_brain_is_deterministic_given_the_rng(batch):
    first = RuleBrain(rng=np.random.default_rng(3)).decide_all(batch)
    second = RuleBrain(rng=np.random.default_rng(3)).decide_all(batch)
    other = RuleBrain(rng=np.random.default_rng(4)).decide_all(batch)
    assert [r.output for r in first] == [r.output for r in second]
    assert [r.output for r in first] != [r.output for r in other]
    assert all(r.outcome is Outcome.OK for r in first)
    assert [r.agent_id for r in first] == [request.agent_id for request in batch]


def test_rule_brain_records_when_given_a_ledger(batch):
    ledger = Ledger()
    RuleBrain(rng=0, ledger=ledger).decide_all(batch, tags={"step": 5})
    rows = ledger.rows()
    assert len(rows) == len(batch)
    assert set(rows["model"]) == {"rules"}


def test_rule_brain_raises_policy_errors(facts, broken_kind):
    with pytest.raises(RulePolicyError, match="'Broken' failed for agent 9"):
        RuleBrain(rng=0).decide_all([DecisionRequest(broken_kind, 9, facts)])
