"""GTFS to transit lines of an urban scenario, on a chosen service day.

:func:`import_gtfs` reads a GTFS feed (a ``.zip`` or a folder) with gtfs-kit and adds its
routes to a scenario whose nodes carry longitude and latitude (an imported city), as the
scenario format's transit lines (``metro_lines``), which the point-queue engine runs like the
reference town's metro (timetable, boarding up to capacity, riding through stops):

1. **Service day**: the trips active on ``date`` (``YYYY-MM-DD``; default the feed's busiest
   date), by ``calendar.txt`` and ``calendar_dates.txt``.
2. **Lines**: per route, its most frequent stop sequence in direction 0 (direction 1 when a
   route has only that); each stop **snapped** to the nearest network node within
   ``max_snap_m``; the line keeps its longest run of consecutive stops within reach,
   consecutive stops on one node merge and the line stops before a node it already passed (a
   line has no repeated stop). A route left with fewer than two stops is skipped.
3. **Timetable**: the engine's lines run a regular timetable, so the day's trips of the
   pattern are summarised: first departure (``service_start``), last departure plus one
   headway (``service_end``, at most 24:00), the median gap between departures (``headway``),
   the median ride between the kept stops divided by their links (``travel_time``). Both
   directions run it.
4. **Capacity** of a vehicle by ``route_type`` (:data:`~.tables.TRANSIT_MODES`).

Errors (:class:`~.osm.CityImportError`) name the feed and the element: a missing table, a
broken time (``stop_times.txt`` row, trip and stop), no service on the date (with the feed's
dates), a scenario without coordinates, a feed whose stops are all far from the network (the
nearest one and its distance).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import gtfs_kit as gk
import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from mesa_llm_mobility.urban.cities.osm import CityImportError, write_scenario_json
from mesa_llm_mobility.urban.cities.tables import transit_mode
from mesa_llm_mobility.urban.scenario import Scenario, scenario_from_dict

_TIME = re.compile(r"^\s*(\d{1,3}):([0-5]\d):([0-5]\d)\s*$")
METRES_PER_DEGREE = 111_320.0
"""Metres per degree of latitude (and of longitude at the equator), for snapping stops."""


def parse_gtfs_time(text: Any, where: str) -> float:
    """Minutes after midnight of a GTFS time ``H:MM:SS`` (hours may pass 24).

    Raises:
        CityImportError: Naming ``where`` and the text.
    """
    match = _TIME.match(str(text)) if isinstance(text, str) else None
    if match is None:
        raise CityImportError(f"{where}: broken time {text!r} (expected HH:MM:SS)")
    hours, minutes, seconds = (int(g) for g in match.groups())
    return hours * 60 + minutes + seconds / 60.0


def import_gtfs(
    feed_path: str | Path,
    scenario: Scenario | str | Path,
    *,
    date: str | None = None,
    out: str | Path | None = None,
    max_snap_m: float = 300.0,
) -> Scenario:
    """Add a GTFS feed's lines, as run on ``date``, to ``scenario``.

    Args:
        feed_path: GTFS ``.zip`` or folder.
        scenario: The scenario (or its JSON file) whose nodes have ``lon`` and ``lat``.
        date: Service day ``YYYY-MM-DD`` (default: the feed's busiest date).
        out: Write the scenario JSON with the lines there (whole or not at all).
        max_snap_m: Stops farther than this from every node are left out of their line.

    Returns:
        The scenario with the lines (and the scenario's other parts unchanged).

    Raises:
        CityImportError: See the module docstring.
    """
    feed_path = Path(feed_path)
    source = feed_path.name
    doc, town = _scenario_doc(scenario)
    feed = _read_feed(feed_path)
    day = _service_day(feed, date, source)
    trips = gk.get_trips(feed, day)
    if trips is None or trips.empty:
        raise CityImportError(f"{source}: no trip runs on {_iso(day)}")
    times = _stop_times(feed, set(trips["trip_id"]), source)
    snap = _Snapper(town, source)
    stops = feed.stops.set_index("stop_id")
    lines: list[dict[str, Any]] = []
    taken = {n["id"] for n in doc["nodes"]} | {
        f["name"] for f in doc.get("facilities", [])
    }
    taken |= {link["name"] for link in doc.get("road_links", [])}
    taken |= {line["name"] for line in doc.get("metro_lines", [])}
    routes = feed.routes.set_index("route_id")
    nearest: tuple[float, str] = (math.inf, "")
    for route_id, route_trips in trips.groupby("route_id", sort=True):
        if route_id not in routes.index:
            raise CityImportError(
                f"{source}: trips.txt: route {route_id!r} is not in routes.txt"
            )
        route = routes.loc[route_id]
        mode = transit_mode(int(route["route_type"]))
        if mode is None:
            raise CityImportError(
                f"{source}: routes.txt: route {route_id!r}: unknown route_type "
                f"{route['route_type']!r}"
            )
        direction = route_trips.get(
            "direction_id", pd.Series(0, index=route_trips.index)
        )
        direction = direction.fillna(0).astype(int)
        chosen = route_trips[direction == (0 if (direction == 0).any() else 1)]
        patterns = {
            trip: tuple(group.sort_values("stop_sequence")["stop_id"])
            for trip, group in times[times["trip_id"].isin(chosen["trip_id"])].groupby(
                "trip_id"
            )
        }
        if not patterns:
            continue
        pattern = Counter(patterns.values()).most_common(1)[0][0]
        for stop in pattern:
            if stop not in stops.index:
                raise CityImportError(
                    f"{source}: stop_times.txt: stop {stop!r} is not in stops.txt"
                )
        kept, closest = snap.run(pattern, stops, max_snap_m)
        nearest = min(nearest, closest)
        if len(kept) < 2:
            continue
        same = [trip for trip, p in patterns.items() if p == pattern]
        line = _line(
            route_id, route, mode.label, mode.capacity, kept, times, same, taken
        )
        taken.add(line["name"])
        taken.update(line["link_names"])
        lines.append(line)
    if not lines:
        distance, stop = nearest
        raise CityImportError(
            f"{source}: no line has two stops within {max_snap_m:g} m of the network "
            f"(nearest stop {stop!r}, {distance:,.0f} m away)"
        )
    doc = {**doc, "metro_lines": [*doc.get("metro_lines", []), *lines]}
    doc["description"] = (
        f"{doc.get('description', '')} Transit: {source} on {_iso(day)}, "
        f"{len(lines)} lines by mesa_llm_mobility.urban.cities.import_gtfs."
    ).strip()
    result = scenario_from_dict(doc, town.source)
    if out is not None:
        write_scenario_json(doc, out)
    return result


def _iso(day: str) -> str:
    return f"{day[:4]}-{day[4:6]}-{day[6:]}"


def _scenario_doc(scenario: Scenario | str | Path) -> tuple[dict[str, Any], Scenario]:
    """The scenario as a document (its JSON, or rebuilt from the data classes) and validated."""
    if not isinstance(scenario, Scenario):
        path = Path(scenario)
        if not path.is_file():
            raise CityImportError(f"{path}: no such scenario file")
        try:
            doc = json.loads(path.read_text("utf-8"))
        except json.JSONDecodeError as error:
            raise CityImportError(f"{path.name}: not valid JSON ({error})") from error
        return doc, scenario_from_dict(doc, path.name)
    doc = {
        "name": scenario.name,
        "description": scenario.description,
        "walking_factor": scenario.walking_factor,
        "nodes": [
            {"id": n.id, "x": n.x, "y": n.y}
            | ({} if n.lon is None else {"lon": n.lon, "lat": n.lat})
            for n in scenario.nodes.values()
        ],
        "facilities": [
            {
                "name": f.name,
                "node": f.node,
                "capacity": f.capacity,
                "average_stay": f.average_stay,
                "description": f.description,
                "kind": f.kind,
            }
            for f in scenario.facilities.values()
        ],
        "road_links": [
            {
                "name": r.name,
                "from": r.from_node,
                "to": r.to_node,
                "free_time": r.free_time,
                "capacity": r.capacity,
                "model": r.model,
                "two_way": r.two_way,
            }
            | (
                {}
                if r.storage_capacity is None
                else {"storage_capacity": r.storage_capacity}
            )
            | ({} if r.capacity_for_trip_ends else {"capacity_for_trip_ends": False})
            for r in scenario.road_links.values()
        ],
        "metro_lines": [
            {
                "name": m.name,
                "stops": list(m.stops),
                "link_names": list(m.link_names),
                "travel_time": m.travel_time,
                "dwell": m.dwell,
                "headway": m.headway,
                "service_start": m.service_start,
                "service_end": m.service_end,
                "train_capacity": m.train_capacity,
                "static_wait": m.static_wait,
            }
            for m in scenario.metro_lines.values()
        ],
    }
    return doc, scenario


def _read_feed(path: Path) -> gk.Feed:
    if not path.exists():
        raise CityImportError(f"{path}: no such GTFS feed")
    try:
        feed = gk.read_feed(path, dist_units="km")
    except Exception as error:  # gtfs-kit raises many types on a broken feed
        raise CityImportError(
            f"{path.name}: not a readable GTFS feed ({error})"
        ) from error
    for table in ("routes", "trips", "stops", "stop_times"):
        if getattr(feed, table, None) is None:
            raise CityImportError(f"{path.name}: missing table {table}.txt")
    if (
        getattr(feed, "calendar", None) is None
        and getattr(feed, "calendar_dates", None) is None
    ):
        raise CityImportError(
            f"{path.name}: missing table calendar.txt (or calendar_dates.txt)"
        )
    return feed


def _service_day(feed: gk.Feed, date: str | None, source: str) -> str:
    dates = gk.get_dates(feed)
    if not dates:
        raise CityImportError(f"{source}: the feed's calendar has no service day")
    if date is None:
        return gk.compute_busiest_date(feed, dates)
    day = date.replace("-", "")
    if not re.fullmatch(r"\d{8}", day):
        raise CityImportError(f"{source}: date {date!r} is not YYYY-MM-DD")
    if day not in dates:
        raise CityImportError(
            f"{source}: no service on {date} (the feed runs from {_iso(dates[0])} to "
            f"{_iso(dates[-1])})"
        )
    return day


def _stop_times(feed: gk.Feed, trip_ids: set[str], source: str) -> pd.DataFrame:
    times = feed.stop_times[feed.stop_times["trip_id"].isin(trip_ids)].copy()
    minutes = []
    for row, arrival, departure, trip, stop in zip(
        times.index,
        times["arrival_time"],
        times["departure_time"],
        times["trip_id"],
        times["stop_id"],
        strict=True,
    ):
        where = f"{source}: stop_times.txt row {row + 2} (trip {trip!r}, stop {stop!r})"
        text = departure if isinstance(departure, str) and departure else arrival
        minutes.append(parse_gtfs_time(text, where))
    times["minute"] = minutes
    times = times.sort_values(["trip_id", "stop_sequence"])
    backwards = times.groupby("trip_id")["minute"].diff() < 0
    if backwards.any():
        row = times[backwards].iloc[0]
        raise CityImportError(
            f"{source}: stop_times.txt: trip {row['trip_id']!r} goes back in time at stop "
            f"{row['stop_id']!r} (sequence {row['stop_sequence']})"
        )
    return times


class _Snapper:
    """Nearest network node of a stop, in metres (an equirectangular projection)."""

    def __init__(self, town: Scenario, source: str) -> None:
        nodes = list(town.nodes.values())
        if any(n.lon is None or n.lat is None for n in nodes):
            raise CityImportError(
                f"{source}: the scenario's nodes have no lon/lat (import it with "
                "mlm urban import-osm)"
            )
        self.lat0 = math.radians(statistics.fmean(n.lat for n in nodes))
        self.ids = [n.id for n in nodes]
        self.tree = cKDTree(np.array([self._xy(n.lon, n.lat) for n in nodes]))

    def _xy(self, lon: float, lat: float) -> tuple[float, float]:
        return (
            lon * METRES_PER_DEGREE * math.cos(self.lat0),
            lat * METRES_PER_DEGREE,
        )

    def run(
        self, pattern: tuple[str, ...], stops: pd.DataFrame, max_m: float = 300.0
    ) -> tuple[list[tuple[str, str]], tuple[float, str]]:
        """The longest run of stops within reach as ``(stop id, node)``, and the nearest stop."""
        points = np.array(
            [
                self._xy(stops.at[s, "stop_lon"], stops.at[s, "stop_lat"])
                for s in pattern
            ]
        )
        distance, at = self.tree.query(points)
        best: list[tuple[str, str]] = []
        run: list[tuple[str, str]] = []
        for stop, far, k in zip(pattern, distance, at, strict=True):
            node = self.ids[int(k)]
            if far > max_m or any(node == n for _, n in run[:-1]):
                best, run = max(best, run, key=len), []
                if far > max_m:
                    continue
            if run and run[-1][1] == node:
                continue
            run.append((stop, node))
        best = max(best, run, key=len)
        k = int(np.argmin(distance))
        return best, (float(distance[k]), str(pattern[k]))


def _line(
    route_id: str,
    route: pd.Series,
    label: str,
    capacity: int,
    kept: list[tuple[str, str]],
    times: pd.DataFrame,
    trips: list[str],
    taken: set[str],
) -> dict[str, Any]:
    first_stop, last_stop = kept[0][0], kept[-1][0]
    of_trips = times[times["trip_id"].isin(trips)]
    starts = (
        of_trips[of_trips["stop_id"] == first_stop].groupby("trip_id")["minute"].min()
    )
    ends = of_trips[of_trips["stop_id"] == last_stop].groupby("trip_id")["minute"].max()
    rides = (ends - starts).dropna()
    departures = sorted(float(m) for m in starts)
    gaps = [b - a for a, b in itertools.pairwise(departures) if b > a]
    headway = max(1.0, round(statistics.median(gaps))) if gaps else 60.0
    ride = statistics.median(rides) if len(rides) else 2.0 * (len(kept) - 1)
    travel_time = max(1.0, round(ride / (len(kept) - 1), 1))
    start = min(departures[0], 1439.0)
    end = min(departures[-1] + headway, 1440.0)
    short = str(route.get("route_short_name") or route_id).strip() or str(route_id)
    name = re.sub(r"\s+", "_", f"{label}_{short}")
    while name in taken:
        name += "'"
    return {
        "name": name,
        "stops": [node for _, node in kept],
        "link_names": [f"{name}_link_{k + 1}" for k in range(len(kept) - 1)],
        "travel_time": travel_time,
        "dwell": 0,
        "headway": headway,
        "service_start": start,
        "service_end": max(end, start + 1.0),
        "train_capacity": capacity,
    }
