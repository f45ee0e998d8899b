"""A trajectory run's generated stays as GeoPandas and MovingPandas see movement.

A trajectory run stores its generated stay points in the ``trajectories`` table: one row per
stay, ``agent_id``, ``poi_id``, ``latitude`` and ``longitude`` (WGS 84 degrees),
``activity``, ``start`` and ``end`` (time-zone-aware local times of the history's city).

- :func:`stays_frame`, :func:`write_stays`: one point per stay (EPSG:4326), with its columns and
  ``duration_min``, as GeoParquet (``.parquet``) or GeoJSON (``.geojson``);
- :func:`trajectory_points`, :func:`trajectory_collection`: each individual's day as a
  MovingPandas ``TrajectoryCollection``: two timed points per stay, where it starts
  (``event`` ``arrive``) and where it ends (``leave``), so a trajectory stands still during a
  stay and moves in a straight line between stays. ``t`` is the local wall-clock time without
  its zone (MovingPandas drops time zones; the ``timezone`` column names it);
  :func:`write_trajectory_points` writes those points as GeoParquet or GeoJSON, which
  ``movingpandas.TrajectoryCollection(frame, "agent_id", t="t")`` reads back;
- :func:`write_trajectory_lines`: one line per individual (MovingPandas' ``to_traj_gdf``:
  ``start_t``, ``end_t``, ``length`` in metres along the line).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import geopandas as gpd
import pandas as pd
from shapely import points

from mesa_llm_mobility.experiment.exports import (
    ExportError,
    require_tables,
    write_through_temp,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters

with warnings.catch_warnings():
    # MovingPandas warns at import about its optional smoother (Stone Soup), unused here
    warnings.filterwarnings("ignore", "Missing optional dependencies", UserWarning)
    import movingpandas as mpd

WGS84 = "EPSG:4326"
"""The stays' coordinates: longitude and latitude in degrees."""

TRAJ_ID = "agent_id"
"""The column naming each trajectory (one per individual)."""

TIME = "t"
"""The column of each point's time (local wall clock, no zone)."""


def open_trajectory_run(run_dir: str | os.PathLike[str] | RunDirectory) -> RunDirectory:
    """Open a run directory and check that it holds a finished trajectory run."""
    path = run_dir.path if isinstance(run_dir, RunDirectory) else run_dir
    run = RunDirectory.open(path, model=TrajectoryParameters.model_name)
    require_tables(run, ("trajectories",))
    return run


def stays_frame(run_dir: str | os.PathLike[str] | RunDirectory) -> gpd.GeoDataFrame:
    """The run's generated stays as points.

    Returns:
        One row per stay, in the table's order: ``agent_id``, ``poi_id``, ``activity``,
        ``start``, ``end`` (local, time-zone aware), ``duration_min``, ``latitude``,
        ``longitude``, and a point at (longitude, latitude), EPSG:4326.

    Raises:
        RunDirectoryError: If the folder is not a trajectory run.
        ExportError: If it has no ``trajectories`` table, or the table is empty.
    """
    run = open_trajectory_run(run_dir)
    stays = run.read_table("trajectories")
    if stays.empty:
        raise ExportError(f"{run.path}: the trajectories table holds no stay")
    frame = stays[
        ["agent_id", "poi_id", "activity", "start", "end", "latitude", "longitude"]
    ].copy()
    frame["duration_min"] = (frame["end"] - frame["start"]).dt.total_seconds() / 60.0
    geometry = points(
        frame["longitude"].to_numpy(dtype=float),
        frame["latitude"].to_numpy(dtype=float),
    )
    return gpd.GeoDataFrame(frame.reset_index(drop=True), geometry=geometry, crs=WGS84)


def trajectory_points(
    run_dir: str | os.PathLike[str] | RunDirectory,
) -> gpd.GeoDataFrame:
    """The timed points of every individual's trajectory (see the module's docstring).

    Returns:
        Two rows per stay (``arrive`` at its start, ``leave`` at its end; a point at the same
        time as the one before it is dropped), sorted by individual and time: ``agent_id``,
        ``t`` (local, no zone), ``event``, ``poi_id``, ``activity``, ``timezone``, a point
        (EPSG:4326).
    """
    stays = stays_frame(run_dir)
    zone = getattr(stays["start"].dt, "tz", None)
    columns = [TRAJ_ID, "poi_id", "activity", "geometry"]
    ends = []
    for event, column in (("arrive", "start"), ("leave", "end")):
        part = pd.DataFrame(stays[columns])
        part[TIME] = stays[column].dt.tz_localize(None) if zone else stays[column]
        part["event"] = event
        part["order"] = range(len(part))
        ends.append(part)
    frame = pd.concat(ends, ignore_index=True).sort_values(
        [TRAJ_ID, TIME, "order", "event"], kind="stable"
    )
    frame = frame.drop_duplicates([TRAJ_ID, TIME], keep="first")
    frame["timezone"] = str(zone) if zone else ""
    frame = frame[
        [TRAJ_ID, TIME, "event", "poi_id", "activity", "timezone", "geometry"]
    ]
    return gpd.GeoDataFrame(
        frame.reset_index(drop=True), geometry="geometry", crs=WGS84
    )


def trajectory_collection(
    run_dir: str | os.PathLike[str] | RunDirectory,
) -> mpd.TrajectoryCollection:
    """Every individual's generated trajectory as a MovingPandas ``TrajectoryCollection``.

    An individual with a single point (one stay of no duration) has no trajectory.
    """
    frame = trajectory_points(run_dir)
    with _quiet_movingpandas():
        return mpd.TrajectoryCollection(frame, TRAJ_ID, t=TIME)


@contextlib.contextmanager
def _quiet_movingpandas() -> Iterator[None]:
    with warnings.catch_warnings():
        # MovingPandas 0.23 sorts and re-indexes in place, which pandas 3 deprecates
        warnings.filterwarnings("ignore", "The inplace keyword", FutureWarning)
        warnings.filterwarnings("ignore", "The inplace keyword", DeprecationWarning)
        yield


def write_geo(frame: gpd.GeoDataFrame, out: str | os.PathLike[str], layer: str) -> Path:
    """Write a layer as GeoParquet (``.parquet``) or GeoJSON (``.geojson``), atomically.

    Raises:
        ExportError: For another suffix.
    """
    name = Path(out).name.lower()
    if not name.endswith((".parquet", ".geojson")):
        raise ExportError(f"{out}: write .parquet (GeoParquet) or .geojson (GeoJSON)")

    def write(path: Path) -> None:
        if name.endswith(".parquet"):
            frame.to_parquet(path)
        else:
            frame.to_file(path, driver="GeoJSON", layer=layer)

    return write_through_temp(out, write)


def write_stays(
    run_dir: str | os.PathLike[str] | RunDirectory, out: str | os.PathLike[str]
) -> Path:
    """Write :func:`stays_frame` as GeoParquet or GeoJSON (by ``out``'s suffix)."""
    return write_geo(stays_frame(run_dir), out, "stays")


def write_trajectory_points(
    run_dir: str | os.PathLike[str] | RunDirectory, out: str | os.PathLike[str]
) -> Path:
    """Write the collection's points (MovingPandas ``to_point_gdf``) as GeoParquet or GeoJSON."""
    collection = trajectory_collection(run_dir)
    with _quiet_movingpandas():
        points_frame = collection.to_point_gdf().reset_index()
    return write_geo(points_frame, out, "trajectory_points")


def write_trajectory_lines(
    run_dir: str | os.PathLike[str] | RunDirectory, out: str | os.PathLike[str]
) -> Path:
    """Write one line per individual (MovingPandas ``to_traj_gdf``) as GeoParquet or GeoJSON."""
    collection = trajectory_collection(run_dir)
    with _quiet_movingpandas():
        lines = collection.to_traj_gdf()
    return write_geo(lines, out, "trajectories")
