"""Both LLM roles of a pedestrian through the real LLM brain against the local server.

Faults (provider_faults), slow answers that finish out of order, idle gaps between steps, and
answers the engine rejects: the paper's rejection semantics (previous plan and capsule kept,
the reason fed back), the repair option, sampling on the wire (temperature 0.2, reasoning
effort by trigger), the memory role's revisions, and late answers pausing the whole clock.
"""

from __future__ import annotations

import itertools
import time

import pandas as pd
import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.repairs import REPAIR_INSTRUCTION
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.evacuation import scripted_llm
from mesa_llm_mobility.evacuation.contexts import HIGH_EFFORT_TRIGGERS
from mesa_llm_mobility.evacuation.model import EvacuationModel

REJECTED_REASON = "route_id 'R99' was not offered"


def _slow_sometimes(body):
    """0-0.3 s by prompt: a batch's answers arrive out of order."""
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.05


def _options(server, ledger, **extra):
    return {
        "api_base": server.api_base,
        "api_key": "sk-minds-local",
        "timeout_s": 1.0,
        "max_attempts": 3,
        "max_total_s": 8.0,
        "ledger": ledger,
        **extra,
    }


def _run_with_idle_gaps(model, gap_every=6, gap_s=0.15):
    """Step to the end, pausing now and then (pooled connections sit idle)."""
    while model.running:
        model.step()
        if model.tick % gap_every == 0:
            time.sleep(gap_s)
    return model


def _first_rounds(bodies):
    """The bodies of first answers (a repair round is sampled at a raised temperature)."""
    return [
        body
        for body in bodies
        if not body["messages"][-1]["content"].startswith(REPAIR_INSTRUCTION[:30])
    ]


def _prompt_line(record, label):
    user = record["messages"][-1]["content"]
    return next(line for line in user.split("\n") if line.startswith(label))


@pytest.fixture(scope="module")
def paper_run(tmp_path_factory):
    ledger = tmp_path_factory.mktemp("minds") / "ledger.jsonl"
    responder = with_faults(
        scripted_llm.with_unoffered_routes(scripted_llm.respond, every=3),
        provider_faults(),
        every=9,
    )
    with FakeLLMServer(responder, latency_s=_slow_sometimes) as server:
        model = EvacuationModel(
            composition={"average": 3, "anxious_conformist": 3},
            rng=2,
            brain="llm:openai/fake-model",
            brain_options=_options(server, ledger, supports_reasoning=True),
            time_limit_s=12,
        )
        _run_with_idle_gaps(model)
        bodies = server.requests
        received = server.request_count
        model.close()
    return model, Ledger.read(ledger), bodies, received


def test_rejected_answers_keep_the_plan_and_return_the_reason_next_turn(paper_run):
    model, records, _, received = paper_run
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= {"ok", "rejected"}
    rejected = decisions[decisions["outcome"] == "rejected"]
    assert len(rejected) > 0
    assert (~rejected["accepted"]).all() and (rejected["cells_committed"] == 0).all()
    assert rejected["commit_reason"].notna().all()
    moves = [r for r in records if r["kind"] == "EvacuationMove"]
    by_agent: dict[int, list[dict]] = {}
    for record in moves:
        by_agent.setdefault(int(record["agent_id"]), []).append(record)
    checked = 0
    for mine in by_agent.values():
        for before, after in itertools.pairwise(mine):
            feedback = _prompt_line(after, "FEEDBACK ON YOUR PREVIOUS ANSWER:")
            if before["outcome"] != "rejected" or "rejected:" not in feedback:
                continue
            assert before["reason"] in feedback
            # the capsule the rejected answer would have replaced is shown again
            assert _prompt_line(after, "CONTEXT CAPSULE") == _prompt_line(
                before, "CONTEXT CAPSULE"
            )
            checked += 1
    assert checked > 0
    # every HTTP call the server received is in the ledger (retries and repairs included):
    # between the calls answered and those started (a timed-out call may not have arrived)
    answered = sum(r["answered"] for r in records)
    assert answered <= received <= sum(r["attempts"] for r in records)
    assert all(r["reason"] for r in records if r["outcome"] == "rejected")


def test_sampling_on_the_wire_temperature_and_effort_by_trigger(paper_run):
    model, records, bodies, _ = paper_run
    assert {body["temperature"] for body in _first_rounds(bodies)} == {0.2}
    assert {body["reasoning_effort"] for body in bodies} == {"low", "high"}
    efforts: dict[tuple[int, int], list[str]] = {}
    for record in records:
        if record["kind"] == "EvacuationMove":
            key = (int(record["agent_id"]), int(record["tags"]["step"]))
            efforts.setdefault(key, []).append(record["params"]["reasoning_effort"])
        else:
            assert record["params"]["reasoning_effort"] == "low"
    decisions = model.decisions_frame()
    assert decisions["trigger"].isin(HIGH_EFFORT_TRIGGERS).any()
    for row in decisions.itertuples():
        wanted = "high" if row.trigger in HIGH_EFFORT_TRIGGERS else "low"
        assert wanted in efforts[(row.agent_id, row.request_step)]


def test_the_memory_role_rewrites_and_the_decision_sees_the_memory_in_force(paper_run):
    model, records, _, _ = paper_run
    versions = model.memory_versions_frame()
    assert len(versions) > 0 and set(versions["outcome"]) <= {
        "ok",
        "repaired",
        "fallback",
    }
    assert (versions["outcome"] == "ok").any()  # the scripted memory role answered
    memory_records = [r for r in records if r["kind"] == "EvacuationMemory"]
    assert len(memory_records) >= len(versions)
    # the scripted role keeps three sentences: older facts end (forgetting by omission)
    assert versions["memory"].str.contains("I chose:").any()
    for record in (r for r in records if r["kind"] == "EvacuationMove"):
        agent_id, step = int(record["agent_id"]), int(record["tags"]["step"])
        mine = versions[
            (versions["agent_id"] == agent_id) & (versions["applied_step"] <= step)
        ]
        expected = mine["memory"].iloc[-1] if len(mine) else "(nothing yet)"
        assert _prompt_line(record, "LONG-TERM MEMORY").endswith(f": {expected}")


def _scripted_run(latency, rejection="paper", gaps=False, **options):
    with FakeLLMServer(
        scripted_llm.with_unoffered_routes(scripted_llm.respond, every=4),
        latency_s=latency,
    ) as server:
        model = EvacuationModel(
            composition={"rule_following": 5},
            rng=5,
            brain="llm:openai/fake-model",
            brain_options=_options(server, None, **options),
            time_limit_s=8,
            rejection=rejection,
        )
        if gaps:
            _run_with_idle_gaps(model, gap_every=4, gap_s=0.1)
        else:
            model.run()
        bodies = server.requests
        model.close()
    return model, bodies


def test_late_answers_pause_the_whole_clock():
    prompt_fast, _ = _scripted_run(0.0)
    late, _ = _scripted_run(_slow_sometimes, gaps=True)
    # answers 0-0.3 s late, out of order, with idle gaps: nothing moved meanwhile
    pd.testing.assert_frame_equal(late.positions_frame(), prompt_fast.positions_frame())
    columns = [
        "request_step",
        "applied_step",
        "agent_id",
        "outcome",
        "action",
        "route_id",
    ]
    pd.testing.assert_frame_equal(
        late.decisions_frame()[columns], prompt_fast.decisions_frame()[columns]
    )
    pd.testing.assert_frame_equal(
        late.memory_versions_frame(), prompt_fast.memory_versions_frame()
    )
    assert (late.decisions_frame()["outcome"] == "rejected").any()


def test_the_repair_option_and_a_chosen_temperature():
    model, bodies = _scripted_run(0.0, rejection="repair", temperature=0.7)
    outcomes = set(model.decisions_frame()["outcome"])
    assert "rejected" not in outcomes and "repaired" in outcomes
    # a chosen temperature above the repair rounds' floor (0.3 a round) is kept in them
    assert {body["temperature"] for body in bodies} == {0.7}
    assert all(
        "reasoning_effort" not in body for body in bodies
    )  # unknown model: dropped
