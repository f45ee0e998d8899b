"""Fail fast: an endpoint that cannot answer stops the brain with one line saying how to fix it.

Through the real clients against the local server: a 401 or 404 stops at once (no call sent for
the rest of the batch, nothing recorded), connection refused and a run of failures stop after
``max_transport_failures`` decisions in a row, an answer between failures resets the count, and
``allow_fallback_only`` keeps the rule fallbacks.
"""

from __future__ import annotations

import logging
import socket

import numpy as np
import pytest

from mesa_llm_mobility.cognition.demo import demo_requests, demo_responder
from mesa_llm_mobility.cognition.endpoint_health import (
    EndpointHealth,
    EndpointUnavailableError,
)
from mesa_llm_mobility.cognition.kinds import Outcome
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault
from mesa_llm_mobility.cognition.transport import TransportError

KEY = "sk-endpoint-health-5a7c9e1b3d"


def _brain(api_base, client, **options):
    options.setdefault("rng", np.random.default_rng(0))
    options.setdefault("timeout_s", 2.0)
    return LLMBrain(
        "openai/fake-model", api_base=api_base, api_key=KEY, client=client, **options
    )


def _batch(n=8):
    return demo_requests(n, np.random.default_rng(3))


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("status", "says"),
    [(401, "refused the API key"), (403, "refused the API key"), (404, "model name")],
)
def test_a_refused_key_or_unknown_model_stops_at_once(client, tmp_path, status, says):
    path = tmp_path / "ledger.jsonl"
    reply = Fault.http(status, "Incorrect API key provided: {api_key}")
    with (
        FakeLLMServer(lambda body: reply) as server,
        _brain(server.api_base, client, ledger=Ledger(path)) as brain,
    ):
        with pytest.raises(EndpointUnavailableError) as raised:
            brain.decide_all(_batch())
        assert server.request_count == 1  # the rest of the batch was never sent
        with pytest.raises(EndpointUnavailableError):  # and no later batch either
            brain.decide_all(_batch(2))
        assert server.request_count == 1
        api_base = server.api_base
    message = str(raised.value)
    assert says in message and f"HTTP {status}" in message
    assert api_base in message and "openai/fake-model" in message
    assert "resumes" in message and "\n" not in message
    assert KEY not in message
    assert raised.value.status_code == status
    assert not path.exists() or Ledger.read(path) == []  # the batch is not recorded


def test_connection_refused_stops_after_the_failures_in_a_row(client):
    api_base = f"http://127.0.0.1:{_free_port()}/v1"
    brain = _brain(
        api_base, client, max_attempts=2, max_transport_failures=3, max_concurrency=1
    )
    brain.policy = type(brain.policy)(
        max_attempts=2, max_total_s=5.0, timeout_s=2.0, backoff_base_s=0.01
    )
    with brain, pytest.raises(EndpointUnavailableError) as raised:
        brain.decide_all(_batch())
    message = str(raised.value)
    assert "gave no answer to 3 decisions in a row" in message
    assert "--api-base" in message and "--max-transport-failures" in message
    assert raised.value.failures == 3 and raised.value.status_code is None


def test_an_answer_between_failures_resets_the_count(client):
    # 500s with no retry: each a decision without an answer; every fourth call answers
    calls = iter(range(10_000))
    valid = demo_responder()
    down = {"now": False}

    def respond(body):
        if down["now"] or next(calls) % 4 != 3:
            return Fault.http(500, "overloaded")
        return valid(body)

    with (
        FakeLLMServer(respond) as server,
        _brain(
            server.api_base,
            client,
            max_attempts=1,
            max_transport_failures=4,
            max_concurrency=1,
            structured_output="json_object",
        ) as brain,
    ):
        results = brain.decide_all(_batch(12))  # three failures, an answer, ...
        outcomes = [r.outcome for r in results]
        assert outcomes.count(Outcome.OK) == 3 and outcomes.count(Outcome.FALLBACK) == 9
        down["now"] = True
        with pytest.raises(EndpointUnavailableError):
            brain.decide_all(_batch(6))
        assert server.request_count == 12 + 4  # the fourth failure in a row stopped it


def test_allow_fallback_only_keeps_the_rule_fallbacks(client, caplog):
    caplog.set_level(logging.WARNING)
    with (
        FakeLLMServer(lambda body: Fault.http(401, "bad key {api_key}")) as server,
        _brain(server.api_base, client, allow_fallback_only=True) as brain,
    ):
        results = brain.decide_all(_batch())
        again = brain.decide_all(_batch(2))
    assert all(r.outcome is Outcome.FALLBACK for r in [*results, *again])
    assert server.request_count == 8 + 2  # every decision still asks
    warnings = [r for r in caplog.records if "--allow-fallback-only" in r.getMessage()]
    assert len(warnings) == 1 and KEY not in caplog.text


def test_a_submitted_batch_raises_when_its_answers_are_taken(client):
    with (
        FakeLLMServer(lambda body: Fault.http(404, "no such model")) as server,
        _brain(server.api_base, client) as brain,
    ):
        pending = brain.submit(_batch(4))
        with pytest.raises(EndpointUnavailableError):
            pending.result()
        with pytest.raises(EndpointUnavailableError):
            brain.submit(_batch(1))


def test_the_health_counts_failures_in_a_row_only():
    health = EndpointHealth("openai/m", None, max_failures=2)
    failure = TransportError("gave up: TimeoutError", 3)
    health.failed(failure)
    health.answered()
    health.failed(failure)
    assert not health.given_up
    health.failed(failure)
    assert health.given_up and "at the provider's address" in str(health.error)
    with pytest.raises(ValueError, match="max_transport_failures must be >= 1"):
        EndpointHealth("openai/m", None, max_failures=0)
