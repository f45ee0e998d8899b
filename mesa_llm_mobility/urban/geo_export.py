"""An urban run's network, facilities and trips as GeoDataFrames, GeoParquet and GeoJSON.

- :func:`links_frame`: one row per directed link (road and transit) per period of each day:
  what entered it (vehicles, riders, walkers), the mean queue and load, the mean travel time of
  those who entered in the period, its free-flow time and capacity; a line from its tail node to
  its head node.
- :func:`facilities_frame`: one point per facility (at its node), its kind, capacity and the
  trips that arrived at and left it.
- :func:`trips_frame`: one line per departed trip through the nodes of its path, with the
  trips table's columns and clock datetimes.

:func:`write_links`, :func:`write_facilities` and :func:`write_trips` write them as GeoParquet
(``.parquet``; CRS in its metadata) or GeoJSON (``.geojson``). An imported city's geometry is
longitude and latitude (EPSG:4326, as GeoJSON requires); the reference town's is its drawing
coordinates (tile units, ``y`` southwards), with no CRS. Times are minutes as in the run's
tables (after midnight of day 1; ``period_start`` and ``period_end`` after the day's midnight),
datetimes naive local times from the run's ``start_date``, distances metres.
"""

from __future__ import annotations

import datetime as dt
import os
import warnings
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
from shapely import LineString, Point

from mesa_llm_mobility.experiment.exports import (
    ExportError,
    require_tables,
    write_through_temp,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.export_geometry import path_nodes
from mesa_llm_mobility.urban.trip_legs import (
    Travel,
    link_traversals,
    path_distance_m,
    read_travel,
)

DEFAULT_PERIOD_MIN = 60
"""Minutes per period of the links table: flows per hour."""

TRIP_COLUMNS = (
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
    "travel_time",
    "free_flow_time",
    "delay",
    "late",
    "state",
    "day",
)
"""The trips table's columns the trips layer keeps (units as in the run's tables)."""


# ---------------------------------------------------------------------------- links
def _check_period(period: int) -> int:
    if (
        isinstance(period, bool)
        or not isinstance(period, int | np.integer)
        or not 1 <= period <= MINUTES_PER_DAY
        or MINUTES_PER_DAY % period
    ):
        raise ExportError(
            f"--period {period!r}: expected whole minutes that divide a day (15, 30, 60, ...)"
        )
    return int(period)


def _day_periods(minutes: pd.Series, period: int) -> tuple[pd.Series, pd.Series]:
    """The day (1-based) and the period's start (minutes after that day's midnight)."""
    day = (minutes // MINUTES_PER_DAY).astype(np.int64) + 1
    of_day = minutes - (day - 1) * MINUTES_PER_DAY
    return day, ((of_day // period) * period).astype(np.int64)


def _link_descriptions(travel: Travel) -> pd.DataFrame:
    rows = []
    for link in travel.index.links:
        road = travel.scenario.road_links.get(link.name)
        line = travel.scenario.metro_lines.get(link.line or "")
        rows.append(
            {
                "link": link.name,
                "direction": link.direction,
                "kind": "road" if road is not None else "transit",
                "line": link.line,
                "from_node": link.tail,
                "to_node": link.head,
                "free_time": link.free_time,
                "capacity": road.capacity if road is not None else line.train_capacity,
                "capacity_unit": _capacity_unit(road.model if road else None),
                "length_m": path_distance_m(
                    travel, [link.name], [link.tail, link.head]
                ),
                "geometry": LineString(
                    travel.coordinates.link_course(
                        travel.scenario, link.name, link.tail, link.head
                    )
                ),
            }
        )
    return pd.DataFrame(rows)


def _capacity_unit(model: str | None) -> str:
    if model == "flow":
        return "vehicles per hour"
    if model == "occupancy":
        return "vehicles on the link"
    return "riders per train"


def links_frame(
    run_dir: str | os.PathLike[str] | RunDirectory | Travel,
    *,
    period: int = DEFAULT_PERIOD_MIN,
    day: int | None = None,
) -> gpd.GeoDataFrame:
    """The directed links with their flows and travel times per period of each day.

    Args:
        run_dir: A finished urban run (or its :class:`~.trip_legs.Travel`).
        period: Minutes per period (a divisor of a day).
        day: Only this day, or every day.

    Returns:
        One row per directed link, day and period: ``link``, ``direction`` (0: from ``from``
        to ``to`` of the scenario, 1: back; transit in line order), ``kind`` (road,
        transit), ``line``, ``from_node``, ``to_node``, ``free_time`` (min), ``capacity`` (in
        ``capacity_unit``), ``length_m``, ``day``, ``period_start`` and ``period_end`` (min
        after the day's midnight), ``vehicles_entered`` (the engine's count), ``flow_veh_h``
        (vehicles per hour), ``riders_entered``, ``walkers_entered``, ``mean_queue``,
        ``max_queue``, ``mean_on_link`` (travellers), ``mean_wait_indicator`` (min), and
        ``travel_time`` (min: mean time on the link of the vehicles or riders who entered in the
        period, whole minutes; NaN when none did).
    """
    period = _check_period(period)
    travel = run_dir if isinstance(run_dir, Travel) else read_travel(run_dir, day)
    require_tables(travel.run, ("link_states",))
    days = None if travel.day is None else [travel.day]
    states = travel.run.read_table("link_states", days=days)
    states_day, states_period = _day_periods(states["time"].astype(float), period)
    states = states.assign(day=states_day, period_start=states_period)
    keys = ["link", "direction", "day", "period_start"]
    loads = states.groupby(keys, sort=False).agg(
        vehicles_entered=("entered", "sum"),
        mean_queue=("queue", "mean"),
        max_queue=("queue", "max"),
        mean_on_link=("traversing", "mean"),
        mean_wait_indicator=("wait_indicator", "mean"),
    )
    traversals = link_traversals(travel)
    traversals = traversals[traversals["direction"] >= 0]
    entered_day, entered_period = _day_periods(traversals["entered"], period)
    traversals = traversals.assign(
        day=entered_day,
        period_start=entered_period,
        time_on_link=traversals["head"] - traversals["entered"],
    )
    counts = (
        traversals.groupby([*keys, "how"], sort=False)
        .size()
        .unstack("how", fill_value=0)
        .reindex(columns=["drive", "ride", "walk"], fill_value=0)
        .rename(columns={"ride": "riders_entered", "walk": "walkers_entered"})
        .drop(columns="drive")
    )
    moved = traversals[traversals["how"].isin(["drive", "ride"])]
    times = moved.groupby(keys, sort=False)["time_on_link"].mean().rename("travel_time")
    table = loads.join(counts, how="left").join(times, how="left").reset_index()
    table[["riders_entered", "walkers_entered"]] = (
        table[["riders_entered", "walkers_entered"]].fillna(0).astype(np.int64)
    )
    table["flow_veh_h"] = table["vehicles_entered"] * 60.0 / period
    table["period_end"] = table["period_start"] + period
    links = _link_descriptions(travel)
    frame = links.merge(table, on=["link", "direction"], how="inner").sort_values(
        ["day", "period_start", "link", "direction"], kind="stable"
    )
    columns = [
        *[c for c in links.columns if c != "geometry"],
        "day",
        "period_start",
        "period_end",
        "vehicles_entered",
        "flow_veh_h",
        "riders_entered",
        "walkers_entered",
        "mean_queue",
        "max_queue",
        "mean_on_link",
        "mean_wait_indicator",
        "travel_time",
        "geometry",
    ]
    return gpd.GeoDataFrame(
        frame[columns].reset_index(drop=True),
        geometry="geometry",
        crs=travel.coordinates.geographic_crs,
    )


# ---------------------------------------------------------------------------- facilities
def facilities_frame(
    run_dir: str | os.PathLike[str] | RunDirectory | Travel, *, day: int | None = None
) -> gpd.GeoDataFrame:
    """The facilities as points at their nodes, with the trips that reached and left them.

    Args:
        run_dir: A finished urban run (or its :class:`~.trip_legs.Travel`).
        day: Count only this day's trips, or every day's.

    Returns:
        One row per facility: ``facility``, ``kind`` (the reference town: its name),
        ``node``, ``capacity`` (people at once), ``average_stay`` (min), ``description``,
        ``arrivals`` and ``departures`` (trips).
    """
    travel = run_dir if isinstance(run_dir, Travel) else read_travel(run_dir, day)
    trips = travel.trips
    arrivals = trips[trips["arrival"].notna()]["destination"].value_counts()
    departures = trips["origin"].value_counts()
    xy = travel.coordinates.geographic
    rows = [
        {
            "facility": facility.name,
            "kind": facility.kind or facility.name,
            "node": facility.node,
            "capacity": facility.capacity,
            "average_stay": facility.average_stay,
            "description": facility.description,
            "arrivals": int(arrivals.get(facility.name, 0)),
            "departures": int(departures.get(facility.name, 0)),
            "geometry": Point(xy[facility.node]),
        }
        for facility in travel.scenario.facilities.values()
    ]
    return gpd.GeoDataFrame(
        pd.DataFrame(rows), geometry="geometry", crs=travel.coordinates.geographic_crs
    )


# ---------------------------------------------------------------------------- trips
def trips_frame(
    run_dir: str | os.PathLike[str] | RunDirectory | Travel, *, day: int | None = None
) -> gpd.GeoDataFrame:
    """The departed trips as lines through the nodes of their paths.

    Args:
        run_dir: A finished urban run (or its :class:`~.trip_legs.Travel`).
        day: Only this day's trips, or every day's.

    Returns:
        One row per trip: :data:`TRIP_COLUMNS` (``path`` a list of link names), then
        ``departure_at`` and ``arrival_at`` (naive local datetimes from the run's
        ``start_date``) and ``distance_m``. A trip that never left its node is a point.
    """
    travel = run_dir if isinstance(run_dir, Travel) else read_travel(run_dir, day)
    xy = travel.coordinates.geographic
    trips = travel.trips
    geometries = []
    distances = []
    for trip in trips.itertuples(index=False):
        path = [str(link) for link in trip.path]
        nodes = path_nodes(travel.index, str(trip.origin), path)
        points = [xy[node] for node in nodes]
        if len(nodes) == len(path) + 1:  # a chain of links: each along its course
            points = points[:1]
            for k, link in enumerate(path):
                course = travel.coordinates.link_course(
                    travel.scenario, link, nodes[k], nodes[k + 1]
                )
                points.extend(course[1:])
        geometries.append(LineString(points) if len(points) > 1 else Point(points[0]))
        distances.append(path_distance_m(travel, path, nodes))
    frame = trips[list(TRIP_COLUMNS)].copy()
    frame["path"] = [[str(link) for link in path] for path in frame["path"]]
    midnight = pd.Timestamp(dt.date.fromisoformat(str(travel.run.config["start_date"])))
    for column in ("departure", "arrival"):
        offset = pd.to_timedelta(frame[column], unit="min")
        frame[f"{column}_at"] = (midnight + offset).dt.round("s")
    frame["distance_m"] = distances
    return gpd.GeoDataFrame(
        frame.reset_index(drop=True),
        geometry=geometries,
        crs=travel.coordinates.geographic_crs,
    )


# ---------------------------------------------------------------------------- files
def write_geo(frame: gpd.GeoDataFrame, out: str | os.PathLike[str], layer: str) -> Path:
    """Write a GeoDataFrame as GeoParquet (``.parquet``) or GeoJSON (``.geojson``).

    Args:
        frame: The layer.
        out: The file (replaced atomically); its suffix chooses the format.
        layer: The layer's name (GeoJSON's ``name``).

    Returns:
        The file written.

    Raises:
        ExportError: For another suffix.
    """
    name = Path(out).name.lower()
    if not name.endswith((".parquet", ".geojson")):
        raise ExportError(f"{out}: write .parquet (GeoParquet) or .geojson (GeoJSON)")

    def write(path: Path) -> None:
        if name.endswith(".parquet"):
            frame.to_parquet(path)
            return
        with warnings.catch_warnings():
            # the reference town has no CRS on purpose (drawing units)
            warnings.filterwarnings("ignore", "'crs' was not provided")
            frame.to_file(path, driver="GeoJSON", layer=layer)

    return write_through_temp(out, write)


def write_links(
    run_dir: str | os.PathLike[str] | RunDirectory,
    out: str | os.PathLike[str],
    *,
    period: int = DEFAULT_PERIOD_MIN,
    day: int | None = None,
) -> Path:
    """Write :func:`links_frame` as GeoParquet or GeoJSON (by ``out``'s suffix)."""
    return write_geo(links_frame(run_dir, period=period, day=day), out, "links")


def write_facilities(
    run_dir: str | os.PathLike[str] | RunDirectory,
    out: str | os.PathLike[str],
    *,
    day: int | None = None,
) -> Path:
    """Write :func:`facilities_frame` as GeoParquet or GeoJSON (by ``out``'s suffix)."""
    return write_geo(facilities_frame(run_dir, day=day), out, "facilities")


def write_trips(
    run_dir: str | os.PathLike[str] | RunDirectory,
    out: str | os.PathLike[str],
    *,
    day: int | None = None,
) -> Path:
    """Write :func:`trips_frame` as GeoParquet or GeoJSON (by ``out``'s suffix)."""
    return write_geo(trips_frame(run_dir, day=day), out, "trips")
