"""The network map of the app: congestion, metro trains, facility counts and travellers.

Built on :func:`~mesa_llm_mobility.urban.plots.traffic_snapshot` (roads coloured by congestion
label, metro lines, facility names), with the live layer on top: trains at their timetable
positions, the number of people inside and queueing at each facility, and one marker per
traveller on a link (spread along it), at a node or at a facility (a small ring around it).
"""

from __future__ import annotations

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
    xy, _ = plots.node_layout(scenario)
    ends = {
        link.name: (xy[link.from_node], xy[link.to_node])
        for link in scenario.road_links.values()
    }
    for line, points in metro_polylines(scenario).items():
        for k, name in enumerate(scenario.metro_lines[line].link_names):
            ends[name] = (points[k], points[k + 1])
    return ends


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

    Travellers on a link are spread evenly along its middle 80 %; at a facility or a node each
    sits at a fixed small offset (from its name) around the node.
    """
    scenario = view.scenario
    xy, span = plots.node_layout(scenario)
    ends = link_ends(scenario)
    ring = 0.02 * span
    on_link: dict[str, list[tuple[str, str]]] = {}
    rows = []
    for agent, state, place in view.travellers[["agent", "state", "place"]].itertuples(
        index=False, name=None
    ):
        if place in ends:
            on_link.setdefault(place, []).append((agent, state))
            continue
        facility = scenario.facilities.get(place)
        centre = xy.get(facility.node if facility is not None else place)
        if centre is None:
            continue
        dx, dy = _spread(agent, ring)
        rows.append((agent, state, place, float(centre[0] + dx), float(centre[1] + dy)))
    for place, people in on_link.items():
        a, b = ends[place]
        for k, (agent, state) in enumerate(people):
            share = 0.1 + 0.8 * (k + 0.5) / len(people)
            x, y = a + share * (b - a)
            rows.append((agent, state, place, float(x), float(y)))
    return pd.DataFrame(rows, columns=["agent", "state", "place", "x", "y"])


def shown_travellers(
    positions: pd.DataFrame, *, show_staying: bool = False
) -> pd.DataFrame:
    """The travellers :func:`draw_town` draws a marker for (not those inside, by default)."""
    return positions if show_staying else positions[positions["state"] != "staying"]


MAP_LABEL_POINTS = 12.0
"""Font size of the app map's facility names (counts and legend one point smaller)."""
LEGIBLE_PIXELS = 10.0
"""Smallest on-screen text height (CSS pixels) the app's labels should have."""


def label_pixels(
    points: float, dpi: float, image_width: float, shown_width: float
) -> float:
    """On-screen height of ``points``-sized text in an image drawn ``shown_width`` wide.

    ``points * dpi / 72`` pixels in the image, scaled by ``shown_width / image_width``.
    """
    return points * dpi / 72.0 * shown_width / image_width


def draw_town(
    view: TownView,
    *,
    selected: str | None = None,
    ax: Axes | None = None,
    show_staying: bool = False,
    positions: pd.DataFrame | None = None,
    figsize: tuple[float, float] = (8.0, 5.4),
) -> Figure:
    """Draw the town at the view's minute.

    Args:
        view: What to draw.
        selected: A traveller to highlight (ring and name).
        ax: Draw into these axes instead of a new figure.
        show_staying: Also draw a marker for everyone inside a facility (the counts show them
            anyway; off by default, as most people are at home most of the time).
        positions: :func:`traveller_positions` of ``view`` when the caller has them already.
        figsize: Size of a new figure in inches.

    Returns:
        The figure. Travellers are the scatter with gid ``"travellers"``, trains ``"trains"``.
    """
    if ax is None:
        # fixed margins, not constrained layout: a redraw a few times a second in the app
        figure = Figure(figsize=figsize)
        FigureCanvasAgg(figure)
        # the legend goes below the map, so the town takes the panel's whole width
        figure.subplots_adjust(left=0.01, right=0.99, bottom=0.16, top=0.93)
        ax = figure.subplots()
    figure = ax.figure.figure
    step = float(view.link_states["time"].max())  # the step that left the links so
    plots.traffic_snapshot(
        view.scenario, view.link_states, step, ax=ax, legend=False,
        label_size=MAP_LABEL_POINTS,
    )  # fmt: skip
    ax.set_title(view.clock, fontsize=MAP_LABEL_POINTS + 3)

    handles = list(plots.congestion_handles())
    trains = metro_drawing_positions(
        view.scenario, train_positions(view.scenario, view.minute)
    )
    if len(trains):
        scatter = ax.scatter(
            trains["x"], trains["y"], marker="s", s=36, c="#263238", zorder=6
        )
        scatter.set_gid("trains")
        handles.append(
            Line2D([], [], marker="s", color="#263238", linestyle="", label="train")
        )

    counts = view.facility_counts()
    for facility, staying, queue in counts.itertuples(index=False):
        if not staying and not queue:
            continue
        node = view.scenario.nodes[view.scenario.facilities[facility].node]
        text = f"{staying}" + (f" +{queue} queue" if queue else "")
        ax.annotate(
            text,
            (node.x, node.y),
            xytext=(-4, -4),  # left below the node: names sit to the right or below
            textcoords="offset points",
            ha="right",
            va="top",
            fontsize=MAP_LABEL_POINTS - 1,
            color="#b71c1c" if queue else "#37474f",
            zorder=7,
        )

    if positions is None:
        positions = traveller_positions(view)
    shown = shown_travellers(positions, show_staying=show_staying)
    colours = [STATE_COLOURS.get(state, "#000000") for state in shown["state"]]
    scatter = ax.scatter(
        shown["x"],
        shown["y"],
        s=18,
        c=colours,
        edgecolors="white",
        linewidths=0.4,
        zorder=8,
    )
    scatter.set_gid("travellers")
    for state in dict.fromkeys(shown["state"]):
        handles.append(
            Line2D([], [], marker="o", color=STATE_COLOURS.get(state, "#000000"),
                   linestyle="", label=state.replace("_", " "))
        )  # fmt: skip
    if selected is not None:
        mine = positions[positions["agent"] == selected]
        if len(mine):
            x, y = mine[["x", "y"]].iloc[0]
            ax.scatter([x], [y], s=160, facecolors="none", edgecolors="#d500f9",
                       linewidths=2.0, zorder=9, gid="selected")  # fmt: skip
            ax.annotate(selected, (x, y), xytext=(6, 6), textcoords="offset points",
                        fontsize=MAP_LABEL_POINTS + 1, color="#6a1b9a", weight="bold", zorder=9)  # fmt: skip
    ax.legend(
        handles=handles,
        fontsize=MAP_LABEL_POINTS - 1,
        frameon=False,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=4,
    )
    return figure
