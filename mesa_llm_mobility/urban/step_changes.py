"""What a step of the traffic engine changed: the travellers to look at, and nobody else.

The urban model mirrors the engine's view of each traveller (state and place) into its agent and
asks drivers, walkers and riders whether to reconsider at the node ahead. Doing either for every
traveller under way costs a loop over all of them each minute, although most are just sitting on
a link or in a queue. :class:`StepChanges` keeps, for the
:class:`~mesa_llm_mobility.urban.traffic.TrafficEngine`,

- the agents **touched** since they were last taken (:meth:`StepChanges.take_touched`): every
  agent the engine moved from one container to another (departed, entered a link, boarded,
  alighted, reached a node, admitted at a facility) and every rider whose train moved on to its
  next link; an agent whose state and place did not change may be touched too, never the
  reverse;
- the trips **at the end of their link** (:meth:`StepChanges.at_link_end`): drivers and walkers
  whose traversal ends by a given minute and who are still on that link (a heap of traversal
  ends, so each trip is looked at when its end comes, then while it stays there).

Both are kept in the order-free form of sets and heaps; callers sort what they take, so the
model's decisions keep their order.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.trips import TravelState

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.routing import DirectedLink
    from mesa_llm_mobility.urban.trips import Trip

_EPS = 1e-9
_ON_LINK = (TravelState.TRAVERSING, TravelState.WALKING)


class StepChanges:
    """Agents touched by the engine, and trips reaching the end of their link."""

    def __init__(self) -> None:
        self.touched: set[Hashable] = set()
        self._ends: list[tuple[float, int, Trip, DirectedLink]] = []
        self._at_end: dict[int, tuple[float, Trip, DirectedLink]] = {}
        self._seq = 0

    def touch(self, agent: Hashable) -> None:
        """Note that ``agent``'s state or place may have changed."""
        self.touched.add(agent)

    def touch_trips(self, trips: Iterable[Trip]) -> None:
        """Note that the agents of ``trips`` may have changed."""
        self.touched.update(trip.agent for trip in trips)

    def take_touched(self) -> set[Hashable]:
        """The agents touched since the last call (and forget them)."""
        touched, self.touched = self.touched, set()
        return touched

    def started_link(self, trip: Trip) -> None:
        """A driver entered, or a walker started, ``trip.link``; its traversal ends at ``trip.ready``."""
        self._seq += 1
        heapq.heappush(self._ends, (trip.ready, self._seq, trip, trip.link))

    def at_link_end(self, by: float) -> list[Trip]:
        """Drivers and walkers still on a link whose traversal ended by minute ``by``.

        A trip stays in the answer while it is on that link (a driver held in a ``flow`` link's
        exit queue past its end) and is dropped once it has left it.
        """
        limit = by + _EPS
        while self._ends and self._ends[0][0] <= limit:
            ready, seq, trip, link = heapq.heappop(self._ends)
            self._at_end[seq] = (ready, trip, link)
        found: dict[int, Trip] = {}
        for seq, (ready, trip, link) in list(self._at_end.items()):
            if (
                trip.link is not link
                or trip.ready != ready
                or trip.state not in _ON_LINK
            ):
                del self._at_end[seq]
            else:
                found[id(trip)] = trip
        return list(found.values())
