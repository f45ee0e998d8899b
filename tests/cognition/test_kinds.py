import numpy as np
import pytest

from mesa_llm_mobility.cognition.demo import (
    DEPARTURE_CHOICE,
    CommuteFacts,
    DepartureDecision,
)
from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    RulePolicyError,
)


def test_messages_carry_the_schema_in_the_system_message(facts):
    messages = DEPARTURE_CHOICE.messages(facts)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert '"depart_minute"' in messages[0]["content"]
    assert "JSON schema" in messages[0]["content"]


def test_parse_accepts_a_valid_answer(facts):
    output, errors = DEPARTURE_CHOICE.parse(
        facts, '```json\n{"depart_minute": 430, "reason": "early"}\n```'
    )
    assert errors == []
    assert output == DepartureDecision(depart_minute=430, reason="early")


def test_parse_names_the_schema_field(facts):
    output, errors = DEPARTURE_CHOICE.parse(
        facts, '{"depart_minute": "soon", "reason": "x"}'
    )
    assert output is None
    assert any(error.startswith("field depart_minute:") for error in errors)


def test_parse_runs_the_domain_validator(facts):
    output, errors = DEPARTURE_CHOICE.parse(
        facts, '{"depart_minute": 470, "reason": "late"}'
    )
    assert output is None
    assert errors == [
        "depart_minute 470 arrives after work starts at 480; leave at 450 or earlier"
    ]


def test_request_checks_the_context_type():
    with pytest.raises(TypeError, match=r"DepartureChoice.*agent 'x'.*CommuteFacts"):
        DecisionRequest(DEPARTURE_CHOICE, "x", {"name": "not facts"})


def test_rule_policy_failure_names_kind_and_agent(facts, broken_kind):
    with pytest.raises(
        RulePolicyError,
        match=r"'Broken' failed for agent 'bob': KeyError: 'missing road'",
    ):
        broken_kind.apply_rule_policy(
            DecisionRequest(broken_kind, "bob", facts), np.random.default_rng(0)
        )


def test_rule_policy_must_return_the_schema(facts, broken_kind):
    wrong = DecisionKind(
        name="Wrong",
        context_type=CommuteFacts,
        output_schema=broken_kind.output_schema,
        render_prompt=lambda facts: [],
        rule_policy=lambda context, rng: {"value": 1},
    )
    with pytest.raises(RulePolicyError, match="returned dict, expected Value"):
        wrong.apply_rule_policy(
            DecisionRequest(wrong, 3, facts), np.random.default_rng(0)
        )


def test_output_schema_must_be_pydantic():
    with pytest.raises(TypeError, match="pydantic"):
        DecisionKind("Bad", CommuteFacts, dict, lambda c: [], lambda c, r: {})


def test_the_schema_instruction_opens_the_system_message_for_prefix_caching(facts):
    """Every prompt of a kind starts with the same long instruction (a provider's cached
    prefix); what differs per agent comes after it."""
    other = facts.model_copy(update={"name": "Bo", "last_delay_minutes": 12})
    first, second = (DEPARTURE_CHOICE.messages(f)[0]["content"] for f in (facts, other))
    instruction = first.split("\n\n", 1)[0]
    assert instruction.startswith("Answer with a single JSON object")
    assert '"depart_minute"' in instruction
    assert second.startswith(instruction + "\n\n")
    assert first != second
