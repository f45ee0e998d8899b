"""How travellers use memory: planning recalls by place and time; the LLM scores trip memories."""

from __future__ import annotations

import time

import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
)
from mesa_llm_mobility.urban import UrbanMobilityModel
from mesa_llm_mobility.urban.decisions import (
    DAILY_REFLECTION,
    TRIP_IMPORTANCE,
    ReflectionContext,
    ReflectionOutput,
    TripImportanceContext,
    TripImportanceOutput,
    formula_importance,
)
from mesa_llm_mobility.urban.decisions.persona import parse_trip_memory

from .conftest import (
    local_llm_options,
    scripted_traveller,
    slow_sometimes,
    town_personas,
)


def _trip_memories(model):
    memories = model.memories_frame()
    trips = memories[memories["content"].map(parse_trip_memory).notna()]
    return trips[trips["content"].str.startswith("Day 1:")]


def test_rule_travellers_keep_the_formula_importance_of_trips():
    with UrbanMobilityModel(
        population=town_personas(), n_agents=6, rng=0, collect_every=60
    ) as model:
        model.run()
    trips = _trip_memories(model)
    assert not trips.empty
    for row in trips.itertuples():
        experience = parse_trip_memory(row.content)
        late = experience.late or 0
        assert row.importance == pytest.approx(
            min(1.0, 0.5 + experience.delay / 40 + late / 30)
        )


def test_reflection_trip_importances_are_one_per_trip():
    from .test_decisions import ALICE, late_trip  # noqa: PLC0415

    ctx = ReflectionContext(persona=ALICE, day=1, trips=[late_trip(), late_trip()])
    base = {"reflections": [{"content": "c", "importance": 0.5}]}
    assert DAILY_REFLECTION.validate(ctx, ReflectionOutput(**base)) == []
    short = ReflectionOutput(**base, trip_importance=[0.5])
    assert DAILY_REFLECTION.validate(ctx, short) == [
        "trip_importance: give one importance per trip (2), got 1"
    ]
    wrong = ReflectionOutput(**base, trip_importance=[0.5, 1.5])
    assert DAILY_REFLECTION.validate(ctx, wrong) == [
        "trip_importance[1]: 1.5 is not in [0, 1]"
    ]
    assert "1. Day " in DAILY_REFLECTION.messages(ctx)[1]["content"]


def _server(faulty):
    responder = scripted_traveller(faulty=faulty, every=5)
    return FakeLLMServer(responder, latency_s=slow_sometimes)


def _llm_model(server, ledger, **kw):
    """Six LLM travellers for two days, without chats, against the local server."""
    return UrbanMobilityModel(
        population=town_personas(), n_agents=6, rng=0, days=2, collect_every=60,
        chat_probability=0.0, daytime_chat_probability=0.0, brain="llm:openai/fake-model",
        brain_options=local_llm_options(server, ledger=ledger), **kw,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("faulty", [False, True])
def test_llm_scores_trip_memories_and_plans_recall_by_place_and_time(tmp_path, faulty):
    ledger = tmp_path / "ledger.jsonl"
    with (
        _server(faulty) as server,
        _llm_model(server, ledger, trip_importance="reflection") as model,
    ):
        model.run(days=1)
        scored_day_1 = _trip_memories(model)
        model.run()
    decisions = model.decisions_frame()
    reflections = decisions[
        (decisions["kind"] == "DailyReflection") & (decisions["day"] == 1)
    ]
    by_llm = set(reflections.loc[reflections["outcome"] != "fallback", "agent_id"])
    assert by_llm
    scored = scored_day_1[scored_day_1["agent"].isin(by_llm)]
    assert not scored.empty
    assert set(scored["importance"].round(6)) <= {0.6, 0.9}
    # day 2: the plan prompt recalls day 1's trips by place and time of the day
    plans = [
        r
        for r in Ledger.read(ledger)
        if r["kind"] == "DailyPlan" and r["tags"]["day"] == 2
    ]
    recalled = [
        r
        for r in plans
        if "Other memories:\n- Day 1: trip from " in r["messages"][1]["content"]
    ]
    assert recalled


def test_trip_importance_formula_and_its_decision():
    from .test_decisions import ALICE, late_trip  # noqa: PLC0415

    trip = late_trip()
    on_time = trip.__class__(**{**trip.__dict__, "delay": 0, "late": 0})
    assert formula_importance(on_time) == 0.5
    assert formula_importance(
        on_time.__class__(**{**on_time.__dict__, "delay": 8, "late": 3})
    ) == pytest.approx(0.8)
    assert (
        formula_importance(on_time.__class__(**{**on_time.__dict__, "delay": 20}))
        == 1.0
    )
    ctx = TripImportanceContext(persona=ALICE, day=1, now=500, trips=[trip, on_time])
    assert TRIP_IMPORTANCE.validate(ctx, TripImportanceOutput(importance=[0.9])) == [
        "importance: give one importance per trip (2), got 1"
    ]
    assert TRIP_IMPORTANCE.validate(
        ctx, TripImportanceOutput(importance=[0.9, -0.1])
    ) == ["importance[1]: -0.1 is not in [0, 1]"]
    user = TRIP_IMPORTANCE.messages(ctx)[1]["content"]
    assert "Day 1, 08:20. You have just arrived." in user and "2. Day " in user


def test_rule_brain_never_asks_trip_importance():
    with UrbanMobilityModel(
        population=town_personas(), n_agents=6, rng=0, collect_every=60
    ) as model:
        model.run()
    assert "TripImportance" not in set(model.decisions_frame()["kind"])
    with pytest.raises(
        ValueError, match="trip_importance: expected one of creation, reflection"
    ):
        UrbanMobilityModel(trip_importance="daily")


@pytest.mark.slow
@pytest.mark.parametrize("faulty", [False, True])
def test_llm_scores_trips_on_arrival_in_bounded_batches(tmp_path, faulty):
    ledger = tmp_path / "ledger.jsonl"
    with _server(faulty) as server, _llm_model(server, ledger) as model:
        model.run(days=1)
        scored_day_1 = _trip_memories(model)
        time.sleep(1.5)  # an idle gap before day 2's first calls
        model.run()
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    scoring = decisions[decisions["kind"] == "TripImportance"]
    trips = model.trips_frame()
    completed = trips[trips["arrival"].notna()]
    # bounded: one decision per traveller and minute of arrivals, never more than the trips
    assert 0 < len(scoring) <= len(completed)
    assert not scoring.duplicated(["agent_id", "day", "minute"]).any()
    by_llm = scoring[(scoring["outcome"] != "fallback") & (scoring["day"] == 1)]
    assert not by_llm.empty
    if not faulty:
        assert set(scoring["outcome"]) == {"ok"}
        assert set(scored_day_1["importance"].round(6)) <= {0.6, 0.9}
    # the reflection no longer asks for trip scores
    reflections = [r for r in Ledger.read(ledger) if r["kind"] == "DailyReflection"]
    assert reflections
    assert all(
        "trip_importance" not in r["messages"][1]["content"] for r in reflections
    )
