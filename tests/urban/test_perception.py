"""Perception: nearby events, and reconsiderations at crowded stops and for walkers (both brains)."""

from __future__ import annotations

import dataclasses

import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.urban import UrbanMobilityModel
from mesa_llm_mobility.urban.decisions import (
    PLAN_REVISION,
    PersonaFacts,
    PlanRevisionOutput,
    daily_plan,
)
from mesa_llm_mobility.urban.perception import Surroundings
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import Event, load_scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine

from .conftest import local_llm_options, scripted_traveller, slow_sometimes

TOWN = load_scenario("nguyen_dupuis")
MUSEUM = "The Museum opens a special exhibition of local history today."
CINEMA = "The Cinema shows a new blockbuster at 19:00."


def test_local_events_are_perceived_at_and_next_to_their_place_once_announced():
    engine = TrafficEngine(TOWN)
    near = Surroundings(NetworkIndex(TOWN))
    # Museum (Node_12) is one road link from Uptown apartment (Node_1), not from the Factory
    assert near.near("Museum") == {"Node_12", "Node_1", "Node_6", "Node_8"}

    def texts(place, minute):
        return [e.content for e in near.events_near(engine, place, minute)]

    assert texts("Museum", 9 * 60) == [MUSEUM]
    assert texts("Uptown apartment", 9 * 60) == [MUSEUM]
    assert texts("Factory", 9 * 60) == []
    assert texts("Museum", 7 * 60) == []  # announced from 08:00
    assert texts("Coffee shop", 13 * 60) == [CINEMA]  # Cinema (Node_10) is next door
    assert texts("Museum", 19 * 60) == []  # over at 18:00
    # broadcast events are not "near": everybody hears them anyway
    assert all(e.broadcast is False for e in near.events_near(engine, "Node_6", 9 * 60))


def test_rule_travellers_remember_the_local_events_they_perceive():
    with UrbanMobilityModel(days=1, rng=0, collect_every=60) as model:
        model.run()
        memories = model.memories_frame()
    perceived = memories[memories["content"].isin([MUSEUM, CINEMA])]
    assert set(perceived["content"]) == {MUSEUM, CINEMA}
    assert not perceived.duplicated(["agent", "content"]).any()  # once a day each
    # each perceiver reconsidered its plan at or next to the Museum while it was announced
    near = Surroundings(NetworkIndex(TOWN))
    close_by = {
        r.agent
        for r in model.itinerary.revisions
        if "Node_12" in near.near(r.place) and 8 * 60 <= r.minute < 18 * 60
    }
    museum = set(perceived.loc[perceived["content"] == MUSEUM, "agent"])
    assert museum and museum <= close_by
    assert len(museum) < len(model.travellers)
    # only riders reconsider at stops (drivers queued at a road link do not, every minute)
    trips = model.trips_frame()
    riders = set(trips.loc[trips["mode"] == "transit", "agent"])
    at_stop = {r.agent for r in model.itinerary.revisions if r.situation == "at_stop"}
    assert at_stop <= riders


def _riders(n=12):
    return [
        PersonaFacts(
            name=f"Rider {k}",
            home="Uptown apartment",
            work_facility="Factory",
            work_start=480,
            work_end=1020,
            licensed=False,
            vehicles=0,
            household=f"R{k}",
        )
        for k in range(n)
    ]


def test_riders_left_behind_by_full_trains_reconsider_at_the_stop_once():
    with UrbanMobilityModel(
        population=_riders(), rng=0, events=False, chat_probability=0.0,
        daytime_chat_probability=0.0, collect_every=60,
    ) as model:  # fmt: skip
        model.run()
    at_stop = [r for r in model.itinerary.revisions if r.situation == "at_stop"]
    stops = {stop for line in TOWN.metro_lines.values() for stop in line.stops}
    assert at_stop and {r.place for r in at_stop} <= stops
    assert all(r.action == "keep" for r in at_stop)
    morning = [r for r in at_stop if r.minute < 12 * 60]
    assert len({r.agent for r in morning}) == len(morning)  # once per trip
    assert model.summary()["plan_errors"] == {}


def test_a_rider_at_a_stop_cannot_change_the_path_of_the_trip_it_queues_for():
    with UrbanMobilityModel(
        population=_riders(), rng=0, events=False, chat_probability=0.0,
        daytime_chat_probability=0.0, collect_every=60,
    ) as model:  # fmt: skip
        contexts = []
        while not contexts and model.minute < 10 * 60:
            model.step()
            contexts = [
                c
                for a in model.travellers.values()
                if (c := a.node_revision_context(model.view, model.minute)) is not None
            ]
    context = contexts[0]
    assert context.situation == "at_stop" and context.trigger.startswith(
        "crowded stop: Metro_2 trains are full"
    )
    errors = PLAN_REVISION.validate(
        context, PlanRevisionOutput(action="new_path", new_path=["Metro_2_link_1"])
    )
    assert errors[0].startswith("path: you are queued for the train at this stop")
    user = PLAN_REVISION.messages(context)[1]["content"]
    assert "You are waiting at the metro stop Node_1" in user
    assert "new_path (" not in user


WORKS = Event(
    place="Ave_2_link_2", direction=None, attribute="none", old_value=None,
    new_value=None, start_time=0.0, preview_time=0.0, duration=24 * 60,
    content="Street works on Ave_2_link_2: the pavement is closed on one side.",
    spatial_scope=("Ave_2_link_2",),
)  # fmt: skip


def _walkers(n=3):
    return [
        PersonaFacts(
            name=f"Walker {k}",
            home="Midtown apartment",
            licensed=False,
            vehicles=0,
            household=f"W{k}",
            lifestyle="shopping",
            preferences="walks everywhere",
        )
        for k in range(n)
    ]


def test_walkers_reconsider_when_an_event_is_on_the_links_ahead(monkeypatch):
    # two 16-minute links to the Supermarket: the rule plan would take the metro
    monkeypatch.setattr(daily_plan, "choose_mode", lambda ctx, destination, rng: "walk")
    with UrbanMobilityModel(
        population=_walkers(), rng=0, events=[WORKS], chat_probability=0.0,
        daytime_chat_probability=0.0, collect_every=60,
    ) as model:  # fmt: skip
        model.run()
    trips = model.trips_frame()
    crossing = trips[trips["path"].map(lambda p: "Ave_2_link_2" in p)]
    assert not crossing.empty and set(crossing["mode"]) == {"walk"}
    at_node = [r for r in model.itinerary.revisions if r.situation == "at_node"]
    assert {r.agent for r in at_node} == set(crossing["agent"])
    assert {r.place for r in at_node} <= {
        "Node_5",
        "Node_6",
    }  # the ends of Ave_2_link_2
    # once per trip, and not for a trip that starts on the link (decided before leaving)
    starting_on_it = crossing["path"].map(lambda p: p[0] == "Ave_2_link_2").sum()
    assert len(at_node) == len(crossing) - starting_on_it


@pytest.mark.slow
@pytest.mark.parametrize("faulty", [False, True])
def test_llm_travellers_get_the_same_facts_through_the_local_server(tmp_path, faulty):
    ledger = tmp_path / "ledger.jsonl"
    responder = scripted_traveller(faulty=faulty, every=4)
    museum_walker = dataclasses.replace(
        _walkers(1)[0], name="Mia", lifestyle="museum and history"
    )
    population = [*_riders(8), museum_walker]
    with (
        FakeLLMServer(responder, latency_s=slow_sometimes) as server,
        UrbanMobilityModel(
            population=population, rng=0, chat_probability=0.0,
            daytime_chat_probability=0.0, collect_every=60, brain="llm:openai/fake-model",
            brain_options=local_llm_options(server, ledger=ledger),
        ) as model,
    ):  # fmt: skip
        model.run()
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    revisions = [r for r in Ledger.read(ledger) if r["kind"] == "PlanRevision"]
    prompts = [r["messages"][1]["content"] for r in revisions]
    assert any("crowded stop: Metro_2 trains are full" in p for p in prompts)
    assert any(MUSEUM in p for p in prompts)  # Mia, at or next to the Museum
    assert any("Family and friends now" in p or "Traffic now" in p for p in prompts)
    stops = [r for r in model.itinerary.revisions if r.situation == "at_stop"]
    assert stops and all(r.action == "keep" for r in stops)
