"""The four layers of the plaza: raw, semantic, effective (with gate states) and private beliefs.

The raw and semantic layers come from :class:`~mesa_llm_mobility.evacuation.plaza.Plaza`. The
effective layer adds the current gate states and is the physical authority for movement and line
of sight. Beliefs are private: each pedestrian knows only the cells it perceived, with the step of
its last observation, and the gate state it last saw (paper Sec. 2.2.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import numpy as np

from mesa_llm_mobility.evacuation.plaza import (
    OPAQUE_CODES,
    Plaza,
    Terrain,
    passable_mask,
)


class GateState(StrEnum):
    """States of an entrance gate during the emergency."""

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


GATE_CODE = {
    GateState.OPEN: Terrain.GATE_OPEN,
    GateState.CLOSING: Terrain.GATE_CLOSING,
    GateState.CLOSED: Terrain.GATE_CLOSED,
}


@dataclass(frozen=True)
class GateSchedule:
    """When gates start closing and become closed, in seconds after the emergency starts (t = 0).

    The paper gives no closing start; its Fig. 8 example has the gate closed at 11.67 s, which is
    the default closed time here. The closing start (5 s) is this implementation's choice.
    """

    closing_at_s: float = 5.0
    closed_at_s: float = 35.0 / 3.0

    def __post_init__(self) -> None:
        if not 0 <= self.closing_at_s <= self.closed_at_s:
            raise ValueError(
                f"need 0 <= closing_at_s <= closed_at_s, got {self.closing_at_s}, {self.closed_at_s}"
            )

    def state_at(self, time_s: float) -> GateState:
        """Gate state at simulated time ``time_s`` (open -> closing -> closed)."""
        if time_s >= self.closed_at_s - 1e-9:
            return GateState.CLOSED
        if time_s >= self.closing_at_s - 1e-9:
            return GateState.CLOSING
        return GateState.OPEN


class EffectiveLayer:
    """Raw + semantic layers + current gate states: the physical authority.

    Attributes:
        codes: ``[x, y]`` terrain codes now.
        passable: ``[x, y]`` cells an entity may enter now.
        opaque: ``[x, y]`` cells that block line of sight.
        gate_state: The current gate state.
    """

    def __init__(self, plaza: Plaza, schedule: GateSchedule) -> None:
        self.plaza = plaza
        self.schedule = schedule
        self.codes = plaza.raw.copy()
        self.gate_mask = plaza.raw == Terrain.GATE_OPEN
        self.opaque = np.isin(plaza.raw, OPAQUE_CODES)
        self.gate_state = GateState.OPEN
        self.passable = passable_mask(self.codes)
        self._snapshot: tuple[GateState, np.ndarray] | None = None
        """The last :meth:`codes_snapshot` and the gate state it was taken in."""

    def codes_snapshot(self) -> np.ndarray:
        """A read-only flat copy of :attr:`codes`, shared until the gate state changes.

        A symbolic view renders lazily, so it keeps the codes of the moment it was made; views
        made while the terrain is unchanged share one snapshot instead of a plaza-sized copy
        each. The codes change only with the gate state (:meth:`update`).
        """
        if self._snapshot is None or self._snapshot[0] != self.gate_state:
            snap = self.codes.ravel().copy()
            snap.flags.writeable = False
            self._snapshot = (self.gate_state, snap)
        return self._snapshot[1]

    def update(self, time_s: float) -> GateState | None:
        """Apply the gate schedule at ``time_s``; return the new state when it changed."""
        state = self.schedule.state_at(time_s)
        if state == self.gate_state:
            return None
        self.gate_state = state
        self.codes[self.gate_mask] = GATE_CODE[state]
        self.passable = passable_mask(self.codes)
        return state


class BeliefStore:
    """Private belief maps of ``n`` pedestrians, without an ``n x cells`` array of steps.

    Terrain is static except gates, so a belief is which cells the pedestrian perceived (one bit
    per cell, packed), the last step it perceived each opening cell (``-1``: never; the age of
    what it knows about the openings), the gate state it last saw per gate cell, and the
    bounding box of everything it perceived (routing works inside that box).
    """

    def __init__(self, plaza: Plaza, n_agents: int) -> None:
        self.width, self.height = plaza.raw.shape
        self.static_codes = plaza.raw.ravel().copy()
        self.gate_flat = np.flatnonzero(plaza.raw.ravel() == Terrain.GATE_OPEN)
        self._gate_slot = np.full(self.static_codes.size, -1, dtype=np.int32)
        self._gate_slot[self.gate_flat] = np.arange(self.gate_flat.size)
        self.opening_flat = np.flatnonzero(plaza.opening_index.ravel() >= 0)
        self._opening_slot = np.full(self.static_codes.size, -1, dtype=np.int32)
        self._opening_slot[self.opening_flat] = np.arange(self.opening_flat.size)
        self._row_bytes = (self.static_codes.size + 7) // 8
        self._known_bits = np.zeros((n_agents, self._row_bytes), dtype=np.uint8)
        self.opening_seen_step = np.full(
            (n_agents, self.opening_flat.size), -1, dtype=np.int16
        )
        self.gate_seen = np.full(
            (n_agents, self.gate_flat.size), Terrain.UNKNOWN, dtype=np.uint8
        )
        self._y_of_cell = np.tile(np.arange(self.height, dtype=np.int32), self.width)
        big = np.iinfo(np.int32).max
        self.box = np.tile(np.array([big, -1, big, -1], dtype=np.int32), (n_agents, 1))
        """Per agent: smallest and largest x, smallest and largest y it perceived."""
        self._viewpoint = np.full((n_agents, 3), -1, dtype=np.int64)
        """Per agent: x, y and heading of its last :meth:`observe_views` (``-1``: none)."""
        self._viewpoint_opaque: np.ndarray | None = None
        self.pairs_written = 0
        """Pairs :meth:`observe_views` examined for new cells (those of new views) so far."""

    def observe(
        self,
        agents: np.ndarray,
        flat_cells: np.ndarray,
        step: int,
        effective_codes: np.ndarray,
    ) -> None:
        """Record that ``agents[k]`` perceived ``flat_cells[k]`` at ``step`` (pairs, same length)."""
        if agents.size == 0:
            return
        self._observe_cells(agents, flat_cells)
        self._observe_openings(agents, flat_cells, step, effective_codes)

    def observe_views(
        self,
        rows: np.ndarray,
        viewpoints: np.ndarray,
        starts: np.ndarray,
        flat_cells: np.ndarray,
        opaque: np.ndarray,
        step: int,
        effective_codes: np.ndarray,
    ) -> None:
        """:meth:`observe` for one perception of distinct viewers, skipping repeated views.

        Args:
            rows: Agent row of each viewer (distinct).
            viewpoints: ``(x, y, heading)`` of each viewer.
            starts: Where each viewer's pairs start in ``flat_cells``, and their end
                (``len(rows) + 1`` offsets, a perception's ``start``).
            flat_cells: Flat cell of each pair.
            opaque: The line-of-sight grid the perception used.
            step: The step of the perception.
            effective_codes: Terrain codes now (gate states).

        A viewer that perceives from the same cell and heading as at its last call, on the same
        ``opaque`` grid, perceives the same cells, so its known bits and box would not change
        (an OR and a min/max already applied) and are not written; its opening steps and gate
        states are written again like every viewer's.
        """
        if flat_cells.size == 0:
            return
        if self._viewpoint_opaque is None or not np.array_equal(
            self._viewpoint_opaque, opaque
        ):
            self._viewpoint[:] = -1  # a new line-of-sight grid: every view is new
            self._viewpoint_opaque = opaque.copy()
        new_view = np.any(self._viewpoint[rows] != viewpoints, axis=1)
        self._viewpoint[rows] = viewpoints
        self.pairs_written += _compiled_observe_views()(
            self._known_bits,
            self.box,
            self.opening_seen_step,
            self.gate_seen,
            self._opening_slot,
            self._gate_slot,
            effective_codes.ravel(),
            rows.astype(np.int64, copy=False),
            new_view,
            starts.astype(np.int64, copy=False),
            flat_cells.astype(np.int64, copy=False),
            self.height,
            step,
        )

    def _observe_cells(
        self,
        agents: np.ndarray,
        flat_cells: np.ndarray,
        starts: np.ndarray | None = None,
    ) -> None:
        # Only pairs whose bit is not yet set are written: a cell already known lies inside the
        # box already (bits and box are only ever set together, here), so the box can grow only
        # from the newly known cells, and OR-ing a set bit again changes nothing.
        if agents.size == 0:
            return
        known_bytes = self._known_bits.reshape(-1)
        at = agents * self._row_bytes + (flat_cells >> 3)
        bit = np.left_shift(np.uint8(1), (flat_cells & 7).astype(np.uint8))
        new = np.flatnonzero((known_bytes[at] & bit) == 0)
        if new.size == 0:
            return
        if new.size < at.size:
            at, bit, agents, flat_cells = (
                at[new],
                bit[new],
                agents[new],
                flat_cells[new],
            )
            starts = None
        np.bitwise_or.at(known_bytes, at, bit)
        self._grow_boxes(agents, flat_cells, starts)

    def _observe_openings(
        self,
        agents: np.ndarray,
        flat_cells: np.ndarray,
        step: int,
        effective_codes: np.ndarray,
    ) -> None:
        slots = self._opening_slot[flat_cells]
        hit = np.flatnonzero(slots >= 0)
        if hit.size:
            self.opening_seen_step[agents[hit], slots[hit]] = step
            gate_slots = self._gate_slot[
                flat_cells[hit]
            ]  # gate cells are opening cells
            gates = hit[gate_slots >= 0]
            self.gate_seen[agents[gates], gate_slots[gate_slots >= 0]] = (
                effective_codes.ravel()[flat_cells[gates]]
            )

    def _grow_boxes(
        self,
        agents: np.ndarray,
        flat_cells: np.ndarray,
        starts: np.ndarray | None = None,
    ) -> None:
        # one reduction per run of equal agents (perception pairs come grouped by viewer)
        if starts is None:
            starts = _run_starts(agents)
        who = agents[starts]
        # x from the extreme flat cells (x-major order), y by a table (cheaper than divmod)
        lowest = np.minimum.reduceat(flat_cells, starts)
        highest = np.maximum.reduceat(flat_cells, starts)
        ys = self._y_of_cell[flat_cells]
        for column, reduce, values in (
            (0, np.minimum, lowest // self.height),
            (1, np.maximum, highest // self.height),
            (2, np.minimum, np.minimum.reduceat(ys, starts)),
            (3, np.maximum, np.maximum.reduceat(ys, starts)),
        ):
            reduce.at(self.box[:, column], who, values)

    def known(self, agents: np.ndarray | int, flat_cells: np.ndarray) -> np.ndarray:
        """Whether each agent perceived each cell: ``(len(agents), len(cells))`` (1-D for one)."""
        flat_cells = np.asarray(flat_cells, dtype=np.int64)
        data = self._known_bits[np.asarray(agents)[..., None], flat_cells >> 3]
        return (data >> (flat_cells & 7).astype(np.uint8)) & 1 == 1

    def knows(self, agent: int, flat: int) -> bool:
        """Whether ``agent`` perceived the cell ``flat``."""
        return bool((int(self._known_bits[agent, flat >> 3]) >> (flat & 7)) & 1)

    def last_seen(self, agent: int, opening_cells: np.ndarray) -> np.ndarray:
        """Last step ``agent`` perceived each of ``opening_cells`` (flat opening cells; ``-1``: never)."""
        return self.opening_seen_step[agent, self._opening_slot[opening_cells]]

    def window(
        self, agent: int, cell: tuple[int, int], margin: int = 1
    ) -> BeliefWindow:
        """The box of everything ``agent`` perceived and ``cell``, widened by ``margin`` cells."""
        x_lo, x_hi, y_lo, y_hi = (int(v) for v in self.box[agent])
        x_lo, x_hi = min(x_lo, cell[0]), max(x_hi, cell[0])
        y_lo, y_hi = min(y_lo, cell[1]), max(y_hi, cell[1])
        x0, width = _span(x_lo - margin, x_hi + margin, self.width)
        y0, height = _span(y_lo - margin, y_hi + margin, self.height)
        return BeliefWindow(x0, y0, width, height, self.height)

    def codes_in(self, agent: int, window: BeliefWindow) -> np.ndarray:
        """Believed terrain codes of one agent inside ``window`` (``[x, y]``, ``UNKNOWN`` unseen)."""
        codes = np.empty((window.width, window.height), dtype=np.uint8)
        _compiled_window_codes()(
            self._known_bits[agent],
            self.static_codes,
            self.gate_flat,
            self.gate_seen[agent],
            self.height,
            window.x0,
            window.y0,
            int(Terrain.UNKNOWN),
            codes,
        )
        return codes


@cache
def _compiled_window_codes():
    """:func:`_window_codes` compiled, once a process (Numba imported only then)."""
    import numba  # noqa: PLC0415  (no import-time cost)

    return numba.njit(cache=True, nogil=True)(_window_codes)


def _window_codes(
    known_bits, static_codes, gate_flat, gate_seen, height, x0, y0, unknown, codes
):
    """One agent's believed codes of a window, written into ``codes``.

    ``codes`` is ``[x, y]`` from ``x0, y0``. A cell whose bit is set in ``known_bits`` (flat
    cell ``f`` is bit ``f & 7`` of byte ``f >> 3``) gets its static code, a known gate cell
    its state as last seen (``gate_seen``), every other cell ``unknown``.
    """
    width, window_height = codes.shape
    for lx in range(width):
        row = (x0 + lx) * height + y0
        for ly in range(window_height):
            flat = row + ly
            if (known_bits[flat >> 3] >> (flat & 7)) & 1:
                codes[lx, ly] = static_codes[flat]
            else:
                codes[lx, ly] = unknown
    for g in range(gate_flat.size):
        flat = gate_flat[g]
        lx = flat // height - x0
        ly = flat % height - y0
        inside = 0 <= lx < width and 0 <= ly < window_height
        if inside and (known_bits[flat >> 3] >> (flat & 7)) & 1:
            codes[lx, ly] = gate_seen[g]


@cache
def _compiled_observe_views():
    """:func:`_observe_views` compiled, once a process (Numba imported only then)."""
    import numba  # noqa: PLC0415  (no import-time cost)

    return numba.njit(cache=True, nogil=True)(_observe_views)


def _observe_views(
    known_bits,
    box,
    opening_seen_step,
    gate_seen,
    opening_slot,
    gate_slot,
    effective_flat,
    rows,
    new_view,
    starts,
    flat_cells,
    height,
    step,
):
    """One pass over a perception's pairs: what :meth:`BeliefStore.observe` writes.

    Viewer ``v`` (agent ``rows[v]``) perceived ``flat_cells[starts[v]:starts[v + 1]]``. The
    cells of a new view set their known bits and grow the agent's box; every viewer's opening
    cells get ``step`` and its gate cells their state now. Every write is an OR, a minimum, a
    maximum or a value that does not depend on the order, so the result is that of the array
    passes. Returns the pairs examined for new cells.
    """
    examined = 0
    for v in range(rows.size):
        agent = rows[v]
        fresh = new_view[v]
        for p in range(starts[v], starts[v + 1]):
            flat = flat_cells[p]
            if fresh:
                examined += 1
                byte, bit = flat >> 3, 1 << (flat & 7)
                if not known_bits[agent, byte] & bit:
                    known_bits[agent, byte] |= bit
                    x, y = flat // height, flat % height
                    box[agent, 0] = min(box[agent, 0], x)
                    box[agent, 1] = max(box[agent, 1], x)
                    box[agent, 2] = min(box[agent, 2], y)
                    box[agent, 3] = max(box[agent, 3], y)
            slot = opening_slot[flat]
            if slot >= 0:
                opening_seen_step[agent, slot] = step
                gate = gate_slot[flat]
                if gate >= 0:
                    gate_seen[agent, gate] = effective_flat[flat]
    return examined


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts (``values`` non-empty)."""
    return np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1))


WINDOW_STEP = 16
"""Belief windows are a multiple of this many cells wide and high (few shapes: cached graphs)."""


def _span(lo: int, hi: int, size: int) -> tuple[int, int]:
    """Start and length of a run of cells inside ``0..size - 1`` that covers ``lo..hi``.

    The length is a multiple of ``WINDOW_STEP`` where the plaza allows.
    """
    lo, hi = max(0, lo), min(size - 1, hi)
    length = min(size, -(-(hi - lo + 1) // WINDOW_STEP) * WINDOW_STEP)
    return min(lo, size - length), length


@dataclass(frozen=True)
class BeliefWindow:
    """A rectangle of the plaza: cells ``x0 <= x < x0 + width``, ``y0 <= y < y0 + height``.

    Local flat cells are ``(x - x0) * height + (y - y0)``; plaza flat cells
    ``x * plaza_height + y``. Both orders agree, so a search inside the window visits cells and
    edges in the same order as one over the plaza.
    """

    x0: int
    y0: int
    width: int
    height: int
    plaza_height: int

    @classmethod
    def whole(cls, width: int, height: int) -> BeliefWindow:
        """The window covering a whole ``width x height`` plaza."""
        return cls(0, 0, width, height, height)

    @property
    def n_cells(self) -> int:
        """Cells of the window."""
        return self.width * self.height

    def contains(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Which plaza coordinates lie inside the window."""
        return (
            (xs >= self.x0)
            & (xs < self.x0 + self.width)
            & (ys >= self.y0)
            & (ys < self.y0 + self.height)
        )

    def plaza_cells(self) -> np.ndarray:
        """``[x, y]`` local -> plaza flat cell."""
        return (
            np.arange(self.x0, self.x0 + self.width)[:, None] * self.plaza_height
        ) + (np.arange(self.y0, self.y0 + self.height)[None, :])

    def to_local(self, flat: np.ndarray | int) -> np.ndarray:
        """Plaza flat cells -> local flat cells (``-1`` outside the window)."""
        xs, ys = np.divmod(np.asarray(flat, dtype=np.int64), self.plaza_height)
        local = (xs - self.x0) * self.height + (ys - self.y0)
        return np.where(self.contains(xs, ys), local, -1)

    def to_plaza(self, local: np.ndarray | list[int]) -> np.ndarray:
        """Local flat cells -> plaza flat cells."""
        lx, ly = np.divmod(np.asarray(local, dtype=np.int64), self.height)
        return (lx + self.x0) * self.plaza_height + (ly + self.y0)

    def crop(self, grid: np.ndarray) -> np.ndarray:
        """The window's part of a plaza-sized ``[x, y]`` array."""
        return grid[self.x0 : self.x0 + self.width, self.y0 : self.y0 + self.height]
