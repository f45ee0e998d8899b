"""Evacuation trajectories in PedPy's terms: ``TrajectoryData``, its text file, bottleneck measures.

PedPy (the Juelich pedestrian-dynamics analysis library) reads trajectories as ``id``,
``frame``, ``x``, ``y`` in metres at a frame rate. An evacuation run records each pedestrian's
cell at every step of 1/3 s (``positions``); here a cell ``(x, y)`` becomes its centre,
``((x + 0.5) c, (y + 0.5) c)`` metres for the plaza's cell size ``c`` (0.4 m on the reference
plaza), ``x`` east and ``y`` north from the raster's south-west corner, and a step a frame:
3 frames per second. Only pedestrians are kept (not the threat), every step they are on the
plaza (a caught pedestrian stays where it was caught; an evacuated one leaves on the step it
reached an exit).

- :func:`trajectory_frame`, :func:`run_trajectory`: the table and PedPy's ``TrajectoryData``;
- :func:`write_pedpy_trajectory`: PedPy's text format (``# framerate: 3.0``, ``x/m``,
  ``id frame x y z`` per line), which ``pedpy.load_trajectory`` reads;
- :func:`walkable_area`, :func:`write_pedpy_geometry`: the plaza's walkable cells as one
  polygon (trees are holes) and its WKT, for ``pedpy.WalkableArea``;
- :func:`measure_bottleneck`: flow through a measurement line and classic density in a
  measurement area, by PedPy; :func:`opening_bottleneck` at an opening of a run's plaza,
  :func:`walk_bottleneck` at the exit of a verification walk
  (:func:`~mesa_llm_mobility.evacuation.validation.walk`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pedpy
import shapely
from shapely.geometry import box

from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.evacuation.plaza import (
    Plaza,
    PlazaFormatError,
    Terrain,
    load_plaza,
    passable_mask,
)
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND
from mesa_llm_mobility.evacuation.validation import CELL_M, WalkResult
from mesa_llm_mobility.experiment.exports import (
    ExportError,
    require_tables,
    write_through_temp,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError

FRAME_RATE = float(STEPS_PER_SECOND)
"""Frames per second: one frame per step of 1/3 s."""

DEFAULT_DEPTH_M = 2.0
"""Depth of the measurement area in front of an opening."""

DEFAULT_TRIM = 10
"""Crossings left out at each end of the flow's window (its steady state)."""

TRAJECTORY_COLUMNS = ("id", "frame", "x", "y")


# ---------------------------------------------------------------------------- runs
def open_evacuation_run(
    run_dir: str | os.PathLike[str] | RunDirectory,
) -> RunDirectory:
    """Open a run directory and check that it holds an evacuation run."""
    path = run_dir.path if isinstance(run_dir, RunDirectory) else run_dir
    return RunDirectory.open(path, model=EvacuationParameters.model_name)


def run_plaza(run: RunDirectory) -> Plaza:
    """The plaza a run was made on (``config.json``'s ``plaza``: none for the reference one).

    Raises:
        RunDirectoryError: If the plaza cannot be loaded, naming the run's config.
    """
    try:
        return load_plaza(run.config.get("plaza"))
    except (PlazaFormatError, OSError, ValueError) as error:
        raise RunDirectoryError(
            f"{run.config_path}: the run's plaza cannot be loaded: {error}"
        ) from error


def trajectory_frame(positions: pd.DataFrame, cell_size_m: float) -> pd.DataFrame:
    """Pedestrians' positions as PedPy's columns: ``id``, ``frame``, ``x``, ``y`` (m).

    Args:
        positions: A run's ``positions`` table (``step``, ``agent_id``, ``kind``, ``x``,
            ``y`` in cells).
        cell_size_m: The plaza's cell size.

    Returns:
        One row per pedestrian and step, at cell centres, sorted by id and frame.
    """
    walkers = positions[positions["kind"] == "pedestrian"]
    frame = pd.DataFrame(
        {
            "id": walkers["agent_id"].astype(np.int64).to_numpy(),
            "frame": walkers["step"].astype(np.int64).to_numpy(),
            "x": (walkers["x"].to_numpy(dtype=float) + 0.5) * cell_size_m,
            "y": (walkers["y"].to_numpy(dtype=float) + 0.5) * cell_size_m,
        }
    )
    return frame.sort_values(["id", "frame"], kind="stable").reset_index(drop=True)


def run_trajectory(
    run_dir: str | os.PathLike[str] | RunDirectory,
) -> tuple[pedpy.TrajectoryData, Plaza]:
    """A finished evacuation run's pedestrians as PedPy ``TrajectoryData``, with its plaza.

    Raises:
        RunDirectoryError: If the folder is not an evacuation run.
        ExportError: If it recorded no positions (``record_positions`` off) or no pedestrian.
    """
    run = open_evacuation_run(run_dir)
    require_tables(run, ("positions",))
    plaza = run_plaza(run)
    frame = trajectory_frame(run.read_table("positions"), plaza.cell_size_m)
    if frame.empty:
        raise ExportError(
            f"{run.path}: the positions table holds no pedestrian (a run made with "
            "record_positions off records none)"
        )
    return pedpy.TrajectoryData(data=frame, frame_rate=FRAME_RATE), plaza


def write_pedpy_trajectory(
    run_dir: str | os.PathLike[str] | RunDirectory, out: str | os.PathLike[str]
) -> Path:
    """Write a finished evacuation run's pedestrians in PedPy's text format.

    The header states the frame rate and the unit (``pedpy.load_trajectory`` reads both);
    each line is ``id frame x y z`` in metres (``z`` 0).

    Args:
        run_dir: The run directory.
        out: The ``.txt`` file (replaced atomically).

    Returns:
        The file written.
    """
    trajectory, plaza = run_trajectory(run_dir)
    data = trajectory.data
    header = (
        f"# mesa-llm-mobility evacuation run, plaza {plaza.name} "
        f"(cell {plaza.cell_size_m:g} m; positions at cell centres, x east, y north)\n"
        f"# framerate: {FRAME_RATE:g}\n"
        "# unit: x/m y/m\n"
        "# id frame x/m y/m z/m\n"
    )
    body = "".join(
        f"{i} {f} {x:.4f} {y:.4f} 0\n"
        for i, f, x, y in zip(
            data["id"], data["frame"], data["x"], data["y"], strict=True
        )
    )

    def write(path: Path) -> None:
        path.write_text(header + body, encoding="utf-8")

    return write_through_temp(out, write)


# ---------------------------------------------------------------------------- geometry
def walkable_area(codes: np.ndarray, cell_size_m: float) -> shapely.Polygon:
    """The cells a pedestrian may stand on, in metres, as one polygon.

    Walls are outside, trees holes; openings are inside. Walkable cells cut off from the
    largest walkable region (unreachable pockets) are left out.

    Args:
        codes: Terrain codes ``[x, y]`` (a plaza's ``raw`` layer, a verification raster).
        cell_size_m: Cell size.

    Returns:
        The polygon.
    """
    passable = passable_mask(codes)
    rectangles = []
    for x in range(passable.shape[0]):
        column = passable[x]
        edges = np.flatnonzero(np.diff(np.concatenate(([0], column.astype(int), [0]))))
        for start, stop in zip(edges[::2], edges[1::2], strict=True):
            rectangles.append(
                box(
                    x * cell_size_m,
                    start * cell_size_m,
                    (x + 1) * cell_size_m,
                    stop * cell_size_m,
                )
            )
    area = shapely.union_all(rectangles)
    if isinstance(area, shapely.MultiPolygon):
        area = max(area.geoms, key=lambda part: part.area)
    return shapely.Polygon(area.exterior, area.interiors)


def write_pedpy_geometry(
    run_dir: str | os.PathLike[str] | RunDirectory, out: str | os.PathLike[str]
) -> Path:
    """Write the walkable area of a run's plaza as WKT (``pedpy.WalkableArea(wkt)`` reads it).

    Args:
        run_dir: The run directory.
        out: The ``.wkt`` file (replaced atomically).

    Returns:
        The file written.
    """
    plaza = run_plaza(open_evacuation_run(run_dir))
    text = shapely.to_wkt(
        walkable_area(plaza.raw, plaza.cell_size_m), rounding_precision=4
    )

    def write(path: Path) -> None:
        path.write_text(text + "\n", encoding="utf-8")

    return write_through_temp(out, write)


@dataclass(frozen=True)
class OpeningGeometry:
    """Where a bottleneck at an opening is measured.

    Attributes:
        line: Across the opening, on the edge between its cells and the plaza's inside, half a
            cell longer at each end (a diagonal step into an end cell crosses it).
        area: The rectangle ``depth_m`` deep in front of the opening, as wide as it.
        width_m: The opening's width (its cells times the cell size).
    """

    line: pedpy.MeasurementLine
    area: pedpy.MeasurementArea
    width_m: float


def opening_geometry(
    cells: list[tuple[int, int]],
    shape: tuple[int, int],
    cell_size_m: float,
    depth_m: float = DEFAULT_DEPTH_M,
) -> OpeningGeometry:
    """The measurement line and area of an opening on the raster's boundary.

    Args:
        cells: The opening's cells, a straight run on one side of the raster.
        shape: The raster's ``(width, height)`` in cells.
        cell_size_m: Cell size.
        depth_m: Depth of the measurement area.

    Returns:
        The geometry.

    Raises:
        ValueError: If the cells are not a straight run on the raster's boundary.
    """
    if depth_m <= 0:
        raise ValueError(f"depth_m must be > 0, got {depth_m!r}")
    c = cell_size_m
    width, height = shape
    xs = sorted({x for x, _ in cells})
    ys = sorted({y for _, y in cells})
    if (
        len(cells) != max(len(xs), len(ys))
        or not _consecutive(xs)
        or not _consecutive(ys)
    ):
        raise ValueError("the opening's cells are not one straight run")
    if len(xs) == 1 and xs[0] in (0, width - 1):
        edge = c if xs[0] == 0 else (width - 1) * c
        inward = 1.0 if xs[0] == 0 else -1.0
        low, high = ys[0] * c, (ys[-1] + 1) * c
        line = [(edge, low - c / 2), (edge, high + c / 2)]
        near, far = sorted((edge, edge + inward * depth_m))
        area = box(near, low, far, high)
        span = high - low
    elif len(ys) == 1 and ys[0] in (0, height - 1):
        edge = c if ys[0] == 0 else (height - 1) * c
        inward = 1.0 if ys[0] == 0 else -1.0
        low, high = xs[0] * c, (xs[-1] + 1) * c
        line = [(low - c / 2, edge), (high + c / 2, edge)]
        near, far = sorted((edge, edge + inward * depth_m))
        area = box(low, near, high, far)
        span = high - low
    else:
        raise ValueError(
            "the opening's cells are not a straight run on the raster's edge"
        )
    return OpeningGeometry(
        pedpy.MeasurementLine(line), pedpy.MeasurementArea(area), round(span, 9)
    )


def _consecutive(values: list[int]) -> bool:
    return values == list(range(values[0], values[0] + len(values)))


def hold_last_frame(trajectory: pedpy.TrajectoryData) -> pedpy.TrajectoryData:
    """Each pedestrian held one more frame where its trajectory ends.

    PedPy takes a pedestrian's movement at a frame from the frames around it, so the last
    frame of a trajectory has no movement and a step across a line on that frame is never
    counted. An evacuated pedestrian's trajectory ends on the exit cell it stepped onto;
    holding it there one more frame lets PedPy count that step (the frame added is outside
    the measurement area, on the exit cell).
    """
    data = trajectory.data[list(TRAJECTORY_COLUMNS)]
    last = data.loc[data.groupby("id")["frame"].idxmax()].assign(
        frame=lambda rows: rows["frame"] + 1
    )
    held = pd.concat([data, last], ignore_index=True)
    held = held.sort_values(["id", "frame"], kind="stable").reset_index(drop=True)
    return pedpy.TrajectoryData(data=held, frame_rate=trajectory.frame_rate)


# ---------------------------------------------------------------------------- measures
@dataclass(frozen=True)
class BottleneckMeasurement:
    """Flow through a bottleneck and density before it, as PedPy measures them.

    Attributes:
        width_m: The bottleneck's width.
        crossings: Pedestrians who crossed the measurement line.
        flow_per_s: Pedestrians per second across the line in the steady state: crossings
            per second from the one after the first ``trim`` to the one before the last
            ``trim`` (from the first to the last when no more than ``2 trim + 1`` crossed);
            NaN for fewer than two.
        specific_flow_per_m_s: ``flow_per_s / width_m``.
        mean_density_per_m2: Classic density in the measurement area, averaged over the
            frames of the flow's window.
        max_density_per_m2: Its largest value at any frame.
        n_t: PedPy's cumulative crossings per frame (``frame``, ``cumulative_pedestrians``,
            ``time``).
        density: PedPy's classic density per frame (``frame``, ``density``).
    """

    width_m: float
    crossings: int
    flow_per_s: float
    specific_flow_per_m_s: float
    mean_density_per_m2: float
    max_density_per_m2: float
    n_t: pd.DataFrame
    density: pd.DataFrame


def measure_bottleneck(
    trajectory: pedpy.TrajectoryData,
    line: pedpy.MeasurementLine,
    area: pedpy.MeasurementArea,
    width_m: float,
    *,
    trim: int = DEFAULT_TRIM,
) -> BottleneckMeasurement:
    """Flow across ``line`` and density in ``area``, by PedPy.

    PedPy's ``compute_n_t`` counts the crossings, ``compute_classic_density`` the density.

    Args:
        trajectory: The trajectories.
        line: The measurement line across the bottleneck.
        area: The measurement area in front of it.
        width_m: The bottleneck's width.
        trim: Crossings left out at each end of the flow's window.

    Returns:
        The measurement.
    """
    n_t, crossing = pedpy.compute_n_t(traj_data=trajectory, measurement_line=line)
    frames = np.sort(crossing["frame"].to_numpy(dtype=np.int64))
    count = len(frames)
    low, high = (trim, count - 1 - trim) if count > 2 * trim + 1 else (0, count - 1)
    density = pedpy.compute_classic_density(traj_data=trajectory, measurement_area=area)
    flow = mean_density = float("nan")
    if high > low and frames[high] > frames[low]:
        flow = (high - low) * trajectory.frame_rate / float(frames[high] - frames[low])
        window = density["frame"].between(frames[low], frames[high])
        mean_density = float(density.loc[window, "density"].mean())
    return BottleneckMeasurement(
        width_m=width_m,
        crossings=count,
        flow_per_s=flow,
        specific_flow_per_m_s=flow / width_m,
        mean_density_per_m2=mean_density,
        max_density_per_m2=float(density["density"].max()),
        n_t=n_t,
        density=density,
    )


def opening_bottleneck(
    run_dir: str | os.PathLike[str] | RunDirectory,
    opening_id: str,
    *,
    depth_m: float = DEFAULT_DEPTH_M,
    trim: int = DEFAULT_TRIM,
) -> BottleneckMeasurement:
    """Flow out through an opening of a finished run's plaza and density in front of it.

    Args:
        run_dir: The run directory.
        opening_id: The opening (``exit1``).
        depth_m: Depth of the measurement area.
        trim: Crossings left out at each end of the flow's window.

    Returns:
        The measurement.

    Raises:
        ExportError: If the plaza has no such opening.
    """
    trajectory, plaza = run_trajectory(run_dir)
    opening = next((o for o in plaza.openings if o.opening_id == opening_id), None)
    if opening is None:
        known = ", ".join(o.opening_id for o in plaza.openings)
        raise ExportError(f"plaza {plaza.name}: no opening {opening_id!r} ({known})")
    geometry = opening_geometry(
        list(opening.cells), plaza.raw.shape, plaza.cell_size_m, depth_m
    )
    return measure_bottleneck(
        hold_last_frame(trajectory),
        geometry.line,
        geometry.area,
        geometry.width_m,
        trim=trim,
    )


def walk_trajectory(
    result: WalkResult, cell_size_m: float = CELL_M
) -> pedpy.TrajectoryData:
    """A verification walk's walkers as ``TrajectoryData``, each up to the step it arrived."""
    steps, walkers, _ = result.tracks.shape
    step = np.repeat(np.arange(steps), walkers)
    walker = np.tile(np.arange(walkers), steps)
    arrived = result.arrival_step[walker]
    kept = (arrived < 0) | (step <= arrived)
    cells = result.tracks.reshape(-1, 2)[kept]
    frame = pd.DataFrame(
        {
            "id": walker[kept],
            "frame": step[kept],
            "x": (cells[:, 0] + 0.5) * cell_size_m,
            "y": (cells[:, 1] + 0.5) * cell_size_m,
        }
    ).sort_values(["id", "frame"], kind="stable")
    return pedpy.TrajectoryData(
        data=frame.reset_index(drop=True), frame_rate=FRAME_RATE
    )


def walk_bottleneck(
    result: WalkResult,
    *,
    cell_size_m: float = CELL_M,
    depth_m: float = DEFAULT_DEPTH_M,
    trim: int = DEFAULT_TRIM,
) -> BottleneckMeasurement:
    """Flow out through the exit of a verification walk, and density in front of it.

    The raster's exit cells must be one straight run on its edge (the bottleneck room of
    :func:`~mesa_llm_mobility.evacuation.validation.bottleneck_room`).
    """
    cells = [
        (int(x), int(y))
        for x, y in zip(*np.nonzero(result.codes == Terrain.EXIT), strict=True)
    ]
    geometry = opening_geometry(cells, result.codes.shape, cell_size_m, depth_m)
    return measure_bottleneck(
        hold_last_frame(walk_trajectory(result, cell_size_m)),
        geometry.line,
        geometry.area,
        geometry.width_m,
        trim=trim,
    )
