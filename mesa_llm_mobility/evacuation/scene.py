"""The scene: the plaza as the engine knows it, fixed but for the gates.

:class:`Scene` holds what every phase reads and no pedestrian owns: the plaza and its
effective layer (the physical authority, with the gates' current state), the grid graph of
the raw layer, the perception rules (the 12 m / 120 degree view cone and the initial look
around), the openings' cells in the arrays the phases use, the adversary's patrol waypoints
and its cached distance fields, and the pocket cells of the outcome measures.
"""

from __future__ import annotations

import numpy as np

from mesa_llm_mobility.evacuation.layers import EffectiveLayer, GateSchedule
from mesa_llm_mobility.evacuation.perception import ViewGeometry
from mesa_llm_mobility.evacuation.placement import inner_cell, pocket_cells
from mesa_llm_mobility.evacuation.plaza import Plaza, passable_mask
from mesa_llm_mobility.evacuation.routing import GridGraph

SIGHT_RADIUS_M = 12.0
"""Sight radius of an adult pedestrian and of the adversary (paper Sec. 2.2.2)."""

CONE_DEG = 120.0
"""View cone of an adult (paper Sec. 2.2.2)."""

INITIAL_CHEBYSHEV = 3
"""Chebyshev radius of the first look around at initialisation (paper Sec. 2.2.2)."""


class Scene:
    """The plaza, its effective layer and the fixed things derived from it.

    Args:
        plaza: The plaza.
        gate_schedule: When the gates close.

    Attributes:
        plaza: The plaza (raw and semantic layers).
        cell_size_m: Cell side in metres.
        effective: The effective layer (gate states; passability and opacity now).
        graph: The raw layer's 8-neighbour grid graph.
        view: The view cone of pedestrians and adversary.
        initial_view: The first look around (Chebyshev square).
        opening_cells: Flat cells of each opening, in the plaza's opening order.
        opening_cells_flat: Every opening's cells in one array; opening ``k``'s are
            ``opening_bounds[k]:opening_bounds[k + 1]``.
        opening_bounds: See ``opening_cells_flat``.
        opening_mask: ``[x, y]`` opening cells.
        opening_number: Opening id -> its number in the plaza's order.
        waypoints: The adversary's patrol cells (exits 1-3, then gates 1-2).
        pocket: ``[x, y]`` pocket cells (at most two passable orthogonal neighbours).
        adversary_fields: The adversary's distance fields to its patrol waypoints (a cache).
    """

    def __init__(self, plaza: Plaza, gate_schedule: GateSchedule) -> None:
        height = plaza.height
        self.plaza = plaza
        self.cell_size_m = plaza.cell_size_m
        self.effective = EffectiveLayer(plaza, gate_schedule)
        self.graph = GridGraph(plaza.raw)
        self.view = ViewGeometry.cone(SIGHT_RADIUS_M / self.cell_size_m, CONE_DEG)
        self.initial_view = ViewGeometry.square(INITIAL_CHEBYSHEV)
        self.opening_cells = [
            np.array([x * height + y for x, y in o.cells]) for o in plaza.openings
        ]
        self.opening_cells_flat = np.concatenate(self.opening_cells)
        self.opening_bounds = np.cumsum([0, *map(len, self.opening_cells)])
        self.opening_mask = plaza.opening_index >= 0
        self.opening_number = {o.opening_id: k for k, o in enumerate(plaza.openings)}
        self.waypoints = tuple(
            inner_cell(plaza, o.center) for o in (*plaza.exits, *plaza.gates)
        )
        self.pocket = pocket_cells(passable_mask(plaza.raw))
        self.adversary_fields: dict[tuple[int, int], np.ndarray] = {}
