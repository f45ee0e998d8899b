"""Expected peak-hour demand against road capacity, and the warning of a network too small."""

from __future__ import annotations

import logging

from mesa_llm_mobility.urban.cities.load import (
    PEAK_HOUR_SHARE,
    check_network_load,
    network_load,
)
from mesa_llm_mobility.urban.scenario import load_scenario


def test_the_reference_town_holds_its_70_but_not_10000(caplog):
    town = load_scenario("nguyen_dupuis")
    small = network_load(town, 70)
    big = network_load(town, 10_000)
    # 19 two-way occupancy links of capacity 2: 38 x 2 vehicles at once, all hour long
    assert small.supply == big.supply == 38 * 2 * 60
    assert big.demand == 10_000 * PEAK_HOUR_SHARE * big.mean_trip_minutes
    assert small.ratio < 1 < big.ratio
    with caplog.at_level(logging.WARNING):
        check_network_load(town, 70)
        assert not caplog.records
        check_network_load(town, 10_000)
    [record] = caplog.records
    assert "10000 travellers" in record.getMessage()
    assert "expect gridlock" in record.getMessage()


def test_flow_links_serve_capacity_times_free_time(helsinki):
    _, town = helsinki
    load = network_load(town, 1000)
    expected = sum(link.capacity * link.free_time for link in town.road_links.values())
    assert abs(load.supply - expected) < 1e-6 * expected
    assert load.mean_trip_minutes > 0
