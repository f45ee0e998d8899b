"""The network map of the app: congestion, metro trains, facility counts and travellers.

Built on :func:`~mesa_llm_mobility.urban.plots.traffic_snapshot` (roads coloured by congestion
label, metro lines), with the live layer on top: trains at their timetable positions, each
facility's name with the number of people inside and queueing at its door (placed so that no
two labels overlap), and one marker per traveller on a link (spread along it, along its road
geometry where the scenario gives one), at a node or at a facility (a small ring around it). The figure is as wide as the panel and as high as the
town's shape needs.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.app.town_view import TownView, train_positions
from mesa_llm_mobility.urban.scenario import Scenario

# the click helpers moved to viz (shared with the evacuation app); re-exported here
from mesa_llm_mobility.viz.clickable import marker_at as traveller_at  # noqa: F401
from mesa_llm_mobility.viz.clickable import marker_fractions  # noqa: F401
from mesa_llm_mobility.viz.labels import Label, place_labels

STATE_COLOURS: dict[str, str] = {
    "driving": "#1565c0",
    "riding": "#00838f",
    "walking": "#2e7d32",
    "waiting_at_node": "#c62828",
    "waiting_at_door": "#ef6c00",
    "at_node": "#6d4c41",
    "staying": "#9e9e9e",
}
"""Marker colour of each traveller state."""


def link_ends(scenario: Scenario) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The drawn end points of every road and metro link, by link name (direction 0).

    Metro links are shifted beside the roads, as :func:`~..plots.traffic_snapshot` draws them.
    """
    return {
        name: (points[0], points[-1])
        for name, points in link_polylines(scenario).items()
    }


def link_polylines(scenario: Scenario) -> dict[str, np.ndarray]:
    """Every road and metro link as drawn, by link name (direction 0), as ``(n, 2)`` points.

    A road link with a ``geometry`` (an imported city's) follows it; any other link is its two
    end points (``n == 2``). Metro links are shifted beside the roads, as
    :func:`~..plots.traffic_snapshot` draws them.
    """
    lines = plots.road_polylines(scenario)
    for line, points in metro_polylines(scenario).items():
        for k, name in enumerate(scenario.metro_lines[line].link_names):
            lines[name] = points[k : k + 2]
    return lines


def point_along(points: np.ndarray, share: float) -> np.ndarray:
    """The point ``share`` (0 to 1) of the way along a polyline, by length."""
    a, b = points[0], points[-1]
    if len(points) == 2:
        return a + share * (b - a)
    steps = np.hypot(*np.diff(points, axis=0).T)
    along = np.concatenate([[0.0], np.cumsum(steps)])
    at = share * along[-1]
    return np.array(
        [np.interp(at, along, points[:, 0]), np.interp(at, along, points[:, 1])]
    )


def metro_polylines(scenario: Scenario) -> dict[str, np.ndarray]:
    """Each metro line's stops as drawn: shifted beside the roads."""
    xy, _ = plots.node_layout(scenario)
    offset = -3.0 * plots.snapshot_offset(scenario)
    return {
        line.name: plots.offset_polyline(np.array([xy[s] for s in line.stops]), offset)
        for line in scenario.metro_lines.values()
    }


def metro_drawing_positions(scenario: Scenario, trains: pd.DataFrame) -> pd.DataFrame:
    """Move trains onto their line as drawn (metro lines are drawn beside the roads)."""
    drawn = metro_polylines(scenario)
    frame = trains.copy()
    if not len(frame):
        return frame
    points = np.array(
        [
            drawn[line][segment]
            + share * (drawn[line][segment + 1] - drawn[line][segment])
            for line, segment, share in zip(
                frame["line"], frame["segment"], frame["share"], strict=True
            )
        ]
    )
    frame["x"], frame["y"] = points[:, 0], points[:, 1]
    return frame


def _spread(agent: str, scale: float) -> tuple[float, float]:
    """A fixed small offset per traveller, so markers at one place do not hide each other."""
    angle = (zlib.crc32(agent.encode()) % 360) * np.pi / 180.0
    return scale * float(np.cos(angle)), scale * float(np.sin(angle))


def traveller_positions(view: TownView) -> pd.DataFrame:
    """Map coordinates of every traveller: agent, state, place, x, y.

    Travellers on a link are spread evenly along the middle 80 % of its drawn polyline
    (:func:`link_polylines`); at a facility or a node each
    sits at a fixed small offset (from its name) around the node.
    """
    scenario = view.scenario
    xy, span = plots.node_layout(scenario)
    lines = link_polylines(scenario)
    ring = 0.02 * span
    on_link: dict[str, list[tuple[str, str]]] = {}
    rows = []
    for agent, state, place in view.travellers[["agent", "state", "place"]].itertuples(
        index=False, name=None
    ):
        if place in lines:
            on_link.setdefault(place, []).append((agent, state))
            continue
        facility = scenario.facilities.get(place)
        centre = xy.get(facility.node if facility is not None else place)
        if centre is None:
            continue
        dx, dy = _spread(agent, ring)
        rows.append((agent, state, place, float(centre[0] + dx), float(centre[1] + dy)))
    for place, people in on_link.items():
        for k, (agent, state) in enumerate(people):
            share = 0.1 + 0.8 * (k + 0.5) / len(people)
            x, y = point_along(lines[place], share)
            rows.append((agent, state, place, float(x), float(y)))
    return pd.DataFrame(rows, columns=["agent", "state", "place", "x", "y"])


def shown_travellers(
    positions: pd.DataFrame, *, show_staying: bool = False
) -> pd.DataFrame:
    """The travellers :func:`draw_town` draws a marker for (not those inside, by default)."""
    return positions if show_staying else positions[positions["state"] != "staying"]


MAP_LABEL_POINTS = 12.0
"""Font size of the app map's facility labels (legend one point smaller)."""
SMALLEST_MAP_POINTS = MAP_LABEL_POINTS - 1
"""The smallest text of the app's map (its legend)."""
MAP_WIDTH_IN = 8.0
"""Width of the app's map in inches (its height follows the town's shape)."""
LABEL_BOX = {"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75}
"""The white box behind a map label (roads and metro lines show through, dimmed)."""
FACILITY_STYLE = {
    "fontsize": MAP_LABEL_POINTS,
    "zorder": 7,
    "gid": "facility",
    "bbox": LABEL_BOX,
}
"""How a facility's label is written."""
SELECTED_STYLE = {
    "fontsize": MAP_LABEL_POINTS + 1,
    "color": "#6a1b9a",
    "weight": "bold",
    "zorder": 9,
    "gid": "selected_name",
    "bbox": LABEL_BOX,
}
"""How the selected traveller's name is written."""
_LEGEND_IN = 0.75
_TOP_IN = 0.08
_MARGIN = 0.07
"""Room around the outer nodes, as a share of the town's span."""


def map_extent(scenario: Scenario) -> tuple[tuple[float, float], tuple[float, float]]:
    """The map's x and y limits: the nodes plus a margin (y drawn downwards)."""
    xy = np.array(list(plots.node_layout(scenario)[0].values()))
    margin = _MARGIN * plots.node_layout(scenario)[1]
    x = (float(xy[:, 0].min() - margin), float(xy[:, 0].max() + margin))
    y = (float(xy[:, 1].max() + margin), float(xy[:, 1].min() - margin))
    return x, y


def map_size(scenario: Scenario, width_in: float = MAP_WIDTH_IN) -> tuple[float, float]:
    """Figure size (inches) at which the town, at equal aspect, fills the width."""
    (x0, x1), (y0, y1) = map_extent(scenario)
    return width_in, width_in * abs(y0 - y1) / (x1 - x0) + _LEGEND_IN + _TOP_IN


def facility_label(name: str, staying: int, queue: int) -> str:
    """``Museum``, ``Museum: 4`` (people inside) or ``Museum: 4 +2 queue`` (at the door)."""
    if not staying and not queue:
        return name
    return f"{name}: {staying}" + (f" +{queue} queue" if queue else "")


def network_points(scenario: Scenario, every: float | None = None) -> np.ndarray:
    """Points along every drawn road and metro link and at every node (label obstacles)."""
    xy, span = plots.node_layout(scenario)
    spacing = every or span / 150
    points = [np.array(list(xy.values()))]
    for line in link_polylines(scenario).values():
        for a, b in itertools.pairwise(line):
            n = max(int(np.hypot(*(b - a)) / spacing), 1)
            points.append(a + np.linspace(0, 1, n + 1)[:, None] * (b - a))
    return np.vstack(points)


def draw_town(
    view: TownView,
    *,
    selected: str | None = None,
    ax: Axes | None = None,
    show_staying: bool = False,
    positions: pd.DataFrame | None = None,
    width_in: float = MAP_WIDTH_IN,
    title: bool = True,
) -> Figure:
    """Draw the town at the view's minute.

    Facility names carry the number of people inside and the queue at the door
    (:func:`facility_label`); they are placed where they cover no other label and the
    fewest links (:func:`~mesa_llm_mobility.viz.labels.place_labels`).

    Args:
        view: What to draw.
        selected: A traveller to highlight (ring and name).
        ax: Draw into these axes instead of a new figure.
        show_staying: Also draw a marker for everyone inside a facility (the counts show them
            anyway; off by default, as most people are at home most of the time).
        positions: :func:`traveller_positions` of ``view`` when the caller has them already.
        width_in: Width of a new figure in inches (its height follows the town's shape).
        title: Write the clock as the title (the app shows it above the map instead).

    Returns:
        The figure. Travellers are the scatter with gid ``"travellers"``, trains ``"trains"``;
        the facility labels have gid ``"facility"``.
    """
    scenario = view.scenario
    if ax is None:
        # fixed margins, not constrained layout: a redraw a few times a second in the app
        width, height = map_size(scenario, width_in)
        figure = Figure(figsize=(width, height))
        FigureCanvasAgg(figure)
        # the legend goes below the map, so the town takes the figure's whole width
        figure.subplots_adjust(
            left=0.0, right=1.0, bottom=_LEGEND_IN / height, top=1 - _TOP_IN / height
        )
        ax = figure.subplots()
    figure = ax.figure.figure
    step = float(view.link_states["time"].max())  # the step that left the links so
    plots.traffic_snapshot(
        scenario, view.link_states, step, ax=ax, legend=False, label_facilities=False
    )
    (x0, x1), (y0, y1) = map_extent(scenario)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_title(view.clock if title else "", fontsize=MAP_LABEL_POINTS + 3)

    handles = list(plots.congestion_handles())
    trains = metro_drawing_positions(scenario, train_positions(scenario, view.minute))
    if len(trains):
        scatter = ax.scatter(
            trains["x"], trains["y"], marker="s", s=36, c="#263238", zorder=6
        )
        scatter.set_gid("trains")
        handles.append(
            Line2D([], [], marker="s", color="#263238", linestyle="", label="train")
        )

    if positions is None:
        positions = traveller_positions(view)
    labels = []
    mine = positions[positions["agent"] == selected] if selected else positions.iloc[:0]
    if len(mine):  # the selected traveller's name is placed first, next to its ring
        x, y = mine[["x", "y"]].iloc[0]
        ax.scatter(
            [x],
            [y],
            s=160,
            facecolors="none",
            edgecolors="#d500f9",
            linewidths=2.0,
            zorder=9,
            gid="selected",
        )
        labels.append(Label(str(selected), x, y, SELECTED_STYLE))
    counts = view.facility_counts().set_index("facility")
    for facility in scenario.facilities.values():
        node = scenario.nodes[facility.node]
        staying, queue = (
            counts.loc[facility.name] if facility.name in counts.index else (0, 0)
        )
        labels.append(
            Label(
                facility_label(facility.name, int(staying), int(queue)),
                node.x,
                node.y,
                {**FACILITY_STYLE, "color": "#b71c1c" if queue else "#263238"},
            )
        )
    place_labels(ax, labels, network_points(scenario))

    shown = shown_travellers(positions, show_staying=show_staying)
    colours = [STATE_COLOURS.get(state, "#000000") for state in shown["state"]]
    scatter = ax.scatter(
        shown["x"],
        shown["y"],
        s=22,
        c=colours,
        edgecolors="white",
        linewidths=0.4,
        zorder=8,
    )
    scatter.set_gid("travellers")
    for state in dict.fromkeys(shown["state"]):
        colour = STATE_COLOURS.get(state, "#000000")
        label = state.replace("_", " ")
        handles.append(
            Line2D([], [], marker="o", color=colour, linestyle="", label=label)
        )
    ax.legend(
        handles=handles,
        fontsize=SMALLEST_MAP_POINTS,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=4,
    )
    return figure
