"""The transport through both clients: calls started and answered, failures' latency, cancellation.

A call that times out or loses its connection may or may not have reached the server; one that
got an HTTP status back certainly did. So the ledger counts both, and the calls a server
received lie between them under any load. A timed-out call is closed, so a server that checks
(llama.cpp's queue, the local test server) drops the work.
"""

from __future__ import annotations

import time

import pytest

from mesa_llm_mobility.cognition.demo import demo_responder
from mesa_llm_mobility.cognition.kinds import Outcome
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault

TIMEOUT_S = 0.5


@pytest.mark.parametrize(
    ("fault", "answered"),
    [(Fault.hang(30.0), 1), (Fault.reset(), 1), (Fault.http(503), 2)],
    ids=["timeout", "reset", "503"],
)
def test_calls_started_and_answered_are_counted_apart(
    brain_for, request_for_ada, fault, answered
):
    with (
        FakeLLMServer(demo_responder(), script=[fault]) as server,
        # a second attempt slow on a loaded machine must not time out too
        brain_for(server, max_attempts=2, timeout_s=3.0) as brain,
    ):
        result = brain.decide(request_for_ada)
        received = server.request_count
    assert result.outcome is Outcome.OK and result.attempts == 2
    row = brain.ledger.summary().loc["all"]
    assert (row["http_calls"], row["http_answered"]) == (2, answered)
    assert row["http_answered"] <= received <= row["http_calls"]


def test_a_failed_decision_records_the_time_it_took(brain_for, request_for_ada):
    with (
        FakeLLMServer(lambda body: Fault.hang(30.0)) as server,
        brain_for(
            server, max_attempts=2, max_total_s=5.0, timeout_s=TIMEOUT_S
        ) as brain,
    ):
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.FALLBACK
    # two timeouts passed before the brain gave up (timeouts never fire early)
    assert result.latency_s >= 2 * TIMEOUT_S
    assert brain.ledger.rows().loc[0, "latency_s"] == pytest.approx(result.latency_s)


def test_a_timed_out_call_is_closed_so_the_server_drops_it(brain_for, request_for_ada):
    with (
        FakeLLMServer(lambda body: Fault.hang(60.0)) as server,
        brain_for(server, max_attempts=1, timeout_s=TIMEOUT_S) as brain,
    ):
        brain.decide(request_for_ada)
        # the hung handler would run for a minute; a closed connection cancels it
        deadline = time.monotonic() + 20.0
        while server.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.in_flight == 0
