"""Repair rounds through the real client: a raised temperature, a changed instruction, truncation."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.cognition.demo import DEPARTURE_CHOICE, demo_responder
from mesa_llm_mobility.cognition.kinds import DecisionRequest, Outcome
from mesa_llm_mobility.cognition.repairs import REPEATED_NOTE, repair_temperature
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content

LATE = json_content({"depart_minute": 1439, "reason": "sleep in"})


def _last_user(body):
    return body["messages"][-1]["content"]


def test_repair_rounds_raise_the_temperature_and_name_a_repeated_answer(
    brain_for, request_for_ada
):
    valid = demo_responder()

    def respond(body):  # a greedy model repeats itself; a warmer one finds the answer
        return LATE if body["temperature"] < 0.5 else valid(body)

    with (
        FakeLLMServer(respond) as server,
        brain_for(server, temperature=0.0, max_repairs=3) as brain,
    ):
        result = brain.decide(request_for_ada)
        bodies = server.requests
    assert [body["temperature"] for body in bodies] == [0.0, 0.3, 0.6]
    assert result.outcome is Outcome.REPAIRED
    assert REPEATED_NOTE not in _last_user(bodies[1])  # nothing repeated yet
    assert REPEATED_NOTE in _last_user(
        bodies[2]
    )  # round 2 repeated round 1 word for word
    record = brain.ledger.rows()
    assert int(record.loc[0, "repairs"]) == 2


def test_a_cut_off_answer_gets_a_truncation_repair(brain_for, request_for_ada):
    cut = Fault.cut_off('{"depart_minute": 400, "reason": {"why": 1}, "note": "I lea')
    with (
        FakeLLMServer(demo_responder(), script=[cut]) as server,
        brain_for(server, max_tokens=64) as brain,
    ):
        result = brain.decide(request_for_ada)
        bodies = server.requests
    assert result.outcome is Outcome.REPAIRED
    repair = _last_user(bodies[1])
    assert "cut off at the token limit (64 tokens)" in repair
    assert "Field required" not in repair and "field reason" not in repair
    assert result.round_errors[0].stage == "json"


def test_the_temperature_rises_to_one_and_a_higher_one_is_kept():
    assert repair_temperature(0.0, 0) == 0.0
    assert repair_temperature(0.2, 1) == pytest.approx(0.3)
    assert repair_temperature(0.2, 2) == pytest.approx(0.6)
    assert repair_temperature(0.0, 5) == 1.0
    assert (
        repair_temperature(0.9, 2) == 0.9
    )  # a chosen temperature above the floor: kept
    assert repair_temperature(1.3, 2) == 1.3


def test_a_repair_round_is_never_the_same_request(brain_for, request_for_ada):
    with (
        FakeLLMServer(lambda body: LATE) as server,
        brain_for(server, temperature=0.0, max_repairs=2) as brain,
    ):
        result = brain.decide(request_for_ada)
        bodies = server.requests
    assert result.outcome is Outcome.FALLBACK
    assert len({repr(sorted(body.items())) for body in bodies}) == len(bodies) == 3


def test_a_requests_own_temperature_is_kept_until_the_floor_passes_it(brain_for, facts):
    with (
        FakeLLMServer(lambda body: LATE) as server,
        brain_for(server, max_repairs=2) as brain,
    ):
        brain.decide(
            DecisionRequest(
                DEPARTURE_CHOICE, "ada", facts, sampling={"temperature": 0.5}
            )
        )
        bodies = server.requests
    assert [body["temperature"] for body in bodies] == [0.5, 0.5, 0.6]
