"""Trips and where travellers are: the records the traffic engine keeps for every traveller.

A :class:`Trip` is one journey of one agent and its record (planned and actual times, the links
taken); :class:`TravelState` is where a traveller is in the engine's state machine and
:class:`Location` answers "where is this agent now". :func:`trips_frame` turns trips into the
table :meth:`~mesa_llm_mobility.urban.traffic.TrafficEngine.trips_frame` returns.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

import pandas as pd

from mesa_llm_mobility.urban.routing import DirectedLink


class TravelState(StrEnum):
    """Where a traveller is in the engine's state machine."""

    SCHEDULED = "scheduled"  # at its origin, trip not yet departed
    AT_NODE = "at_node"  # transient within a step
    WAITING = "waiting"  # queued for a road link or a train at a node
    TRAVERSING = "traversing"  # driving a link within its free travel time
    QUEUED = "queued"  # flow link: free time elapsed, in the exit point queue
    WALKING = "walking"
    RIDING = "riding"
    FACILITY_QUEUE = "facility_queue"
    STAYING = "staying"
    ARRIVED = "arrived"  # at a destination node without a facility
    CANCELLED = (
        "cancelled"  # a trip withdrawn before departure (never an agent's state)
    )


@dataclass(frozen=True, slots=True)
class Location:
    """Where an agent is: a node, a facility or a link (the Mesa cell key is ``place``).

    Attributes:
        kind: ``"node"``, ``"facility"`` or ``"link"``.
        place: Node id, facility name or link name.
        state: The traveller state.
        direction: Link direction when on or waiting for a link, else None.
        waiting_for: Link name a waiting traveller queues for, else None.
    """

    kind: str
    place: str
    state: TravelState
    direction: int | None = None
    waiting_for: str | None = None


@dataclass(eq=False, slots=True)
class Trip:
    """A trip of one agent and its record.

    Attributes:
        trip_id: Unique trip id.
        agent: Agent id (several trips of one agent run one after the other).
        origin: Origin node id or facility name.
        destination: Destination node id or facility name.
        mode: ``"drive"``, ``"walk"`` or ``"transit"``.
        planned_departure: Planned departure minute.
        route: ``"explicit"``, ``"shortest"``, ``"free_flow"`` or ``"dynamic"``.
        planned_arrival: Intended arrival minute (NaN if not given).
        remaining: Links still to take (explicit and pre-computed routes).
        path: Link names taken so far (the realised path).
        links: The directed links taken so far.
        departure: Actual departure minute (NaN before).
        arrival: Arrival minute at the destination node (NaN before).
        admitted: Admission minute at the destination facility (NaN if none or not yet).
        free_flow_time: Travel time of the realised path without queues (set on arrival).
        state: Current :class:`TravelState`.
        link: Link the traveller is on or queues for, else None.
        ready: End of the current walk or traversal (``flow``: the Vickrey exit time).
        entered_at: When the current road link was entered.
        train: Metro train ``(line, direction, day, n)`` while riding.
        alight_stop: Stop index (in the direction's order) where a rider alights.
        order: Traveller number (insertion order), used to share out tied routes.
    """

    trip_id: Hashable
    agent: Hashable
    origin: str
    destination: str
    origin_node: str
    destination_node: str
    destination_facility: str | None
    mode: str
    planned_departure: float
    route: str
    planned_arrival: float = math.nan
    remaining: deque[DirectedLink] = field(default_factory=deque)
    path: list[str] = field(default_factory=list)
    links: list[DirectedLink] = field(default_factory=list)
    departure: float = math.nan
    arrival: float = math.nan
    admitted: float = math.nan
    free_flow_time: float = math.nan
    state: TravelState = TravelState.SCHEDULED
    link: DirectedLink | None = None
    ready: float = math.nan
    entered_at: float = math.nan
    train: tuple | None = None
    alight_stop: int = -1
    order: int = 0

    @property
    def delay(self) -> float:
        """Actual minus free-flow travel time (NaN until arrival)."""
        return self.arrival - self.departure - self.free_flow_time

    def approaching_node(
        self, moving: TravelState, by: float
    ) -> tuple[str, tuple[DirectedLink, ...]] | None:
        """The node the trip reaches by minute ``by`` moving as ``moving``, and the links after it.

        ``None`` unless the trip is in state ``moving`` on a link it leaves by ``by`` with links
        left (a traveller who may still change its path at that node): drivers
        (:attr:`TravelState.TRAVERSING`) and walkers (:attr:`TravelState.WALKING`) alike.
        """
        if (
            self.state is not moving
            or self.link is None
            or self.ready > by + 1e-9
            or not self.remaining
        ):
            return None
        return self.link.head, tuple(self.remaining)


TRIP_COLUMNS = [
    "trip_id",
    "agent",
    "origin",
    "destination",
    "mode",
    "path",
    "planned_departure",
    "departure",
    "planned_arrival",
    "arrival",
    "admitted",
    "travel_time",
    "free_flow_time",
    "delay",
    "state",
]
"""Columns of :func:`trips_frame`."""


def trips_frame(trips: Iterable[Trip]) -> pd.DataFrame:
    """Return one row per trip.

    Columns: trip_id, agent, origin, destination, mode, path (tuple of link names taken),
    planned_departure, departure, planned_arrival, arrival (at the destination node),
    admitted (to the destination facility), travel_time, free_flow_time, delay, state.
    """
    rows = [
        (
            trip.trip_id,
            trip.agent,
            trip.origin,
            trip.destination,
            trip.mode,
            tuple(trip.path),
            trip.planned_departure,
            trip.departure,
            trip.planned_arrival,
            trip.arrival,
            trip.admitted,
            trip.arrival - trip.departure,
            trip.free_flow_time,
            trip.delay,
            str(trip.state),
        )
        for trip in trips
    ]
    return pd.DataFrame(rows, columns=TRIP_COLUMNS)
