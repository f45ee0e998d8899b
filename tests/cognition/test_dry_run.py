"""Pricing an LLM run from a rule-brain pass: the calls and prompt tokens an LLM would be sent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mesa_llm_mobility.cognition.demo import demo_requests, demo_responder
from mesa_llm_mobility.cognition.dry_run import (
    DryRunBrain,
    estimate_tokens,
    prompt_tokens,
)
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.settings import make_brain, parse_brain_setting
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.urban.model import UrbanMobilityModel


def test_the_tokens_are_those_of_the_messages_an_llm_brain_sends():
    requests = demo_requests(10, np.random.default_rng(4))
    with (
        FakeLLMServer(demo_responder()) as server,
        LLMBrain(
            "openai/fake-model",
            api_base=server.api_base,
            api_key="sk-dry-run-local",
            rng=0,
            structured_output="json_object",
        ) as brain,
    ):
        brain.decide_all(requests)
        sent = server.requests
    dry = DryRunBrain("openai/gpt-4o-mini", rng=0)
    results = dry.decide_all(requests)
    estimate = dry.estimate()
    assert estimate.calls == len(sent) == len(results) == 10
    assert estimate.prompt_tokens == sum(
        prompt_tokens(body["messages"]) for body in sent
    )
    assert estimate.table.loc["DepartureChoice", "cost_usd"] > 0  # litellm's price
    answers = sum(estimate_tokens(r.output.model_dump_json()) for r in results)
    assert estimate.table.loc["all", "completion_tokens"] == answers


def test_the_estimator_is_four_characters_a_token_plus_the_chat_overhead():
    assert estimate_tokens("") == 0 and estimate_tokens("abcde") == 2
    messages = [
        {"role": "system", "content": "x" * 40},
        {"role": "user", "content": "hi"},
    ]
    assert prompt_tokens(messages) == 3 + (4 + 10) + (4 + 1)


def test_a_model_under_a_dry_run_asks_what_an_llm_run_asks():
    brain = make_brain("dry-run:openai/some-unpriced-model", rng=0)
    assert isinstance(brain, DryRunBrain)
    assert parse_brain_setting("dry-run:openai/x") == ("dry-run", "openai/x")
    with UrbanMobilityModel(days=1, rng=0, n_agents=2, brain=brain) as model:
        assert model.uses_llm
        model.run()
        decisions = model.decisions_frame()
    with UrbanMobilityModel(days=1, rng=0, n_agents=2) as rules:
        rules.run()
        rule_kinds = set(rules.decisions_frame()["kind"])
    estimate = brain.estimate()
    table = estimate.table
    assert "TripImportance" in table.index and "TripImportance" not in rule_kinds
    assert estimate.calls == len(decisions)
    assert math.isnan(table.loc["all", "cost_usd"])  # litellm knows no price for it
    lines = estimate.lines()
    assert "no price known" in lines[-1] and lines[-1].lstrip().startswith("all")


def test_an_empty_pass_costs_nothing():
    estimate = DryRunBrain("openai/gpt-4o-mini").estimate()
    assert estimate.calls == 0 and estimate.prompt_tokens == 0
    assert len(estimate.lines()) == 1


@pytest.mark.parametrize("setting", ["dry-run:", "dry-run: "])
def test_a_dry_run_without_a_model_is_refused(setting):
    with pytest.raises(ValueError, match="dry-run:<litellm model>"):
        parse_brain_setting(setting)
