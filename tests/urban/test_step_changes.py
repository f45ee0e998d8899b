"""The minute's work follows what the engine changed: mirroring and en-route reconsiderations.

A full mirror of every traveller (what the model did every minute before) must find nothing to
change, and every traveller the view would ask to reconsider at a node must be among those the
itinerary offers: on the reference town (occupancy links, crowded metro stops) and on the same
town with ``flow`` links (exit queues, spillback), minute by minute.
"""

from __future__ import annotations

import dataclasses

import pytest

from mesa_llm_mobility.urban.agents import traveller_state
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.scenario import load_scenario
from mesa_llm_mobility.urban.step_changes import StepChanges
from mesa_llm_mobility.urban.trips import TravelState, Trip


def _flow_town():
    town = load_scenario("nguyen_dupuis")
    links = {
        name: dataclasses.replace(
            link, model="flow", capacity=40.0, storage_capacity=12
        )
        for name, link in town.road_links.items()
    }
    return dataclasses.replace(town, road_links=links)


def _check_every_minute(model: UrbanMobilityModel, until: int) -> dict[str, int]:
    seen = {"mirrored": 0, "asked": 0}
    while model.minute < until:
        t = model.minute
        itinerary = model.itinerary
        staying, offered = itinerary.revision_opportunities(t)
        # what the old loop over everyone under way would have asked
        offered_names = {agent.name for agent in offered}
        seen_names = {agent.name for agent, _ in staying}
        for name in sorted(itinerary.active - seen_names - offered_names):
            agent = model.travellers[name]
            reconsidered = set(agent.today.reconsidered)
            assert agent.node_revision_context(model.view, t) is None, (t, name)
            assert agent.today.reconsidered == reconsidered
        seen["asked"] += len(offered)
        model.step()  # takes the same opportunities (see _replayable)
        for name, agent in model.travellers.items():
            location = model.engine.location(name)
            assert (agent.state, agent.place) == (
                traveller_state(location),
                location.place,
            ), (model.minute, name)
        seen["mirrored"] += 1
    return seen


def _replayable(model: UrbanMobilityModel) -> UrbanMobilityModel:
    """A model whose revision opportunities can be asked twice a minute (read, then stepped)."""
    original = model.itinerary.revision_opportunities
    cache: dict[int, tuple] = {}

    def once(t: int):
        if t not in cache:
            cache.clear()
            cache[t] = original(t)
        return cache[t]

    model.itinerary.revision_opportunities = once  # type: ignore[method-assign]
    return model


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["reference", "flow"])
def test_nobody_the_engine_did_not_touch_has_moved_or_may_reconsider(scenario):
    town = load_scenario("nguyen_dupuis") if scenario == "reference" else _flow_town()
    with UrbanMobilityModel(
        scenario=town, n_agents=400, rng=2, embedding="hash"
    ) as model:
        seen = _check_every_minute(_replayable(model), 11 * 60)
    assert seen["asked"] > 0


def test_a_trip_stays_at_its_link_end_until_it_leaves_the_link():
    changes = StepChanges()
    trip = Trip("t", "a", "A", "B", "A", "B", None, "drive", 0.0, "shortest")
    trip.link, trip.ready, trip.state = object(), 5.0, TravelState.TRAVERSING
    changes.started_link(trip)
    assert changes.at_link_end(4) == []
    assert changes.at_link_end(5) == [trip]
    assert changes.at_link_end(6) == [trip]  # held in the exit queue
    trip.link, trip.ready = object(), 9.0  # on its next link
    assert changes.at_link_end(7) == []
    changes.started_link(trip)
    assert changes.at_link_end(9) == [trip]
    trip.state = TravelState.AT_NODE
    assert changes.at_link_end(10) == []


def test_touched_agents_are_taken_once():
    changes = StepChanges()
    changes.touch("a")
    changes.touch_trips([Trip("t", "b", "A", "B", "A", "B", None, "drive", 0.0, "x")])
    assert changes.take_touched() == {"a", "b"}
    assert changes.take_touched() == set()
