"""Directed link index, path validation and shortest-path routing for the urban network.

The scenario's two-way links become directed links (direction 0: ``from -> to``, direction 1:
``to -> from``); a path is a list of link names whose directions follow from the node the
traveller stands at. Metro lines follow Spiess and Florian (1989): a line is a sequence of transit
links joined to the road nodes by boarding links (cost: the line's static wait, plus the ride)
and alighting links (cost 0); staying aboard through a stop costs the dwell time.

Routing is Dijkstra's algorithm on travel time plus a per-link extra cost (the current wait
indicator). Results are cached and the cache is dropped only when the extra costs change, so no
all-pairs computation ever runs per step.

References:
    Spiess, H., Florian, M. (1989). Optimal strategies: a new assignment model for transit
    networks. Transportation Research Part B 23(2), 83-102.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from mesa_llm_mobility.urban.scenario import MetroLine, Scenario

Mode = Literal["drive", "walk", "transit"]
MODES: tuple[str, ...] = ("drive", "walk", "transit")


class PathError(ValueError):
    """A path is not usable: broken, wrong mode, or no path exists."""


@dataclass(frozen=True, slots=True)
class DirectedLink:
    """One direction of a road or metro link.

    Attributes:
        index: Position in :attr:`NetworkIndex.links`.
        name: Link name as in the scenario (shared by both directions).
        direction: 0 (``from -> to`` / line order) or 1 (reverse).
        tail: Node the link starts at in this direction.
        head: Node the link ends at in this direction.
        free_time: Free travel time in minutes (metro: ``travel_time``).
        kind: ``"road"`` or ``"metro"``.
        line: Metro line name, or None.
        stop: Metro only: index of ``tail`` among the line's stops in this direction.
    """

    index: int
    name: str
    direction: int
    tail: str
    head: str
    free_time: float
    kind: str
    line: str | None = None
    stop: int | None = None


def direction_stops(line: MetroLine, direction: int) -> tuple[str, ...]:
    """Stops of ``line`` in the order a train of ``direction`` serves them."""
    return line.stops if direction == 0 else tuple(reversed(line.stops))


def direction_link_names(line: MetroLine, direction: int) -> tuple[str, ...]:
    """Link names of ``line`` in the order a train of ``direction`` runs them."""
    return line.link_names if direction == 0 else tuple(reversed(line.link_names))


class NetworkIndex:
    """Directed links of a scenario with lookups by name and node.

    Args:
        scenario: The validated scenario.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        links: list[DirectedLink] = []
        for road in scenario.road_links.values():
            links.append(
                DirectedLink(
                    len(links),
                    road.name,
                    0,
                    road.from_node,
                    road.to_node,
                    road.free_time,
                    "road",
                )
            )
            if road.two_way:
                links.append(
                    DirectedLink(
                        len(links),
                        road.name,
                        1,
                        road.to_node,
                        road.from_node,
                        road.free_time,
                        "road",
                    )
                )
        for line in scenario.metro_lines.values():
            for direction in (0, 1):
                stops = direction_stops(line, direction)
                names = direction_link_names(line, direction)
                for k, name in enumerate(names):
                    links.append(
                        DirectedLink(
                            len(links),
                            name,
                            direction,
                            stops[k],
                            stops[k + 1],
                            line.travel_time,
                            "metro",
                            line.name,
                            k,
                        )
                    )
        self.links: tuple[DirectedLink, ...] = tuple(links)
        self.by_name_tail: dict[tuple[str, str], DirectedLink] = {
            (link.name, link.tail): link for link in links
        }
        self.by_name: dict[str, list[DirectedLink]] = {}
        self.out_links: dict[str, list[DirectedLink]] = {n: [] for n in scenario.nodes}
        self.road_links_into: dict[str, list[DirectedLink]] = {
            n: [] for n in scenario.nodes
        }
        self.node_position = {node: k for k, node in enumerate(scenario.nodes)}
        for link in links:
            self.by_name.setdefault(link.name, []).append(link)
            self.out_links[link.tail].append(link)
            if link.kind == "road":
                self.road_links_into[link.head].append(link)

    def node_of(self, place: str) -> str:
        """Return the node of a node id or facility name.

        Raises:
            PathError: If ``place`` is neither.
        """
        if place in self.scenario.nodes:
            return place
        facility = self.scenario.facilities.get(place)
        if facility is None:
            raise PathError(f"unknown node or facility {place!r}")
        return facility.node

    def link(self, name: str, tail: str) -> DirectedLink:
        """Return the direction of link ``name`` that starts at ``tail``.

        Raises:
            PathError: If the link is unknown or does not start or end at ``tail``.
        """
        found = self.by_name_tail.get((name, tail))
        if found is None:
            if name not in self.by_name:
                raise PathError(f"unknown link {name!r}")
            raise PathError(f"link {name!r} does not start at {tail!r}")
        return found


def validate_path(
    index: NetworkIndex, origin: str, destination: str, links: Sequence[str], mode: str
) -> list[DirectedLink]:
    """Check an explicit link list and return its directed links.

    The path must be contiguous from the origin node to the destination node, each link taken in
    the direction that starts where the previous one ended. Mode rules: ``drive`` and ``walk``
    use road links only; ``transit`` uses metro links (at least one) and may walk road links.

    Args:
        index: Network index.
        origin: Origin node id or facility name.
        destination: Destination node id or facility name.
        links: Link names in travel order.
        mode: ``"drive"``, ``"walk"`` or ``"transit"``.

    Returns:
        The directed links in order.

    Raises:
        PathError: Naming the first broken link (position and name) and why.
    """
    if mode not in MODES:
        raise PathError(f"unknown mode {mode!r}; expected one of {MODES}")
    at = index.node_of(origin)
    target = index.node_of(destination)
    result: list[DirectedLink] = []
    for position, name in enumerate(links):
        where = f"path link {position} ({name!r})"
        if name not in index.by_name:
            raise PathError(f"{where}: unknown link")
        link = index.by_name_tail.get((name, at))
        if link is None:
            ends = sorted(
                {d.tail for d in index.by_name[name]}
                | {d.head for d in index.by_name[name]}
            )
            raise PathError(
                f"{where}: does not continue from {at!r} (the link joins {' and '.join(ends)})"
            )
        if link.kind == "metro" and mode != "transit":
            raise PathError(f"{where}: a metro link in a {mode} path")
        result.append(link)
        at = link.head
    if at != target:
        last = f"path link {len(links) - 1} ({links[-1]!r})" if links else "empty path"
        raise PathError(
            f"{last}: path ends at {at!r}, not at the destination {target!r}"
        )
    if mode == "transit" and not any(link.kind == "metro" for link in result):
        raise PathError("a transit path needs at least one metro link")
    return result


class Router:
    """Shortest paths by mode with a cache invalidated when link costs change.

    Costs: drive ``free_time + extra[link]``; walk ``walking_factor x free_time`` on road links
    in either direction; transit: walking legs as for walk, boarding ``static_wait + travel_time``,
    staying aboard through a stop ``dwell + travel_time``, alighting 0, with at least one metro
    link. Ties are broken by link order, so results are deterministic.

    Args:
        index: Network index.
    """

    def __init__(self, index: NetworkIndex) -> None:
        self.index = index
        self._extra: dict[int, float] = {}
        self._cache: dict[tuple[str, str, str], list[DirectedLink]] = {}
        self.cache_hits = 0
        self.computations = 0

    @property
    def extra_costs(self) -> dict[int, float]:
        """The current per-link extra costs (a copy)."""
        return dict(self._extra)

    def set_extra_costs(self, extra: Mapping[int, float]) -> bool:
        """Set per-link extra costs (minutes, by directed link index); drop the cache if changed.

        Returns:
            Whether the costs changed.
        """
        cleaned = {k: v for k, v in extra.items() if v}
        if cleaned == self._extra:
            return False
        self._extra = cleaned
        self._cache.clear()
        return True

    def path(self, origin: str, destination: str, mode: str) -> list[DirectedLink]:
        """Return the shortest path from ``origin`` to ``destination`` by ``mode``.

        Args:
            origin: Node id or facility name.
            destination: Node id or facility name.
            mode: ``"drive"``, ``"walk"`` or ``"transit"``.

        Returns:
            Directed links in travel order (empty if origin and destination share a node).

        Raises:
            PathError: If the mode is unknown or no path exists.
        """
        if mode not in MODES:
            raise PathError(f"unknown mode {mode!r}; expected one of {MODES}")
        source = self.index.node_of(origin)
        target = self.index.node_of(destination)
        key = (mode, source, target)
        cached = self._cache.get(key)
        if cached is not None:
            self.cache_hits += 1
            return list(cached)
        self.computations += 1
        found = self._dijkstra(source, target, mode)
        if found is None:
            raise PathError(f"no {mode} path from {source!r} to {target!r}")
        self._cache[key] = found
        return list(found)

    def free_flow_time(self, links: Sequence[DirectedLink], mode: str) -> float:
        """Travel time of a path with no queues and no waiting for trains.

        Driving: sum of free times; walking: walking factor x free times; metro: travel time per
        link plus the dwell at every stop passed without alighting.
        """
        factor = self.index.scenario.walking_factor
        total = 0.0
        previous: DirectedLink | None = None
        for link in links:
            if link.kind == "metro":
                total += link.free_time
                if (
                    previous is not None
                    and previous.kind == "metro"
                    and previous.line == link.line
                ):
                    total += self.index.scenario.metro_lines[link.line].dwell
            else:
                total += link.free_time * (factor if mode != "drive" else 1.0)
            previous = link
        return total

    def _road_dijkstra(
        self, source: str, target: str, mode: str
    ) -> list[DirectedLink] | None:
        """:meth:`_dijkstra` for driving and walking, on nodes alone (no train states).

        It pushes the same labels in the same order as the general search, so it finds the
        same paths, ties included; it only skips the bookkeeping of riding.
        """
        drive = mode == "drive"
        factor = self.index.scenario.walking_factor
        extra = self._extra
        out_links = self.index.out_links
        infinity = float("inf")
        dist: dict[str, float] = {source: 0.0}
        back: dict[str, tuple[str, DirectedLink]] = {}
        heap: list[tuple[float, int, str]] = [(0.0, 0, source)]
        counter = 1
        while heap:
            d, _, node = heapq.heappop(heap)
            if d > dist.get(node, infinity):
                continue
            if node == target:
                path: list[DirectedLink] = []
                while node in back:
                    node, link = back[node]
                    path.append(link)
                path.reverse()
                return path
            for link in out_links[node]:
                if link.kind != "road":
                    continue
                if drive:
                    cost = link.free_time + extra.get(link.index, 0.0)
                else:
                    cost = link.free_time * factor
                nd = d + cost
                head = link.head
                if nd < dist.get(head, infinity):
                    dist[head] = nd
                    back[head] = (node, link)
                    heapq.heappush(heap, (nd, counter, head))
                    counter += 1
        return None

    def _dijkstra(
        self, source: str, target: str, mode: str
    ) -> list[DirectedLink] | None:
        if mode != "transit":
            return self._road_dijkstra(source, target, mode)
        # States: (node, None, used_metro) at a node, (node, line_direction_key, used_metro) aboard.
        factor = self.index.scenario.walking_factor
        lines = self.index.scenario.metro_lines
        start = (source, None, mode != "transit")
        dist: dict[tuple, float] = {start: 0.0}
        back: dict[tuple, tuple[tuple, DirectedLink | None]] = {}
        heap: list[tuple[float, int, tuple]] = [(0.0, 0, start)]
        counter = 1
        while heap:
            d, _, state = heapq.heappop(heap)
            if d > dist.get(state, float("inf")):
                continue
            node, aboard, used_metro = state
            if node == target and aboard is None and used_metro:
                path: list[DirectedLink] = []
                while state in back:
                    state, link = back[state]
                    if link is not None:
                        path.append(link)
                path.reverse()
                return path
            moves: list[tuple[tuple, DirectedLink | None, float]] = []
            if aboard is not None:
                # alight (cost 0) or stay aboard the same train
                moves.append(((node, None, used_metro), None, 0.0))
            for link in self.index.out_links[node]:
                if link.kind == "road":
                    if aboard is not None:
                        continue
                    if mode == "drive":
                        cost = link.free_time + self._extra.get(link.index, 0.0)
                    else:
                        cost = link.free_time * factor
                    moves.append(((link.head, None, used_metro), link, cost))
                elif mode == "transit":
                    line = lines[link.line]
                    key = (link.line, link.direction)
                    if aboard is None:
                        cost = line.static_wait + link.free_time
                    elif aboard == key:
                        cost = line.dwell + link.free_time
                    else:
                        continue
                    cost += self._extra.get(link.index, 0.0)
                    moves.append(((link.head, key, True), link, cost))
            for new_state, link, cost in moves:
                nd = d + cost
                if nd < dist.get(new_state, float("inf")):
                    dist[new_state] = nd
                    back[new_state] = (state, link)
                    heapq.heappush(heap, (nd, counter, new_state))
                    counter += 1
        return None


AVOID_PENALTY = 1000.0
"""Extra minutes on each link to avoid when looking for an alternative path."""


def alternative_path(
    index: NetworkIndex,
    origin: str,
    destination: str,
    mode: str,
    avoid: Sequence[DirectedLink],
    extra: Mapping[int, float] | None = None,
) -> list[DirectedLink] | None:
    """Another path than ``avoid``: the fastest one sharing as few of its links as it can.

    The links of ``avoid`` cost :data:`AVOID_PENALTY` more (on top of ``extra``, e.g. the
    current waits), so the result leaves them wherever the network allows. Extra costs apply to
    driving and metro links (walking legs are never penalised).

    Returns:
        The path, or ``None`` when no path exists or the only one is ``avoid`` itself.
    """
    router = Router(index)
    costs = dict(extra or {})
    for link in avoid:
        costs[link.index] = costs.get(link.index, 0.0) + AVOID_PENALTY
    router.set_extra_costs(costs)
    try:
        found = router.path(origin, destination, mode)
    except PathError:
        return None
    if [link.index for link in found] == [link.index for link in avoid]:
        return None
    return found


def next_hop_table(
    index: NetworkIndex, destination: str, extra: Mapping[int, float] | None = None
) -> dict[str, tuple[DirectedLink, ...]]:
    """Next road links toward ``destination`` from every node that can reach it by driving.

    One Dijkstra from the destination on the reversed road graph with costs
    ``c(l) = free_time + extra[l]`` gives the cost-to-go ``D(n)``; the next hops of node ``n``
    are all road links ``l`` out of ``n`` on a shortest path, ``D(head(l)) + c(l) = D(n)``
    (within 1e-9 min), in link order. Every hop strictly lowers ``D``, so any choice among them
    leads to the destination without cycles; :func:`choose_hop` spreads travellers over them.

    Args:
        index: Network index.
        destination: Destination node id.
        extra: Extra minutes per directed link index (e.g. current queue delays).

    Returns:
        Mapping node -> tuple of next links (destination and nodes that cannot reach it excluded).
    """
    extra = extra or {}
    dist = {destination: 0.0}
    heap: list[tuple[float, int, str]] = [(0.0, 0, destination)]
    done: set[str] = set()
    into = index.road_links_into
    while heap:
        d, _, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for link in into.get(node, ()):
            nd = d + link.free_time + extra.get(link.index, 0.0)
            if nd < dist.get(link.tail, math.inf):
                dist[link.tail] = nd
                heapq.heappush(heap, (nd, link.index, link.tail))
    hops: dict[str, tuple[DirectedLink, ...]] = {}
    for node, to_go in dist.items():
        if node == destination:
            continue
        hops[node] = tuple(
            link
            for link in index.out_links[node]
            if link.kind == "road"
            and link.head in dist
            and dist[link.head] + link.free_time + extra.get(link.index, 0.0)
            <= to_go + 1e-9
        )
    return hops


def choose_hop(
    options: Sequence[DirectedLink], traveller: int, node_position: int
) -> DirectedLink:
    """Pick one of several equally short next links, deterministically.

    ``options[(traveller + node_position) mod len(options)]``: travellers with consecutive numbers
    take different equally short links, and one traveller alternates along its way (staircase
    rather than L-shaped paths on a grid), so ties do not pile everybody onto one route.

    Args:
        options: The tied next links (non-empty).
        traveller: The traveller's number (its trip order).
        node_position: Position of the current node in the scenario's node list.

    Returns:
        The chosen link.
    """
    return options[(traveller + node_position) % len(options)]


ROUTE_HISTORY = (
    8  # routing tables kept for damped updates; (1 - w) ** 8 of travellers is tiny
)


def table_age(traveller: int, weight: float, available: int) -> int:
    """Age of the routing table a traveller follows under damped (DUO-like) updates.

    With update weight ``w`` the newest table guides a share ``w`` of travellers, the one
    before ``w (1 - w)``, and so on: ``P(age = j) = w (1 - w) ** j``, the route-preference
    averaging of dynamic user optimum simulators (UXsim's ``duo_update_weight``), which damps the
    all-switch-at-once oscillation of undamped en-route choice. Deterministic: traveller ``r``
    draws ``u = frac(r x 0.618...)`` (golden-ratio sequence) and takes
    ``age = floor(ln(1 - u) / ln(1 - w))``, truncated to the oldest table kept.

    Args:
        traveller: The traveller's number (its trip order).
        weight: Update weight ``w`` in (0, 1]; 1 means everyone follows the newest table.
        available: Number of tables kept (at least 1).

    Returns:
        The age, 0 for the newest table.
    """
    if weight >= 1.0 or available <= 1:
        return 0
    u = (traveller * 0.6180339887498949) % 1.0
    return min(int(math.log1p(-u) / math.log1p(-weight)), available - 1)


class DynamicRouteTables:
    """The en-route next-hop tables that ``route="dynamic"`` trips follow.

    Every ``interval`` minutes (at its multiples) the engine takes a snapshot of the road links'
    costs (:meth:`refresh`); before the first refresh costs are free-flow. A traveller follows
    the table of the snapshot :func:`table_age` gives it (damped updates), built lazily by
    :func:`next_hop_table` for its destination, and takes the hop :func:`choose_hop` picks.
    The last :data:`ROUTE_HISTORY` snapshots are kept.

    Args:
        index: Network index.
        interval: Minutes between refreshes (None: never refreshed).
        update_weight: Share of travellers following the newest table, in (0, 1].
        start_time: The engine's first minute.
    """

    def __init__(
        self,
        index: NetworkIndex,
        interval: float | None,
        update_weight: float,
        start_time: float,
    ) -> None:
        self.index = index
        self.interval = interval
        self.update_weight = update_weight
        self._next_refresh = (
            math.ceil(start_time / interval - 1e-9) * interval
            if interval is not None
            else math.inf
        )
        # cost snapshots by refresh number (0: free flow before the first refresh)
        self._cost_history: dict[int, dict[int, float]] = {0: {}}
        self._epoch = 0
        self._tables: dict[tuple[int, str], dict[str, tuple[DirectedLink, ...]]] = {}

    def due(self, t: float) -> bool:
        """Whether a refresh is due at minute ``t``."""
        return t + 1e-9 >= self._next_refresh

    def refresh(self, t: float, costs: dict[int, float]) -> None:
        """Take a new cost snapshot at ``t``: extra minutes by road link index."""
        self._epoch += 1
        self._cost_history[self._epoch] = costs
        oldest = self._epoch - ROUTE_HISTORY + 1
        self._cost_history.pop(oldest - 1, None)
        self._tables = {k: v for k, v in self._tables.items() if k[0] >= oldest}
        while self._next_refresh <= t + 1e-9:
            self._next_refresh += self.interval

    def next_hop(self, traveller: int, destination: str, node: str) -> DirectedLink:
        """The next road link of traveller number ``traveller`` at ``node`` to ``destination``."""
        age = table_age(traveller, self.update_weight, len(self._cost_history))
        key = (self._epoch - age, destination)
        table = self._tables.get(key)
        if table is None:
            table = next_hop_table(self.index, destination, self._cost_history[key[0]])
            self._tables[key] = table
        return choose_hop(table[node], traveller, self.index.node_position[node])
