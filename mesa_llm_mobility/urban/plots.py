"""Figures of an urban run, drawn from the traffic engine's tidy frames (never from a model).

- :func:`departure_histograms`: departures per 10 minutes between 05:00 and 11:00, one panel
  per day (or overlaid steps): the paper's peak-spreading figure.
- :func:`traffic_snapshot`: the network at its real coordinates, each direction of each road
  link coloured by the congestion label of its wait indicator at a minute, metro lines dashed,
  facilities labelled; :func:`update_traffic_snapshot` recolours a drawn snapshot to another
  minute (the frames of an animation); :func:`traffic_snapshots_grid` arranges snapshots with
  one row per day and one column per time of day (the paper's Figure 10: 07:00, 07:30, 08:00,
  08:30).
- :func:`mode_shares`: stacked bars of the mode shares per day.

Times in the frames are minutes since 00:00 of day 1 (the engine's clock, see
:mod:`~mesa_llm_mobility.urban.traffic`), so day ``d = minute // 1440 + 1`` and the clock time
is ``minute - 1440 (d - 1)``. Every function returns a :class:`matplotlib.figure.Figure` built
with the Agg canvas (the global pyplot backend is left alone) and writes a PNG when given a
``path``. The data behind the figures are plain functions too: :func:`link_congestion_at` and
:func:`mode_share_table`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MultipleLocator

from mesa_llm_mobility.urban.clock import (
    MINUTES_PER_DAY,
    day_clock,
    format_clock,
    parse_clock,
)
from mesa_llm_mobility.urban.congestion import congestion_label

if TYPE_CHECKING:
    import os

    from matplotlib.axes import Axes

    from mesa_llm_mobility.urban.scenario import Scenario

logger = logging.getLogger(__name__)

CONGESTION_COLOURS: dict[str, str] = {
    "free": "#9e9e9e",
    "light": "#fdd835",
    "moderate": "#fb8c00",
    "severe": "#d32f2f",
}
"""Colour of each congestion label (``"free"``: no label, wait under 1 min); grey to red."""

MODE_COLOURS: dict[str, str] = {
    "drive": "#1f77b4",
    "transit": "#9467bd",
    "walk": "#2ca02c",
}
"""Colour of each travel mode in :func:`mode_shares`."""

SIDE_OFFSET = 0.011
"""Sideways shift of a road direction, as a share of the drawing's span."""

METRO_COLOURS: tuple[str, ...] = ("#00838f", "#6a1b9a", "#283593", "#00695c")
"""Colours of the metro lines, in scenario order (cycled)."""

_OTHER_COLOURS = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_GROUP_COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    *_OTHER_COLOURS,
)
_LINK_COLUMNS = ("time", "link", "direction", "wait_indicator")

SNAPSHOT_TIMES: tuple[str, ...] = ("07:00", "07:30", "08:00", "08:30")
"""Clock times of the paper's Figure 10, the columns of :func:`traffic_snapshots_grid`."""


# ---------------------------------------------------------------------------- helpers
def congestion_colour(wait_minutes: float) -> str:
    """Colour of the congestion label of a wait indicator (see :data:`CONGESTION_COLOURS`).

    Args:
        wait_minutes: Wait indicator in minutes.

    Returns:
        A hex colour.
    """
    if wait_minutes is None or (
        isinstance(wait_minutes, float) and math.isnan(wait_minutes)
    ):
        return CONGESTION_COLOURS["free"]
    return CONGESTION_COLOURS[congestion_label(wait_minutes) or "free"]


def new_figure(figsize: tuple[float, float]) -> Figure:
    """A matplotlib figure of ``figsize`` inches with its own Agg canvas (no pyplot state)."""
    figure = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Figure, path: str | os.PathLike[str] | None, dpi: int) -> None:
    if path is None:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=dpi)
    logger.info("saved %s", target)


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(
            f"{what}: missing column(s) {', '.join(map(repr, missing))} "
            f"(has {', '.join(map(str, frame.columns))})"
        )


def _days_and_clock(minutes: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Day number (1-based) and clock minute of absolute minutes (a column)."""
    day = (minutes // MINUTES_PER_DAY).astype("int64") + 1
    return day, minutes - (day - 1) * MINUTES_PER_DAY


def _absolute_minute(time: float | str, day: int | None) -> float:
    """Absolute minute of ``time`` (``"HH:MM"`` or minutes) on ``day`` (default: day 1)."""
    if isinstance(time, str) or day is not None:
        return ((1 if day is None else day) - 1) * MINUTES_PER_DAY + parse_clock(
            time, "time"
        )
    return float(time)


def _colour_cycle(
    keys: Sequence[str], known: dict[str, str], palette: Sequence[str] = _OTHER_COLOURS
) -> dict[str, str]:
    others = iter(list(palette) * (len(keys) // len(palette) + 1))
    return {key: known.get(key) or next(others) for key in keys}


# ---------------------------------------------------------------------------- departures
def departure_histograms(
    trips: pd.DataFrame,
    *,
    by: str | None = "day",
    overlay: bool = False,
    start: float | str = "05:00",
    end: float | str = "11:00",
    bin_minutes: float = 10.0,
    column: str = "departure",
    path: str | os.PathLike[str] | None = None,
    dpi: int = 150,
) -> Figure:
    """Histograms of departure times by time of day: the peak-spreading figure.

    Args:
        trips: A trips table (``trips_frame()``, ``simulate_demand`` or a run's ``trips``
            table); rows without a departure (NaN) are left out.
        by: Column to group by, one panel (or line) per value; ``"day"`` is derived from the
            departure minute unless the table has a ``day`` column; None for one group.
        overlay: Draw all groups as step lines in one panel instead of one panel each.
        start: Start of the window (``"HH:MM"`` or minutes after midnight).
        end: End of the window.
        bin_minutes: Bin width in minutes.
        column: Time column to histogram (e.g. ``"planned_departure"``).
        path: Write the figure as PNG here (parent folders are created).
        dpi: Resolution of the PNG.

    Returns:
        The figure: one axes per group, or one axes when ``overlay``.

    Raises:
        ValueError: For missing columns, an empty table, or a bad window.
    """
    _require(trips, [column] if by in (None, "day") else [column, by], "trips")
    low, high = parse_clock(start, "start"), parse_clock(end, "end")
    if not (high > low and bin_minutes > 0):
        raise ValueError(
            f"bad window {start!r}-{end!r} / {bin_minutes!r} min: end must follow start "
            "and the bins must be positive"
        )
    frame = trips[trips[column].notna()]
    if frame.empty:
        raise ValueError(f"trips: no row has a {column!r} to plot")
    day, clock = _days_and_clock(frame[column].astype(float))
    if by is None:
        keys = pd.Series("all trips", index=frame.index)
    elif by == "day" and "day" not in frame.columns:
        keys = day
    else:
        keys = frame[by]
    edges = np.arange(low, high + bin_minutes / 2, bin_minutes)
    if edges[-1] < high:
        edges = np.append(edges, high)
    groups = list(pd.unique(keys.sort_values()))

    n_axes = 1 if overlay else len(groups)
    figure = new_figure((7.0, 1.0 + (2.6 if overlay else 1.9 * n_axes)))
    axes = figure.subplots(n_axes, 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    colours = _colour_cycle([str(g) for g in groups], {}, _GROUP_COLOURS)
    for k, group in enumerate(groups):
        minutes = clock[keys == group].to_numpy()
        inside = (minutes >= low) & (minutes < high)
        label = f"{'Day ' if by == 'day' else ''}{group}"
        note = f"{int(inside.sum())} departures"
        if (~inside).any():
            note += f" ({int((~inside).sum())} outside {format_clock(low)}-{format_clock(high)})"
        if overlay:
            axes[0].hist(
                minutes,
                bins=edges,
                histtype="step",
                linewidth=1.8,
                color=colours[str(group)],
                label=f"{label}: {note}",
            )
        else:
            axes[k].hist(
                minutes, bins=edges, color=colours[str(group)], edgecolor="white"
            )
            axes[k].set_title(f"{label}: {note}", fontsize=9, loc="left")
    if overlay:
        axes[0].legend(fontsize=8, frameon=False)
    for ax in axes:
        ax.set_xlim(low, high)
        ax.xaxis.set_major_locator(MultipleLocator(60))
        ax.xaxis.set_minor_locator(MultipleLocator(bin_minutes))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: format_clock(x)))
        ax.set_ylabel(f"per {bin_minutes:g} min", fontsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1].set_xlabel(f"{column.replace('_', ' ')} (time of day)")
    _save(figure, path, dpi)
    return figure


# ---------------------------------------------------------------------------- mode shares
def mode_share_table(
    trips: pd.DataFrame,
    *,
    by: str = "day",
    normalize: bool = True,
    column: str = "departure",
) -> pd.DataFrame:
    """Trips per mode and group (default: per day), as shares or counts.

    Args:
        trips: A trips table with a ``mode`` column; rows without ``column`` (NaN: the trip has
            not left) are left out.
        by: Grouping column; ``"day"`` is derived from ``column`` unless the table has one.
        normalize: Shares (rows sum to 1) instead of counts.
        column: Time column that dates a trip.

    Returns:
        One row per group, one column per mode (drive, transit, walk first).
    """
    derive_day = by == "day" and "day" not in trips.columns
    _require(trips, ["mode", column if derive_day else by], "trips")
    frame = trips[trips[column].notna()] if column in trips.columns else trips
    if derive_day:
        keys = _days_and_clock(frame[column].astype(float))[0].rename("day")
    else:
        keys = frame[by]
    table = pd.crosstab(keys, frame["mode"].astype(str))
    order = [m for m in MODE_COLOURS if m in table.columns]
    table = table[order + sorted(set(table.columns) - set(order))]
    table.columns.name = "mode"
    if normalize:
        table = table.div(table.sum(axis=1), axis=0)
    return table


def mode_shares(
    trips: pd.DataFrame,
    *,
    by: str = "day",
    normalize: bool = True,
    column: str = "departure",
    path: str | os.PathLike[str] | None = None,
    dpi: int = 150,
) -> Figure:
    """Stacked bars of the mode shares, one bar per day (or per value of ``by``).

    Args:
        trips: A trips table with a ``mode`` column.
        by: Grouping column (``"day"`` derived from ``column`` when absent).
        normalize: Plot shares (bars reach 1) instead of counts.
        column: Time column that dates a trip.
        path: Write the figure as PNG here.
        dpi: Resolution of the PNG.

    Returns:
        The figure (one axes; one bar container per mode).
    """
    table = mode_share_table(trips, by=by, normalize=normalize, column=column)
    if table.empty:
        raise ValueError("trips: no trip to count")
    figure = new_figure((1.6 + 1.1 * len(table), 3.6))
    ax = figure.subplots()
    labels = [f"Day {g}" if by == "day" else str(g) for g in table.index]
    colours = _colour_cycle(list(table.columns), MODE_COLOURS)
    bottom = np.zeros(len(table))
    for mode in table.columns:
        values = table[mode].to_numpy(dtype=float)
        bars = ax.bar(
            labels, values, bottom=bottom, color=colours[mode], label=mode, width=0.6
        )
        texts = [
            (f"{v:.0%}" if normalize else f"{v:g}")
            if v >= 0.06 * max(table.sum(axis=1))
            else ""
            for v in values
        ]
        ax.bar_label(bars, labels=texts, label_type="center", fontsize=8, color="white")
        bottom += values
    ax.set_ylabel("share of trips" if normalize else "trips")
    if normalize:
        ax.set_ylim(0, 1)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:.0%}"))
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.spines[["top", "right"]].set_visible(False)
    _save(figure, path, dpi)
    return figure


# ---------------------------------------------------------------------------- network snapshots
def link_congestion_at(
    link_states: pd.DataFrame, time: float | str, *, day: int | None = None
) -> pd.DataFrame:
    """The state of every directed link at a minute, with its congestion label and colour.

    Picks the last recorded step at or before the minute (the state during that minute).

    Args:
        link_states: ``TrafficEngine.link_states_frame()`` (columns time, link, direction,
            wait_indicator, and usually kind, queue, traversing).
        time: ``"HH:MM"`` or a minute; an absolute minute (since 00:00 of day 1) unless
            ``day`` is given or it is a clock string.
        day: Day of a clock time (default 1 for a string).

    Returns:
        The rows of that step sorted by link and direction, plus ``label`` (``"severe"``,
        ``"moderate"``, ``"light"`` or None) and ``colour``.

    Raises:
        ValueError: For missing columns or a minute outside the recorded steps.
    """
    _require(link_states, _LINK_COLUMNS, "link_states")
    target = _absolute_minute(time, day)
    times = link_states["time"].to_numpy(dtype=float)
    if times.size == 0 or not times.min() - 1e-9 <= target <= times.max() + 1e-9:
        span = (
            "no steps"
            if times.size == 0
            else f"steps {times.min():g}-{times.max():g} ({day_clock(times.min())} to "
            f"{day_clock(times.max())})"
        )
        raise ValueError(
            f"link_states: minute {target:g} is outside the recorded {span}"
        )
    step = times[times <= target + 1e-9].max()
    rows = link_states[np.isclose(times, step)].sort_values(["link", "direction"])
    labels = rows["wait_indicator"].map(congestion_label)
    return rows.assign(
        label=labels.astype(object).where(labels.notna(), None),
        colour=rows["wait_indicator"].map(congestion_colour),
    ).reset_index(drop=True)


def _normals(points: np.ndarray) -> np.ndarray:
    """Unit normals (right of travel, in x-y) of the segments of a polyline."""
    along = np.diff(points, axis=0)
    along /= np.maximum(np.hypot(along[:, 0], along[:, 1]), 1e-12)[:, None]
    return np.column_stack([along[:, 1], -along[:, 0]])


def offset_polyline(points: np.ndarray, offset: float) -> np.ndarray:
    """Shift a polyline sideways by ``offset`` (to the right if positive), with mitred corners."""
    normals = _normals(points)
    vertex = np.vstack([normals[:1], normals[:-1] + normals[1:], normals[-1:]])
    first, second = (
        np.vstack([normals[:1], normals]),
        np.vstack([normals, normals[-1:]]),
    )
    cosine = np.maximum(1.0 + np.einsum("ij,ij->i", first, second), 0.2)
    vertex[1:-1] /= cosine[1:-1, None]
    return points + vertex * offset


def snapshot_offset(scenario: Scenario) -> float:
    """How far :func:`traffic_snapshot` shifts a road direction sideways (metro lines: -3x)."""
    return SIDE_OFFSET * node_layout(scenario)[1]


def road_polylines(
    scenario: Scenario, positions: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Each road link as drawn in direction 0: its ``geometry``, else its two end nodes.

    Args:
        scenario: The scenario.
        positions: Node positions (default: :func:`node_layout`'s).

    Returns:
        ``{link name: (n, 2) array}`` from ``from_node`` to ``to_node``; ``n == 2`` for a link
        without a geometry (a straight segment between its nodes).
    """
    if positions is None:
        positions = node_layout(scenario)[0]
    return {
        link.name: (
            np.array(link.geometry, dtype=float)
            if link.geometry is not None
            else np.array([positions[link.from_node], positions[link.to_node]])
        )
        for link in scenario.road_links.values()
    }


def _road_segments(
    scenario: Scenario, positions: dict[str, np.ndarray], offset: float
) -> dict[tuple[str, int], np.ndarray]:
    """Each road link direction as a polyline shifted to one side (opposite directions apart)."""
    segments: dict[tuple[str, int], np.ndarray] = {}
    for name, points in road_polylines(scenario, positions).items():
        segments[(name, 0)] = offset_polyline(points, offset)
        if scenario.road_links[name].two_way:
            segments[(name, 1)] = offset_polyline(points[::-1], offset)
    return segments


def node_layout(scenario: Scenario) -> tuple[dict[str, np.ndarray], float]:
    """Node positions and the drawing's span (the larger side of the bounding box)."""
    positions = {
        n.id: np.array([n.x, n.y], dtype=float) for n in scenario.nodes.values()
    }
    if not positions:
        raise ValueError(f"scenario {scenario.name!r}: no nodes to draw")
    xy = np.array(list(positions.values()))
    return positions, float(max(np.ptp(xy[:, 0]), np.ptp(xy[:, 1]), 1.0))


def _road_lines(
    scenario: Scenario,
    rows: pd.DataFrame,
    positions: dict[str, np.ndarray],
    offset: float,
) -> tuple[list[np.ndarray], list[str]]:
    """Segments and colours of the road link directions at one step (rows first, then free)."""
    segments = _road_segments(scenario, positions, offset)
    road_rows = rows[rows["link"].isin(scenario.road_links)]
    if "kind" in rows.columns:
        road_rows = road_rows[road_rows["kind"] == "road"]
    colour_of = {
        (link, int(direction)): colour
        for link, direction, colour in road_rows[
            ["link", "direction", "colour"]
        ].itertuples(index=False)
    }
    keys = [key for key in colour_of if key in segments]
    keys += [key for key in segments if key not in colour_of]
    return [segments[key] for key in keys], [
        colour_of.get(key, CONGESTION_COLOURS["free"]) for key in keys
    ]


def traffic_snapshot(
    scenario: Scenario,
    link_states: pd.DataFrame,
    time_minute: float | str,
    *,
    day: int | None = None,
    ax: Axes | None = None,
    label_facilities: bool = True,
    show_metro: bool = True,
    legend: bool = True,
    invert_y: bool = True,
    linewidth: float = 2.6,
    path: str | os.PathLike[str] | None = None,
    dpi: int = 150,
    label_size: float = 6.0,
) -> Figure:
    """The network at its real coordinates, road links coloured by congestion at a minute.

    The two directions of a road link are drawn side by side (along its ``geometry`` where it
    has one, see :func:`road_polylines`), each shifted to its own side, and
    each is coloured by the label of its wait indicator (:data:`CONGESTION_COLOURS`);
    links without a row at that step are drawn as free. Metro lines are dashed, one colour per
    line; nodes are dots, labelled with their facility's name.

    Args:
        scenario: The scenario the frame was recorded on (its node coordinates are used).
        link_states: ``TrafficEngine.link_states_frame()``.
        time_minute: ``"HH:MM"`` or a minute (absolute unless ``day`` is given).
        day: Day of a clock time (default 1 for a string).
        ax: Draw into these axes instead of a new figure.
        label_facilities: Write facility names next to their nodes.
        show_metro: Draw the metro lines.
        legend: Add a legend of labels and lines.
        invert_y: Draw y downwards (tile coordinates, as in the reference town, whose north is
            at small y).
        linewidth: Width of a road link direction in points (metro lines are thinner).
        path: Write the figure as PNG here.
        dpi: Resolution of the PNG.
        label_size: Font size of the facility names in points.

    Returns:
        The figure holding the axes. The road links are the ``LineCollection`` with gid
        ``"road_links"`` (segments in the order of :func:`link_congestion_at`'s road rows
        followed by road links without a row).
    """
    rows = link_congestion_at(link_states, time_minute, day=day)
    minute = float(rows["time"].iloc[0])
    if ax is None:
        figure = new_figure((6.4, 5.4))
        ax = figure.subplots()
    else:
        figure = ax.figure.figure  # the root figure, also for axes in a subfigure
    positions, span = node_layout(scenario)
    xy = np.array(list(positions.values()))
    offset = snapshot_offset(scenario)

    segments, colours = _road_lines(scenario, rows, positions, offset)
    roads = LineCollection(
        segments,
        colors=colours,
        linewidths=linewidth,
        capstyle="butt",
        zorder=2,
    )
    roads.set_gid("road_links")
    ax.add_collection(roads)

    handles: list[Line2D] = []
    if show_metro:
        for k, line in enumerate(scenario.metro_lines.values()):
            colour = METRO_COLOURS[k % len(METRO_COLOURS)]
            stops = np.array([positions[stop] for stop in line.stops])
            metro = LineCollection(
                [offset_polyline(stops, -3.0 * offset)],
                colors=colour,
                linewidths=0.55 * linewidth,
                linestyles=(0, (4, 2)),
                zorder=1,
            )
            metro.set_gid(f"metro:{line.name}")
            ax.add_collection(metro)
            handles.append(
                Line2D([], [], color=colour, linestyle="--", label=line.name)
            )

    ax.scatter(
        xy[:, 0],
        xy[:, 1],
        s=22,
        c="white",
        edgecolors="black",
        linewidths=0.8,
        zorder=3,
    )
    if label_facilities:
        names = {f.node: f.name for f in scenario.facilities.values()}
        below = _labels_below(ax, positions, names, label_size, span)
        for node, name in names.items():
            x, y = positions[node]
            ax.annotate(
                name,
                (x, y),
                xytext=(3, -4) if node in below else (3, 3),
                textcoords="offset points",
                va="top" if node in below else "baseline",
                fontsize=label_size,
                color="#333333",
                zorder=4,
            )
    margin = 0.06 * span
    ax.set_xlim(xy[:, 0].min() - margin, xy[:, 0].max() + margin)
    low, high = xy[:, 1].min() - margin, xy[:, 1].max() + margin
    ax.set_ylim((high, low) if invert_y else (low, high))
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.spines[:].set_visible(False)
    _snapshot_title(ax, minute)
    if legend:
        ax.legend(
            handles=congestion_handles() + handles,
            fontsize=6,
            frameon=False,
            loc="upper left",
            bbox_to_anchor=(1.0, 1.0),
        )
    _save(figure, path, dpi)
    return figure


def _labels_below(
    ax: Axes,
    positions: dict[str, tuple[float, float]],
    names: dict[str, str],
    size: float,
    span: float,
) -> set[str]:
    """Nodes whose name, written to the right, would run into the next node on its row.

    A name is about ``0.6 * size`` points per character wide; the axes' size in points and
    the drawing's extent (plus the margins of ``0.06 * span``, equal aspect) convert it to data
    units. Those names go below their node instead.
    """
    box = ax.get_window_extent()  # display pixels, on figures and subfigures alike
    to_points = 72.0 / ax.figure.dpi
    width_points, height_points = box.width * to_points, box.height * to_points
    xy = np.array(list(positions.values()))
    extent = np.ptp(xy, axis=0) + 0.12 * span
    per_point = max(
        extent[0] / max(width_points, 1.0), extent[1] / max(height_points, 1.0)
    )
    below = set()
    for node, name in names.items():
        x, y = positions[node]
        reach = x + 0.6 * size * len(name) * per_point
        if any(
            other != node and x < ox <= reach and abs(oy - y) < 2 * size * per_point
            for other, (ox, oy) in positions.items()
        ):
            below.add(node)
    return below


def _snapshot_title(ax: Axes, minute: float) -> None:
    ax.set_title(day_clock(minute, sep=", ").capitalize(), fontsize=9)


def congestion_handles() -> list[Line2D]:
    """Legend handles of the congestion colours (free, light, ...), for a map's legend."""
    names = {
        "free": "free (< 1 min)",
        "light": "light (1-4 min)",
        "moderate": "moderate (5-9 min)",
        "severe": "severe (>= 10 min)",
    }
    return [
        Line2D([], [], color=CONGESTION_COLOURS[key], linewidth=2.6, label=text)
        for key, text in names.items()
    ]


def update_traffic_snapshot(
    ax: Axes,
    scenario: Scenario,
    link_states: pd.DataFrame,
    time_minute: float | str,
    *,
    day: int | None = None,
) -> Figure:
    """Recolour a snapshot drawn by :func:`traffic_snapshot` to another minute, and retitle it.

    Only the road links and the title change, so a sequence of minutes (an animation) costs
    one drawing and then one recolouring per frame.

    Args:
        ax: Axes holding a snapshot of ``scenario``.
        scenario: The scenario of the snapshot.
        link_states: ``TrafficEngine.link_states_frame()``.
        time_minute: ``"HH:MM"`` or a minute (absolute unless ``day`` is given).
        day: Day of a clock time (default 1 for a string).

    Returns:
        The figure holding the axes.

    Raises:
        ValueError: If ``ax`` holds no snapshot, or as :func:`link_congestion_at`.
    """
    roads = [c for c in ax.collections if c.get_gid() == "road_links"]
    if len(roads) != 1:
        raise ValueError("ax: no traffic snapshot to update (draw one first)")
    rows = link_congestion_at(link_states, time_minute, day=day)
    positions, span = node_layout(scenario)
    segments, colours = _road_lines(scenario, rows, positions, SIDE_OFFSET * span)
    roads[0].set_segments(segments)
    roads[0].set_color(colours)
    _snapshot_title(ax, float(rows["time"].iloc[0]))
    return ax.figure.figure


def traffic_snapshots_grid(
    scenario: Scenario,
    link_states: pd.DataFrame,
    times: Sequence[float | str] = SNAPSHOT_TIMES,
    days: Sequence[int] | None = None,
    *,
    label_facilities: bool = False,
    invert_y: bool = True,
    path: str | os.PathLike[str] | None = None,
    dpi: int = 150,
) -> Figure:
    """Traffic snapshots with one row per day and one column per time (the paper's Figure 10).

    Args:
        scenario: The scenario the frame was recorded on.
        link_states: ``TrafficEngine.link_states_frame()`` over one or more days.
        times: Clock times of the columns (``"HH:MM"`` or minutes after midnight).
        days: Days of the rows (default: every day the frame covers).
        label_facilities: Write facility names in every panel.
        invert_y: Draw y downwards (tile coordinates).
        path: Write the figure as PNG here.
        dpi: Resolution of the PNG.

    Returns:
        The figure: ``len(days) x len(times)`` axes and one legend below them.
    """
    _require(link_states, _LINK_COLUMNS, "link_states")
    if days is None:
        recorded = link_states["time"].to_numpy(dtype=float)
        if recorded.size == 0:
            raise ValueError("link_states: no steps recorded")
        days = sorted({int(t // MINUTES_PER_DAY) + 1 for t in np.unique(recorded)})
    days, times = list(days), list(times)
    if not days or not times:
        raise ValueError("traffic_snapshots_grid needs at least one day and one time")
    figure = new_figure((2.6 * len(times) + 0.4, 2.3 * len(days) + 0.7))
    axes = figure.subplots(len(days), len(times), squeeze=False)
    for r, day in enumerate(days):
        for c, time in enumerate(times):
            traffic_snapshot(
                scenario,
                link_states,
                time,
                day=day,
                ax=axes[r, c],
                legend=False,
                label_facilities=label_facilities,
                invert_y=invert_y,
                linewidth=1.6,
            )
    metro = [
        Line2D(
            [],
            [],
            color=METRO_COLOURS[k % len(METRO_COLOURS)],
            linestyle="--",
            label=name,
        )
        for k, name in enumerate(scenario.metro_lines)
    ]
    figure.legend(
        handles=congestion_handles() + metro,
        loc="outside lower center",
        ncols=min(6, 4 + len(metro)),
        fontsize=7,
        frameon=False,
    )
    _save(figure, path, dpi)
    return figure
