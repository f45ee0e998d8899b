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

Roads follow the ``occupancy`` (GATSim) or ``flow`` (Vickrey point queue, with optional
spillback) link model of :mod:`.road_links`; trains follow the timetable of :mod:`.metro`;
facility door queues and admission are :mod:`.facilities`; the trip API is
:mod:`.trip_planning`; capacity events are scheduled by :mod:`.capacity_events`; the per-step
link and facility tables are kept by :mod:`.traffic_records`, and the trips in :mod:`.trips`.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace

import pandas as pd

from mesa_llm_mobility.urban.capacity_events import CapacitySchedule
from mesa_llm_mobility.urban.congestion import (
    congestion_label,
)
from mesa_llm_mobility.urban.facilities import FacilityQueues
from mesa_llm_mobility.urban.metro import (
    MetroService,
    transit_journey,  # noqa: F401  (re-exported: the urban model imports it from here)
)
from mesa_llm_mobility.urban.road_links import RoadLinkState
from mesa_llm_mobility.urban.routing import (
    DirectedLink,
    DynamicRouteTables,
    NetworkIndex,
    PathError,
    Router,
)
from mesa_llm_mobility.urban.scenario import Event, Scenario
from mesa_llm_mobility.urban.step_changes import StepChanges
from mesa_llm_mobility.urban.traffic_records import TrafficRecorder
from mesa_llm_mobility.urban.trip_planning import AgentState, TripPlanning
from mesa_llm_mobility.urban.trips import Location, TravelState, Trip, trips_frame

logger = logging.getLogger(__name__)

_EPS = 1e-9


Hook = Callable[["TrafficEngine", Trip, str, float], None]


class TrafficEngine(TripPlanning):
    """Step-driven point-queue engine over a scenario's road and metro network.

    Typical use (what the urban model and :func:`~.demand.simulate_demand` do)::

        engine = TrafficEngine(load_scenario("nguyen_dupuis"))
        engine.add_trip("t1", "Uptown apartment", "Office", depart=7 * 60, mode="drive")
        engine.run_until(10 * 60)
        engine.trips_frame()

    Agents and trips are planned with the methods of :class:`~.trip_planning.TripPlanning`
    (``add_agent``, ``add_trip``, ``cancel_trip``, ``reroute``, ``redirect``).

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

        self._road = {
            link.index: RoadLinkState.from_spec(link, scenario.road_links[link.name])
            for link in self.index.links
            if link.kind == "road"
        }
        self.metro = MetroService(self.index, self.dt)
        self.records = TrafficRecorder()
        self._capacity_events = CapacitySchedule(
            scenario.events if apply_events else ()
        )
        self._facilities = FacilityQueues(scenario.facilities.values())
        self._agents: dict[Hashable, AgentState] = {}
        self._trips: dict[Hashable, Trip] = {}
        self._n_settled = 0
        self._departures: list[tuple[float, int, Trip]] = []
        self._walkers: list[tuple[float, int, Trip]] = []
        self._seq = 0
        self._route_tables = DynamicRouteTables(
            self.index, route_interval, route_update_weight, start_time
        )
        self._waiting_links: set[int] = set()
        self._reserved: dict[int, int] = {}
        self.changes = StepChanges()
        """Agents the steps touched and trips at the end of their link (:mod:`.step_changes`)."""
        self.trips_under_way = 0
        """Trips departed and not yet arrived."""

    def __setstate__(self, state: dict) -> None:
        """Restore a pickled engine; one pickled before :attr:`changes` existed gets them rebuilt."""
        self.__dict__.update(state)
        if "changes" not in state:
            self.changes = StepChanges()
            self.trips_under_way = 0
            for agent_state in self._agents.values():
                trip = agent_state.active
                if trip is None:
                    continue
                self.trips_under_way += 1
                if trip.link is not None and trip.state in (
                    TravelState.TRAVERSING,
                    TravelState.WALKING,
                ):
                    self.changes.started_link(trip)

    # ------------------------------------------------------------------ network state
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
            self._facilities.set_capacity(place, int(capacity))
            return
        links = self.index.by_name.get(place)
        if not links:
            raise ValueError(f"unknown link or facility {place!r}")
        for link in links:
            if direction is None or link.direction == direction:
                if link.kind == "road":
                    self._road[link.index].capacity = capacity
                else:
                    self.metro.capacity[link.index] = int(capacity)

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
            link = self.metro.train_link(trip.train, self.now)
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
            queued = state.exit_queued(self.now)
            counts["queued"] += queued
            counts["traversing"] += state.count() - queued
        counts["waiting"] += self.metro.riders_waiting()
        counts["walking"] += len(self._walkers)
        counts["riding"] += self.metro.riders_aboard()
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
            return self.metro.link_wait(link)
        return self._road[link.index].wait_minutes(self.now)

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
        for name, facility in self._facilities.items():
            if not facility.queue:  # nobody at the door: no wait, no label
                continue
            wait = self.facility_wait(name)
            label = congestion_label(wait)
            if label is not None:
                rows.append(("facility", name, None, wait, label))
        return pd.DataFrame(
            rows, columns=["kind", "place", "direction", "wait_minutes", "label"]
        )

    def facility_wait(self, name: str) -> float:
        """Current wait indicator (minutes) at a facility (see :mod:`.congestion`)."""
        return self._facilities[name].wait_minutes()

    def facility_occupancy(self, name: str) -> tuple[int, int, int]:
        """``(visitors inside, current capacity, queue at the door)`` of a facility now."""
        state = self._facilities[name]
        return len(state.staying), state.capacity, len(state.queue)

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
        if self._route_tables.due(t):
            self._route_tables.refresh(
                t,
                {
                    i: s.flow_delay(t) if s.model == "flow" else self.link_wait(s.link)
                    for i, s in self._road.items()
                },
            )
        arrivals = self._complete_traversals(t)
        at_nodes = self._handle_node_arrivals(arrivals)
        at_nodes.extend(self._depart(t))
        self.changes.touched.update(
            self._facilities.admit(t, forget_empty=not self.record_facility_states)
        )
        self._enter_links(t, at_nodes)
        self.router.set_extra_costs(
            {
                i: self.link_wait(s.link)
                for i, s in self._road.items()
                if s.wait or s.moving
            }
        )
        if self.record_link_states:
            self.records.record_links(
                t, self._road.values(), self.metro, self.link_wait
            )
        if self.record_facility_states:
            self.records.record_facilities(
                t, self._facilities.values(), self.facility_wait
            )
        self.time = t + self.dt

    def replace_events(self, events: Sequence[Event]) -> None:
        """Replace the scenario's events from the current time on (for forked runs).

        Capacity events already started keep their pending end, so the capacity they changed
        is restored; pending starts of the old events are dropped; new events that start at
        or after the current time are scheduled. :meth:`announced_events` reports the new ones.

        Args:
            events: The new events (e.g. ``()`` to switch events off).
        """
        self._capacity_events.replace(
            events, self.time, offset=2 * len(self.scenario.events)
        )
        self.scenario = replace(self.scenario, events=tuple(events))

    def _apply_events(self, t: float) -> None:
        for event, starting in self._capacity_events.due(t):
            value = event.new_value if starting else self._base_capacity(event.place)
            self.set_capacity(event.place, float(value), event.direction)
            logger.debug("t=%s: %s capacity -> %s", t, event.place, value)

    def _complete_traversals(self, t: float) -> list[tuple[float, int, int, Trip, str]]:
        done: list[tuple[float, int, int, Trip, str]] = []
        self._reserved.clear()
        for index, state in self._road.items():
            done += state.release(
                t, self.dt, index, self._next_seq, self._has_room_after
            )
        limit = t + _EPS
        while self._walkers and self._walkers[0][0] <= limit:
            ready, _, trip = heapq.heappop(self._walkers)
            done.append((ready, -1, self._next_seq(), trip, trip.link.head))
        done += self.metro.alight(t, len(self.index.links), self._next_seq)
        done.sort(key=lambda item: (item[0], item[1], item[2]))
        return done

    def _has_room_after(self, trip: Trip, node: str) -> bool:
        if node == trip.destination_node and not trip.remaining:
            return True
        if trip.remaining:
            nxt = trip.remaining[0]
        elif trip.route == "dynamic":
            nxt = self._route_tables.next_hop(trip.order, trip.destination_node, node)
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
        self.changes.touch_trips(item[3] for item in arrivals)
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
        self.trips_under_way -= 1
        trip.free_flow_time = self.router.free_flow_time(trip.links, trip.mode)
        state = self._agents[trip.agent]
        state.active = None
        state.travelled = True
        if trip.destination_facility is not None:
            trip.state = TravelState.FACILITY_QUEUE
            self._facilities.arrive(trip)
            state.place, state.at_facility = trip.destination_facility, True
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
                self._facilities.leave(trip.agent, state.place)
            state.at_facility = False
            state.place = trip.origin_node
            state.active = trip
            self.trips_under_way += 1
            self.changes.touch(trip.agent)
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

    def _enter_links(self, t: float, at_nodes: list[Trip]) -> None:
        factor = self.scenario.walking_factor
        for trip in at_nodes:
            node = trip.links[-1].head if trip.links else trip.origin_node
            if trip.remaining:
                link = trip.remaining.popleft()
            else:
                link = self._route_tables.next_hop(
                    trip.order, trip.destination_node, node
                )
            trip.links.append(link)
            trip.path.append(link.name)
            trip.link = link
            if link.kind == "metro":
                self.metro.join_queue(trip, link)
            elif trip.mode != "drive":
                trip.state = TravelState.WALKING
                trip.ready = t + factor * link.free_time
                heapq.heappush(self._walkers, (trip.ready, self._next_seq(), trip))
                self.changes.started_link(trip)
            else:
                trip.state = TravelState.WAITING
                self._road[link.index].wait.append(trip)
                self._waiting_links.add(link.index)
        for index in sorted(self._waiting_links):
            state = self._road[index]
            for trip in state.enter(t, self._next_seq):
                self.changes.touch(trip.agent)
                self.changes.started_link(trip)
            if not state.wait:
                self._waiting_links.discard(index)
        self.changes.touch_trips(self.metro.board(t))
        self.changes.touch_trips(self.metro.moved_riders(t))

    def link_states_frame(self, since: float | None = None) -> pd.DataFrame:
        """Return the per-step link table (from minute ``since`` on, if given).

        See :meth:`.TrafficRecorder.link_states_frame` for the columns.
        """
        return self.records.link_states_frame(since)

    @property
    def link_history_stored_until(self) -> float | None:
        """Link rows before this minute are stored elsewhere and left out of checkpoints.

        Set by whoever stores them (e.g. a run directory's per-day ``link_states`` table), so a
        checkpoint does not hold the whole history again every day; :meth:`restore_link_history`
        puts them back.
        """
        return self.records.stored_until

    @link_history_stored_until.setter
    def link_history_stored_until(self, minute: float | None) -> None:
        self.records.stored_until = minute

    def restore_link_history(self, history: pd.DataFrame) -> None:
        """Put back the link rows a checkpoint left out (``link_states_frame`` columns).

        Args:
            history: The rows before :attr:`link_history_stored_until`, in time order.

        Raises:
            ValueError: If ``history`` lacks columns, or overlaps the rows the engine holds.
        """
        self.records.restore_link_history(history)

    def latest_link_states(self) -> pd.DataFrame:
        """The rows of :meth:`link_states_frame` of the last step only (cheap; for live views)."""
        return self.records.latest_link_states()

    def facility_states_frame(self) -> pd.DataFrame:
        """Per-step facility table: time, facility, queue, staying, capacity, wait_indicator."""
        return self.records.facility_states_frame()

    def metro_loads_frame(self) -> pd.DataFrame:
        """Return one row per train departure from a stop (see :meth:`.MetroService.loads_frame`)."""
        return self.metro.loads_frame()

    def trips_frame(self) -> pd.DataFrame:
        """Return one row per trip (see :func:`~mesa_llm_mobility.urban.trips.trips_frame`)."""
        return trips_frame(self._trips.values())

    def approaching_node(
        self, trip_id: Hashable, by: float
    ) -> tuple[str, tuple[DirectedLink, ...]] | None:
        """The node a driving trip reaches by minute ``by``, and the links it still has after it.

        ``None`` unless the trip traverses a road link it leaves by ``by`` with links left
        (a driver who may still change its path at that node).
        """
        return self._trips[trip_id].approaching_node(TravelState.TRAVERSING, by)
