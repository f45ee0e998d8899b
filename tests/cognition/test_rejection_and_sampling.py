"""Per-request sampling and the ``reject`` handling of invalid answers, against the local server."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from mesa_llm_mobility.cognition.kinds import DecisionKind, DecisionRequest, Outcome
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain, model_supports_reasoning
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content


class Answer(BaseModel):
    value: int


def _validate(context: int, answer: Answer) -> list[str]:
    return (
        [] if answer.value >= context else [f"value {answer.value} is below {context}"]
    )


KIND = DecisionKind(
    name="Threshold",
    context_type=int,
    output_schema=Answer,
    render_prompt=lambda context: [{"role": "user", "content": f"at least {context}"}],
    rule_policy=lambda context, rng: Answer(value=context),
    validate=_validate,
)


def _brain(server, **options):
    return LLMBrain(
        "openai/fake-model",
        api_base=server.api_base,
        api_key="sk-local-test",
        timeout_s=2.0,
        max_attempts=2,
        max_total_s=5.0,
        **options,
    )


def test_request_sampling_is_merged_over_the_brain_and_reasoning_sent_only_when_supported(
    tmp_path,
):
    path = tmp_path / "ledger.jsonl"
    with FakeLLMServer(lambda body: json_content({"value": 5})) as server:
        request = DecisionRequest(
            KIND, 1, 3, sampling={"reasoning_effort": "high", "seed": 7}
        )
        with _brain(
            server, temperature=0.2, supports_reasoning=True, ledger=Ledger(path)
        ) as brain:
            result = brain.decide(request)
            assert result.outcome is Outcome.OK
            sent = server.requests[-1]
            assert sent["temperature"] == 0.2 and sent["reasoning_effort"] == "high"
            assert sent["seed"] == 7
        assert Ledger.read(path)[-1]["params"]["reasoning_effort"] == "high"
        with _brain(
            server, temperature=0.2
        ) as brain:  # an unknown model: litellm says no
            assert not brain.supports_reasoning
            brain.decide(request)
            sent = server.requests[-1]
            assert "reasoning_effort" not in sent and sent["seed"] == 7
    assert not model_supports_reasoning("openai/fake-model")


@pytest.mark.parametrize(
    ("reply", "stage"),
    [
        (json_content({"value": 1}), "value 1 is below 3"),
        ('{"value": ', "the answer was cut off"),
        ("value: four", "no valid JSON"),
        (json_content({"other": 1}), "field value"),
    ],
)
def test_reject_sends_no_repair_and_uses_no_rule_policy(reply, stage):
    with (
        FakeLLMServer(lambda body: reply) as server,
        _brain(server, max_repairs=2) as brain,
    ):
        rejected = brain.decide(DecisionRequest(KIND, 1, 3, on_invalid="reject"))
        assert server.request_count == 1
        assert rejected.outcome is Outcome.REJECTED and rejected.output is None
        assert stage in rejected.reason
        repaired = brain.decide(DecisionRequest(KIND, 1, 3))  # the default: repair
        assert repaired.outcome is Outcome.FALLBACK and repaired.output.value == 3
        assert server.request_count == 1 + 3
        summary = brain.ledger.summary().loc["all"]
        assert summary["rejected"] == 1 and summary["fallback"] == 1


def test_a_failed_call_is_rejected_too_and_rejections_replay(tmp_path):
    path = tmp_path / "ledger.jsonl"
    with (
        FakeLLMServer(lambda body: Fault.http(400, "no")) as server,
        _brain(server, ledger=Ledger(path)) as brain,
    ):
        result = brain.decide(DecisionRequest(KIND, 1, 3, on_invalid="reject"))
        assert result.outcome is Outcome.REJECTED
        assert result.reason.startswith("no answer: transport failed")
    with (
        FakeLLMServer(lambda body: json_content({"value": 9})) as server,
        _brain(server, replay=path) as brain,
    ):
        again = brain.decide(DecisionRequest(KIND, 1, 3, on_invalid="reject"))
        assert again.replayed and again.outcome is Outcome.REJECTED
        assert server.request_count == 0
        # another handling is another question: asked, not replayed
        assert brain.decide(DecisionRequest(KIND, 1, 3)).output.value == 9


def test_on_invalid_is_checked():
    with pytest.raises(ValueError, match="on_invalid must be 'repair' or 'reject'"):
        DecisionRequest(KIND, 1, 3, on_invalid="drop")
