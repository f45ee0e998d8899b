"""The traffic engine's trip API: agents, trips, cancellations and en-route changes.

:class:`TripPlanning` is the part of :class:`~mesa_llm_mobility.urban.traffic.TrafficEngine`
that callers plan with: :meth:`~TripPlanning.add_agent`, :meth:`~TripPlanning.add_trip`,
:meth:`~TripPlanning.cancel_trip` and, from an ``on_node_arrival`` hook,
:meth:`~TripPlanning.reroute` and :meth:`~TripPlanning.redirect`. Each agent's trips run one
after the other (:class:`AgentState`); the engine moves them.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.routing import (
    MODES,
    DirectedLink,
    PathError,
    validate_path,
)
from mesa_llm_mobility.urban.trips import TravelState, Trip

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.facilities import FacilityQueues
    from mesa_llm_mobility.urban.routing import NetworkIndex, Router
    from mesa_llm_mobility.urban.scenario import Scenario


@dataclass(eq=False, slots=True)
class AgentState:
    """Where an agent is between trips, and its trips still to run.

    Attributes:
        agent: Agent id.
        place: Facility name or node id where the agent is (or its trip's origin node).
        at_facility: Whether ``place`` is a facility (staying or queueing there).
        active: The trip under way, if any.
        pending: The agent's trips not yet arrived, in order (the active one first).
        last_destination: Where the agent will be once its pending trips are done.
        travelled: Whether the agent has completed a trip.
    """

    agent: Hashable
    place: str
    at_facility: bool
    active: Trip | None = None
    pending: deque[Trip] = field(default_factory=deque)
    last_destination: str = ""
    travelled: bool = False


class TripPlanning:
    """Planning methods of the traffic engine (its base class; not used on its own).

    They read and write the engine's agents, trips, facilities and departure queue, set up by
    :class:`~mesa_llm_mobility.urban.traffic.TrafficEngine`.
    """

    scenario: Scenario
    index: NetworkIndex
    router: Router
    route_interval: float | None
    _free_router: Router
    _agents: dict[Hashable, AgentState]
    _trips: dict[Hashable, Trip]
    _facilities: FacilityQueues
    _departures: list[tuple[float, int, Trip]]
    _n_settled: int

    def add_agent(self, agent: Hashable, place: str) -> None:
        """Place an agent at a facility (staying there) or at a node before its first trip.

        Raises:
            ValueError: If the agent exists or the place is unknown.
        """
        if agent in self._agents:
            raise ValueError(f"agent {agent!r} already exists")
        if place in self._facilities:
            self._facilities[place].staying.add(agent)
            self._agents[agent] = AgentState(agent, place, True, last_destination=place)
        elif place in self.scenario.nodes:
            self._agents[agent] = AgentState(
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
        route, links = self._route(
            trip_id,
            (origin, origin_node),
            (destination, destination_node),
            "shortest" if path is None else path,
            mode,
            plan_shortest=False,
        )
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

    def _route(
        self,
        trip_id: Hashable,
        start: tuple[str, str],
        end: tuple[str, str],
        route: Sequence[str] | str,
        mode: str,
        *,
        plan_shortest: bool,
    ) -> tuple[str, list[DirectedLink]]:
        """The route name and links of a trip from ``start`` to ``end`` (place, node).

        Named routes are checked to exist for the mode (by a free-flow search) and keep their
        links only for ``"free_flow"``, or for ``"shortest"`` when ``plan_shortest`` (else it is
        planned at departure); explicit link names are validated.
        """
        if not isinstance(route, str):
            try:
                links = validate_path(self.index, start[0], end[0], list(route), mode)
            except PathError as error:
                raise PathError(f"trip {trip_id!r}: {error}") from error
            return "explicit", links
        if route not in ("shortest", "free_flow", "dynamic"):
            raise ValueError(f"trip {trip_id!r}: unknown route {route!r}")
        if route == "dynamic" and (mode != "drive" or self.route_interval is None):
            raise ValueError(
                f"trip {trip_id!r}: route 'dynamic' needs mode 'drive' and a route_interval"
            )
        planned = route == "shortest" and plan_shortest
        router = self.router if planned else self._free_router
        try:
            links = router.path(start[1], end[1], mode)
        except PathError as error:
            raise PathError(f"trip {trip_id!r}: {error}") from error
        return route, links if planned or route == "free_flow" else []

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
        route, new = self._route(
            trip.trip_id,
            (node, node),
            (destination, destination_node),
            links,
            trip.mode,
            plan_shortest=True,
        )
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
