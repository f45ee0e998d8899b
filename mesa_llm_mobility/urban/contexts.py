"""The urban world as a traveller sees it when it decides: a read-only view that answers questions.

A traveller builds each decision's context itself, from its own state (persona, memory, trips,
plan, today) and the world facts it asks :class:`WorldView` for
(:meth:`~mesa_llm_mobility.urban.agents.TravellerAgent.plan_request` and its siblings); the model
only gathers the requests. The view answers questions about the world only: dates, travel times
and paths, current waits and congestion, announced and nearby events, what lies ahead of a trip,
the names a traveller may look up, and its contacts' public facts (where they are, and what they
say about their day, :class:`Contact`). It never reads a traveller's private state and changes
nothing (it caches the minute's congestion lines and the network's surroundings).

Both brains get the same facts; only the recalled memories differ (:mod:`.recall`), which is why
the view says whether an LLM decides (:attr:`WorldView.uses_llm`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
import pandas as pd

from mesa_llm_mobility.urban.decisions import RouteOption, SpeakerFacts
from mesa_llm_mobility.urban.free_flow import FacilityPair
from mesa_llm_mobility.urban.perception import Surroundings, en_route_trigger
from mesa_llm_mobility.urban.plans import FACILITY_LIST_LIMIT
from mesa_llm_mobility.urban.routing import (
    DirectedLink,
    NetworkIndex,
    PathError,
    alternative_path,
    validate_path,
)
from mesa_llm_mobility.urban.scenario import Scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine, transit_journey
from mesa_llm_mobility.urban.trips import TravelState

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.scenario import Event

__all__ = [
    "ALTERNATIVE_SLACK",
    "Contact",
    "FacilityPair",
    "PathOffer",
    "PlaceNames",
    "WorldView",
]

NEAREST_OF_KIND = 3
"""Facilities of each kind a large city's plan prompt names near each of a traveller's anchors."""

ALTERNATIVE_SLACK = 1.5
"""Revisions offer a further path only when expected at most this much slower."""


class Contact(Protocol):
    """What the world shows of another traveller: where it is, and what it says of its day."""

    state: str
    place: str

    def speaker_facts(self, view: WorldView, t: int) -> SpeakerFacts:
        """What a conversation can change about its day at minute ``t`` (both speakers see it)."""
        ...


@dataclass
class PathOffer:
    """The paths a reconsidering traveller is shown (the path fields of a revision context).

    Attributes:
        remaining_path: The path it would take (link names).
        remaining_minutes: Expected minutes along it, on current waits.
        alternative_path: Another path (en route: the fastest now; staying: one sharing few
            links with the planned one), when there is one worth showing.
        alternative_minutes: Its expected minutes.
        other_paths: Further paths (en route, driving).
    """

    remaining_path: list[str] = field(default_factory=list)
    remaining_minutes: float = 0.0
    alternative_path: list[str] = field(default_factory=list)
    alternative_minutes: float = 0.0
    other_paths: list[RouteOption] = field(default_factory=list)

    def as_context_fields(self) -> dict[str, Any]:
        """The offer as the path keywords of a :class:`~.decisions.RevisionContext`."""
        return dict(vars(self))


class PlaceNames(NamedTuple):
    """The names a traveller may look up with its tools."""

    facilities: frozenset[str]
    nodes: frozenset[str]
    links: frozenset[str]
    stops: dict[str, tuple[str, ...]]


@dataclass(eq=False)
class WorldView:
    """The world as travellers see it when they decide (questions about the world only).

    Attributes:
        engine: The traffic engine (asked for trips, waits, congestion and events).
        town: The scenario (walking factor, metro lines).
        start_date: Date of day 1.
        facilities: The facility names.
        travel_times: Free-flow minutes by facility pair and mode.
        routes: Free-flow shortest paths by facility pair and mode.
        travellers: Every traveller by name, as its contacts see it.
        uses_llm: Whether an LLM answers (contexts then carry recalled text memories).
        trips_scored_on_arrival: Whether trip memories are scored on arrival (the reflection
            then does not score them again).
    """

    engine: TrafficEngine
    town: Scenario
    start_date: dt.date
    facilities: frozenset[str]
    travel_times: Mapping[FacilityPair, float]
    routes: Mapping[FacilityPair, tuple[DirectedLink, ...]]
    travellers: Mapping[str, Contact]
    uses_llm: bool = False
    trips_scored_on_arrival: bool = False
    _congestion: tuple[int, list[str]] | None = field(default=None, repr=False)
    _surroundings: Surroundings | None = field(default=None, repr=False)
    _nearest: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _by_kind: dict[str, tuple[list[str], np.ndarray]] | None = field(
        default=None, repr=False
    )

    @property
    def surroundings(self) -> Surroundings:
        """Nearby places on the network (built on first use)."""
        if self._surroundings is None:
            self._surroundings = Surroundings(self.engine.index)
        return self._surroundings

    @property
    def network(self) -> NetworkIndex:
        """The network's nodes, links and facilities' nodes (for validating paths)."""
        return self.engine.index

    # ------------------------------------------------------------------ calendar and names
    def date(self, day: int) -> dt.date:
        """The date of ``day`` (1 = the first simulated day)."""
        return self.start_date + dt.timedelta(days=day - 1)

    def place_names(self) -> PlaceNames:
        """The facilities, nodes, links and metro stops (by line) a traveller may look up."""
        town = self.town
        return PlaceNames(
            facilities=self.facilities,
            nodes=frozenset(town.nodes),
            links=frozenset(self.engine.index.by_name),
            stops={name: tuple(line.stops) for name, line in town.metro_lines.items()},
        )

    def facilities_to_offer(
        self, anchors: Sequence[str | None], own: Sequence[str] = ()
    ) -> tuple[str, ...]:
        """The facilities a plan prompt names, sorted.

        Every facility when there are at most :data:`~.plans.FACILITY_LIST_LIMIT` (the
        reference town: the paper's prompt). In a larger city: the traveller's ``own`` places
        and ``anchors``, and of every kind but homes the :data:`NEAREST_OF_KIND` nearest to
        each anchor (home, work; straight-line distance between their nodes, ties by name).
        The plan may still name any facility (the validator knows them all).
        """
        if len(self.facilities) <= FACILITY_LIST_LIMIT:
            return tuple(sorted(self.facilities))
        names = {place for place in (*anchors, *own) if place in self.facilities}
        for anchor in anchors:
            if anchor in self.facilities:
                names.update(self._nearest_of_kind(anchor))
        return tuple(sorted(names))

    def _nearest_of_kind(self, anchor: str) -> tuple[str, ...]:
        if anchor not in self._nearest:
            if self._by_kind is None:
                self._by_kind = _facilities_by_kind(self.town, self.facilities)
            node = self.town.nodes[self.town.facilities[anchor].node]
            self._nearest[anchor] = tuple(
                names[i]
                for names, xy in self._by_kind.values()
                # stable: equal distances keep the names' order
                for i in np.argsort(
                    np.hypot(xy[:, 0] - node.x, xy[:, 1] - node.y), kind="stable"
                )[:NEAREST_OF_KIND]
            )
        return self._nearest[anchor]

    # ------------------------------------------------------------------ contacts
    def contact_states(self, contacts: Mapping[str, str]) -> list[str]:
        """One line per contact (name: relation): its state and place now."""
        return [
            f"{name} ({relation}): {self.travellers[name].state} at {self.travellers[name].place}"
            for name, relation in contacts.items()
        ]

    def contact_facts(self, name: str, t: int) -> SpeakerFacts:
        """What the traveller ``name`` says about its day at minute ``t`` (absolute)."""
        return self.travellers[name].speaker_facts(self, t)

    # ------------------------------------------------------------------ travel
    def car_saving(self, home: str, work: str | None) -> float:
        """Free-flow minutes the car saves from ``home`` to ``work`` against the best other mode."""
        if work is None:
            return 0.0
        key = (home, work)
        drive = self.travel_times.get((*key, "drive"))
        others = [
            self.travel_times[(*key, mode)]
            for mode in ("transit", "walk")
            if (*key, mode) in self.travel_times
        ]
        if drive is None or not others:
            return 0.0
        return max(0.0, min(others) - drive)

    def minutes_now(
        self, links: Sequence[DirectedLink], mode: str, depart: float
    ) -> float:
        """Expected minutes along ``links`` leaving at ``depart`` (absolute), on current waits.

        Driving: free times plus the links' wait indicators; walking: the walking factor times
        the free times; transit: the timetable journey (waits for trains included) plus the
        crowding indicators of its metro links.
        """
        engine = self.engine
        if mode == "drive":
            return sum(link.free_time + engine.link_wait(link) for link in links)
        if mode == "walk":
            return self.town.walking_factor * sum(link.free_time for link in links)
        arrival, _ = transit_journey(engine.index, links, depart)
        crowding = sum(engine.link_wait(link) for link in links if link.kind == "metro")
        return arrival - depart + crowding

    def next_trip_paths(
        self,
        origin: str,
        destination: str,
        path: str | list[str],
        mode: str,
        depart: float,
    ) -> PathOffer:
        """The paths of a trip not yet started: the planned one, and another one.

        The planned path is ``path`` when it lists links, else the fastest now; the other one
        shares as few links with it as the network allows (not for walking), shown when at most
        :data:`ALTERNATIVE_SLACK` times slower. Nothing when the trip goes nowhere or has no
        path.
        """
        offer = PathOffer()
        if destination == origin:
            return offer
        engine = self.engine
        try:
            planned = (
                validate_path(engine.index, origin, destination, path, mode)
                if isinstance(path, list)
                else engine.router.path(origin, destination, mode)
            )
        except PathError:
            return offer
        offer.remaining_path = [link.name for link in planned]
        offer.remaining_minutes = self.minutes_now(planned, mode, depart)
        if mode == "walk":
            return offer
        other = alternative_path(
            engine.index,
            origin,
            destination,
            mode,
            planned,
            engine.router.extra_costs,
        )
        minutes = None if other is None else self.minutes_now(other, mode, depart)
        if (
            minutes is not None
            and minutes <= ALTERNATIVE_SLACK * offer.remaining_minutes
        ):
            offer.alternative_path = [link.name for link in other]
            offer.alternative_minutes = minutes
        return offer

    # ------------------------------------------------------------------ en route
    def node_ahead(
        self, trip_id: str, state: str, mode: str, t: int
    ) -> tuple[str, tuple[DirectedLink, ...]] | None:
        """The node trip ``trip_id`` reaches next and the links after it, if it is about to.

        A driver (``state`` ``"driving"``) or walker whose link ends by minute ``t``, or a
        transit rider queued (``"waiting_at_node"``) for a metro link at its stop.
        """
        engine = self.engine
        trip = engine.trip(trip_id)
        if state == "driving" and mode == "drive":
            return engine.approaching_node(trip_id, t)
        if state == "walking":
            return trip.approaching_node(TravelState.WALKING, t)
        if (
            state == "waiting_at_node"
            and mode == "transit"
            and trip.link is not None
            and trip.link.kind == "metro"
        ):
            return trip.link.tail, (trip.link, *trip.remaining)
        return None

    def reason_to_reconsider(
        self, mode: str, ahead: Sequence[DirectedLink], t: int
    ) -> str | None:
        """Why a traveller by ``mode`` with ``ahead`` still to travel reconsiders now, if at all.

        See :func:`~.perception.en_route_trigger`.
        """
        return en_route_trigger(self.engine, self.surroundings, mode, ahead, t)

    def path_ahead(self, ahead: Sequence[DirectedLink], mode: str, t: int) -> PathOffer:
        """The links still ahead and their expected minutes (the path stays)."""
        return PathOffer(
            remaining_path=[link.name for link in ahead],
            remaining_minutes=self.minutes_now(ahead, mode, t),
        )

    def paths_from_node(
        self,
        trip_id: str,
        node: str,
        ahead: Sequence[DirectedLink],
        mode: str,
        t: int,
    ) -> PathOffer | None:
        """The paths from ``node`` to trip ``trip_id``'s destination: ahead, fastest, another.

        The fastest path now, and for driving a third path when it differs from both and is
        at most :data:`ALTERNATIVE_SLACK` times slower than the fastest. ``None`` when no path
        leads from ``node`` to the destination.
        """
        engine = self.engine
        destination = engine.trip(trip_id).destination_node
        try:
            fastest = engine.router.path(node, destination, mode)
        except PathError:
            return None
        offer = self.path_ahead(ahead, mode, t)
        offer.alternative_path = [link.name for link in fastest]
        offer.alternative_minutes = self.minutes_now(fastest, mode, t)
        if mode != "drive":
            return offer
        other = alternative_path(
            engine.index,
            node,
            destination,
            "drive",
            list(ahead) + fastest,
            engine.router.extra_costs,
        )
        if other is None:
            return offer
        names = [link.name for link in other]
        if names in (offer.remaining_path, offer.alternative_path):
            return offer
        minutes = self.minutes_now(other, "drive", t)
        if minutes <= ALTERNATIVE_SLACK * offer.alternative_minutes:
            offer.other_paths.append(RouteOption(tuple(names), minutes))
        return offer

    # ------------------------------------------------------------------ events and waits
    def perceived_events(self, t: int, place: str | None = None) -> list[Event]:
        """The broadcast announcements known at ``t``, and the events near ``place`` (if given)."""
        broadcast = [
            e for e in self.engine.announced_events(t, broadcast_only=True) if e.content
        ]
        if place is None:
            return broadcast
        return broadcast + self.surroundings.events_near(self.engine, place, t)

    def events(self, t: int, place: str | None = None) -> list[str]:
        """The texts of :meth:`perceived_events`."""
        return [e.content for e in self.perceived_events(t, place)]

    def congestion_lines(self, t: int) -> list[str]:
        """One line per congested place at ``t`` (computed once a minute)."""
        if self._congestion is None or self._congestion[0] != t:
            frame = self.engine.congestion()
            lines = [
                f"{row.place}{'' if row.direction is None or pd.isna(row.direction) else f' dir {int(row.direction)}'}: "
                f"{row.label}, ~{row.wait_minutes:.0f} min wait"
                for row in frame.itertuples()
            ]
            self._congestion = (t, lines)
        return self._congestion[1]


def _facilities_by_kind(
    town: Scenario, facilities: frozenset[str]
) -> dict[str, tuple[list[str], np.ndarray]]:
    """Every kind's facilities but homes: names sorted, and their nodes' (x, y)."""
    by_kind: dict[str, list[str]] = {}
    for name in sorted(facilities):
        kind = town.facilities[name].kind
        if kind != "home":
            by_kind.setdefault(kind, []).append(name)
    return {
        kind: (
            names,
            np.array(
                [
                    (town.nodes[node].x, town.nodes[node].y)
                    for node in (town.facilities[name].node for name in names)
                ]
            ),
        )
        for kind, names in by_kind.items()
    }
