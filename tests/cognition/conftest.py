"""Fixtures for the cognition tests: a tiny decision kind and a commuter batch."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import BaseModel

from mesa_llm_mobility.cognition.demo import (
    DEPARTURE_CHOICE,
    CommuteFacts,
    demo_requests,
)
from mesa_llm_mobility.cognition.kinds import DecisionKind, DecisionRequest
from mesa_llm_mobility.cognition.llm_brain import LLMBrain


@pytest.fixture(params=["direct", "litellm"])
def client(request) -> str:
    """Both clients: the direct OpenAI-compatible one and litellm."""
    return request.param


@pytest.fixture
def brain_for(client):
    """``brain_for(server, **options)``: an LLM brain on ``client`` for a local test server.

    JSON mode alone (no response-format probe) unless ``structured_output`` is given.
    """

    def make(server, **options) -> LLMBrain:
        options.setdefault("rng", np.random.default_rng(0))
        options.setdefault("structured_output", "json_object")
        return LLMBrain(
            "openai/fake-model",
            api_base=server.api_base,
            api_key="sk-cognition-tests-local",
            client=client,
            **options,
        )

    return make


@pytest.fixture
def facts() -> CommuteFacts:
    return CommuteFacts(
        name="Ada",
        work_start_minute=480,
        expected_travel_minutes=30,
        last_delay_minutes=5,
        earliest_departure_minute=360,
    )


@pytest.fixture
def request_for_ada(facts) -> DecisionRequest:
    return DecisionRequest(DEPARTURE_CHOICE, "ada", facts)


@pytest.fixture
def batch() -> list[DecisionRequest]:
    return demo_requests(12, np.random.default_rng(7))


class Value(BaseModel):
    """A one-field output schema for kinds made up by tests."""

    value: int


def _broken_policy(context, rng):
    raise KeyError("missing road")


@pytest.fixture
def broken_kind() -> DecisionKind:
    """A kind whose rule policy always raises."""
    return DecisionKind(
        name="Broken",
        context_type=CommuteFacts,
        output_schema=Value,
        render_prompt=lambda facts: [{"role": "user", "content": "?"}],
        rule_policy=_broken_policy,
    )
