"""Figures of a saved urban run, drawn from its run directory without running the model again.

A run of the urban model (``mlm urban run``) names its
scenario in ``config.json`` and stores the state of every link at every minute of each day in
``tables/link_states/day=<d>.parquet``. From those:

- :func:`load_run_scenario`: the scenario the run was made on.
- :func:`snapshot_run`: the grid of traffic snapshots (one row per day, one column per time of
  day, the paper's Figure 10) for any times and days, as a PNG.
- :func:`animate_run`: the traffic snapshot of one day every few minutes, as an animated GIF
  (or an MP4 when ffmpeg is installed); :func:`animation_clocks` gives its frames' clock times.

Unless given ``out``, the files go to the run's ``plots/`` folder, named after what they show
(``snapshot_0700-0730-0800-0830.png``, ``day1_0500-1100.gif``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.animation import FFMpegWriter, PillowWriter

from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_clock
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.urban.scenario import ScenarioError, load_scenario, parse_clock

if TYPE_CHECKING:
    import os

    import pandas as pd
    from matplotlib.animation import MovieWriter

    from mesa_llm_mobility.urban.scenario import Scenario

logger = logging.getLogger(__name__)

LINK_STATES = "link_states"


def open_urban_run(run_dir: str | os.PathLike[str] | RunDirectory) -> RunDirectory:
    """Open a run directory and check that it holds an urban run.

    Args:
        run_dir: The run's folder (or an opened run directory).

    Returns:
        The run directory.

    Raises:
        RunDirectoryError: If the folder is not a run directory, or not an urban run's.
    """
    if isinstance(run_dir, RunDirectory):
        run_dir = run_dir.path
    return RunDirectory.open(run_dir, model=UrbanParameters.model_name)


def load_run_scenario(run_dir: str | os.PathLike[str] | RunDirectory) -> Scenario:
    """The scenario an urban run was made on, loaded as its ``config.json`` names it.

    A scenario given to the run as a relative file path is looked up from the current folder,
    as the run did.

    Args:
        run_dir: The run's folder (or an opened run directory).

    Returns:
        The validated scenario.

    Raises:
        RunDirectoryError: (a ``ValueError``) naming the file: no run directory, no or an
            incomplete ``config.json``, or a scenario that cannot be loaded.
    """
    run = open_urban_run(run_dir)
    name = run.config.get("scenario")
    if not isinstance(name, str) or not name:
        raise RunDirectoryError(
            f"{run.config_path}: no 'scenario' entry (the name or file of the run's scenario)"
        )
    try:
        return load_scenario(name)
    except ScenarioError as error:
        raise RunDirectoryError(
            f"{run.config_path}: the run's scenario cannot be loaded: {error}"
        ) from error


# ---------------------------------------------------------------------------- what a run covers
def _recorded_days(run: RunDirectory) -> list[int]:
    days = run.table_days(LINK_STATES)
    if not days:
        raise RunDirectoryError(
            f"{run.tables_dir}: no {LINK_STATES} recorded (the run has not finished a day)"
        )
    return days


def _check_days(run: RunDirectory, days: Sequence[int]) -> list[int]:
    """The requested days, each one the run recorded."""
    recorded = _recorded_days(run)
    for day in days:
        if isinstance(day, bool) or not isinstance(day, int | np.integer):
            raise ValueError(f"day must be a whole number, got {day!r}")
        if day not in recorded:
            raise ValueError(
                f"day {day} is not in the run {run.path}: days recorded "
                f"{', '.join(map(str, recorded))}"
            )
    return [int(day) for day in days]


def _clock_minute(value: float | str, where: str) -> float:
    """Minutes after midnight of ``"HH:MM"`` or a number, within a day."""
    minute = parse_clock(value, where)
    if not 0 <= minute < MINUTES_PER_DAY:
        raise ValueError(f"{where}: {value!r} is not a time of day (00:00 to 23:59)")
    return minute


def _check_clocks(
    link_states: pd.DataFrame, days: Sequence[int], clocks: Sequence[float], run: Path
) -> None:
    """Every clock time lies within the recorded steps of every day."""
    minutes = link_states["time"].to_numpy(dtype=float)
    for day in days:
        clock = minutes[(minutes // MINUTES_PER_DAY + 1) == day] - (day - 1) * (
            MINUTES_PER_DAY
        )
        low, high = clock.min(), clock.max()
        outside = [c for c in clocks if not low - 1e-9 <= c <= high + 1e-9]
        if outside:
            raise ValueError(
                f"{', '.join(map(format_clock, outside))} is outside day {day} of "
                f"the run {run}, recorded {format_clock(low)} to "
                f"{format_clock(high)}"
            )


def _hhmm(minute: float) -> str:
    return format_clock(minute).replace(":", "")


# ---------------------------------------------------------------------------- snapshots
def snapshot_run(
    run_dir: str | os.PathLike[str] | RunDirectory,
    times: Sequence[float | str] = plots.SNAPSHOT_TIMES,
    days: Sequence[int] | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    dpi: int = 150,
) -> Path:
    """Draw the traffic snapshots of a saved run: one row per day, one column per time.

    Args:
        run_dir: The run's folder.
        times: Clock times of the columns (``"HH:MM"`` or minutes after midnight).
        days: Days of the rows (default: every day the run recorded).
        out: PNG to write; default ``<run>/plots/snapshot_<HHMM>-...[_day<d>-...].png``
            (the day part only when ``days`` is given).
        dpi: Resolution of the PNG.

    Returns:
        The PNG written.

    Raises:
        ValueError: For a run directory that is missing or incomplete, a day the run did not
            record, or a time that is not a time of day or is outside the recorded steps
            (the messages say what the run covers).
    """
    run = open_urban_run(run_dir)
    if isinstance(times, str):
        times = [times]
    clocks = [_clock_minute(value, "time") for value in times]
    if not clocks:
        raise ValueError("snapshot_run needs at least one time")
    chosen = _check_days(run, _recorded_days(run) if days is None else days)
    if not chosen:
        raise ValueError("snapshot_run needs at least one day")
    scenario = load_run_scenario(run)
    link_states = run.read_table(LINK_STATES, days=chosen)
    _check_clocks(link_states, chosen, clocks, run.path)
    if out is None:
        name = "snapshot_" + "-".join(map(_hhmm, clocks))
        if days is not None:
            name += "_day" + "-".join(map(str, chosen))
        out = run.plots_dir / f"{name}.png"
    started = time.perf_counter()
    plots.traffic_snapshots_grid(
        scenario, link_states, clocks, chosen, path=out, dpi=dpi
    )
    logger.info(
        "%s: %d x %d snapshots in %.2f s",
        out,
        len(chosen),
        len(clocks),
        time.perf_counter() - started,
    )
    return Path(out)


# ---------------------------------------------------------------------------- animations
def animation_clocks(
    start: float | str = "05:00", end: float | str = "11:00", every_minutes: float = 5
) -> list[float]:
    """Clock times (minutes after midnight) of the frames of :func:`animate_run`.

    Args:
        start: First frame (``"HH:MM"`` or minutes after midnight).
        end: Last frame, included when it falls on a step of ``every_minutes``.
        every_minutes: Minutes between frames.

    Returns:
        ``start, start + every_minutes, ...`` up to ``end``.

    Raises:
        ValueError: For a time that is not a time of day, ``end`` not after ``start``, or a
            step that is not positive.
    """
    low, high = _clock_minute(start, "start"), _clock_minute(end, "end")
    if not high > low:
        raise ValueError(f"end {end!r} must be after start {start!r}")
    if not every_minutes > 0:
        raise ValueError(f"every_minutes must be positive, got {every_minutes!r}")
    return list(np.arange(low, high + 1e-9, every_minutes, dtype=float))


def _movie_writer(out: Path, fps: float) -> MovieWriter:
    """A writer for the suffix of ``out``: Pillow for GIF, ffmpeg for MP4."""
    suffix = out.suffix.lower()
    if suffix == ".gif":
        return PillowWriter(fps=fps)
    if suffix == ".mp4":
        if not FFMpegWriter.isAvailable():
            raise ValueError(
                f"{out}: writing .mp4 needs ffmpeg on the PATH, which was not found; "
                "write a .gif instead"
            )
        return FFMpegWriter(fps=fps)
    raise ValueError(
        f"{out}: cannot write a {suffix or 'file without a suffix'} animation; "
        "use .gif (or .mp4 with ffmpeg installed)"
    )


def animate_run(
    run_dir: str | os.PathLike[str] | RunDirectory,
    day: int = 1,
    *,
    out: str | os.PathLike[str] | None = None,
    start: float | str = "05:00",
    end: float | str = "11:00",
    every_minutes: float = 5,
    fps: float = 8,
    dpi: int = 100,
) -> Path:
    """Animate the traffic snapshot of one day of a saved run.

    One frame every ``every_minutes`` from ``start`` to ``end``
    (:func:`animation_clocks`), each titled with the day and clock time, with the congestion
    legend beside the map. The network is drawn once; each frame only recolours the road
    links and changes the title (:func:`~mesa_llm_mobility.urban.plots.update_traffic_snapshot`).

    Args:
        run_dir: The run's folder.
        day: The day to animate.
        out: File to write, ``.gif`` (Pillow) or ``.mp4`` (needs ffmpeg); default
            ``<run>/plots/day<d>_<start HHMM>-<end HHMM>.gif``.
        start: Clock time of the first frame.
        end: Clock time of the last frame.
        every_minutes: Simulated minutes between frames.
        fps: Frames per second of the animation.
        dpi: Resolution (the map is 6.4 x 5.4 inches: 640 x 540 pixels at 100 dpi).

    Returns:
        The file written.

    Raises:
        ValueError: For a run directory that is missing or incomplete, a day the run did not
            record, a bad or unrecorded time (the messages say what the run covers), a
            non-positive ``fps``, or a suffix other than ``.gif`` (``.mp4`` without ffmpeg).
    """
    run = open_urban_run(run_dir)
    (day,) = _check_days(run, [day])
    clocks = animation_clocks(start, end, every_minutes)
    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    target = Path(
        out
        if out is not None
        else run.plots_dir / f"day{day}_{_hhmm(clocks[0])}-{_hhmm(clocks[-1])}.gif"
    )
    writer = _movie_writer(target, fps)
    scenario = load_run_scenario(run)
    link_states = run.read_table(LINK_STATES, days=[day])
    _check_clocks(link_states, [day], clocks, run.path)

    figure = plots.traffic_snapshot(scenario, link_states, clocks[0], day=day)
    (ax,) = figure.axes
    figure.canvas.draw()
    # keep the first frame's layout: laying out every frame again costs a quarter of a frame
    figure.set_layout_engine("none")
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with writer.saving(figure, str(target), dpi):
        for clock in clocks:
            plots.update_traffic_snapshot(ax, scenario, link_states, clock, day=day)
            writer.grab_frame()
    seconds = time.perf_counter() - started
    logger.info(
        "%s: %d frames in %.2f s (%.3f s per frame)",
        target,
        len(clocks),
        seconds,
        seconds / len(clocks),
    )
    return target
