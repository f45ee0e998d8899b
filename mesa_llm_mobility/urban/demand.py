"""Run the traffic engine on fixed demand, without any cognition: a plain dynamic network loader.

:func:`simulate_demand` takes a scenario and a table of trips (trip id, origin, destination,
departure minute, mode, optional path) and returns one row per trip. It drives the step engine
(:class:`~mesa_llm_mobility.urban.traffic.TrafficEngine`) or, when every trip drives on ``flow``
links without storage limits or capacity events and ends at a plain node, an event-driven engine
that computes the same Vickrey exit times directly:

``e_i = max(a_i + free_time, e_{i-1} + 1 / q)`` per link, in continuous time,

processing link exits in time order from one heap. With departures, free times, headways and the
routing interval on multiples of ``dt``, both engines give identical trips (this is tested); the
event engine is what makes the 61,000-trip grid benchmark run in seconds.
"""

from __future__ import annotations

import heapq
import math
import sys
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from mesa_llm_mobility.urban.routing import (
    ROUTE_HISTORY,
    NetworkIndex,
    PathError,
    Router,
    next_hop_table,
    table_age,
    validate_path,
)
from mesa_llm_mobility.urban.scenario import Scenario
from mesa_llm_mobility.urban.traffic import TrafficEngine
from mesa_llm_mobility.urban.trips import TRIP_COLUMNS

ROUTINGS = ("shortest", "free_flow", "dynamic")
ENGINES = ("auto", "step", "event")


def _rows(demand: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(demand, pd.DataFrame):
        columns = {name: demand[name].tolist() for name in demand.columns}
        records = [
            dict(zip(columns, values, strict=True))
            for values in zip(*columns.values(), strict=True)
        ]
    else:
        records = [dict(row) for row in demand]
    rows = []
    for position, row in enumerate(records):
        for key in ("origin", "destination", "depart"):
            if key not in row or row[key] is None:
                raise ValueError(f"demand row {position}: missing field {key!r}")
        depart = row["depart"]
        if (
            isinstance(depart, bool)
            or not isinstance(depart, int | float)
            or not math.isfinite(depart)
        ):
            raise ValueError(
                f"demand row {position}: field 'depart': expected minutes, got {depart!r}"
            )
        path = row.get("path")
        if (
            path is not None
            and not isinstance(path, str)
            and not isinstance(path, list | tuple)
        ):
            if isinstance(path, float) and math.isnan(path):
                path = None
            else:
                raise ValueError(
                    f"demand row {position}: field 'path': expected a list of link names, got {path!r}"
                )
        rows.append(
            {
                "trip_id": row.get("trip_id", position),
                "origin": row["origin"],
                "destination": row["destination"],
                "depart": float(depart),
                "mode": row.get("mode") or "drive",
                "path": path,
                "agent": row.get("agent"),
                "planned_arrival": row.get("planned_arrival"),
            }
        )
    return rows


def simulate_demand(
    scenario: Scenario,
    demand: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    routing: str = "shortest",
    route_interval: float | None = None,
    route_update_weight: float = 0.5,
    dt: float = 1.0,
    horizon: float | None = None,
    engine: str = "auto",
    apply_events: bool = True,
) -> pd.DataFrame:
    """Simulate fixed demand on a scenario and return the trips.

    Args:
        scenario: The validated scenario.
        demand: Rows with ``origin``, ``destination`` (node ids or facility names), ``depart``
            (minutes) and optionally ``trip_id`` (default: row number), ``mode`` (``drive``,
            ``walk`` or ``transit``; default ``drive``), ``path`` (list of link names) and
            ``agent`` (trips of one agent run one after the other; default: one agent per trip).
        routing: Route of rows without a path: ``"shortest"`` (free time plus current wait
            indicators at departure), ``"free_flow"`` (free times only) or ``"dynamic"`` (drive:
            next link chosen at each node on free time plus current queueing delay, tables
            refreshed every ``route_interval`` minutes, like UXsim's dynamic user optimum).
        route_interval: Minutes between routing-table refreshes for ``"dynamic"`` (default 10).
        route_update_weight: Share of ``"dynamic"`` travellers following the newest table (the
            others follow older ones: damped updates, see :func:`~.routing.table_age`).
        dt: Step length of the step engine in minutes.
        horizon: Last minute simulated (default: last departure + 1440).
        engine: ``"auto"`` (event engine where it applies, else step engine), ``"step"`` or
            ``"event"``.
        apply_events: Whether the scenario's capacity events apply.

    Returns:
        One row per trip with columns ``trip_id, agent, origin, destination, mode, path,
        planned_departure, departure, arrival, admitted, travel_time, free_flow_time, delay,
        state`` (times in minutes; NaN where the trip has not departed or arrived by the horizon).

    Raises:
        ValueError: On a malformed demand row (naming the row and field), an unknown routing or
            engine, or ``engine="event"`` where it does not apply.
        PathError: On a broken explicit path (naming the trip and the first broken link).
    """
    if routing not in ROUTINGS:
        raise ValueError(f"unknown routing {routing!r}; expected one of {ROUTINGS}")
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    if not 0.0 < route_update_weight <= 1.0:
        raise ValueError(
            f"route_update_weight must be in (0, 1], got {route_update_weight!r}"
        )
    if routing == "dynamic" and route_interval is None:
        route_interval = 10.0
    rows = _rows(demand)
    if horizon is None:
        horizon = max((row["depart"] for row in rows), default=0.0) + 1440.0
    reason = _event_engine_unsupported(scenario, rows, routing, apply_events)
    if engine == "event" and reason:
        raise ValueError(f"the event engine does not apply: {reason}")
    if engine == "event" or (engine == "auto" and not reason):
        return _simulate_events(
            scenario, rows, routing, route_interval, route_update_weight, horizon
        )
    start = min((row["depart"] for row in rows), default=0.0)
    start = math.floor(start / dt) * dt
    traffic = TrafficEngine(
        scenario,
        dt=dt,
        start_time=start,
        route_interval=route_interval,
        route_update_weight=route_update_weight,
        record_link_states=False,
        record_facility_states=False,
        apply_events=apply_events,
    )
    for row in sorted(rows, key=lambda r: r["depart"]):
        traffic.add_trip(
            row["trip_id"],
            row["origin"],
            row["destination"],
            row["depart"],
            row["mode"],
            row["path"] if row["path"] is not None else routing,
            row["agent"],
            row["planned_arrival"],
        )
    traffic.run_until_done(horizon)
    frame = traffic.trips_frame()
    order = {row["trip_id"]: k for k, row in enumerate(rows)}
    return frame.iloc[frame["trip_id"].map(order).argsort()].reset_index(drop=True)


def _event_engine_unsupported(
    scenario: Scenario, rows: list[dict[str, Any]], routing: str, apply_events: bool
) -> str:
    if routing == "shortest" and any(row["path"] is None for row in rows):
        return "routing 'shortest' depends on per-step wait indicators"
    for link in scenario.road_links.values():
        if link.model != "flow":
            return f"link {link.name!r} uses the occupancy model"
        if link.storage_capacity is not None:
            return f"link {link.name!r} has a storage capacity"
        if link.capacity <= 0:
            return f"link {link.name!r} is closed (capacity 0)"
    if apply_events and any(e.attribute == "capacity" for e in scenario.events):
        return "the scenario has capacity events"
    agents = set()
    for row in rows:
        if row["mode"] != "drive":
            return f"trip {row['trip_id']!r} does not drive"
        if row["destination"] in scenario.facilities:
            return f"trip {row['trip_id']!r} ends at a facility"
        if row["agent"] is not None:
            if row["agent"] in agents:
                return f"agent {row['agent']!r} makes several trips"
            agents.add(row["agent"])
    return ""


def _simulate_events(
    scenario: Scenario,
    rows: list[dict[str, Any]],
    routing: str,
    route_interval: float | None,
    route_update_weight: float,
    horizon: float,
) -> pd.DataFrame:
    """Event-driven Vickrey point-queue network loading (flow links, drivers, plain nodes)."""
    index = NetworkIndex(scenario)
    router = Router(index)
    links = index.links
    n_links = len(links)
    node_names = list(scenario.nodes)
    node_ids = {node: k for k, node in enumerate(node_names)}
    head = [node_ids[link.head] for link in links]
    free = [link.free_time for link in links]
    headway = []
    bypass = []
    for link in links:
        road = scenario.road_links[link.name]
        headway.append(60.0 / road.capacity if road.capacity > 0 else math.inf)
        bypass.append(not road.capacity_for_trip_ends)
    last_ready = [-math.inf] * n_links

    reachable: dict[str, set[str]] = {}

    def reaches(destination: str) -> set[str]:
        """Nodes from which ``destination`` can be reached by road (one search per destination)."""
        found = reachable.get(destination)
        if found is None:
            found, frontier = {destination}, [destination]
            while frontier:
                node = frontier.pop()
                for link in index.road_links_into[node]:
                    if link.tail not in found:
                        found.add(link.tail)
                        frontier.append(link.tail)
            reachable[destination] = found
        return found

    n = len(rows)
    origin = [0] * n
    dest = [0] * n
    paths: list[list[int] | None] = [None] * n
    ids = set()
    for i, row in enumerate(rows):
        if row["trip_id"] in ids:
            raise ValueError(f"duplicate trip id {row['trip_id']!r}")
        ids.add(row["trip_id"])
        try:
            o = index.node_of(row["origin"])
            d = index.node_of(row["destination"])
        except PathError as error:
            raise ValueError(f"trip {row['trip_id']!r}: {error}") from error
        origin[i], dest[i] = node_ids[o], node_ids[d]
        try:
            if row["path"] is not None:
                paths[i] = [
                    link.index
                    for link in validate_path(index, o, d, list(row["path"]), "drive")
                ]
            elif routing == "free_flow":
                paths[i] = [link.index for link in router.path(o, d, "drive")]
            elif o not in reaches(d):
                raise PathError(f"no drive path from {o!r} to {d!r}")
        except PathError as error:
            raise PathError(f"trip {row['trip_id']!r}: {error}") from error

    # departures in (time, row) order, merged with the heap of link exits; ``rank`` is the
    # traveller number the step engine gives the same trip (it adds trips in this order)
    dep_order = sorted(range(n), key=lambda r: rows[r]["depart"])
    rank = [0] * n
    for r, i in enumerate(dep_order):
        rank[i] = r
    dep_times = [rows[i]["depart"] for i in dep_order]
    # The heap holds one entry per non-empty link, (exit time of its first vehicle, link), and
    # the routing refreshes, (time, -1); each link is FIFO, its exit times strictly increase.
    heap: list[tuple[float, int]] = []
    fifo: list[deque[int]] = [deque() for _ in range(n_links)]
    ready_of = [0.0] * n
    if routing == "dynamic" and any(p is None for p in paths):
        refresh_at = math.floor(dep_times[0] / route_interval) * route_interval
        while refresh_at <= horizon:
            heap.append((refresh_at, -1))
            refresh_at += route_interval
    # damped dynamic routing, as in TrafficEngine: cost snapshots by refresh number
    history: dict[int, dict[int, float]] = {0: {}}
    epoch = oldest_age = 0
    # each traveller's table age before truncation to the oldest table kept
    ages = [table_age(rank[i], route_update_weight, sys.maxsize) for i in range(n)]
    n_nodes = len(node_names)
    tables: dict[int, list[list[tuple[int, ...]] | None]] = {0: [None] * n_nodes}
    departure = [math.nan] * n
    arrival = [math.nan] * n
    taken: list[list[int]] = [[] for _ in range(n)]
    position = [0] * n
    dp = 0
    heappush, heappop = heapq.heappush, heapq.heappop
    while True:
        if dp < n and (not heap or dep_times[dp] < heap[0][0]):
            i = dep_order[dp]
            time = dep_times[dp]
            dp += 1
            if time > horizon:
                break
            departure[i] = time
            node = origin[i]
            if node == dest[i]:
                arrival[i] = time
                continue
        elif heap:
            time, prio = heappop(heap)
            if time > horizon:
                break
            if prio < 0:
                epoch += 1
                history[epoch] = {
                    k: delay
                    for k in range(n_links)
                    if (delay := (last_ready[k] + headway[k]) - (time + free[k])) > 0
                }
                tables[epoch] = [None] * n_nodes
                history.pop(epoch - ROUTE_HISTORY, None)
                tables.pop(epoch - ROUTE_HISTORY, None)
                oldest_age = len(history) - 1
                continue
            queue = fifo[prio]
            i = queue.popleft()
            if queue:
                heappush(heap, (ready_of[queue[0]], prio))
            node = head[prio]
        else:
            break
        path = paths[i]
        if path is None:
            d = dest[i]
            age = ages[i]
            if age > oldest_age:
                age = oldest_age
            used = epoch - age
            table = tables[used][d]
            if table is None:
                hops = next_hop_table(index, node_names[d], history[used])
                table = [()] * n_nodes
                for name, options in hops.items():
                    table[node_ids[name]] = tuple(link.index for link in options)
                tables[used][d] = table
            options = table[node]
            k = options[(rank[i] + node) % len(options)]
            ends = head[k] == d
        else:
            k = path[position[i]]
            position[i] += 1
            ends = position[i] == len(path)
        taken[i].append(k)
        ready = time + free[k]
        if ends:
            # nothing downstream depends on a finishing vehicle: its arrival is known now
            if not bypass[k]:
                queue_ready = last_ready[k] + headway[k]
                if queue_ready > ready:
                    ready = queue_ready
                last_ready[k] = ready
            if ready <= horizon:
                arrival[i] = ready
            continue
        queue_ready = last_ready[k] + headway[k]
        if queue_ready > ready:
            ready = queue_ready
        last_ready[k] = ready
        ready_of[i] = ready
        queue = fifo[k]
        if not queue:
            heappush(heap, (ready, k))
        queue.append(i)

    names = [link.name for link in links]
    records = []
    for i, row in enumerate(rows):
        route = taken[i]
        free_flow = sum(map(free.__getitem__, route))
        arrived = arrival[i]
        dep = departure[i]
        planned = (
            math.nan
            if row["planned_arrival"] is None
            else float(row["planned_arrival"])
        )
        state = (
            "arrived"
            if arrived == arrived
            else ("scheduled" if dep != dep else "traversing")
        )
        records.append(
            (
                row["trip_id"],
                row["agent"] if row["agent"] is not None else row["trip_id"],
                row["origin"],
                row["destination"],
                "drive",
                tuple(map(names.__getitem__, route)),
                row["depart"],
                dep,
                planned,
                arrived,
                math.nan,
                arrived - dep,
                free_flow if arrived == arrived else math.nan,
                arrived - dep - free_flow,
                state,
            )
        )
    return pd.DataFrame(records, columns=TRIP_COLUMNS)


def demand_from_windows(
    windows: Iterable[Mapping[str, Any]], *, seconds: bool = True
) -> pd.DataFrame:
    """Expand demand windows ``(orig, dest, t_start, t_end, flow)`` into single trips.

    Window k releases ``n = round(flow x (t_end - t_start))`` vehicles, the j-th at
    ``t_start + j / flow`` (evenly spaced, single-vehicle resolution).

    Args:
        windows: Rows with ``orig``, ``dest``, ``t_start``, ``t_end`` and ``flow``.
        seconds: Whether times are in seconds and flow in veh/s (converted to minutes).

    Returns:
        Demand rows ``trip_id, origin, destination, depart`` (minutes), sorted by departure.

    Raises:
        ValueError: If a window lacks a field or has a negative flow.
    """
    scale = 60.0 if seconds else 1.0
    origins: list[str] = []
    destinations: list[str] = []
    departs: list[float] = []
    for position, window in enumerate(windows):
        for key in ("orig", "dest", "t_start", "t_end", "flow"):
            if key not in window:
                raise ValueError(f"demand window {position}: missing field {key!r}")
        flow = float(window["flow"])
        if flow < 0:
            raise ValueError(
                f"demand window {position}: field 'flow': negative value {flow!r}"
            )
        count = round(flow * (window["t_end"] - window["t_start"]))
        for j in range(count):
            origins.append(window["orig"])
            destinations.append(window["dest"])
            departs.append((window["t_start"] + j / flow) / scale)
    frame = pd.DataFrame(
        {"origin": origins, "destination": destinations, "depart": departs}
    )
    frame = frame.sort_values("depart", kind="stable").reset_index(drop=True)
    frame.insert(0, "trip_id", range(len(frame)))
    return frame
