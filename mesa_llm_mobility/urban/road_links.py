"""Road links of the traffic engine: the ``occupancy`` and ``flow`` link models.

- ``occupancy`` (GATSim): at most ``capacity`` vehicles traverse at once, each for ``free_time``;
  this is a FIFO multi-server queue, so vehicle i of a platoon released at ``t0`` leaves at
  ``t0 + (floor(i / capacity) + 1) x free_time`` (with steps dividing ``free_time``).
- ``flow`` (Vickrey point queue): a vehicle entering at ``a_i`` is ready to leave at
  ``e_i = max(a_i + free_time, e_{i-1} + 1 / q)`` with q the exit capacity; the exit queue
  grows at rate ``arrivals - q``. An optional storage capacity blocks entry when the link holds
  that many vehicles and so propagates queues upstream (spillback, as in MATSim's queue model).
  Vehicles leave at the first step ``t >= e_i``; the chain of ``e_i`` is kept in continuous
  time, so capacity is exact whatever the step.

:class:`RoadLinkState` holds one directed link's queue and vehicles; the
:class:`~mesa_llm_mobility.urban.traffic.TrafficEngine` asks it to let vehicles in
(:meth:`RoadLinkState.enter`) and out (:meth:`RoadLinkState.release`) once per step.

References:
    Vickrey, W. S. (1969). Congestion theory and transport investment. AER 59(2), 251-260.
    Gawron, C. (1998). An iterative algorithm to determine the dynamic user equilibrium in a
    traffic simulation model. IJMPC 9(3), 393-407 (the queue model behind MATSim).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from mesa_llm_mobility.urban.congestion import link_wait_indicator
from mesa_llm_mobility.urban.routing import DirectedLink
from mesa_llm_mobility.urban.scenario import RoadLink
from mesa_llm_mobility.urban.trips import TravelState, Trip

_EPS = 1e-9


@dataclass(eq=False, slots=True)
class RoadLinkState:
    """State of one directed road link: drivers waiting to enter, and vehicles on it.

    Attributes:
        link: The directed link.
        model: ``"occupancy"`` or ``"flow"``.
        capacity: Current capacity (vehicles at once, or vehicles per hour for ``flow``).
        base_capacity: The scenario's capacity (restored when a capacity event ends).
        storage: Storage capacity of a ``flow`` link (None: unlimited).
        ends_bypass: Whether vehicles ending their trip at the link's head skip its exit queue.
        wait: Drivers waiting at the tail node to enter.
        moving: Vehicles on the link in entry order (``flow``: within free time or queued).
        bypass: Heap of ``(ready, seq, trip)`` of the vehicles that skip the exit queue.
        last_ready: Vickrey exit time of the last vehicle to enter (``flow``).
        last_exit: When the last vehicle left through the exit queue (``flow``).
        entered: Vehicles entered since the last link-state record.
        exited: Vehicles left since the last link-state record.
    """

    link: DirectedLink
    model: str
    capacity: float
    base_capacity: float
    storage: int | None
    ends_bypass: bool
    wait: deque[Trip] = field(default_factory=deque)
    moving: deque[Trip] = field(default_factory=deque)
    bypass: list[tuple[float, int, Trip]] = field(default_factory=list)
    last_ready: float = -math.inf
    last_exit: float = -math.inf
    entered: int = 0
    exited: int = 0

    @classmethod
    def from_spec(cls, link: DirectedLink, spec: RoadLink) -> RoadLinkState:
        """The empty state of ``link`` with the scenario's parameters ``spec``."""
        return cls(
            link=link,
            model=spec.model,
            capacity=spec.capacity,
            base_capacity=spec.capacity,
            storage=spec.storage_capacity,
            ends_bypass=spec.model == "flow" and not spec.capacity_for_trip_ends,
        )

    @property
    def headway(self) -> float:
        """Minutes between exits at capacity (``flow``)."""
        return 60.0 / self.capacity if self.capacity > 0 else math.inf

    def count(self) -> int:
        """Vehicles on the link (for the storage capacity)."""
        return len(self.moving) + len(self.bypass)

    def exit_queued(self, now: float) -> int:
        """Vehicles of a ``flow`` link past their free time at ``now`` (0 for ``occupancy``)."""
        if self.model != "flow":
            return 0
        done_free = now + _EPS - self.link.free_time
        return sum(1 for trip in self.moving if trip.entered_at <= done_free)

    def flow_delay(self, now: float) -> float:
        """Queueing delay a ``flow`` vehicle entering at ``now`` would meet (minutes)."""
        if self.capacity <= 0:
            return 5.0 * self.link.free_time if (self.moving or self.wait) else 0.0
        return max(0.0, self.last_ready + self.headway - (now + self.link.free_time))

    def wait_minutes(self, now: float) -> float:
        """Current wait indicator (minutes) of the link (see :mod:`.congestion`)."""
        if self.model == "occupancy":
            return link_wait_indicator(
                len(self.wait), self.capacity, self.link.free_time
            )
        return self.flow_delay(now)

    def enter(self, t: float, next_seq: Callable[[], int]) -> list[Trip]:
        """Let waiting drivers onto the link at ``t``, as room allows, in FIFO order.

        Returns:
            The drivers let in, in order.
        """
        free_time = self.link.free_time
        entered: list[Trip] = []
        if self.model == "occupancy":
            room = int(self.capacity) - len(self.moving)
            while self.wait and room > 0:
                trip = self.wait.popleft()
                trip.state = TravelState.TRAVERSING
                trip.entered_at = t
                trip.ready = t + free_time
                self.moving.append(trip)
                self.entered += 1
                entered.append(trip)
                room -= 1
            return entered
        while self.wait and (self.storage is None or self.count() < self.storage):
            trip = self.wait.popleft()
            entered.append(trip)
            trip.state = TravelState.TRAVERSING
            trip.entered_at = t
            self.entered += 1
            if (
                self.ends_bypass
                and not trip.remaining
                and self.link.head == trip.destination_node
            ):
                trip.ready = t + free_time
                heapq.heappush(self.bypass, (trip.ready, next_seq(), trip))
            else:
                trip.ready = t + free_time
                if self.capacity > 0:
                    trip.ready = max(trip.ready, self.last_ready + self.headway)
                self.last_ready = trip.ready
                self.moving.append(trip)
        return entered

    def release(
        self,
        t: float,
        dt: float,
        rank: int,
        next_seq: Callable[[], int],
        has_room_after: Callable[[Trip, str], bool],
    ) -> list[tuple[float, int, int, Trip, str]]:
        """Let out the vehicles whose traversal ends in the step at ``t``.

        Args:
            t: The step's time.
            dt: The step length.
            rank: Sort rank of this link's exits among the step's arrivals at the same minute.
            next_seq: The engine's sequence counter (ties in exit order).
            has_room_after: Whether a vehicle may leave for the next link of its path
                (spillback: the next link's storage capacity).

        Returns:
            ``(exit time, rank, seq, trip, head node)`` per vehicle let out.
        """
        done: list[tuple[float, int, int, Trip, str]] = []
        limit = t + _EPS
        head = self.link.head
        if self.model == "occupancy":
            moving = self.moving
            while moving and moving[0].ready <= limit:
                trip = moving.popleft()
                self.exited += 1
                done.append((trip.ready, rank, next_seq(), trip, head))
            return done
        bypass = self.bypass
        while bypass and bypass[0][0] <= limit:
            ready, _, trip = heapq.heappop(bypass)
            self.exited += 1
            done.append((ready, rank, next_seq(), trip, head))
        moving = self.moving
        while moving and self.capacity > 0:
            trip = moving[0]
            ready = max(trip.ready, self.last_exit + self.headway)
            if ready > limit or not has_room_after(trip, head):
                break
            moving.popleft()
            exit_time = ready if ready > t - dt + _EPS else t
            self.last_exit = exit_time
            self.exited += 1
            done.append((exit_time, rank, next_seq(), trip, head))
        return done
