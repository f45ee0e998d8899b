"""An urban run's travel as its exports see it: who starts where, the trips made, their legs.

:func:`read_travel` reads a finished run's ``trips`` and ``positions`` tables (all days, or
one) with the scenario they were made on. A trip is exported once it has departed; a trip
still under way when the run ended has no arrival. Each traveller's *home* is the place it
stood at the run's first minute.

:func:`trip_legs` cuts each trip into legs, as MATSim does: a drive is one ``car`` leg, a walk
one ``walk`` leg, a transit trip one ``walk`` leg per run of walked links and one ``pt`` leg per
line ridden (a change of line at a stop starts a new leg). Times come from the link traversals
the positions table records (:func:`~mesa_llm_mobility.urban.equilibrium_gap.traversals_from_positions`,
whole minutes); a trip whose traversals are not recorded (still under way at the end) is one
leg of its own mode, with no wait known.

Times stay in the run's unit, minutes after midnight of day 1; distances are metres on an
imported city and NaN on the reference town (drawing units).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mesa_llm_mobility.experiment.exports import ExportError, require_tables
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.equilibrium_gap import (
    traversals_from_positions,
    with_directions,
)
from mesa_llm_mobility.urban.export_geometry import (
    ScenarioCoordinates,
    link_ends,
    path_nodes,
    scenario_coordinates,
)
from mesa_llm_mobility.urban.replay import load_run_scenario, open_urban_run
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import Scenario

HOW_MODE = {"drive": "car", "walk": "walk", "ride": "pt"}
"""A traversal's way of moving as a MATSim leg mode."""

TRIP_MODE = {"drive": "car", "walk": "walk", "transit": "pt"}
"""A trip's mode as MATSim's main mode."""

LEG_COLUMNS = (
    "trip_id",
    "agent",
    "leg_number",
    "mode",
    "line",
    "links",
    "nodes",
    "departure",
    "arrival",
    "wait",
    "distance_m",
)
"""Columns of :func:`trip_legs`: ``departure``, ``arrival``, ``wait`` in minutes (after
midnight of day 1; ``wait``: at the stop before boarding), ``links`` and ``nodes`` lists."""


@dataclass(frozen=True)
class Travel:
    """What an urban run's exports read.

    Attributes:
        run: The run directory.
        scenario: Its scenario.
        index: The scenario's network index.
        coordinates: Its nodes' positions and their CRS.
        trips: The departed trips of the exported days, by traveller and departure.
        agents: Every traveller, in the order of the positions table.
        homes: Each traveller's place at the run's first minute.
        start_places: Each traveller's place when the exported span starts.
        day: The exported day, or None for the whole run.
    """

    run: RunDirectory
    scenario: Scenario
    index: NetworkIndex
    coordinates: ScenarioCoordinates
    trips: pd.DataFrame
    agents: list[str]
    homes: dict[str, str]
    start_places: dict[str, str]
    day: int | None

    @property
    def offset(self) -> float:
        """Minutes from midnight of day 1 to the exported span's midnight."""
        return 0.0 if self.day is None else (self.day - 1) * float(MINUTES_PER_DAY)

    def activity_type(self, agent: str, place: str) -> str:
        """The activity at a place: ``home`` at the traveller's home, else the facility's kind.

        The reference town's facilities have no kind: their names are their kinds
        (``Office``, ``School``).
        """
        if self.homes.get(agent) == place:
            return "home"
        facility = self.scenario.facilities.get(place)
        if facility is None:
            return place
        return facility.kind or facility.name

    def place_xy(self, place: str) -> tuple[float, float]:
        """A facility's (its node's) or a node's position in the scenario's ``x``/``y``."""
        node = place if place in self.scenario.nodes else self.index.node_of(place)
        return self.coordinates.xy[node]


def read_travel(
    run_dir: str | os.PathLike[str] | RunDirectory, day: int | None = None
) -> Travel:
    """Read a finished urban run's trips, travellers and scenario.

    Args:
        run_dir: The run directory (an urban run's).
        day: Export only this day (1-based), or None for every day.

    Returns:
        The run's travel.

    Raises:
        RunDirectoryError: If the folder is not an urban run, or its scenario cannot be loaded.
        ExportError: If the run has no trips or positions table, or not the day asked for.
    """
    run = open_urban_run(run_dir)
    require_tables(run, ("trips", "positions"))
    scenario = load_run_scenario(run)
    days = run.table_days("trips")
    if day is not None and day not in days:
        raise ExportError(
            f"{run.path}: no day {day} in the run (days: {', '.join(map(str, days))})"
        )
    trips = run.read_table("trips")
    trips = trips[trips["departure"].notna()].sort_values(
        ["agent", "departure"], kind="stable"
    )
    first = run.read_table("positions", days=[run.table_days("positions")[0]])
    first = first.sort_values("time", kind="stable").drop_duplicates("agent")
    homes = dict(
        zip(first["agent"].astype(str), first["place"].astype(str), strict=True)
    )
    start_places = dict(homes)
    if day is not None:
        before = trips[(trips["day"] < day) & trips["arrival"].notna()]
        start_places.update(
            before.groupby("agent")["destination"].last().astype(str).to_dict()
        )
        trips = trips[trips["day"] == day]
    return Travel(
        run=run,
        scenario=scenario,
        index=NetworkIndex(scenario),
        coordinates=scenario_coordinates(scenario),
        trips=trips.reset_index(drop=True),
        agents=list(homes),
        homes=homes,
        start_places=start_places,
        day=day,
    )


def link_traversals(travel: Travel) -> pd.DataFrame:
    """The link traversals of the exported trips, with their directions.

    Returns:
        One row per link a trip took: ``trip_id``, ``agent``, ``link``, ``direction`` (-1: not
        found), ``how`` (drive, walk, ride), ``tail`` (reached), ``entered``, ``head`` (left),
        in minutes after midnight of day 1.
    """
    run = travel.run
    stored = run.table_days("positions")
    if travel.day is None:
        positions = run.read_table("positions")
    else:  # a trip of the day may arrive after midnight
        wanted = [d for d in (travel.day, travel.day + 1) if d in stored]
        positions = run.read_table("positions", days=wanted)
    traversals = traversals_from_positions(positions, travel.trips)
    return with_directions(traversals, travel.trips, travel.index)


def trip_legs(travel: Travel, traversals: pd.DataFrame | None = None) -> pd.DataFrame:
    """Cut every exported trip into legs (see the module's docstring).

    Args:
        travel: The run's travel.
        traversals: Its :func:`link_traversals` (read when not given).

    Returns:
        One row per leg, :data:`LEG_COLUMNS`, in trip order.
    """
    if traversals is None:
        traversals = link_traversals(travel)
    by_trip = dict(tuple(traversals.groupby("trip_id", sort=False)))
    records: list[dict[str, Any]] = []
    for trip in travel.trips.itertuples(index=False):
        path = [str(link) for link in _as_list(trip.path)]
        nodes = path_nodes(travel.index, str(trip.origin), path)
        rows = by_trip.get(trip.trip_id)
        if rows is None or len(rows) != len(path):
            records.append(_whole_trip_leg(travel, trip, path, nodes))
            continue
        records.extend(_legs_of(travel, trip, path, nodes, rows))
    return pd.DataFrame.from_records(records, columns=list(LEG_COLUMNS))


def _as_list(path: Any) -> list[Any]:
    if path is None or (isinstance(path, float) and math.isnan(path)):
        return []
    return list(path)


def _whole_trip_leg(
    travel: Travel, trip: Any, path: list[str], nodes: list[str]
) -> dict[str, Any]:
    lines = {travel.index.by_name[link][0].line for link in path}
    lines.discard(None)
    return {
        "trip_id": trip.trip_id,
        "agent": trip.agent,
        "leg_number": 1,
        "mode": TRIP_MODE.get(trip.mode, str(trip.mode)),
        "line": next(iter(lines)) if len(lines) == 1 else None,
        "links": path,
        "nodes": nodes,
        "departure": float(trip.departure),
        "arrival": float(trip.arrival),
        "wait": 0.0 if trip.mode != "transit" else math.nan,
        "distance_m": path_distance_m(travel, path, nodes),
    }


def _legs_of(
    travel: Travel,
    trip: Any,
    path: list[str],
    nodes: list[str],
    rows: pd.DataFrame,
) -> list[dict[str, Any]]:
    hows = rows["how"].to_list()
    lines = [travel.index.by_name[link][0].line for link in path]
    tails = rows["tail"].to_numpy(dtype=float)
    entered = rows["entered"].to_numpy(dtype=float)
    heads = rows["head"].to_numpy(dtype=float)
    legs: list[dict[str, Any]] = []
    start = 0
    for k in range(1, len(path) + 1):
        if k < len(path) and (hows[k], lines[k]) == (hows[start], lines[start]):
            continue
        ridden = hows[start] == "ride"
        legs.append(
            {
                "trip_id": trip.trip_id,
                "agent": trip.agent,
                "leg_number": len(legs) + 1,
                "mode": HOW_MODE[hows[start]],
                "line": lines[start] if ridden else None,
                "links": path[start:k],
                "nodes": nodes[start : k + 1],
                "departure": float(tails[start]),
                "arrival": float(heads[k - 1]),
                "wait": float(entered[start] - tails[start]) if ridden else 0.0,
                "distance_m": path_distance_m(
                    travel, path[start:k], nodes[start : k + 1]
                ),
            }
        )
        start = k
    return legs


def path_distance_m(
    travel: Travel, links: Sequence[str], nodes: Sequence[str]
) -> float:
    """Length of a run of links in metres: road links' lengths, metro links' straight lines.

    NaN in drawing units (the reference town). ``nodes`` are the run's nodes (one more than
    ``links``).
    """
    coordinates = travel.coordinates
    if not coordinates.metres:
        return math.nan
    total = 0.0
    for k, name in enumerate(links):
        road = travel.scenario.road_links.get(name)
        if road is not None and road.length is not None:
            total += float(road.length)
        else:
            total += coordinates.distance_m(nodes[k], nodes[k + 1])
    return total


def link_length_m(travel: Travel, name: str) -> float:
    """One link's length in metres (NaN in drawing units)."""
    tail, head = link_ends(travel.index, name)
    return path_distance_m(travel, [name], [tail, head])
