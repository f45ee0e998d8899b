"""Point-queue traffic engine for the urban network (Appendix A of the GATSim paper).

The engine moves travellers along paths of directed links in fixed time steps (1 simulated
minute by default). Each step at time ``t`` runs, in this order:

0. network state: capacity events that start or end in ``(t - dt, t]`` are applied; dynamic
   route tables are refreshed when a routing interval starts;
1. traversal completion: finished link traversals, walks and metro rides (a train arriving at
   the rider's stop) move travellers to the link's end node; a traveller at its destination
   completes its trip;
2. departures: trips whose departure time has come leave their facility for its node;
3. arrivals: travellers at their destination facility join its admission queue, and each
   facility admits ``min(queue, capacity - staying)`` in FIFO order;
4. node-to-link entry: travellers at a node take the next link of their path; road links admit
   drivers (``occupancy``: ``min(waiting, capacity - traversing)``; ``flow``: all, subject to the
   storage capacity), walkers need no queue, and metro riders board a train of their line and
   direction that leaves the stop in ``(t - dt, t]``, up to the train's free capacity.

Link models:

- ``occupancy`` (GATSim): at most ``capacity`` vehicles traverse at once, each for ``free_time``;
  this is a FIFO multi-server queue, so vehicle i of a platoon released at ``t0`` leaves at
  ``t0 + (floor(i / capacity) + 1) x free_time`` (with steps dividing ``free_time``).
- ``flow`` (Vickrey point queue): a vehicle entering at ``a_i`` is ready to leave at
  ``e_i = max(a_i + free_time, e_{i-1} + 1 / q)`` with q the exit capacity; the exit queue
  grows at rate ``arrivals - q``. An optional storage capacity blocks entry when the link holds
  that many vehicles and so propagates queues upstream (spillback, as in MATSim's queue model).
  Vehicles leave at the first step ``t >= e_i``; the chain of ``e_i`` is kept in continuous
  time, so capacity is exact whatever the step.

References:
    Vickrey, W. S. (1969). Congestion theory and transport investment. AER 59(2), 251-260.
    Gawron, C. (1998). An iterative algorithm to determine the dynamic user equilibrium in a
    traffic simulation model. IJMPC 9(3), 393-407 (the queue model behind MATSim).
"""

from __future__ import annotations

import bisect
import heapq
import logging
import math
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from operator import itemgetter
from typing import Any

import pandas as pd

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.congestion import (
    congestion_label,
    facility_wait_indicator,
    link_wait_indicator,
)
from mesa_llm_mobility.urban.routing import (
    MODES,
    ROUTE_HISTORY,
    DirectedLink,
    NetworkIndex,
    PathError,
    Router,
    choose_hop,
    direction_stops,
    next_hop_table,
    table_age,
    validate_path,
)
from mesa_llm_mobility.urban.scenario import Event, MetroLine, Scenario

logger = logging.getLogger(__name__)

_EPS = 1e-9


LINK_STATE_COLUMNS = [
    "time",
    "link",
    "direction",
    "kind",
    "queue",
    "traversing",
    "entered",
    "exited",
    "wait_indicator",
]
"""Columns of :meth:`TrafficEngine.link_states_frame`."""


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


@dataclass(eq=False, slots=True)
class _RoadLinkState:
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

    @property
    def headway(self) -> float:
        return 60.0 / self.capacity if self.capacity > 0 else math.inf

    def count(self) -> int:
        return len(self.moving) + len(self.bypass)


@dataclass(eq=False, slots=True)
class _FacilityState:
    name: str
    capacity: int
    base_capacity: int
    average_stay: float
    queue: deque[Hashable] = field(default_factory=deque)
    staying: set[Hashable] = field(default_factory=set)


@dataclass(eq=False, slots=True)
class _AgentState:
    agent: Hashable
    place: str  # facility name or node id
    at_facility: bool
    active: Trip | None = None
    pending: deque[Trip] = field(default_factory=deque)
    last_destination: str = ""
    travelled: bool = False


Hook = Callable[["TrafficEngine", Trip, str, float], None]


class TrafficEngine:
    """Step-driven point-queue engine over a scenario's road and metro network.

    Typical use (what the urban model and :func:`~.demand.simulate_demand` do)::

        engine = TrafficEngine(load_scenario("nguyen_dupuis"))
        engine.add_trip("t1", "Uptown apartment", "Office", depart=7 * 60, mode="drive")
        engine.run_until(10 * 60)
        engine.trips_frame()

    Args:
        scenario: The validated scenario.
        dt: Step length in minutes (1 for the urban model).
        start_time: Clock at the first step, in minutes.
        route_interval: Minutes between refreshes of the en-route tables used by
            ``route="dynamic"`` trips (costs: free time plus current queueing delay).
        route_update_weight: Share of dynamic travellers following the newest table (the rest
            follow older ones, see :func:`~.routing.table_age`); 1 disables damping.
        record_link_states: Whether to record the per-step link table.
        record_facility_states: Whether to record the per-step facility table.
        apply_events: Whether to apply the scenario's capacity events.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        dt: float = 1.0,
        start_time: float = 0.0,
        route_interval: float | None = None,
        route_update_weight: float = 0.5,
        record_link_states: bool = True,
        record_facility_states: bool = True,
        apply_events: bool = True,
    ) -> None:
        if dt <= 0:
            raise ValueError(f"dt must be positive, got {dt!r}")
        if route_interval is not None and route_interval <= 0:
            raise ValueError(f"route_interval must be positive, got {route_interval!r}")
        if not 0.0 < route_update_weight <= 1.0:
            raise ValueError(
                f"route_update_weight must be in (0, 1], got {route_update_weight!r}"
            )
        self.scenario = scenario
        self.index = NetworkIndex(scenario)
        self.router = Router(self.index)
        self._free_router = Router(
            self.index
        )  # never given extra costs: free-flow paths
        self.dt = float(dt)
        self.time = float(start_time)
        self.now = float(start_time)
        self.route_interval = route_interval
        self.route_update_weight = route_update_weight
        self.record_link_states = record_link_states
        self.record_facility_states = record_facility_states
        self.on_node_arrival: list[Hook] = []
        self.on_trip_complete: list[Hook] = []

        self._road: dict[int, _RoadLinkState] = {}
        self._metro_capacity: dict[int, int] = {}
        for link in self.index.links:
            if link.kind == "road":
                road = scenario.road_links[link.name]
                self._road[link.index] = _RoadLinkState(
                    link=link,
                    model=road.model,
                    capacity=road.capacity,
                    base_capacity=road.capacity,
                    storage=road.storage_capacity,
                    ends_bypass=road.model == "flow"
                    and not road.capacity_for_trip_ends,
                )
            else:
                self._metro_capacity[link.index] = scenario.metro_lines[
                    link.line
                ].train_capacity
        self._facilities = {
            f.name: _FacilityState(f.name, f.capacity, f.capacity, f.average_stay)
            for f in scenario.facilities.values()
        }
        self._agents: dict[Hashable, _AgentState] = {}
        self._trips: dict[Hashable, Trip] = {}
        self._n_settled = 0
        self._departures: list[tuple[float, int, Trip]] = []
        self._walkers: list[tuple[float, int, Trip]] = []
        self._stop_queues: dict[tuple[str, int, int], deque[Trip]] = {}
        self._trains: dict[tuple, list[Trip]] = {}
        self._seq = 0
        self._event_actions: list[tuple[float, int, Event, bool]] = []
        if apply_events:
            for k, event in enumerate(scenario.events):
                if event.attribute == "capacity":
                    self._event_actions.append(
                        (event.start_time, 2 * k + 1, event, True)
                    )
                    self._event_actions.append((event.end_time, 2 * k, event, False))
            self._event_actions.sort(key=lambda item: (item[0], item[1]))
        self._event_pos = 0
        # refresh at multiples of the interval; before the first refresh costs are free-flow
        self._next_reroute = (
            math.ceil(start_time / route_interval - _EPS) * route_interval
            if route_interval is not None
            else math.inf
        )
        # cost snapshots by refresh number (0: free flow before the first refresh)
        self._cost_history: dict[int, dict[int, float]] = {0: {}}
        self._epoch = 0
        self._hop_tables: dict[
            tuple[int, str], dict[str, tuple[DirectedLink, ...]]
        ] = {}
        self._awaiting_admission: dict[Hashable, Trip] = {}
        self._touched_facilities: set[str] = set()
        self._waiting_links: set[int] = set()
        self._reserved: dict[int, int] = {}
        self._alighted: dict[tuple, int] = {}
        self._link_rows: list[tuple] = []
        self.link_history_stored_until: float | None = None
        self._facility_rows: list[tuple] = []
        self._metro_rows: list[tuple] = []
        self._metro_metadata = {
            (line.name, d): (direction_stops(line, d), line)
            for line in scenario.metro_lines.values()
            for d in (0, 1)
        }
        self._metro_links_by_stop = {
            (link.line, link.direction, link.stop): link
            for link in self.index.links
            if link.kind == "metro"
        }

    # ------------------------------------------------------------------ set-up API
    def add_agent(self, agent: Hashable, place: str) -> None:
        """Place an agent at a facility (staying there) or at a node before its first trip.

        Raises:
            ValueError: If the agent exists or the place is unknown.
        """
        if agent in self._agents:
            raise ValueError(f"agent {agent!r} already exists")
        if place in self._facilities:
            self._facilities[place].staying.add(agent)
            self._agents[agent] = _AgentState(
                agent, place, True, last_destination=place
            )
        elif place in self.scenario.nodes:
            self._agents[agent] = _AgentState(
                agent, place, False, last_destination=place
            )
        else:
            raise ValueError(f"agent {agent!r}: unknown node or facility {place!r}")

    def add_trip(
        self,
        trip_id: Hashable,
        origin: str,
        destination: str,
        depart: float,
        mode: str = "drive",
        path: Sequence[str] | str | None = None,
        agent: Hashable | None = None,
        planned_arrival: float | None = None,
    ) -> Trip:
        """Schedule a trip.

        Args:
            trip_id: Unique id.
            origin: Origin node id or facility name (the agent's current place for later trips).
            destination: Destination node id or facility name.
            depart: Planned departure minute; the trip leaves at the first step at or after it
                (and not before the agent's previous trip has arrived).
            mode: ``"drive"``, ``"walk"`` or ``"transit"``.
            path: Explicit link names, or ``"shortest"`` (default: fastest path on free time plus
                current wait indicators, chosen at departure), ``"free_flow"`` (fastest on free
                times) or ``"dynamic"`` (drive only: next link chosen at each node from tables
                refreshed every ``route_interval``).
            agent: Agent id; defaults to ``trip_id``.
            planned_arrival: When the traveller means to arrive (for punctuality KPIs).

        Returns:
            The scheduled :class:`Trip`.

        Raises:
            ValueError: On a duplicate id, unknown place, or an origin that is not where the
                agent will be.
            PathError: If an explicit path is broken (naming the first broken link) or no path
                exists for the mode.
        """
        if trip_id in self._trips:
            raise ValueError(f"duplicate trip id {trip_id!r}")
        if mode not in MODES:
            raise ValueError(
                f"trip {trip_id!r}: unknown mode {mode!r}; expected one of {MODES}"
            )
        agent = trip_id if agent is None else agent
        try:
            origin_node = self.index.node_of(origin)
            destination_node = self.index.node_of(destination)
        except PathError as error:
            raise ValueError(f"trip {trip_id!r}: {error}") from error
        route = "shortest" if path is None else path
        links: list[DirectedLink] = []
        if isinstance(route, str):
            if route not in ("shortest", "free_flow", "dynamic"):
                raise ValueError(f"trip {trip_id!r}: unknown route {route!r}")
            if route == "dynamic" and (mode != "drive" or self.route_interval is None):
                raise ValueError(
                    f"trip {trip_id!r}: route 'dynamic' needs mode 'drive' and a route_interval"
                )
            # a free-flow search also proves that a path exists for the mode
            links = self._free_flow_path(origin_node, destination_node, mode, trip_id)
            if route != "free_flow":
                links = []
        else:
            try:
                links = validate_path(
                    self.index, origin, destination, list(route), mode
                )
            except PathError as error:
                raise PathError(f"trip {trip_id!r}: {error}") from error
            route = "explicit"
        state = self._agents.get(agent)
        if state is None:
            self.add_agent(agent, origin)
            state = self._agents[agent]
        elif self.index.node_of(state.last_destination) != origin_node:
            raise ValueError(
                f"trip {trip_id!r}: agent {agent!r} will be at {state.last_destination!r}, "
                f"not at the origin {origin!r}"
            )
        state.last_destination = destination
        trip = Trip(
            trip_id=trip_id,
            agent=agent,
            origin=origin,
            destination=destination,
            origin_node=origin_node,
            destination_node=destination_node,
            destination_facility=destination
            if destination in self._facilities
            else None,
            mode=mode,
            planned_departure=float(depart),
            planned_arrival=math.nan
            if planned_arrival is None
            else float(planned_arrival),
            route=route,
            remaining=deque(links),
            order=len(self._trips),
        )
        self._trips[trip_id] = trip
        state.pending.append(trip)
        if len(state.pending) == 1 and state.active is None:
            heapq.heappush(self._departures, (trip.planned_departure, trip.order, trip))
        return trip

    def _free_flow_path(
        self, origin: str, destination: str, mode: str, trip_id: Hashable
    ) -> list[DirectedLink]:
        try:
            return self._free_router.path(origin, destination, mode)
        except PathError as error:
            raise PathError(f"trip {trip_id!r}: {error}") from error

    def cancel_trip(self, trip_id: Hashable) -> list[Hashable]:
        """Withdraw a trip that has not departed, and the agent's later trips that follow it.

        Later trips start where this one would have ended, so they go too; the agent's next
        trip must then start where its remaining trips (or the agent) end. This is how a plan
        revision replaces future activities: cancel, then :meth:`add_trip` the new ones.

        Args:
            trip_id: The trip to cancel.

        Returns:
            Ids of the cancelled trips, in order.

        Raises:
            ValueError: If the trip has departed or was cancelled already.
        """
        trip = self._trips[trip_id]
        if not math.isnan(trip.departure) or trip.state is TravelState.CANCELLED:
            raise ValueError(
                f"trip {trip_id!r} has departed or is cancelled; cannot cancel it"
            )
        state = self._agents[trip.agent]
        position = list(state.pending).index(trip)
        cancelled = []
        while len(state.pending) > position:
            gone = state.pending.pop()
            gone.state = TravelState.CANCELLED  # a queued departure is skipped lazily
            self._n_settled += 1
            cancelled.append(gone.trip_id)
        cancelled.reverse()
        if state.pending:
            state.last_destination = state.pending[-1].destination
        elif state.active is not None:
            state.last_destination = state.active.destination
        else:
            state.last_destination = state.place
        return cancelled

    def reroute(self, trip: Trip | Hashable, links: Sequence[str]) -> None:
        """Replace the rest of an en-route trip's path (e.g. from an ``on_node_arrival`` hook).

        Args:
            trip: The trip or its id; it must be at a node (state ``at_node``).
            links: Link names from the current node to the destination.

        Raises:
            ValueError: If the trip is not at a node.
            PathError: If the new path is broken (naming the first broken link).
        """
        trip = trip if isinstance(trip, Trip) else self._trips[trip]
        if trip.state is not TravelState.AT_NODE:
            raise ValueError(f"trip {trip.trip_id!r} is {trip.state}, not at a node")
        node = trip.links[-1].head if trip.links else trip.origin_node
        new = validate_path(self.index, node, trip.destination, list(links), trip.mode)
        trip.remaining = deque(new)
        trip.route = "explicit"

    def redirect(
        self,
        trip: Trip | Hashable,
        destination: str,
        links: Sequence[str] | str = "shortest",
        *,
        planned_arrival: float | None = None,
    ) -> list[Hashable]:
        """Send an en-route trip to a new destination (e.g. from an ``on_node_arrival`` hook).

        The agent's later trips start at the old destination, so they are cancelled as by
        :meth:`cancel_trip`; :meth:`add_trip` the ones still wanted from the new destination.
        This is GATSim's ``InterruptCurrentTravel``: the traveller gives up the activity it was
        heading for and goes straight to the next one.

        Args:
            trip: The trip or its id; it must be at a node (state ``at_node``).
            destination: New destination node id or facility name.
            links: Link names from the current node to the new destination, or ``"shortest"``
                (fastest path now, on free time plus current wait indicators), ``"free_flow"``
                or ``"dynamic"`` (drive only, next link chosen at each node).
            planned_arrival: When the traveller now means to arrive (NaN if None).

        Returns:
            Ids of the agent's cancelled later trips, in order.

        Raises:
            ValueError: If the trip is not at a node, the destination is unknown or the route
                name is not one of the above.
            PathError: If the new path is broken (naming the first broken link) or no path
                exists for the trip's mode.
        """
        trip = trip if isinstance(trip, Trip) else self._trips[trip]
        if trip.state is not TravelState.AT_NODE:
            raise ValueError(f"trip {trip.trip_id!r} is {trip.state}, not at a node")
        node = trip.links[-1].head if trip.links else trip.origin_node
        try:
            destination_node = self.index.node_of(destination)
        except PathError as error:
            raise ValueError(f"trip {trip.trip_id!r}: {error}") from error
        if isinstance(links, str):
            if links not in ("shortest", "free_flow", "dynamic"):
                raise ValueError(f"trip {trip.trip_id!r}: unknown route {links!r}")
            if links == "dynamic" and (
                trip.mode != "drive" or self.route_interval is None
            ):
                raise ValueError(
                    f"trip {trip.trip_id!r}: route 'dynamic' needs mode 'drive' and a "
                    "route_interval"
                )
            router = self.router if links == "shortest" else self._free_router
            try:
                new = router.path(node, destination_node, trip.mode)
            except PathError as error:
                raise PathError(f"trip {trip.trip_id!r}: {error}") from error
            if links == "dynamic":
                new = []
            route = links
        else:
            try:
                new = validate_path(
                    self.index, node, destination, list(links), trip.mode
                )
            except PathError as error:
                raise PathError(f"trip {trip.trip_id!r}: {error}") from error
            route = "explicit"
        state = self._agents[trip.agent]
        later = list(state.pending)[1:]  # pending[0] is the active trip
        cancelled = self.cancel_trip(later[0].trip_id) if later else []
        trip.destination = destination
        trip.destination_node = destination_node
        trip.destination_facility = (
            destination if destination in self._facilities else None
        )
        trip.planned_arrival = (
            math.nan if planned_arrival is None else float(planned_arrival)
        )
        trip.remaining = deque(new)
        trip.route = route
        state.last_destination = destination
        return cancelled

    def set_capacity(
        self, place: str, capacity: float, direction: int | None = None
    ) -> None:
        """Change the current capacity of a road link, metro link or facility.

        Args:
            place: Link or facility name.
            capacity: New capacity (0 closes a link); for metro links, the train capacity.
            direction: Link direction, or None for both.

        Raises:
            ValueError: If the place is unknown or the capacity negative.
        """
        if capacity < 0:
            raise ValueError(f"{place}: negative capacity {capacity!r}")
        if place in self._facilities:
            self._facilities[place].capacity = int(capacity)
            self._touched_facilities.add(place)
            return
        links = self.index.by_name.get(place)
        if not links:
            raise ValueError(f"unknown link or facility {place!r}")
        for link in links:
            if direction is None or link.direction == direction:
                if link.kind == "road":
                    self._road[link.index].capacity = capacity
                else:
                    self._metro_capacity[link.index] = int(capacity)

    def _base_capacity(self, place: str) -> float:
        if place in self._facilities:
            return self._facilities[place].base_capacity
        link = self.index.by_name[place][0]
        if link.kind == "road":
            return self._road[link.index].base_capacity
        return self.scenario.metro_lines[link.line].train_capacity

    # ------------------------------------------------------------------ queries
    def trip(self, trip_id: Hashable) -> Trip:
        """Return a trip by id."""
        return self._trips[trip_id]

    def location(self, agent: Hashable) -> Location:
        """Return where an agent is now (node, facility or link) and its state."""
        state = self._agents[agent]
        trip = state.active
        if trip is None:
            if state.at_facility:
                facility = self._facilities[state.place]
                in_queue = agent not in facility.staying
                return Location(
                    "facility",
                    state.place,
                    TravelState.FACILITY_QUEUE if in_queue else TravelState.STAYING,
                )
            return Location(
                "node",
                state.place,
                TravelState.ARRIVED if state.travelled else TravelState.SCHEDULED,
            )
        if trip.state is TravelState.WAITING:
            link = trip.link
            return Location("node", link.tail, trip.state, link.direction, link.name)
        if trip.state is TravelState.RIDING:
            link = self._train_link(trip.train, self.now)
            return Location("link", link.name, trip.state, link.direction)
        if (
            trip.state is TravelState.TRAVERSING
            and trip.link.kind == "road"
            and self._road[trip.link.index].model == "flow"
            and trip.entered_at + trip.link.free_time <= self.now + _EPS
        ):
            return Location(
                "link", trip.link.name, TravelState.QUEUED, trip.link.direction
            )
        if trip.link is not None and trip.state in (
            TravelState.TRAVERSING,
            TravelState.WALKING,
        ):
            return Location("link", trip.link.name, trip.state, trip.link.direction)
        node = trip.links[-1].head if trip.links else trip.origin_node
        return Location("node", node, trip.state)

    def announced_events(
        self, time: float | None = None, *, broadcast_only: bool = False
    ) -> list[Event]:
        """Events announced (``preview_time <= t``) and not yet over at ``time``.

        Args:
            time: Minute to ask about (default: the last processed step).
            broadcast_only: Keep only broadcast events (perceived by everyone); the others are
                for perception near their ``spatial_scope``.

        Returns:
            The events in scenario order.
        """
        now = self.now if time is None else time
        return [
            e
            for e in self.scenario.events
            if e.preview_time <= now < e.end_time
            and (e.broadcast or not broadcast_only)
        ]

    def census(self) -> dict[str, int]:
        """Count agents in the engine's containers, by :class:`TravelState`.

        Counted from the queues, links, trains and facilities themselves (not from the agents'
        states), so tests can check conservation: the counts add up to the number of agents.
        """
        counts = dict.fromkeys((str(s) for s in TravelState), 0)
        for state in self._road.values():
            counts["waiting"] += len(state.wait)
            done_free = self.now + _EPS - state.link.free_time
            for trip in state.moving:
                queued = state.model == "flow" and trip.entered_at <= done_free
                counts["queued" if queued else "traversing"] += 1
            counts["traversing"] += len(state.bypass)
        counts["waiting"] += sum(len(queue) for queue in self._stop_queues.values())
        counts["walking"] += len(self._walkers)
        counts["riding"] += sum(len(riders) for riders in self._trains.values())
        for facility in self._facilities.values():
            counts["facility_queue"] += len(facility.queue)
            counts["staying"] += len(facility.staying)
        for agent in self._agents.values():
            if agent.active is None and not agent.at_facility:
                counts["arrived" if agent.travelled else "scheduled"] += 1
        return counts

    def link_wait(self, link: DirectedLink) -> float:
        """Current wait indicator (minutes) of a directed link (see :mod:`.congestion`)."""
        if link.kind == "metro":
            queue = len(
                self._stop_queues.get((link.line, link.direction, link.stop), ())
            )
            headway = self.scenario.metro_lines[link.line].headway
            return link_wait_indicator(queue, self._metro_capacity[link.index], headway)
        state = self._road[link.index]
        if state.model == "occupancy":
            return link_wait_indicator(len(state.wait), state.capacity, link.free_time)
        return self._flow_delay(state, self.now)

    def congestion(self) -> pd.DataFrame:
        """Congested places now, as agents perceive them (GATSim's real-time traffic).

        Returns:
            One row per directed link or facility whose wait indicator earns a label: kind
            (``"road"``, ``"metro"`` or ``"facility"``), place, direction (None for
            facilities), wait_minutes, label (``"light"``, ``"moderate"`` or ``"severe"``).
        """
        rows = []
        for link in self.index.links:
            wait = self.link_wait(link)
            label = congestion_label(wait)
            if label is not None:
                rows.append((link.kind, link.name, link.direction, wait, label))
        for name in self._facilities:
            wait = self.facility_wait(name)
            label = congestion_label(wait)
            if label is not None:
                rows.append(("facility", name, None, wait, label))
        return pd.DataFrame(
            rows, columns=["kind", "place", "direction", "wait_minutes", "label"]
        )

    def facility_wait(self, name: str) -> float:
        """Current wait indicator (minutes) at a facility (see :mod:`.congestion`)."""
        facility = self._facilities[name]
        return facility_wait_indicator(
            len(facility.queue), facility.capacity, facility.average_stay
        )

    @staticmethod
    def _flow_delay(state: _RoadLinkState, now: float) -> float:
        if state.capacity <= 0:
            return 5.0 * state.link.free_time if (state.moving or state.wait) else 0.0
        return max(0.0, state.last_ready + state.headway - (now + state.link.free_time))

    # ------------------------------------------------------------------ stepping
    def run_until(self, end_time: float) -> None:
        """Step while the clock is at or before ``end_time``."""
        while self.time <= end_time + _EPS:
            self.step()

    def run_until_done(self, max_time: float = math.inf) -> None:
        """Step until every trip has arrived (or was cancelled) or ``max_time`` is passed."""
        while self.time <= max_time + _EPS and self._n_settled < len(self._trips):
            self.step()

    def step(self) -> None:
        """Process the current time ``t`` (all four phases) and advance the clock by ``dt``."""
        t = self.time
        self.now = t
        self._apply_events(t)
        if t + _EPS >= self._next_reroute:
            self._refresh_route_tables(t)
        arrivals = self._complete_traversals(t)
        at_nodes = self._handle_node_arrivals(arrivals)
        at_nodes.extend(self._depart(t))
        self._admit(t)
        self._enter_links(t, at_nodes)
        self.router.set_extra_costs(
            {
                i: self.link_wait(s.link)
                for i, s in self._road.items()
                if s.wait or s.moving
            }
        )
        if self.record_link_states:
            self._record_links(t)
        if self.record_facility_states:
            self._record_facilities(t)
        self.time = t + self.dt

    def replace_events(self, events: Sequence[Event]) -> None:
        """Replace the scenario's events from the current time on (for forked runs).

        Capacity events already started keep their pending end, so the capacity they changed
        is restored; pending starts of the old events are dropped; new events that start at
        or after the current time are scheduled. :meth:`announced_events` reports the new ones.

        Args:
            events: The new events (e.g. ``()`` to switch events off).
        """
        started = {
            id(action[2])
            for action in self._event_actions[: self._event_pos]
            if action[3]
        }
        pending = [
            action
            for action in self._event_actions[self._event_pos :]
            if not action[3] and id(action[2]) in started
        ]
        offset = 2 * len(self.scenario.events)
        for k, event in enumerate(events):
            if event.attribute == "capacity" and event.start_time >= self.time - _EPS:
                pending.append((event.start_time, offset + 2 * k + 1, event, True))
                pending.append((event.end_time, offset + 2 * k, event, False))
        pending.sort(key=lambda item: (item[0], item[1]))
        self._event_actions = self._event_actions[: self._event_pos] + pending
        self.scenario = replace(self.scenario, events=tuple(events))

    def _apply_events(self, t: float) -> None:
        while self._event_pos < len(self._event_actions):
            when, _, event, starting = self._event_actions[self._event_pos]
            if when > t + _EPS:
                break
            value = event.new_value if starting else self._base_capacity(event.place)
            self.set_capacity(event.place, float(value), event.direction)
            logger.debug("t=%s: %s capacity -> %s", t, event.place, value)
            self._event_pos += 1

    def _refresh_route_tables(self, t: float) -> None:
        self._epoch += 1
        self._cost_history[self._epoch] = {
            i: self._flow_delay(s, t) if s.model == "flow" else self.link_wait(s.link)
            for i, s in self._road.items()
        }
        oldest = self._epoch - ROUTE_HISTORY + 1
        self._cost_history.pop(oldest - 1, None)
        self._hop_tables = {k: v for k, v in self._hop_tables.items() if k[0] >= oldest}
        while self._next_reroute <= t + _EPS:
            self._next_reroute += self.route_interval

    def _next_hop(self, trip: Trip, node: str) -> DirectedLink:
        age = table_age(trip.order, self.route_update_weight, len(self._cost_history))
        key = (self._epoch - age, trip.destination_node)
        table = self._hop_tables.get(key)
        if table is None:
            table = next_hop_table(self.index, key[1], self._cost_history[key[0]])
            self._hop_tables[key] = table
        return choose_hop(table[node], trip.order, self.index.node_position[node])

    def _complete_traversals(self, t: float) -> list[tuple[float, int, int, Trip, str]]:
        done: list[tuple[float, int, int, Trip, str]] = []
        limit = t + _EPS
        self._reserved.clear()
        for index, state in self._road.items():
            if state.model == "occupancy":
                moving = state.moving
                while moving and moving[0].ready <= limit:
                    trip = moving.popleft()
                    state.exited += 1
                    done.append(
                        (trip.ready, index, self._next_seq(), trip, state.link.head)
                    )
                continue
            bypass = state.bypass
            while bypass and bypass[0][0] <= limit:
                ready, _, trip = heapq.heappop(bypass)
                state.exited += 1
                done.append((ready, index, self._next_seq(), trip, state.link.head))
            moving = state.moving
            while moving and state.capacity > 0:
                trip = moving[0]
                ready = max(trip.ready, state.last_exit + state.headway)
                if ready > limit or not self._has_room_after(trip, state.link.head):
                    break
                moving.popleft()
                exit_time = ready if ready > t - self.dt + _EPS else t
                state.last_exit = exit_time
                state.exited += 1
                done.append((exit_time, index, self._next_seq(), trip, state.link.head))
        while self._walkers and self._walkers[0][0] <= limit:
            ready, _, trip = heapq.heappop(self._walkers)
            done.append((ready, -1, self._next_seq(), trip, trip.link.head))
        n_links = len(self.index.links)
        for (_, direction), (stops, line) in self._metro_metadata.items():
            for k in range(1, len(stops)):
                for key, when in self._train_events(
                    line, direction, k, arrival=True, t=t
                ):
                    riders = self._trains.get(key)
                    if not riders:
                        continue
                    stay = []
                    for trip in riders:
                        if trip.alight_stop == k:
                            trip.train = None
                            done.append(
                                (when, n_links, self._next_seq(), trip, stops[k])
                            )
                        else:
                            stay.append(trip)
                    if k < len(stops) - 1 and len(stay) < len(riders):
                        self._alighted[(key, k)] = len(riders) - len(stay)
                    if stay:
                        self._trains[key] = stay
                    else:
                        del self._trains[key]
        done.sort(key=lambda item: (item[0], item[1], item[2]))
        return done

    def _has_room_after(self, trip: Trip, node: str) -> bool:
        if node == trip.destination_node and not trip.remaining:
            return True
        if trip.remaining:
            nxt = trip.remaining[0]
        elif trip.route == "dynamic":
            nxt = self._next_hop(trip, node)
        else:
            return True
        if nxt.kind != "road":
            return True
        state = self._road[nxt.index]
        if state.storage is None:
            return True
        # vehicles released toward the link earlier in this step count as already on it
        held = state.count() + len(state.wait) + self._reserved.get(nxt.index, 0)
        if held >= state.storage:
            return False
        self._reserved[nxt.index] = self._reserved.get(nxt.index, 0) + 1
        return True

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _handle_node_arrivals(
        self, arrivals: list[tuple[float, int, int, Trip, str]]
    ) -> list[Trip]:
        at_nodes: list[Trip] = []
        for when, _, _, trip, node in arrivals:
            trip.link = None
            if node == trip.destination_node and not trip.remaining:
                self._finish(trip, when)
                continue
            trip.state = TravelState.AT_NODE
            for hook in self.on_node_arrival:
                hook(self, trip, node, when)
            if node == trip.destination_node and not trip.remaining:
                self._finish(trip, when)  # redirected to where it already is
                continue
            at_nodes.append(trip)
        return at_nodes

    def _finish(self, trip: Trip, when: float) -> None:
        trip.arrival = when
        self._n_settled += 1
        trip.free_flow_time = self.router.free_flow_time(trip.links, trip.mode)
        state = self._agents[trip.agent]
        state.active = None
        state.travelled = True
        if trip.destination_facility is not None:
            trip.state = TravelState.FACILITY_QUEUE
            facility = self._facilities[trip.destination_facility]
            facility.queue.append(trip.agent)
            self._touched_facilities.add(facility.name)
            self._awaiting_admission[trip.agent] = trip
            state.place, state.at_facility = facility.name, True
        else:
            trip.state = TravelState.ARRIVED
            state.place, state.at_facility = trip.destination_node, False
        state.pending.popleft()
        if state.pending:
            nxt = state.pending[0]
            heapq.heappush(self._departures, (nxt.planned_departure, nxt.order, nxt))
        for hook in self.on_trip_complete:
            hook(self, trip, trip.destination_node, when)

    def _depart(self, t: float) -> list[Trip]:
        leaving: list[Trip] = []
        while self._departures and self._departures[0][0] <= t + _EPS:
            _, _, trip = heapq.heappop(self._departures)
            if trip.state is TravelState.CANCELLED:
                continue
            state = self._agents[trip.agent]
            if state.at_facility:
                facility = self._facilities[state.place]
                if trip.agent in facility.staying:
                    facility.staying.discard(trip.agent)
                else:
                    facility.queue.remove(trip.agent)
                    self._awaiting_admission.pop(trip.agent, None)
                self._touched_facilities.add(facility.name)
            state.at_facility = False
            state.place = trip.origin_node
            state.active = trip
            trip.departure = t
            if trip.route == "shortest":
                try:
                    trip.remaining = deque(
                        self.router.path(
                            trip.origin_node, trip.destination_node, trip.mode
                        )
                    )
                except PathError as error:
                    raise PathError(f"trip {trip.trip_id!r}: {error}") from error
            if trip.origin_node == trip.destination_node and not trip.remaining:
                self._finish(trip, t)
                continue
            trip.state = TravelState.AT_NODE
            leaving.append(trip)
        return leaving

    def _admit(self, t: float) -> None:
        for name in sorted(self._touched_facilities):
            facility = self._facilities[name]
            free = facility.capacity - len(facility.staying)
            while facility.queue and free > 0:
                agent = facility.queue.popleft()
                facility.staying.add(agent)
                free -= 1
                trip = self._awaiting_admission.pop(agent, None)
                if trip is not None:
                    trip.admitted = t
                    trip.state = TravelState.STAYING
        if not self.record_facility_states:
            self._touched_facilities = {
                n for n in self._touched_facilities if self._facilities[n].queue
            }

    def _enter_links(self, t: float, at_nodes: list[Trip]) -> None:
        factor = self.scenario.walking_factor
        for trip in at_nodes:
            node = trip.links[-1].head if trip.links else trip.origin_node
            if trip.remaining:
                link = trip.remaining.popleft()
            else:
                link = self._next_hop(trip, node)
            trip.links.append(link)
            trip.path.append(link.name)
            trip.link = link
            if link.kind == "metro":
                run = 1
                while (
                    trip.remaining
                    and trip.remaining[0].kind == "metro"
                    and trip.remaining[0].line == link.line
                    and trip.remaining[0].direction == link.direction
                ):
                    extra = trip.remaining.popleft()
                    trip.links.append(extra)
                    trip.path.append(extra.name)
                    run += 1
                trip.alight_stop = link.stop + run
                trip.state = TravelState.WAITING
                trip.link = link
                self._stop_queues.setdefault(
                    (link.line, link.direction, link.stop), deque()
                ).append(trip)
            elif trip.mode != "drive":
                trip.state = TravelState.WALKING
                trip.ready = t + factor * link.free_time
                heapq.heappush(self._walkers, (trip.ready, self._next_seq(), trip))
            else:
                trip.state = TravelState.WAITING
                self._road[link.index].wait.append(trip)
                self._waiting_links.add(link.index)
        for index in sorted(self._waiting_links):
            state = self._road[index]
            free_time = state.link.free_time
            if state.model == "occupancy":
                room = int(state.capacity) - len(state.moving)
                while state.wait and room > 0:
                    trip = state.wait.popleft()
                    trip.state = TravelState.TRAVERSING
                    trip.entered_at = t
                    trip.ready = t + free_time
                    state.moving.append(trip)
                    state.entered += 1
                    room -= 1
                if not state.wait:
                    self._waiting_links.discard(index)
                continue
            while state.wait and (
                state.storage is None or state.count() < state.storage
            ):
                trip = state.wait.popleft()
                trip.state = TravelState.TRAVERSING
                trip.entered_at = t
                state.entered += 1
                if (
                    state.ends_bypass
                    and not trip.remaining
                    and state.link.head == trip.destination_node
                ):
                    trip.ready = t + free_time
                    heapq.heappush(state.bypass, (trip.ready, self._next_seq(), trip))
                else:
                    trip.ready = t + free_time
                    if state.capacity > 0:
                        trip.ready = max(trip.ready, state.last_ready + state.headway)
                    state.last_ready = trip.ready
                    state.moving.append(trip)
            if not state.wait:
                self._waiting_links.discard(index)
        self._board(t)

    def _board(self, t: float) -> None:
        for (line_name, direction), (stops, line) in self._metro_metadata.items():
            for k in range(len(stops) - 1):
                link = self._metro_links_by_stop[(line_name, direction, k)]
                queue = self._stop_queues.get((line_name, direction, k))
                for key, when in self._train_events(
                    line, direction, k, arrival=False, t=t
                ):
                    riders = self._trains.get(key, [])
                    alighted = self._alighted.pop((key, k), 0)
                    boarded = 0
                    room = self._metro_capacity[link.index] - len(riders)
                    while queue and room > 0:
                        trip = queue.popleft()
                        trip.state = TravelState.RIDING
                        trip.train = key
                        riders.append(trip)
                        boarded += 1
                        room -= 1
                    if riders:
                        self._trains[key] = riders
                    self._metro_rows.append(
                        (
                            line_name,
                            direction,
                            key[2:],
                            link.name,
                            when,
                            boarded,
                            alighted,
                            len(riders),
                        )
                    )

    def _train_events(
        self, line: MetroLine, direction: int, k: int, *, arrival: bool, t: float
    ) -> list[tuple[tuple, float]]:
        """Trains of ``line``/``direction`` arriving at / leaving stop ``k`` in ``(t - dt, t]``."""
        offset = train_departure(line, 0, 0, k) - (line.dwell if arrival else 0.0)
        n_max = (
            math.ceil((line.service_end - line.service_start) / line.headway - _EPS) - 1
        )
        lo, hi = t - self.dt, t
        found = []
        for day in range(
            math.floor((lo - offset) / MINUTES_PER_DAY) - 1,
            math.floor(hi / MINUTES_PER_DAY) + 1,
        ):
            base = day * MINUTES_PER_DAY + offset
            first = max(0, math.floor((lo - base) / line.headway + _EPS) + 1)
            last = min(n_max, math.floor((hi - base) / line.headway + _EPS))
            for n in range(first, last + 1):
                found.append(((line.name, direction, day, n), base + n * line.headway))
        return found

    def _train_link(self, key: tuple, now: float) -> DirectedLink:
        line_name, direction, day, n = key
        line = self.scenario.metro_lines[line_name]
        start = train_departure(line, day, n, 0)
        k = math.floor((now - start) / (line.travel_time + line.dwell) + _EPS)
        k = min(max(k, 0), len(line.stops) - 2)
        return self._metro_links_by_stop[(line_name, direction, k)]

    # ------------------------------------------------------------------ records
    def _record_links(self, t: float) -> None:
        rows = self._link_rows
        for state in self._road.values():
            link = state.link
            if state.model == "flow":
                done_free = t + _EPS - link.free_time
                queued = sum(1 for trip in state.moving if trip.entered_at <= done_free)
                queue = len(state.wait) + queued
                traversing = state.count() - queued
            else:
                queue, traversing = len(state.wait), len(state.moving)
            rows.append(
                (
                    t,
                    link.name,
                    link.direction,
                    "road",
                    queue,
                    traversing,
                    state.entered,
                    state.exited,
                    self.link_wait(link),
                )
            )
            state.entered = state.exited = 0
        on_link: dict[int, int] = {}
        for key, riders in self._trains.items():
            link = self._train_link(key, t)
            on_link[link.index] = on_link.get(link.index, 0) + len(riders)
        for index in self._metro_capacity:
            link = self.index.links[index]
            queue = len(
                self._stop_queues.get((link.line, link.direction, link.stop), ())
            )
            rows.append(
                (
                    t,
                    link.name,
                    link.direction,
                    "metro",
                    queue,
                    on_link.get(index, 0),
                    0,
                    0,
                    self.link_wait(link),
                )
            )

    def _record_facilities(self, t: float) -> None:
        for facility in self._facilities.values():
            self._facility_rows.append(
                (
                    t,
                    facility.name,
                    len(facility.queue),
                    len(facility.staying),
                    facility.capacity,
                    self.facility_wait(facility.name),
                )
            )

    def link_states_frame(self, since: float | None = None) -> pd.DataFrame:
        """Return the per-step link table (from minute ``since`` on, if given).

        Columns: time, link, direction, kind (road / metro), queue (waiting to enter, plus the
        exit point queue of flow links, or riders waiting at the stop), traversing (vehicles
        within their free time, or riders aboard), entered and exited (road vehicles during the
        step), wait_indicator (minutes).
        """
        rows = self._link_rows
        if since is not None:  # rows are in time order
            rows = rows[bisect.bisect_left(rows, since, key=itemgetter(0)) :]
        return pd.DataFrame(rows, columns=LINK_STATE_COLUMNS)

    def __getstate__(self) -> dict[str, Any]:
        """The engine's state for a checkpoint, without link rows stored elsewhere.

        Link rows before :attr:`link_history_stored_until` (set by whoever stores them, e.g. a
        run directory's per-day ``link_states`` table) are left out, so a checkpoint does not
        hold the whole history again every day; :meth:`restore_link_history` puts them back.
        """
        state = self.__dict__.copy()
        until = self.link_history_stored_until
        if until is not None:
            rows = self._link_rows
            state["_link_rows"] = rows[
                bisect.bisect_left(rows, until, key=itemgetter(0)) :
            ]
        return state

    def restore_link_history(self, history: pd.DataFrame) -> None:
        """Put back the link rows a checkpoint left out (``link_states_frame`` columns).

        Args:
            history: The rows before :attr:`link_history_stored_until`, in time order.

        Raises:
            ValueError: If ``history`` lacks columns, or overlaps the rows the engine holds.
        """
        missing = sorted(set(LINK_STATE_COLUMNS) - set(history.columns))
        if missing:
            raise ValueError(f"link history: missing columns {', '.join(missing)}")
        kept = self._link_rows
        if len(history) and kept and history["time"].max() >= kept[0][0]:
            raise ValueError(
                f"link history: rows up to minute {history['time'].max():g} overlap the "
                f"engine's rows from minute {kept[0][0]:g}"
            )
        restored = list(history[LINK_STATE_COLUMNS].itertuples(index=False, name=None))
        self._link_rows = restored + kept

    def latest_link_states(self) -> pd.DataFrame:
        """The rows of :meth:`link_states_frame` of the last step only (cheap; for live views)."""
        rows = self._link_rows
        start = len(rows)
        while start > 0 and rows[start - 1][0] == rows[-1][0]:
            start -= 1
        return pd.DataFrame(rows[start:], columns=LINK_STATE_COLUMNS)

    def facility_states_frame(self) -> pd.DataFrame:
        """Per-step facility table: time, facility, queue, staying, capacity, wait_indicator."""
        return pd.DataFrame(
            self._facility_rows,
            columns=[
                "time",
                "facility",
                "queue",
                "staying",
                "capacity",
                "wait_indicator",
            ],
        )

    def metro_loads_frame(self) -> pd.DataFrame:
        """Return one row per train departure from a stop.

        Columns: line, direction, train ``(day, n)``, link, departure, boarded, alighted (at this
        stop), load (riders aboard on the link).
        """
        return pd.DataFrame(
            self._metro_rows,
            columns=[
                "line",
                "direction",
                "train",
                "link",
                "departure",
                "boarded",
                "alighted",
                "load",
            ],
        )

    def trips_frame(self) -> pd.DataFrame:
        """Return one row per trip.

        Columns: trip_id, agent, origin, destination, mode, path (tuple of link names taken),
        planned_departure, departure, planned_arrival, arrival (at the destination node),
        admitted (to the
        destination facility), travel_time, free_flow_time, delay, state.
        """
        rows = [
            (
                trip.trip_id, trip.agent, trip.origin, trip.destination, trip.mode, tuple(trip.path),
                trip.planned_departure, trip.departure, trip.planned_arrival, trip.arrival,
                trip.admitted,
                trip.arrival - trip.departure, trip.free_flow_time, trip.delay, str(trip.state),
            )
            for trip in self._trips.values()
        ]  # fmt: skip
        return pd.DataFrame(rows, columns=TRIP_COLUMNS)

    def approaching_node(
        self, trip_id: Hashable, by: float
    ) -> tuple[str, tuple[DirectedLink, ...]] | None:
        """The node a driving trip reaches by minute ``by``, and the links it still has after it.

        ``None`` unless the trip traverses a road link it leaves by ``by`` with links left
        (a driver who may still change its path at that node).
        """
        trip = self._trips[trip_id]
        if (
            trip.state is not TravelState.TRAVERSING
            or trip.link is None
            or trip.ready > by + 1e-9
            or not trip.remaining
        ):
            return None
        return trip.link.head, tuple(trip.remaining)


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


def train_departure(line: MetroLine, day: int, train: int, stop: int) -> float:
    """Minute at which train ``train`` of ``day`` leaves its ``stop``-th stop (either direction).

    ``departure = 1440 day + service_start + train x headway + stop x (travel_time + dwell)``;
    the train arrives at that stop ``dwell`` earlier (stops after the first).
    """
    return (
        day * MINUTES_PER_DAY
        + line.service_start
        + train * line.headway
        + stop * (line.travel_time + line.dwell)
    )


def metro_timetable(line: MetroLine, days: int = 1) -> pd.DataFrame:
    """Generate the timetable of a metro line from its parameters.

    Trains leave the first stop of each direction every ``headway`` minutes from
    ``service_start`` while before ``service_end``; see :func:`train_departure`.

    Args:
        line: The metro line.
        days: Number of days to generate.

    Returns:
        One row per train and stop: line, direction, day, train, stop (index in the direction's
        order), node, arrival (NaN at the first stop), departure (NaN at the last stop).
    """
    n_trains = math.ceil((line.service_end - line.service_start) / line.headway - _EPS)
    last = len(line.stops) - 1
    rows = []
    for day in range(days):
        for direction in (0, 1):
            stops = direction_stops(line, direction)
            for train in range(n_trains):
                for k, node in enumerate(stops):
                    leave = train_departure(line, day, train, k)
                    rows.append(
                        (
                            line.name,
                            direction,
                            day,
                            train,
                            k,
                            node,
                            leave - line.dwell if k > 0 else math.nan,
                            leave if k < last else math.nan,
                        )
                    )
    return pd.DataFrame(
        rows,
        columns=[
            "line",
            "direction",
            "day",
            "train",
            "stop",
            "node",
            "arrival",
            "departure",
        ],
    )


def next_train(line: MetroLine, stop: int, minute: float) -> float:
    """Departure of the first train of ``line`` leaving its ``stop``-th stop at or after ``minute``.

    Both directions run the same timetable (:func:`train_departure`), so ``stop`` is the index
    in the direction of travel. Minutes are absolute (day 0 starts at 0); ``inf`` when no train
    runs.
    """
    n_trains = math.ceil((line.service_end - line.service_start) / line.headway - _EPS)
    if n_trains <= 0:
        return math.inf
    day = math.floor(minute / MINUTES_PER_DAY)
    for candidate in range(day - 1, day + 3):
        base = train_departure(line, candidate, 0, stop)
        n = max(0, math.ceil((minute - base) / line.headway - _EPS))
        if n < n_trains:
            return base + n * line.headway
    return math.inf


def transit_journey(
    index: NetworkIndex, links: Sequence[DirectedLink], depart: float
) -> tuple[float, float]:
    """Arrival and time spent waiting for trains, leaving at ``depart`` along a transit path.

    By the timetable and without queues (every train has room): walking legs take the walking
    factor times their free time; at each boarding the traveller takes the first train of the
    line and direction leaving that stop (:func:`next_train`), stays aboard over consecutive
    links of that line and direction, and alights when it arrives at the last one's head, as
    the engine moves riders.

    Args:
        index: Network index.
        links: The path's directed links (as :meth:`Router.path` or
            :func:`~mesa_llm_mobility.urban.routing.validate_path` return them).
        depart: Departure minute (absolute).

    Returns:
        ``(arrival, wait)`` in minutes; ``(inf, inf)`` when a train never comes.
    """
    lines = index.scenario.metro_lines
    factor = index.scenario.walking_factor
    now, wait, k = float(depart), 0.0, 0
    while k < len(links):
        link = links[k]
        if link.kind != "metro":
            now += factor * link.free_time
            k += 1
            continue
        run = 1
        while (
            k + run < len(links)
            and links[k + run].kind == "metro"
            and links[k + run].line == link.line
            and links[k + run].direction == link.direction
        ):
            run += 1
        line = lines[link.line]
        leave = next_train(line, link.stop or 0, now)
        if math.isinf(leave):
            return math.inf, math.inf
        wait += leave - now
        now = leave + run * line.travel_time + (run - 1) * line.dwell
        k += run
    return now, wait
