"""The crowd: where every entity stands and faces, and each pedestrian's status and fear.

:class:`Crowd` is the world's physical state of people. Rows ``0..n-1`` of its arrays are the
pedestrians (``agent.index``), row ``n`` the adversary. A position has one home, :attr:`Crowd.pos`;
the occupancy raster (who holds each cell, for collisions and sightings) and the Mesa cell of
each agent (``agent.cell``, the view Mesa's discrete space needs) are kept in step with it by
the crowd's own methods (:meth:`Crowd.move`, :meth:`Crowd.leave`), the only places that write a
position.
"""

from __future__ import annotations

import copyreg
from typing import NamedTuple

import mesa
import numpy as np
from mesa.discrete_space import OrthogonalMooreGrid
from mesa.discrete_space.grid import pickle_gridcell
from mesa.discrete_space.property_layer import create_property_accessors

from mesa_llm_mobility.evacuation.affect import recovery_rate, sensitivity
from mesa_llm_mobility.evacuation.agents import ACTIVE, Adversary, Pedestrian
from mesa_llm_mobility.evacuation.movement import resolve_moves
from mesa_llm_mobility.evacuation.perception import heading_index
from mesa_llm_mobility.evacuation.personality import Personality


class MoveOutcome(NamedTuple):
    """What :meth:`Crowd.move` did."""

    moved: list[int]
    """Rows of the entities that changed cell, ascending (the adversary is row ``n``)."""
    status: list[int]
    """Per row, the resolution's status (:data:`~.movement.MOVED`, ``SIDESTEP``, ...)."""


class Crowd:
    """The pedestrians and the adversary: positions, headings, status, fear.

    Args:
        model: The Mesa model the agents belong to.
        shape: The plaza's ``(width, height)`` in cells.
        profiles: One personality per pedestrian (row order).
        starts: Their start cells.
        threat_cell: The adversary's start cell.
        rng: The model's generator (the initial headings are drawn from it).

    Attributes:
        n_pedestrians: Pedestrians ``n`` (the adversary is row ``n``).
        pos: ``(n + 1, 2)`` cells: the one home of every position.
        heading: ``(n + 1,)`` heading indices (0 east, counter-clockwise).
        status: ``(n,)`` :data:`~.agents.ACTIVE`, ``EVACUATED`` or ``REACHED``.
        fear: ``(n,)`` engine-computed fear in [0, 1].
        kappa: ``(n,)`` fear sensitivity (paper Eq. 5).
        rho: ``(n,)`` fear recovery rate per second (paper Eq. 5).
        occupancy: ``[x, y]`` row of the entity holding the cell, ``-1`` free (kept by
            :meth:`move` and :meth:`leave`).
        grid: Mesa's grid, holding each agent's ``cell`` (kept by :meth:`move` and :meth:`leave`).
        pedestrians: The pedestrian agents, by row.
        adversary: The adversary agent.
        by_uid: Pedestrians by agent id.
        ids: ``(n + 1,)`` agent id of every row.
        resolved_step: ``(n,)`` step at which each pedestrian evacuated or was reached (``-1``).
        exit_used: Opening id each evacuated pedestrian left through, by row.
    """

    def __init__(
        self,
        model: mesa.Model,
        shape: tuple[int, int],
        profiles: list[Personality],
        starts: list[tuple[int, int]],
        threat_cell: tuple[int, int],
        rng: np.random.Generator,
    ) -> None:
        width, height = shape
        n = len(profiles)
        self.n_pedestrians = n
        self.grid = OrthogonalMooreGrid(
            (width, height), torus=False, capacity=1, random=model.random
        )
        self.pos = np.zeros((n + 1, 2), dtype=np.int64)
        self.heading = np.zeros(n + 1, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int8)
        self.fear = np.zeros(n)
        neuroticism = np.array([p.N for p in profiles], dtype=float)
        self.kappa = sensitivity(neuroticism)
        self.rho = recovery_rate(neuroticism)
        self.occupancy = np.full((width, height), -1, dtype=np.int64)
        self.pedestrians: list[Pedestrian] = []
        for i, (profile, start) in enumerate(zip(profiles, starts, strict=True)):
            agent = Pedestrian(model, i, profile, start, height)
            self.pedestrians.append(agent)
            self._place(agent, start)
        self.heading[:n] = rng.integers(0, 8, size=n)
        self.adversary = Adversary(model, n)
        self._place(self.adversary, threat_cell)
        self.heading[n] = rng.integers(0, 8)
        self.by_uid = {a.unique_id: a for a in self.pedestrians}
        self.ids = np.array(
            [a.unique_id for a in (*self.pedestrians, self.adversary)], dtype=np.int64
        )
        self.resolved_step = np.full(n, -1, dtype=np.int64)
        self.exit_used: dict[int, str] = {}

    def _place(self, agent: Pedestrian | Adversary, cell: tuple[int, int]) -> None:
        """Put an agent on its first cell."""
        agent.cell = self.grid[cell]
        self.pos[agent.index] = cell
        self.occupancy[cell] = agent.index

    @property
    def adversary_row(self) -> int:
        """The adversary's row (``n``)."""
        return self.n_pedestrians

    def uid(self, row: int) -> int:
        """The agent id of row ``row`` (the last row is the adversary)."""
        return int(self.ids[row])

    def active_indices(self) -> np.ndarray:
        """Rows of the pedestrians still in the plaza."""
        return np.flatnonzero(self.status == ACTIVE)

    def count(self, status: int) -> int:
        """Pedestrians with this status."""
        return int(np.count_nonzero(self.status == status))

    def move(
        self,
        proposals: np.ndarray,
        passable: np.ndarray,
        rng: np.random.Generator,
        forbidden: dict[int, np.ndarray],
    ) -> MoveOutcome:
        """Resolve everyone's proposed cell and move them (paper Sec. 2.3.6).

        The active pedestrians and the adversary take part (:func:`~.movement.resolve_moves`);
        positions, occupancy, the Mesa cells and the headings of those who moved are updated.

        Args:
            proposals: ``(n + 1, 2)`` wanted cells (a row's own cell: no move).
            passable: ``[x, y]`` cells that may be entered now.
            rng: The generator of the random order and the sidestep choices.
            forbidden: Cells some rows may not enter (:func:`~.movement.resolve_moves`).

        Returns:
            Who moved and every row's resolution status.
        """
        n = self.n_pedestrians
        old = self.pos
        result = resolve_moves(
            old,
            proposals,
            np.append(self.status == ACTIVE, True),
            passable,
            self.occupancy,
            rng,
            forbidden,
        )
        self.pos = result.positions
        moved = np.flatnonzero(np.any(self.pos != old, axis=1)).tolist()
        movers = [self.adversary if e == n else self.pedestrians[e] for e in moved]
        # vacate first: Mesa cells hold one agent, and followers enter freed cells
        for agent in movers:
            agent.cell = None
        headings = []
        for agent, (x, y), (ox, oy) in zip(
            movers, self.pos[moved].tolist(), old[moved].tolist(), strict=True
        ):
            headings.append(heading_index(x - ox, y - oy))
            agent.cell = self.grid[(x, y)]
        self.heading[moved] = headings
        return MoveOutcome(moved, result.status.tolist())

    def resolve(self, rows: list[int], status: int, step: int) -> None:
        """Pedestrians ``rows`` evacuated or were reached at ``step`` (they stay on the grid)."""
        self.status[rows] = status
        self.resolved_step[rows] = step

    def leave(self, rows: list[int]) -> None:
        """Evacuated pedestrians ``rows`` leave the grid (their last cell stays in :attr:`pos`)."""
        for i in rows:
            self.occupancy[self.pos[i, 0], self.pos[i, 1]] = -1
            self.pedestrians[i].cell = None


def share_one_cell_class(grid: OrthogonalMooreGrid) -> None:
    """Give an unpickled grid's cells one cell class, set up as a new grid's is.

    Mesa 3.5 makes each grid's cell class at run time, registers how to pickle it and puts the
    grid's property layers (``empty``) on it; but it unpickles every cell into a class of its
    own, registered nowhere and, but for the first, without the layers' accessors. A restored
    model could then not be checkpointed again.
    """
    cells = list(grid._cells.values())
    if not cells:
        return
    klass = type(
        "GridCell",
        (type(cells[0]).__bases__[0],),
        {"_mesa_properties": set(), "__slots__": ()},
    )
    for layer in grid._mesa_property_layers.values():
        setattr(
            klass,
            layer.name,
            create_property_accessors(
                layer.data, docstring=f"accessor for {layer.name}"
            ),
        )
        klass._mesa_properties.add(layer.name)
    copyreg.pickle(klass, pickle_gridcell)
    for cell in cells:
        cell.__class__ = klass
    grid.cell_klass = klass
