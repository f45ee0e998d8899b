"""Asynchronous urban decisions (a reaction time of d simulated minutes), rule and LLM brains."""

import logging

import pytest

from mesa_llm_mobility.cognition.brain import PendingDecisions
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.urban import scripted_llm as traveller
from mesa_llm_mobility.urban.decision_schedule import STALE_ACTION, ReactionSchedule
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from tests.urban.runs import kpis, run_urban

KEY = "reaction-time-key-0c4e1d2f"


def test_batches_are_released_at_their_due_minute():
    schedule = ReactionSchedule(5)
    first = PendingDecisions(list)
    second = PendingDecisions(list)
    schedule.add(first, frozenset({"ada"}), {"day": 1, "minute": 10}, 15)
    schedule.add(second, frozenset({"bo"}), {"day": 1, "minute": 12}, 17)
    assert schedule.is_busy("ada") and schedule.is_busy("bo")
    assert schedule.take_due(14) == []
    assert schedule.take_due(15) == [({"day": 1, "minute": 10}, first)]
    assert not schedule.is_busy("ada") and schedule.is_busy("bo")
    assert schedule.take_due(None) == [({"day": 1, "minute": 12}, second)]
    assert len(schedule) == 0


def test_a_negative_reaction_time_is_refused():
    with pytest.raises(ValueError, match="reaction_minutes: must be >= 0 min, got -1"):
        UrbanMobilityModel(reaction_minutes=-1)


def _rule_day(reaction_minutes):
    with UrbanMobilityModel(
        days=1, rng=3, n_agents=20, reaction_minutes=reaction_minutes
    ) as model:
        model.run()
        assert len(model.reactions) == 0  # nothing pending at the day's end
        return model.decisions_frame(), model.summary()


def test_rule_runs_with_a_reaction_time_are_reproducible_and_differ_from_d0():
    first, summary = _rule_day(5)
    again, _ = _rule_day(5)
    synchronous, _ = _rule_day(0)
    assert first.equals(again)
    assert not first.equals(synchronous)
    assert summary["trips"] > 0
    # revisions are recorded at the minute they were asked; a late answer is not applied
    revisions = first[first["kind"] == "PlanRevision"]
    assert len(revisions) > 0
    assert set(first["outcome"]) == {"ok"}
    assert STALE_ACTION not in set(synchronous["action"])


def _slow_sometimes(body):
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.05


@pytest.mark.slow
@pytest.mark.parametrize("client", ["direct", "litellm"])
def test_an_llm_day_with_a_reaction_time_resolves_every_decision(
    tmp_path, client, caplog
):
    """Faults, slow and out-of-order answers, idle gaps between batches: the day completes,
    every decision is resolved and recorded, the calls add up to the server's."""
    caplog.set_level(logging.ERROR)
    config = {
        "days": 1,
        "seed": 4,
        "n_agents": 20,
        "brain": "llm:openai/fake-model",
        "reaction_minutes": 5,
    }
    with FakeLLMServer(
        with_faults(traveller.respond, provider_faults(), every=4),
        latency_s=_slow_sometimes,
    ) as server:
        result = run_urban(
            tmp_path / "run",
            config,
            progress=False,
            brain_options={
                "client": client,
                "api_base": server.api_base,
                "api_key": KEY,
                "timeout_s": 1.0,
                "max_attempts": 3,
                "max_total_s": 8.0,
            },
        )
        received = server.request_count
    assert result.finished
    assert result.run.config["reaction_minutes"] == 5
    decisions = result.run.read_table("decisions")
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
    records = Ledger.read(result.run.ledger_path)
    assert len(records) == len(decisions)
    llm = kpis(result)["llm"].loc["all"]
    # the server received every call answered, and no call the client did not start (a call
    # a timeout gave up on may not have reached it), under any load
    assert llm["http_answered"] <= received <= llm["http_calls"]
    assert (decisions["kind"] == "TripImportance").any()
    assert llm["repairs"] > 0 and llm["fallback"] > 0
    assert (decisions["kind"] == "PlanRevision").any()
    assert KEY.encode() not in result.run.ledger_path.read_bytes()


def test_trip_importance_waits_for_no_answer_with_a_reaction_time(caplog):
    """Scores asked at an arrival are applied d minutes later, as revisions are."""
    caplog.set_level(logging.ERROR)
    with (
        FakeLLMServer(traveller.respond) as server,
        UrbanMobilityModel(
            days=1,
            rng=4,
            n_agents=6,
            brain="llm:openai/fake-model",
            brain_options={"api_base": server.api_base, "api_key": KEY},
            reaction_minutes=5,
        ) as model,
    ):
        while model.running and not model._scoring:
            model.step()
        asked = set(model._scoring)  # on their way: the minute did not wait for them
        assert asked and len(model.reactions) > 0
        asked_at = model.minute - 1
        while model.minute <= asked_at + 5:
            model.step()
        assert not asked & set(model._scoring)  # applied when due
        decisions = model.decisions_frame()
    scored = decisions[decisions["kind"] == "TripImportance"]
    assert len(scored) >= len(asked)
    assert set(scored["outcome"]) == {"ok"}
