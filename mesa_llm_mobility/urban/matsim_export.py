"""An urban run as MATSim reads and writes travel: ``population_v6`` plans, trips and legs CSVs.

- :func:`write_matsim_plans`: the plans each traveller carried out, as a MATSim
  ``population_v6`` file (``.xml`` or ``.xml.gz``; MATSim's executed plans): one person per
  traveller, one selected plan of activities and legs. An activity has its type (``home`` at
  the traveller's first place, else the facility's kind), its coordinates, its start time
  (arrival) and end time (departure); the first has an end time only, the last a start time
  only. A leg has its mode (``car``, ``pt``, ``walk``), departure and travel time, and the
  ``routingMode`` and ``trip_id`` attributes. A trip still under way when the run ended has a
  leg without a travel time, and its destination an activity without a start time.
- :func:`write_matsim_trips` and :func:`write_matsim_legs`: one row per trip and one per leg
  (:func:`~mesa_llm_mobility.urban.trip_legs.trip_legs`), semicolon-separated, in the columns
  of MATSim's ``output_trips.csv`` and ``output_legs.csv``, then ``day`` and ``state``.

Times are ``HH:MM:SS`` after midnight of day 1 (after midnight of the exported day with
``day``); MATSim writes hours past 24 for later days, and so do these files. Coordinates are
the scenario's ``x``/``y``: UTM metres for an imported city (the population's
``coordinateReferenceSystem`` attribute names the zone), drawing units for the reference town
(no CRS). Distances are metres, empty on the reference town.
"""

from __future__ import annotations

import gzip
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from xml.etree import ElementTree as ET

import pandas as pd

from mesa_llm_mobility.experiment.exports import write_through_temp
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban.trip_legs import (
    TRIP_MODE,
    Travel,
    read_travel,
    trip_legs,
)

POPULATION_DOCTYPE = (
    '<!DOCTYPE population SYSTEM "http://www.matsim.org/files/dtd/population_v6.dtd">'
)
"""The document type MATSim reads a population file's version from."""

CRS_ATTRIBUTE = "coordinateReferenceSystem"
"""The population attribute MATSim reads its coordinates' CRS from."""

TRIP_CSV_COLUMNS = (
    "person",
    "trip_number",
    "trip_id",
    "dep_time",
    "trav_time",
    "wait_time",
    "traveled_distance",
    "euclidean_distance",
    "main_mode",
    "longest_distance_mode",
    "modes",
    "start_activity_type",
    "end_activity_type",
    "start_facility_id",
    "start_link",
    "start_x",
    "start_y",
    "end_facility_id",
    "end_link",
    "end_x",
    "end_y",
    "first_pt_boarding_stop",
    "last_pt_egress_stop",
    "day",
    "state",
)
"""Columns of the trips CSV: MATSim's ``output_trips.csv``, then ``day`` and ``state``."""

LEG_CSV_COLUMNS = (
    "person",
    "trip_id",
    "dep_time",
    "trav_time",
    "wait_time",
    "distance",
    "mode",
    "start_link",
    "start_x",
    "start_y",
    "end_link",
    "end_x",
    "end_y",
    "access_stop_id",
    "egress_stop_id",
    "transit_line",
    "leg_number",
)
"""Columns of the legs CSV: MATSim's ``output_legs.csv``, then ``leg_number``."""


def matsim_time(minutes: float) -> str:
    """Minutes as MATSim's ``HH:MM:SS`` (whole seconds; hours may pass 24), or ``""`` for NaN."""
    if minutes is None or math.isnan(minutes):
        return ""
    seconds = round(minutes * 60.0)
    sign = "-" if seconds < 0 else ""
    hours, rest = divmod(abs(seconds), 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def _number(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if math.isfinite(value) else ""


def _attributes(parent: ET.Element, values: dict[str, str]) -> None:
    holder = ET.SubElement(parent, "attributes")
    for name, value in values.items():
        item = ET.SubElement(
            holder, "attribute", {"name": name, "class": "java.lang.String"}
        )
        item.text = value


# ---------------------------------------------------------------------------- plans
def person_element(travel: Travel, agent: str, trips: pd.DataFrame) -> ET.Element:
    """One traveller's ``<person>`` with its executed plan.

    Args:
        travel: The run's travel.
        agent: The traveller.
        trips: Its departed trips, in departure order.

    Returns:
        The element.
    """
    offset = travel.offset
    person = ET.Element("person", {"id": agent})
    plan = ET.SubElement(person, "plan", {"selected": "yes"})
    rows = list(trips.itertuples(index=False))
    first_place = str(rows[0].origin) if rows else travel.start_places[agent]

    def activity(place: str, start: float, end: float) -> None:
        x, y = travel.place_xy(place)
        attributes = {
            "type": travel.activity_type(agent, place),
            "x": _number(x),
            "y": _number(y),
        }
        if not math.isnan(start):
            attributes["start_time"] = matsim_time(start - offset)
        if not math.isnan(end):
            attributes["end_time"] = matsim_time(end - offset)
        _attributes(
            ET.SubElement(plan, "activity", attributes), {"facility_name": place}
        )

    activity(first_place, math.nan, float(rows[0].departure) if rows else math.nan)
    for k, trip in enumerate(rows):
        mode = TRIP_MODE.get(trip.mode, str(trip.mode))
        leg = {"mode": mode, "dep_time": matsim_time(float(trip.departure) - offset)}
        if not math.isnan(trip.arrival):
            leg["trav_time"] = matsim_time(float(trip.arrival) - float(trip.departure))
        _attributes(
            ET.SubElement(plan, "leg", leg),
            {"routingMode": mode, "trip_id": str(trip.trip_id)},
        )
        following = float(rows[k + 1].departure) if k + 1 < len(rows) else math.nan
        activity(str(trip.destination), float(trip.arrival), following)
    return person


def population_lines(travel: Travel) -> Iterator[str]:
    """The population file, a few lines at a time (one person per chunk)."""
    yield '<?xml version="1.0" encoding="utf-8"?>\n'
    yield POPULATION_DOCTYPE + "\n\n"
    scope = f"day {travel.day}" if travel.day is not None else "every day"
    desc = (
        f"mesa-llm-mobility urban run {travel.run.path.name} on {travel.scenario.name}, "
        f"{scope}: executed plans"
    )
    yield f"<population desc={_quote(desc)}>\n"
    crs = travel.coordinates.projected_crs
    if crs is not None:
        yield (
            f'\t<attributes>\n\t\t<attribute name="{CRS_ATTRIBUTE}" '
            f'class="java.lang.String">{crs}</attribute>\n\t</attributes>\n\n'
        )
    by_agent = dict(tuple(travel.trips.groupby("agent", sort=False)))
    empty = travel.trips.iloc[0:0]
    for agent in travel.agents:
        person = person_element(travel, agent, by_agent.get(agent, empty))
        ET.indent(person, space="\t", level=1)
        yield "\t" + ET.tostring(person, encoding="unicode") + "\n\n"
    yield "</population>\n"


def _quote(text: str) -> str:
    element = ET.Element("x", {"a": text})
    serialised = ET.tostring(element, encoding="unicode")
    return serialised[len("<x a=") : -len(" />")]


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "wt", encoding="utf-8")
    return path.open("w", encoding="utf-8")


def write_matsim_plans(
    run_dir: str | os.PathLike[str] | RunDirectory,
    out: str | os.PathLike[str],
    *,
    day: int | None = None,
) -> Path:
    """Write a finished urban run's executed plans as a MATSim ``population_v6`` file.

    Args:
        run_dir: The run directory.
        out: The ``.xml`` or ``.xml.gz`` file (replaced atomically).
        day: Only this day, its times after its own midnight (default: every day, times
            after midnight of day 1).

    Returns:
        The file written.

    Raises:
        RunDirectoryError: If the folder is not a finished urban run.
        ExportError: If it lacks a table or the day.
    """
    travel = read_travel(run_dir, day)
    chunks = list(population_lines(travel))  # everything built before a byte is written

    def write(path: Path) -> None:
        with _open_text(path) as file:
            file.writelines(chunks)

    return write_through_temp(out, write)


# ---------------------------------------------------------------------------- trips and legs
def matsim_legs_frame(travel: Travel, legs: pd.DataFrame | None = None) -> pd.DataFrame:
    """The legs in MATSim's ``output_legs.csv`` columns (:data:`LEG_CSV_COLUMNS`)."""
    legs = trip_legs(travel) if legs is None else legs
    offset = travel.offset
    xy = travel.coordinates.xy
    rows = []
    for leg in legs.itertuples(index=False):
        first, last = leg.nodes[0], leg.nodes[-1]
        pt = leg.mode == "pt"
        rows.append(
            (
                leg.agent,
                leg.trip_id,
                matsim_time(leg.departure - offset),
                matsim_time(leg.arrival - leg.departure),
                matsim_time(leg.wait),
                _rounded(leg.distance_m),
                leg.mode,
                leg.links[0] if leg.links else "",
                xy[first][0],
                xy[first][1],
                leg.links[-1] if leg.links else "",
                xy[last][0],
                xy[last][1],
                first if pt else "",
                last if pt else "",
                leg.line or "",
                leg.leg_number,
            )
        )
    return pd.DataFrame(rows, columns=list(LEG_CSV_COLUMNS))


def matsim_trips_frame(
    travel: Travel, legs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The trips in MATSim's ``output_trips.csv`` columns (:data:`TRIP_CSV_COLUMNS`)."""
    legs = trip_legs(travel) if legs is None else legs
    legs_of = dict(tuple(legs.groupby("trip_id", sort=False)))
    offset = travel.offset
    rows = []
    numbers: dict[str, int] = {}
    for trip in travel.trips.itertuples(index=False):
        own = legs_of[trip.trip_id]
        number = numbers[trip.agent] = numbers.get(trip.agent, 0) + 1
        origin, destination = str(trip.origin), str(trip.destination)
        (start_x, start_y), (end_x, end_y) = (
            travel.place_xy(origin),
            travel.place_xy(destination),
        )
        path = [link for links in own["links"] for link in links]
        pt = own[own["mode"] == "pt"]
        distances = own["distance_m"].to_numpy(dtype=float)
        longest = (
            own["mode"].iloc[int(distances.argmax())]
            if len(own) and not any(map(math.isnan, distances))
            else TRIP_MODE.get(trip.mode, trip.mode)
        )
        wait = own["wait"].sum(min_count=1) if own["wait"].notna().all() else math.nan
        rows.append(
            (
                trip.agent,
                number,
                trip.trip_id,
                matsim_time(trip.departure - offset),
                matsim_time(trip.arrival - trip.departure),
                matsim_time(wait),
                _rounded(own["distance_m"].sum(min_count=1)),
                _rounded(
                    travel.coordinates.distance_m(
                        own["nodes"].iloc[0][0], own["nodes"].iloc[-1][-1]
                    )
                ),
                TRIP_MODE.get(trip.mode, trip.mode),
                longest,
                "-".join(own["mode"]),
                travel.activity_type(trip.agent, origin),
                travel.activity_type(trip.agent, destination),
                origin,
                path[0] if path else "",
                start_x,
                start_y,
                destination,
                path[-1] if path else "",
                end_x,
                end_y,
                pt["nodes"].iloc[0][0] if len(pt) else "",
                pt["nodes"].iloc[-1][-1] if len(pt) else "",
                int(trip.day),
                trip.state,
            )
        )
    return pd.DataFrame(rows, columns=list(TRIP_CSV_COLUMNS))


def _rounded(metres: float) -> float:
    return math.nan if metres is None or math.isnan(metres) else round(float(metres), 1)


def _write_csv(frame: pd.DataFrame, out: str | os.PathLike[str]) -> Path:
    return write_through_temp(
        out, lambda path: frame.to_csv(path, sep=";", index=False, na_rep="")
    )


def write_matsim_trips(
    run_dir: str | os.PathLike[str] | RunDirectory,
    out: str | os.PathLike[str],
    *,
    day: int | None = None,
) -> Path:
    """Write a finished urban run's trips as a MATSim ``output_trips.csv`` (``;``-separated).

    Args:
        run_dir: The run directory.
        out: The ``.csv`` or ``.csv.gz`` file (replaced atomically).
        day: Only this day (times after its midnight), or every day.

    Returns:
        The file written.
    """
    travel = read_travel(run_dir, day)
    return _write_csv(matsim_trips_frame(travel), out)


def write_matsim_legs(
    run_dir: str | os.PathLike[str] | RunDirectory,
    out: str | os.PathLike[str],
    *,
    day: int | None = None,
) -> Path:
    """Write a finished urban run's legs as a MATSim ``output_legs.csv`` (``;``-separated).

    Args:
        run_dir: The run directory.
        out: The ``.csv`` or ``.csv.gz`` file (replaced atomically).
        day: Only this day (times after its midnight), or every day.

    Returns:
        The file written.
    """
    travel = read_travel(run_dir, day)
    return _write_csv(matsim_legs_frame(travel), out)
