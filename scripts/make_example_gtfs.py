"""Write the bundled example GTFS feed: Helsinki's tram lines through the bundled OSM extract.

The stops and their order are OpenStreetMap data of the extract (the ``route=tram`` relations'
stop members with a position in the file; (c) OpenStreetMap contributors, ODbL 1.0). The
timetable is **illustrative, not HSL's**: every line runs one trip each way every 10 minutes
from 06:00 to 22:50 on weekdays (a ``calendar.txt`` valid through 2030), 2 minutes between stops.
No HSL timetable could be reached from this project's package registries; replace the feed
with the real one (HSL publishes it under CC BY 4.0) for real departures.

    python scripts/make_example_gtfs.py mesa_llm_mobility/urban/cities/data/helsinki.osm.pbf \
        mesa_llm_mobility/urban/cities/data/helsinki_trams_gtfs.zip
"""

from __future__ import annotations

import csv
import io
import sys
import zipfile

import osmium

HEADWAY_MIN = 10
FIRST, LAST = 6 * 60, 22 * 60 + 50
MINUTES_BETWEEN_STOPS = 2


def tram_lines(
    path: str,
) -> tuple[dict[int, tuple[str, float, float]], list[tuple[str, str, list[int]]]]:
    """The extract's nodes (name, lon, lat) and tram lines (ref, name, stop nodes in order)."""
    stops: dict[int, tuple[str, float, float]] = {}
    for obj in osmium.FileProcessor(path, osmium.osm.NODE):
        if obj.location.valid():
            stops[obj.id] = (
                obj.tags.get("name", f"stop {obj.id}"),
                obj.location.lon,
                obj.location.lat,
            )
    lines = []
    for obj in osmium.FileProcessor(path, osmium.osm.RELATION):
        if obj.tags.get("route") != "tram" or not obj.tags.get("ref"):
            continue
        members = [
            m.ref
            for m in obj.members
            if m.type == "n"
            and m.role.startswith(("stop", "platform"))
            and m.ref in stops
        ]
        ordered = list(dict.fromkeys(members))
        if len(ordered) >= 2:
            lines.append(
                (obj.tags["ref"], obj.tags.get("name", obj.tags["ref"]), ordered)
            )
    return stops, lines


def hhmmss(minutes: int) -> str:
    """A GTFS time of a minute of the day."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def main(source: str, target: str) -> None:
    """Write the feed of ``source``'s tram lines to ``target``."""
    stops, lines = tram_lines(source)
    used = sorted({s for _, _, members in lines for s in members})
    tables: dict[str, list[list[object]]] = {
        "agency.txt": [
            ["agency_id", "agency_name", "agency_url", "agency_timezone"],
            [
                "EX",
                "Example trams (illustrative timetable)",
                "https://www.openstreetmap.org/copyright",
                "Europe/Helsinki",
            ],
        ],
        "calendar.txt": [
            [
                "service_id",
                "monday",
                "tuesday",
                "wednesday",
                "thursday",
                "friday",
                "saturday",
                "sunday",
                "start_date",
                "end_date",
            ],
            ["WD", 1, 1, 1, 1, 1, 0, 0, "20240101", "20301231"],
        ],
        "stops.txt": [["stop_id", "stop_name", "stop_lat", "stop_lon"]]
        + [
            [f"n{s}", stops[s][0], f"{stops[s][2]:.7f}", f"{stops[s][1]:.7f}"]
            for s in used
        ],
        "routes.txt": [
            [
                "route_id",
                "agency_id",
                "route_short_name",
                "route_long_name",
                "route_type",
            ]
        ],
        "trips.txt": [["route_id", "service_id", "trip_id", "direction_id"]],
        "stop_times.txt": [
            ["trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence"]
        ],
    }
    seen_routes: dict[str, int] = {}
    for ref, name, members in lines:
        if ref not in seen_routes:
            seen_routes[ref] = 0
            tables["routes.txt"].append([f"T{ref}", "EX", ref, name, 0])
        direction = seen_routes[ref]
        seen_routes[ref] += 1
        if direction > 1:
            continue
        for k, start in enumerate(range(FIRST, LAST + 1, HEADWAY_MIN)):
            trip = f"T{ref}_{direction}_{k}"
            tables["trips.txt"].append([f"T{ref}", "WD", trip, direction])
            for seq, stop in enumerate(members):
                when = hhmmss(start + seq * MINUTES_BETWEEN_STOPS)
                tables["stop_times.txt"].append([trip, when, when, f"n{stop}", seq + 1])
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, rows in tables.items():
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerows(rows)
            archive.writestr(name, buffer.getvalue())
    print(
        f"{target}: {len(seen_routes)} routes, {len(tables['trips.txt']) - 1} trips, {len(used)} stops"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
