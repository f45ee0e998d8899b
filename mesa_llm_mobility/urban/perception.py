"""What a traveller perceives around it: nearby events and the reasons to reconsider en route.

GATSim's travellers perceive broadcast announcements everywhere and other (local) events only
near their place; they reconsider their trip at nodes when something ahead warrants it. Here:

- :class:`Surroundings` finds the events *near* a place: an event is near when its place or
  one of its spatial scope's places (a facility, node or link) lies at the traveller's node or
  at a node one road link away (:data:`NEARBY_HOPS`). The scenario's Museum exhibition and
  Cinema premiere (not broadcast) are perceived this way, by travellers at or next to them.
- :func:`en_route_trigger` says why a traveller reaching a node should reconsider: drivers
  when the waits ahead add up (the existing rule), transit riders about to queue at a stop
  whose trains are full or delayed (a wait indicator of at least a headway: the next train
  leaves them behind), walkers and riders when an announced event concerns the links ahead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.routing import DirectedLink, NetworkIndex, PathError

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.scenario import Event
    from mesa_llm_mobility.urban.traffic import TrafficEngine
    from mesa_llm_mobility.urban.trips import Trip

NEARBY_HOPS = 1
"""Road links between a traveller's node and an event's for the event to be perceived."""
NODE_REVISION_WAIT = 5.0
"""Drivers reconsider their path at a node when the waits ahead add up to this many minutes."""


def event_key(event: Event) -> str:
    """A stable key of an event (perceived once per traveller and day)."""
    return f"{event.place}@{event.start_time:g}"


@dataclass
class Surroundings:
    """Nearby places on the network, for perceiving local events.

    Args:
        index: The network index (facility nodes, road links).
    """

    index: NetworkIndex
    _near: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    _event_nodes: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    def nodes_of(self, place: str) -> frozenset[str]:
        """The nodes a place is at: a node, a facility's node, or both ends of a link."""
        if place in self.index.by_name:
            return frozenset(
                node
                for link in self.index.by_name[place]
                for node in (link.tail, link.head)
            )
        try:
            return frozenset({self.index.node_of(place)})
        except PathError:  # an unknown place is nowhere
            return frozenset()

    def near(self, place: str) -> frozenset[str]:
        """The nodes within :data:`NEARBY_HOPS` road links of ``place``."""
        if place not in self._near:
            nodes = set(self.nodes_of(place))
            for _ in range(NEARBY_HOPS):
                nodes |= {
                    link.head
                    for node in list(nodes)
                    for link in self.index.out_links.get(node, ())
                    if link.kind == "road"
                }
            self._near[place] = frozenset(nodes)
        return self._near[place]

    def event_nodes(self, event: Event) -> frozenset[str]:
        """The nodes an event concerns (its place and spatial scope)."""
        key = event_key(event)
        if key not in self._event_nodes:
            self._event_nodes[key] = frozenset().union(
                *(self.nodes_of(p) for p in (event.place, *event.spatial_scope))
            )
        return self._event_nodes[key]

    def events_near(self, engine: TrafficEngine, place: str, t: float) -> list[Event]:
        """The announced, not broadcast events near ``place`` at minute ``t``."""
        near = self.near(place)
        return [
            e
            for e in engine.announced_events(t)
            if not e.broadcast and e.content and self.event_nodes(e) & near
        ]

    def events_on(
        self, engine: TrafficEngine, links: Sequence[DirectedLink], t: float
    ) -> list[Event]:
        """The announced events (broadcast or not) whose places the ``links`` run through."""
        names = {link.name for link in links}
        nodes = {link.head for link in links}
        return [
            e
            for e in engine.announced_events(t)
            if e.content
            and ({e.place, *e.spatial_scope} & names or self.event_nodes(e) & nodes)
        ]


def en_route_trigger(
    engine: TrafficEngine,
    surroundings: Surroundings,
    mode: str,
    ahead: Sequence[DirectedLink],
    t: float,
) -> str | None:
    """Why a traveller reaching a node with ``ahead`` still to travel should reconsider, if at all.

    Args:
        engine: The traffic engine (waits, timetable, events).
        surroundings: Nearby places (for the events ahead).
        mode: The trip's mode.
        ahead: The links after the node.
        t: The current minute.

    Returns:
        A short text for the prompt and the revisions table, or ``None``.
    """
    if not ahead:
        return None
    if mode == "drive":
        waits = sum(engine.link_wait(link) for link in ahead)
        return f"waits ahead ~{waits:.0f} min" if waits >= NODE_REVISION_WAIT else None
    first = ahead[0]
    if first.kind == "metro":
        crowded = crowded_stop(engine, first)
        if crowded is not None:
            return crowded
    events = surroundings.events_on(engine, ahead, t)
    if events:
        return f"event ahead: {events[0].content}"
    return None


def reconsider_key(trip_id: str, trigger: str) -> str:
    """The key of an en-route reconsideration (walkers and riders: once per trip and reason)."""
    return f"{trip_id}:{trigger.split(':', 1)[0]}"


def crowded_stop(engine: TrafficEngine, link: DirectedLink) -> str | None:
    """Why a rider queued for metro ``link`` reconsiders when its trains are full, or ``None``.

    The trains are full when the stop's wait indicator is at least a headway: the next train
    leaves the rider behind.
    """
    wait = engine.link_wait(link)
    headway = engine.scenario.metro_lines[link.line].headway
    if wait < headway:
        return None
    return (
        f"crowded stop: {link.line} trains are full, ~{wait:.0f} min more to wait "
        f"(trains every {headway:g} min)"
    )


def riders_who_may_reconsider(
    engine: TrafficEngine,
    link: DirectedLink,
    riders: Iterable[Trip],
    reconsidered: Callable[[Trip], set[str]],
    t: float,
) -> list[Trip]:
    """The riders queued for metro ``link`` to whom :func:`en_route_trigger` may give a reason.

    Exactly those a reconsideration at the stop can concern: with full trains, the riders not
    yet reconsidered for a crowded stop on this trip (the trigger is the same for the whole
    queue); otherwise all of them when an announced event has a text (it may concern their
    links ahead), else none.

    Args:
        engine: The traffic engine.
        link: The metro link the riders queue for.
        riders: The stop queue.
        reconsidered: The reconsideration keys of a rider's traveller today.
        t: The current minute.
    """
    crowded = crowded_stop(engine, link)
    if crowded is not None:
        return [
            trip
            for trip in riders
            if reconsider_key(str(trip.trip_id), crowded) not in reconsidered(trip)
        ]
    if any(event.content for event in engine.announced_events(t)):
        return list(riders)
    return []
