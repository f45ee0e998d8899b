"""What the evacuation app draws: a frame of the plaza (live or from a saved run) and its map.

A :class:`PlazaFrame` is one step of the world as the app shows it: the terrain with the gates
in their state, the pedestrians still in the plaza (fear, shouting) and the bodies, the
adversary with its heading. :func:`frame_of_model` takes it from a live model,
:func:`frame_of_run` from a saved run's tables. :func:`draw_plaza` draws it: trees and walls,
exits and gates (named inside the plaza, beside them), pedestrians coloured by fear level
(bodies as crosses), the adversary with its 120 degree sight cone (12 m) and attack radius
(2 m), and a 15 m ring around each shouter, with the legend under the plaza.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch, Wedge

from mesa_llm_mobility.evacuation.adversary import ATTACK_RADIUS_M
from mesa_llm_mobility.evacuation.affect import FEAR_LEVELS, fear_level
from mesa_llm_mobility.evacuation.agents import ACTIVE, EVACUATED, REACHED
from mesa_llm_mobility.evacuation.communication import SHOUT_RADIUS_M
from mesa_llm_mobility.evacuation.layers import GATE_CODE, GateState
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, Plaza, Terrain
from mesa_llm_mobility.evacuation.routing import bearing_deg
from mesa_llm_mobility.evacuation.scene import CONE_DEG, SIGHT_RADIUS_M
from mesa_llm_mobility.evacuation.timing import DT_S
from mesa_llm_mobility.viz.labels import Label, place_labels

TERRAIN_COLOURS = ListedColormap(
    ["#3a3a3a", "#f4f1e8", "#3f8f3f", "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728"]
)
"""Wall, floor, tree, exit, gate open, gate closing, gate closed (terrain codes 0-6)."""

FEAR_COLOURS = dict(
    zip(FEAR_LEVELS, ("#2ca02c", "#e6c300", "#ff7f0e", "#d62728"), strict=True)
)


@dataclass(frozen=True)
class PlazaFrame:
    """One step of the plaza as the app shows it.

    Attributes:
        step: The step.
        codes: Terrain ``[x, y]`` with the gates in their state.
        pedestrians: ``agent_id, x, y, fear, status`` (``active`` or ``killed``), ``shouting``.
        adversary: ``(x, y, bearing_deg)`` (0 north, 90 east).
        evacuated: Pedestrians out so far.
        killed: Pedestrians reached so far.
    """

    step: int
    codes: np.ndarray
    pedestrians: pd.DataFrame
    adversary: tuple[int, int, float]
    evacuated: int
    killed: int

    @property
    def time_s(self) -> float:
        """Simulated seconds."""
        return self.step * DT_S

    @property
    def active(self) -> int:
        """Pedestrians still in the plaza."""
        return int((self.pedestrians["status"] == "active").sum())

    def clock(self) -> str:
        """``t = 12.3 s: 9 in the plaza, 1 evacuated, 1 killed``."""
        return (
            f"t = {self.time_s:.1f} s: {self.active} in the plaza, "
            f"{self.evacuated} evacuated, {self.killed} killed"
        )


def frame_of_model(model: EvacuationModel) -> PlazaFrame:
    """The live model's current frame."""
    crowd = model.crowd
    n = crowd.n_pedestrians
    on_grid = np.flatnonzero((crowd.status == ACTIVE) | (crowd.status == REACHED))
    pedestrians = pd.DataFrame(
        {
            "agent_id": crowd.ids[on_grid].tolist(),
            "x": crowd.pos[on_grid, 0],
            "y": crowd.pos[on_grid, 1],
            "fear": crowd.fear[on_grid],
            "status": np.where(crowd.status[on_grid] == ACTIVE, "active", "killed"),
            "shouting": [
                bool(
                    crowd.pedestrians[i].shouting
                    and crowd.pedestrians[i].route_remaining > 0
                )
                for i in on_grid
            ],
        }
    )
    dx, dy = MOORE_STEPS[int(crowd.heading[n])]
    return PlazaFrame(
        step=model.tick,
        codes=model.scene.effective.codes.copy(),
        pedestrians=pedestrians,
        adversary=(int(crowd.pos[n, 0]), int(crowd.pos[n, 1]), bearing_deg(dx, dy)),
        evacuated=crowd.count(EVACUATED),
        killed=crowd.count(REACHED),
    )


def gate_state_at(events: pd.DataFrame, step: int) -> GateState:
    """The gates' state at ``step`` from a run's ``gate_state`` events."""
    gates = events[(events["event"] == "gate_state") & (events["step"] <= step)]
    if not len(gates):
        return GateState.OPEN
    return GateState(str(gates["detail"].iloc[-1]).split(":", 1)[1])


def frame_of_run(
    plaza: Plaza,
    positions: pd.DataFrame,
    events: pd.DataFrame,
    decisions: pd.DataFrame,
    step: int,
) -> PlazaFrame:
    """A saved run's frame at ``step`` (from its positions, events and decisions tables).

    A pedestrian counts as shouting when its last decision applied by ``step`` shouted.
    """
    rows = positions[positions["step"] == step]
    peds = rows[rows["kind"] == "pedestrian"]
    peds = peds[peds["situation"] != "evacuated"]
    adversary = rows[rows["kind"] == "adversary"]
    codes = plaza.raw.copy()
    codes[plaza.raw == Terrain.GATE_OPEN] = GATE_CODE[gate_state_at(events, step)]
    applied = decisions[decisions["applied_step"] <= step]
    shouting = (
        applied.sort_values("applied_step").groupby("agent_id")["shout"].last()
        if len(applied)
        else pd.Series(dtype=bool)
    )
    resolved = events[events["step"] <= step]
    frame = pd.DataFrame(
        {
            "agent_id": peds["agent_id"].to_numpy(),
            "x": peds["x"].to_numpy(),
            "y": peds["y"].to_numpy(),
            "fear": peds["fear"].to_numpy(float),
            "status": np.where(peds["situation"] == "reached", "killed", "active"),
        }
    )
    frame["shouting"] = [
        bool(shouting.get(a, False)) and s == "active"
        for a, s in zip(frame["agent_id"], frame["status"], strict=True)
    ]
    ax, ay, heading = (
        (
            int(adversary["x"].iloc[0]),
            int(adversary["y"].iloc[0]),
            float(adversary["heading"].iloc[0]),
        )
        if len(adversary)
        else (*plaza.threat_cell, 0.0)
    )
    return PlazaFrame(
        step=step,
        codes=codes,
        pedestrians=frame,
        adversary=(ax, ay, heading),
        evacuated=int((resolved["event"] == "evacuated").sum()),
        killed=int((frame["status"] == "killed").sum()),
    )


PLAZA_TEXT_POINTS = 10.0
"""Smallest text of the plaza map (its legend); exit names are one point larger."""
PLAZA_WIDTH_IN = 7.0
"""Width of the plaza map in inches (its height follows the plaza's shape)."""
_LEGEND_IN = 0.7
OPENING_STYLE = {
    "fontsize": PLAZA_TEXT_POINTS + 1,
    "weight": "bold",
    "color": "#0d3c61",
    "zorder": 6,
    "gid": "opening",
    "bbox": {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "#1f77b4", "lw": 0.6},
}
"""How an exit's or a gate's name is written on the map."""


def draw_plaza(
    frame: PlazaFrame,
    plaza: Plaza,
    selected: int | None = None,
    size_in: float = PLAZA_WIDTH_IN,
) -> Figure:
    """The plaza map of a frame (see the module docstring); ``selected`` is ringed.

    The map has no title: the app writes the clock above it. The legend sits under the
    plaza; exit and gate names inside it, beside their opening.
    """
    cell = plaza.cell_size_m
    height = size_in * plaza.height / plaza.width + _LEGEND_IN
    fig = Figure(figsize=(size_in, height))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.0, _LEGEND_IN / height, 1.0, 1 - _LEGEND_IN / height))
    ax.imshow(
        frame.codes.T,
        origin="lower",
        cmap=TERRAIN_COLOURS,
        vmin=0,
        vmax=6,
        interpolation="nearest",
    )
    ax.set_xlim(-0.5, plaza.width - 0.5)
    ax.set_ylim(-0.5, plaza.height - 0.5)
    ax.set_xticks([])
    ax.set_yticks([])
    place_labels(
        ax,
        [Label(o.opening_id, *o.center, OPENING_STYLE) for o in plaza.openings],
        gap_points=PLAZA_TEXT_POINTS,
    )
    peds = frame.pedestrians
    for row in peds[peds["shouting"]].itertuples():
        ax.add_patch(
            Circle(
                (row.x, row.y),
                SHOUT_RADIUS_M / cell,
                fill=False,
                ls=":",
                lw=0.8,
                color="#9467bd",
            )
        )
    alive = peds[peds["status"] == "active"]
    ax.scatter(
        alive["x"],
        alive["y"],
        s=26,
        c=[FEAR_COLOURS[fear_level(f)] for f in alive["fear"]],
        edgecolors="black",
        linewidths=0.5,
        zorder=3,
    )
    dead = peds[peds["status"] == "killed"]
    ax.scatter(dead["x"], dead["y"], s=30, marker="x", color="black", zorder=3)
    x, y, bearing = frame.adversary
    angle = (
        90.0 - bearing
    )  # compass bearing -> matplotlib's counter-clockwise from east
    ax.add_patch(
        Wedge(
            (x, y),
            SIGHT_RADIUS_M / cell,
            angle - CONE_DEG / 2,
            angle + CONE_DEG / 2,
            alpha=0.15,
            color="#d62728",
        )
    )
    ax.add_patch(
        Circle((x, y), ATTACK_RADIUS_M / cell, fill=False, color="#d62728", lw=1.0)
    )
    ax.scatter([x], [y], s=60, marker="^", color="#8b0000", zorder=4)
    if selected is not None:
        mine = peds[peds["agent_id"] == selected]
        if len(mine):
            ax.scatter(
                mine["x"],
                mine["y"],
                s=160,
                facecolors="none",
                edgecolors="#1f77b4",
                linewidths=2,
                zorder=5,
            )
    handles = [
        Line2D([], [], ls="", marker="o", color=FEAR_COLOURS[level], label=level)
        for level in FEAR_LEVELS
    ] + [
        Line2D([], [], ls="", marker="x", color="black", label="killed"),
        Line2D([], [], ls="", marker="^", color="#8b0000", label="adversary"),
        Patch(color="#d62728", alpha=0.15, label=f"its sight ({SIGHT_RADIUS_M:g} m)"),
        Line2D([], [], ls=":", color="#9467bd", label=f"shout ({SHOUT_RADIUS_M:g} m)"),
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        fontsize=PLAZA_TEXT_POINTS,
        ncols=4,
        frameon=False,
    )
    return fig


def pedestrian_markers(frame: PlazaFrame) -> pd.DataFrame:
    """``agent, x, y`` of the pedestrians on the map (for click selection)."""
    peds = frame.pedestrians
    return pd.DataFrame(
        {"agent": peds["agent_id"].astype(int), "x": peds["x"], "y": peds["y"]}
    )
