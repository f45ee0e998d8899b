"""Can the network hold its travellers? Expected peak-hour demand against road capacity.

A scale figure means something only on a network sized for its population: 10,000 travellers
on the 13-node reference town end in gridlock. :func:`network_load` compares, in
vehicle-minutes per hour,

- the **demand** of the morning peak: ``travellers x PEAK_HOUR_SHARE`` trips (every traveller
  counted as a driver: an upper bound, transit and walking relieve the roads) times the mean
  free-flow minutes of a trip between nodes (a sample of shortest drives);
- the **supply** of the roads in an hour: a ``flow`` link serves ``capacity x free_time``
  vehicle-minutes an hour (capacity vehicles an hour, each on it for its free time), an
  ``occupancy`` link ``60 x capacity`` (capacity vehicles at once), summed over directed links.

:func:`check_network_load` logs a warning when the ratio is above 1 (the urban model calls it
from its constructor); a run lifecycle can call it before it starts.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass

import numpy as np

from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import Scenario

logger = logging.getLogger(__name__)

PEAK_HOUR_SHARE = 0.4
"""Share of the travellers who set off in the busiest hour of the morning."""
SAMPLED_ORIGINS = 20
"""Origins of the shortest drives averaged for the mean trip (each to every node it reaches)."""


@dataclass(frozen=True, slots=True)
class NetworkLoad:
    """Expected peak-hour road demand against road supply.

    Attributes:
        travellers: Travellers counted.
        mean_trip_minutes: Mean free-flow minutes of a drive between nodes.
        demand: Vehicle-minutes the peak hour asks for.
        supply: Vehicle-minutes the roads serve in an hour.
    """

    travellers: int
    mean_trip_minutes: float
    demand: float
    supply: float

    @property
    def ratio(self) -> float:
        """Demand over supply (above 1: the peak cannot flow)."""
        return self.demand / self.supply if self.supply > 0 else float("inf")

    def message(self, source: str) -> str:
        """One line saying what the figures mean."""
        return (
            f"{source}: {self.travellers} travellers expect about {self.demand:,.0f} "
            f"vehicle-minutes in the peak hour against {self.supply:,.0f} the roads serve "
            f"(ratio {self.ratio:.1f}): expect gridlock; choose a larger network or fewer "
            "travellers (docs/cities.md)"
        )


def network_load(
    scenario: Scenario, travellers: int, index: NetworkIndex | None = None
) -> NetworkLoad:
    """Expected peak-hour demand of ``travellers`` against the road supply of ``scenario``.

    Args:
        scenario: The network.
        travellers: Travellers.
        index: The scenario's network index, if built already.
    """
    index = index or NetworkIndex(scenario)
    supply = 0.0
    for link in index.links:
        if link.kind != "road":
            continue
        spec = scenario.road_links[link.name]
        supply += (
            spec.capacity * link.free_time
            if spec.model == "flow"
            else 60.0 * spec.capacity
        )
    nodes = list(scenario.nodes)
    step = max(1, len(nodes) // SAMPLED_ORIGINS)
    minutes = []
    for origin in nodes[::step][:SAMPLED_ORIGINS]:
        found = _drive_minutes(index, origin)
        minutes.extend(m for node, m in found.items() if node != origin)
    mean = float(np.mean(minutes)) if minutes else 0.0
    demand = travellers * PEAK_HOUR_SHARE * mean
    return NetworkLoad(travellers, mean, demand, supply)


def _drive_minutes(index: NetworkIndex, origin: str) -> dict[str, float]:
    """Free-flow driving minutes from ``origin`` to every node it reaches (one search)."""
    best = {origin: 0.0}
    heap = [(0.0, origin)]
    while heap:
        minutes, node = heapq.heappop(heap)
        if minutes > best[node]:
            continue
        for link in index.out_links.get(node, ()):
            if link.kind != "road":
                continue
            arrival = minutes + link.free_time
            if arrival < best.get(link.head, float("inf")):
                best[link.head] = arrival
                heapq.heappush(heap, (arrival, link.head))
    return best


def check_network_load(
    scenario: Scenario, travellers: int, index: NetworkIndex | None = None
) -> NetworkLoad:
    """:func:`network_load`, with a logged warning when the peak cannot flow (ratio above 1)."""
    load = network_load(scenario, travellers, index)
    if load.ratio > 1.0:
        logger.warning(load.message(scenario.source))
    return load
