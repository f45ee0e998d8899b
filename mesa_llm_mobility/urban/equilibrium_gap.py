"""The standard relative gap: each commuter's cost against the best available to it that day.

In dynamic user equilibrium with departure-time choice (Vickrey 1969; Friesz et al. 1993), no
commuter can lower its generalised cost by changing route, mode or departure time. The relative
gap measures how far a day is from that state (Lu, Mahmassani and Zhou 2009):

``gap = sum_i (c_i - c*_i) / sum_i c_i``

over every commuter ``i`` who reached work, with ``c_i`` its experienced cost and ``c*_i`` the
least cost available to it for the same origin, destination and desired arrival time: the best,
over every mode it can use (``drive`` with a licence and a household vehicle, ``transit``,
``walk``) and every departure minute within three hours before and one after its work start, of
the scheduling cost ``T + (beta/alpha) SDE + (gamma/alpha) SDL + (theta/alpha) [late]`` (Small
1982, in travel minutes) of the time-dependent fastest path leaving then, in the network the
others made that day. The experienced trip itself is an alternative, so ``c*_i <= c_i``.

The day's network comes from what was observed, not from a model of it:
:class:`TimeDependentNetwork` reads every link traversal of the day (when a traveller reached a
link's tail, entered it and reached its head) and lets one more traveller, the commuter with
its own traversals taken out, through the same links by the rules both engines share: a road
link admits a vehicle while fewer than its capacity are on it, a train takes riders while it
has room, first in, first out (the cumulative-count view of queues, Newell 1982, *Applications
of Queueing Theory*). This is exact for the others' choices fixed, as a gap needs, with one
approximation: travellers who reached a tail in the same minute as the commuter are not put
ahead of it. Replaying each observed trip at its observed time gives its observed arrival for
every trip of our runs and 99 % of the published ones. Engines differ in what a node costs:
GATSim spends one minute at every node and at the destination's door (``node_minutes=1``),
the urban model none.

:func:`traversals_from_positions` gives the traversals of one of our runs (positions and trips
tables); the published run has them exactly (:mod:`.published_movements`).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.urban.decisions.learning import SMALL_1982, schedule_cost
from mesa_llm_mobility.urban.metro import next_train
from mesa_llm_mobility.urban.population import Population
from mesa_llm_mobility.urban.published_movements import TRAVERSAL_COLUMNS
from mesa_llm_mobility.urban.routing import DirectedLink, NetworkIndex, PathError

WINDOW_BEFORE = 180
"""Departures considered up to this many minutes before the desired arrival."""
WINDOW_AFTER = 60
"""And up to this many after it."""


class LinkRecord:
    """What one directed link did over a run: who reached it when, who was on it when.

    Args:
        tails: Minutes observed travellers reached the tail.
        entered: Minutes they entered the link (started driving, boarded).
        agents: Who they were.
        on_link: Minutes each stays on it after entering (the free or ride time).
        horizon: Minutes covered (occupancy is counted up to here).
    """

    def __init__(
        self,
        tails: Sequence[float],
        entered: Sequence[float],
        agents: Sequence[str],
        on_link: float,
        horizon: int,
    ) -> None:
        order = np.argsort(np.asarray(tails, dtype=float), kind="stable")
        self.tails = np.asarray(tails, dtype=float)[order]
        starts = [float(entered[k]) for k in order]
        who = [str(agents[k]) for k in order]
        # prefix maxima of the entries: the largest, its agent, the largest of anyone else
        self._first: list[tuple[float, str]] = []
        self._second: list[float] = []
        top, top_agent, other = -math.inf, "", -math.inf
        for start, agent in zip(starts, who, strict=True):
            if start > top:
                if agent != top_agent:
                    other = top
                top, top_agent = start, agent
            elif agent != top_agent and start > other:
                other = start
            self._first.append((top, top_agent))
            self._second.append(other)
        self.span = max(1, round(on_link))
        delta = np.zeros(horizon + 2, dtype=np.int64)
        self.own: dict[str, list[int]] = {}
        for start, agent in zip(starts, who, strict=True):
            first = int(min(max(start, 0), horizon + 1))
            delta[first] += 1
            delta[min(first + self.span, horizon + 1)] -= 1
            self.own.setdefault(agent, []).append(first)
        self.occupancy = np.cumsum(delta)

    def fifo_bound(self, t: float, exclude: str | None = None) -> float:
        """The latest entry of those (but ``exclude``) that reached the tail before ``t``.

        Those reaching it in the same minute are not counted ahead: the engines order them
        arbitrarily, and the traveller may be first.
        """
        k = bisect.bisect_left(self.tails, t) - 1
        if k < 0:
            return -math.inf
        top, agent = self._first[k]
        return self._second[k] if exclude is not None and agent == exclude else top

    def on_link_at(self, minute: int, exclude: str | None = None) -> int:
        """Travellers (but ``exclude``) observed on the link at ``minute``."""
        if minute < 0 or minute >= len(self.occupancy):
            return 0
        count = int(self.occupancy[minute])
        if exclude is not None:
            count -= sum(
                1 for s in self.own.get(exclude, ()) if s <= minute < s + self.span
            )
        return count


@dataclass(frozen=True)
class Commute:
    """A commuter's trip to work and what it could have used.

    Attributes:
        agent: Who.
        day: Day number.
        origin: Origin facility or node.
        destination: Work facility.
        departure: Departure minute (absolute).
        arrival: Arrival minute (absolute; at the door for GATSim, at the node for the urban
            model, as each engine times trips).
        target: Desired arrival (the work start, absolute).
        modes: Modes it could use.
    """

    agent: str
    day: int
    origin: str
    destination: str
    departure: float
    arrival: float
    target: float
    modes: tuple[str, ...]

    @property
    def cost(self) -> float:
        """Experienced scheduling cost in travel minutes."""
        return commute_cost(self.departure, self.arrival, self.target)


def commute_cost(departure: float, arrival: float, target: float) -> float:
    """Small's (1982) scheduling cost divided by ``alpha``: travel minutes equivalent."""
    return schedule_cost(departure, arrival - departure, target) / SMALL_1982.travel


class TimeDependentNetwork:
    """The links of one run as the others loaded them, for one more traveller.

    Both engines admit a vehicle to a road link while fewer than its capacity are on it, and a
    rider to a train while it has room, first in first out. A traveller reaching a link's tail at
    ``t`` therefore enters at the first minute ``s`` (a road minute, or a train leaving that
    stop) no earlier than ``t`` plus the engine's node minutes and no earlier than anyone who
    reached the tail before it entered, at which the travellers observed on the link are fewer
    than its capacity then (capacity events of the scenario applied); it reaches the head
    ``s + free time`` (metro: ride time). Walking has no capacity.

    Args:
        index: The town's network index.
        traversals: Link traversals (``link``, ``direction``, ``how`` = drive / walk / ride,
            ``tail``, ``entered``); rows not entered are ignored.
        node_minutes: Minutes spent at each node reached and at the destination's door.
        horizon: Last minute covered (default: the last traversal's entry plus a day).
        capacity_events: Apply the scenario's capacity events to road links.
    """

    def __init__(
        self,
        index: NetworkIndex,
        traversals: pd.DataFrame,
        node_minutes: int = 0,
        horizon: int | None = None,
        *,
        capacity_events: bool = True,
    ) -> None:
        self.index = index
        self.node_minutes = node_minutes
        self.factor = index.scenario.walking_factor
        moved = traversals[
            traversals["entered"].notna() & traversals["how"].isin(["drive", "ride"])
        ]
        if horizon is None:
            last = moved["entered"].max() if len(moved) else 0.0
            horizon = int(last) + 24 * 60
        self.horizon = horizon
        positions = {(link.name, link.direction): link.index for link in index.links}
        self.records: dict[int, LinkRecord] = {}
        for (name, direction), rows in moved.groupby(["link", "direction"], sort=False):
            position = positions.get((str(name), int(direction)))
            if position is None:
                continue
            link = index.links[position]
            self.records[position] = LinkRecord(
                rows["tail"].to_list(),
                rows["entered"].to_list(),
                rows["agent"].astype(str).to_list(),
                self._time_on(link),
                horizon,
            )
        self.events = (
            [
                e
                for e in index.scenario.events
                if e.attribute == "capacity" and e.place in index.scenario.road_links
            ]
            if capacity_events
            else []
        )
        self._cache: dict[tuple[str, str, int], dict[str, float]] = {}
        self._free: TimeDependentNetwork | None = None
        self.free = False
        """Ignore every traversal (an empty town)."""

    def _time_on(self, link: DirectedLink) -> float:
        if link.kind == "metro" and link.line is not None:
            return self.index.scenario.metro_lines[link.line].travel_time
        return link.free_time

    def capacity(self, link: DirectedLink, minute: int) -> float:
        """Vehicles the link takes at once at ``minute`` (road: events applied; metro: a train)."""
        if link.kind == "metro" and link.line is not None:
            return self.index.scenario.metro_lines[link.line].train_capacity
        value = float(self.index.scenario.road_links[link.name].capacity)
        for event in self.events:
            if (
                event.place == link.name
                and event.direction in (None, link.direction)
                and event.start_time <= minute < event.end_time
                and isinstance(event.new_value, int | float)
            ):
                value = float(event.new_value)
        return value

    def _head(
        self, link: DirectedLink, t: float, mode: str, exclude: str | None = None
    ) -> float | None:
        if link.kind == "road" and mode in ("walk", "transit"):
            return t + self.node_minutes + self.factor * link.free_time
        if (link.kind == "road") != (mode == "drive"):
            return None
        record = None if self.free else self.records.get(link.index)
        earliest = t + self.node_minutes
        if record is not None:
            earliest = max(earliest, record.fifo_bound(t, exclude))
        minute = math.ceil(earliest - 1e-9)
        line = None
        if link.kind == "metro" and link.line is not None:
            line = self.index.scenario.metro_lines[link.line]
        while minute <= self.horizon:
            if line is not None:
                train = next_train(line, link.stop or 0, minute)
                if math.isinf(train) or train > self.horizon:
                    return None
                minute = math.ceil(train - 1e-9)
            taken = 0 if record is None else record.on_link_at(minute, exclude)
            if taken < self.capacity(link, minute):
                return minute + self._time_on(link)
            minute += 1
        return None

    def arrivals(
        self, origin: str, depart: int, mode: str, exclude: str | None = None
    ) -> dict[str, float]:
        """Earliest arrival at every node leaving ``origin`` at ``depart`` by ``mode``.

        Label setting (Dijkstra) on arrival times, valid because every link is first in, first
        out (a later start never arrives earlier). ``exclude``: leave this traveller's own
        traversals out of the loading (the others fixed, as a gap needs); such answers are not
        cached.
        """
        key = (origin, mode, depart)
        cached = self._cache.get(key) if exclude is None else None
        if cached is not None:
            return cached
        best = {origin: float(depart)}
        heap = [(float(depart), origin)]
        done: set[str] = set()
        while heap:
            t, node = heapq.heappop(heap)
            if node in done:
                continue
            done.add(node)
            for link in self.index.out_links[node]:
                head = self._head(link, t, mode, exclude)
                if head is not None and head < best.get(link.head, math.inf):
                    best[link.head] = head
                    heapq.heappush(heap, (head, link.head))
        if exclude is None:
            self._cache[key] = best
        return best

    def free_network(self) -> TimeDependentNetwork:
        """The same town with nobody else on it (for lower bounds)."""
        if self._free is None:
            empty = pd.DataFrame(columns=list(TRAVERSAL_COLUMNS))
            self._free = TimeDependentNetwork(
                self.index, empty, self.node_minutes, self.horizon
            )
            self._free.free = True
        return self._free

    def best_cost(self, commute: Commute) -> tuple[float, str, int]:
        """The least cost available to ``commute``, the others fixed: ``(cost, mode, departure)``.

        Every mode it can use and every departure in the window, the commuter's own traversals
        left out of the loading. Branch and bound: departures are tried in the order of their
        cost on an empty network (a lower bound) and the search stops when that bound reaches
        the best found; the experienced trip is the first incumbent.
        """
        origin = self.index.node_of(commute.origin)
        target = self.index.node_of(commute.destination)
        free = self.free_network()
        bounds = []
        for mode in commute.modes:
            for depart in range(
                int(commute.target - WINDOW_BEFORE),
                int(commute.target + WINDOW_AFTER) + 1,
            ):
                reach = free.arrivals(origin, depart, mode).get(target)
                if reach is not None:
                    cost = commute_cost(
                        depart, reach + self.node_minutes, commute.target
                    )
                    bounds.append((cost, mode, depart))
        bounds.sort()
        found = (commute.cost, "", -1)
        for bound, mode, depart in bounds:
            if bound >= found[0]:
                break
            reach = self.arrivals(origin, depart, mode, exclude=commute.agent).get(
                target
            )
            if reach is None:
                continue
            cost = commute_cost(depart, reach + self.node_minutes, commute.target)
            if cost < found[0]:
                found = (cost, mode, depart)
        return found


def usable_modes(
    population: Population, index: NetworkIndex
) -> dict[str, tuple[str, ...]]:
    """Modes each traveller can use.

    Driving with a licence and a household vehicle (who has the car that day is not asked),
    walking always, transit where the town has a metro.
    """
    transit = bool(index.scenario.metro_lines)
    modes = {}
    for person in population.people:
        own = ["walk"]
        if transit:
            own.append("transit")
        if person.licensed_driver and person.household_vehicles > 0:
            own.append("drive")
        modes[person.name] = tuple(own)
    return modes


def commutes_of(
    trips: pd.DataFrame, modes: Mapping[str, tuple[str, ...]]
) -> list[Commute]:
    """Each traveller's first trip of a day with a target arrival that arrived (the commute)."""
    done = trips[trips["planned_arrival"].notna() & trips["arrival"].notna()]
    first = (
        done.sort_values("departure", kind="stable").groupby(["agent", "day"]).head(1)
    )
    return [
        Commute(
            str(row.agent),
            int(row.day),
            str(row.origin),
            str(row.destination),
            float(row.departure),
            float(row.arrival),
            float(row.planned_arrival),
            modes.get(str(row.agent), ("walk", "transit")),
        )
        for row in first.itertuples(index=False)
    ]


@dataclass(frozen=True)
class GapResult:
    """The relative gap of one day and its parts.

    Attributes:
        day: Day number.
        gap: ``sum (c - c*) / sum c``.
        commuters: Commuters counted (those who reached work).
        experienced: ``sum c`` (travel minutes).
        best: ``sum c*``.
        better_mode: Commuters whose best alternative uses another mode.
    """

    day: int
    gap: float
    commuters: int
    experienced: float
    best: float
    better_mode: int


def relative_gaps(
    trips: pd.DataFrame,
    traversals: pd.DataFrame,
    index: NetworkIndex,
    modes: Mapping[str, tuple[str, ...]],
    *,
    node_minutes: int = 0,
    trip_modes: Mapping[str, str] | None = None,
) -> list[GapResult]:
    """The standard relative gap of every day of a run.

    Args:
        trips: The run's trips table.
        traversals: Its link traversals.
        index: The town's network index.
        modes: Modes each traveller can use (:func:`usable_modes`).
        node_minutes: The engine's minutes per node (1 for GATSim, 0 for the urban model).
        trip_modes: Each trip's mode by trip id (default: the trips table's ``mode``).

    Returns:
        One result per day with commutes.
    """
    network = TimeDependentNetwork(index, traversals, node_minutes)
    mode_of = trip_modes or dict(zip(trips["trip_id"], trips["mode"], strict=True))
    trip_of = {
        (str(r.agent), int(r.day), float(r.departure)): str(r.trip_id)
        for r in trips.itertuples(index=False)
    }
    by_day: dict[int, list[tuple[float, float, bool]]] = {}
    for commute in commutes_of(trips, modes):
        cost = commute.cost
        try:
            best, mode, _ = network.best_cost(commute)
        except PathError:
            best, mode = cost, ""
        own = mode_of.get(
            trip_of.get((commute.agent, commute.day, commute.departure), ""), ""
        )
        by_day.setdefault(commute.day, []).append(
            (cost, best, bool(mode) and best < cost and mode != own)
        )
    results = []
    for day, rows in sorted(by_day.items()):
        experienced = sum(c for c, _, _ in rows)
        best = sum(b for _, b, _ in rows)
        results.append(
            GapResult(
                day,
                (experienced - best) / experienced if experienced > 0 else 0.0,
                len(rows),
                experienced,
                best,
                sum(1 for _, _, other in rows if other),
            )
        )
    return results


# ----------------------------------------------------------------------------- our runs
def traversals_from_positions(
    positions: pd.DataFrame, trips: pd.DataFrame
) -> pd.DataFrame:
    """Link traversals of one of our runs, from its positions and trips tables.

    A traveller's positions rows on a link (driving, riding, walking) between a trip's departure
    and arrival are that trip's links, in order: each is entered at its row's minute and left at
    the next row's (a wait at a node, the next link, or the arrival); the first is reached at
    the departure, each later one where the previous was left. A rider staying aboard through a
    stop leaves a link at the next link's row, so its time includes the dwell. Trips whose rows
    do not match their path (a link taken twice in a row) are left out.
    """
    rows = []
    by_agent = {
        str(agent): frame.sort_values("time", kind="stable")
        for agent, frame in positions.groupby("agent", sort=False)
    }
    how_of = {"driving": "drive", "riding": "ride", "walking": "walk"}
    done = trips[trips["departure"].notna() & trips["arrival"].notna()]
    for trip in done.itertuples(index=False):
        own = by_agent.get(str(trip.agent))
        if own is None:
            continue
        window = own[(own["time"] >= trip.departure) & (own["time"] <= trip.arrival)]
        times = window["time"].to_list()
        states = window["state"].to_list()
        places = window["place"].to_list()
        path = list(trip.path)
        on_links = [
            k
            for k, state in enumerate(states)
            if state in how_of and times[k] < trip.arrival
        ]
        if [places[k] for k in on_links] != path:
            continue
        tail = float(trip.departure)
        for number, k in enumerate(on_links):
            head = float(times[k + 1]) if k + 1 < len(times) else float(trip.arrival)
            if number == len(on_links) - 1:
                head = float(trip.arrival)
            rows.append(
                (
                    trip.trip_id,
                    trip.agent,
                    places[k],
                    -1,
                    how_of[states[k]],
                    tail,
                    float(times[k]),
                    head,
                )
            )
            tail = head
    return pd.DataFrame(rows, columns=list(TRAVERSAL_COLUMNS))


def with_directions(
    traversals: pd.DataFrame, trips: pd.DataFrame, index: NetworkIndex
) -> pd.DataFrame:
    """Fill in ``direction`` by walking each trip's path from its origin."""
    origin = dict(zip(trips["trip_id"], trips["origin"], strict=True))
    directions: list[int] = []
    at: str | None = None
    current = None
    for row in traversals.itertuples(index=False):
        if row.trip_id != current:
            current = row.trip_id
            try:
                at = index.node_of(str(origin[row.trip_id]))
            except (KeyError, PathError):
                at = None
        link = index.by_name_tail.get((row.link, at)) if at is not None else None
        directions.append(-1 if link is None else link.direction)
        at = None if link is None else link.head
    return traversals.assign(direction=directions)
