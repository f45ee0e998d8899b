"""A large population (2,000 travellers, a morning): every trip is counted exactly once.

Issue #13 (populations of 10,000): the scaling itself is measured by
``benchmarks/bench_population.py``; this test keeps the bookkeeping of a large run honest.
No timing is asserted.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from mesa_llm_mobility.urban.model import UrbanMobilityModel

N_TRAVELLERS = 2000
UNTIL_MINUTE = 11 * 60  # the morning peak and the first returns


@pytest.fixture(scope="module")
def large_model():
    model = UrbanMobilityModel(days=1, rng=0, n_agents=N_TRAVELLERS)
    try:
        while model.running and model.minute < UNTIL_MINUTE:
            model.step()
        yield model
    finally:
        model.memory_store.close()


def records(model):
    return [r for agent in model.travellers.values() for r in agent.trips]


def test_every_trip_id_once(large_model):
    assert len(large_model.travellers) == N_TRAVELLERS
    ids = Counter(r.trip_id for r in records(large_model))
    assert ids and max(ids.values()) == 1


def test_departed_is_arrived_plus_in_progress(large_model):
    departed = [
        r
        for r in records(large_model)
        if not r.cancelled and not math.isnan(r.departure)
    ]
    arrived = [r for r in departed if not math.isnan(r.arrival)]
    under_way = [r for r in departed if math.isnan(r.arrival)]
    assert arrived and under_way  # a morning: some trips done, some still on the road
    assert large_model.arrived == len(arrived)
    assert large_model.trips_in_progress == len(under_way)
    assert large_model.departed == len(departed)
    assert len(departed) == len(arrived) + len(under_way)
    # Nothing arrives without departing, and no traveller makes two trips at once.
    assert not [
        r
        for r in records(large_model)
        if not math.isnan(r.arrival) and math.isnan(r.departure)
    ]
    per_traveller = Counter(
        name
        for name, agent in large_model.travellers.items()
        for r in agent.trips
        if r in under_way
    )
    assert max(per_traveller.values()) == 1


def test_records_agree_with_the_engine(large_model):
    engine = large_model.engine
    for record in records(large_model):
        if record.cancelled or math.isnan(record.departure):
            continue
        trip = engine.trip(record.trip_id)
        assert trip.departure == record.departure
        if not math.isnan(record.arrival):
            assert trip.arrival == record.arrival


def test_memory_streams_write_no_collection_for_the_rule_brain(large_model):
    # Deferred writes: the rule brain never queries, so no traveller has a Chroma collection,
    # yet every traveller's memories are there.
    store = large_model.memory_store
    assert not store._collection_names()
    assert sum(len(agent.memory) for agent in large_model.travellers.values()) > 0
