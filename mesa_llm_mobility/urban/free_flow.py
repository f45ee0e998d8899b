"""Free-flow travel times and paths between facilities, computed when first asked.

The urban model shows travellers the free-flow minutes and the shortest path of the trips they
may make, keyed ``(origin facility, destination facility, mode)``. The reference town has 13
facilities (507 keys); an imported city has thousands, whose every pair no run needs.
:class:`FreeFlowTable` answers a key on first use (one shortest-path search, shared by every
pair of facilities at the same two nodes) and remembers it; :func:`free_flow_table` fills the
whole table at once for small towns and tests. Both give the same values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.routing import MODES, DirectedLink, PathError, Router

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.routing import NetworkIndex
    from mesa_llm_mobility.urban.scenario import Scenario

FacilityPair = tuple[str, str, str]
"""``(origin facility, destination facility, mode)``."""


class FreeFlowTable:
    """Free-flow minutes and shortest paths by facility pair and mode, found on first use.

    Transit minutes include each metro line's static wait (as the planning prompts show them).

    Args:
        index: The network index.
        town: The scenario (metro lines' static waits).
        facilities: The facilities a key may name.
    """

    def __init__(
        self, index: NetworkIndex, town: Scenario, facilities: frozenset[str]
    ) -> None:
        self.router = Router(index)
        self.town = town
        self.facilities = facilities
        self._by_nodes: dict[
            tuple[str, str, str], tuple[float, tuple[DirectedLink, ...]] | None
        ] = {}
        self.times = _Times(self)
        """Minutes by :data:`FacilityPair` (a read-only mapping)."""
        self.routes = _Routes(self)
        """Shortest paths by :data:`FacilityPair` (a read-only mapping)."""

    def lookup(self, key: FacilityPair) -> tuple[float, tuple[DirectedLink, ...]]:
        """``(minutes, links)`` of ``key``.

        Raises:
            KeyError: If a facility is unknown, the mode is not a mode, or no path exists.
        """
        origin, destination, mode = key
        if (
            origin not in self.facilities
            or destination not in self.facilities
            or mode not in MODES
        ):
            raise KeyError(key)
        index = self.router.index
        nodes = (index.node_of(origin), index.node_of(destination), mode)
        if nodes not in self._by_nodes:
            self._by_nodes[nodes] = self._search(origin, destination, mode)
        found = self._by_nodes[nodes]
        if found is None:
            raise KeyError(key)
        return found

    def _search(
        self, origin: str, destination: str, mode: str
    ) -> tuple[float, tuple[DirectedLink, ...]] | None:
        try:
            links = self.router.path(origin, destination, mode)
        except PathError:
            return None
        extra = 0.0
        if mode == "transit":
            extra = sum(
                self.town.metro_lines[line].static_wait
                for line in {link.line for link in links if link.line}
            )
        return self.router.free_flow_time(links, mode) + extra, tuple(links)

    def known(self) -> Iterator[FacilityPair]:
        """The keys answered so far (a facility pair per node pair found)."""
        for origin in self.facilities:
            for destination in self.facilities:
                for mode in MODES:
                    try:
                        self.lookup((origin, destination, mode))
                    except KeyError:
                        continue
                    yield (origin, destination, mode)


class _Times(Mapping[FacilityPair, float]):
    def __init__(self, table: FreeFlowTable) -> None:
        self._table = table

    def __getitem__(self, key: FacilityPair) -> float:
        return self._table.lookup(key)[0]

    def __iter__(self) -> Iterator[FacilityPair]:
        return self._table.known()

    def __len__(self) -> int:
        return sum(1 for _ in self._table.known())


class _Routes(Mapping[FacilityPair, tuple[DirectedLink, ...]]):
    def __init__(self, table: FreeFlowTable) -> None:
        self._table = table

    def __getitem__(self, key: FacilityPair) -> tuple[DirectedLink, ...]:
        return self._table.lookup(key)[1]

    def __iter__(self) -> Iterator[FacilityPair]:
        return self._table.known()

    def __len__(self) -> int:
        return sum(1 for _ in self._table.known())


def free_flow_table(
    index: NetworkIndex, town: Scenario, facilities: frozenset[str]
) -> tuple[dict[FacilityPair, float], dict[FacilityPair, tuple[DirectedLink, ...]]]:
    """Free-flow minutes and shortest paths of every facility pair and mode, at once.

    Transit minutes include each metro line's static wait.
    """
    table = FreeFlowTable(index, town, facilities)
    times: dict[FacilityPair, float] = {}
    routes: dict[FacilityPair, tuple[DirectedLink, ...]] = {}
    for origin in facilities:
        for destination in facilities:
            for mode in MODES:
                try:
                    minutes, links = table.lookup((origin, destination, mode))
                except KeyError:
                    continue
                times[(origin, destination, mode)] = minutes
                routes[(origin, destination, mode)] = links
    return times, routes
