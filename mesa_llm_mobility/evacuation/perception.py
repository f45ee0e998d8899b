"""Private perception: view cone, sight radius and line of sight, vectorised over all viewers.

The visible set (paper Eq. 1) is

    F_i = { q : ||x_q - x_i|| <= R_i,  angle(x_q - x_i, h_i) <= phi_i / 2,  LOS(x_i, x_q; G_t) },

and the perception map (Eq. 2) is ``P_i = F_i | N_i`` with ``N_i`` the Moore neighbourhood (plus the
viewer's own cell). At initialisation a pedestrian also sees every cell within Chebyshev radius 3,
subject to line of sight.

Line of sight is a ray trace on the effective grid: the cells between viewer and target are the
chain obtained by stepping back one Chebyshev unit toward the viewer, ``parent(d) = round(d (n-1)/n)``
with ``n = max(|dx|, |dy|)`` and rounding half away from zero. ``q`` is visible when no cell of its
chain (the viewer's cell and ``q`` itself excluded) is opaque, so a wall is seen but hides what lies
behind it. Because every offset's chain runs through its parent, visibility is one boolean
propagation per Chebyshev ring, done for all viewers of one heading at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache

import numpy as np

from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS

HEADING_VECTORS = np.array(MOORE_STEPS, dtype=float)
"""Unit-grid vectors of the eight headings (index 0 = east, counter-clockwise, 45 degrees apart)."""


def round_half_away(values: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, halves away from zero (symmetric, unlike ``np.round``)."""
    return (np.sign(values) * np.floor(np.abs(values) + 0.5)).astype(np.int64)


def parent_offset(dx: int, dy: int) -> tuple[int, int]:
    """The next cell toward the viewer on the line-of-sight chain of offset ``(dx, dy)``."""
    n = max(abs(dx), abs(dy))
    if n <= 1:
        return 0, 0
    p = round_half_away(np.array([dx * (n - 1) / n, dy * (n - 1) / n]))
    return int(p[0]), int(p[1])


@dataclass(frozen=True, eq=False)
class _HeadingGroup:
    dx: np.ndarray
    dy: np.ndarray
    parent: np.ndarray  # local index of the parent, -1 for the viewer's own cell
    in_view: (
        np.ndarray
    )  # offsets that belong to P (the rest are ancestors needed for LOS)
    rings: tuple[tuple[int, int], ...]


@dataclass(frozen=True, eq=False)
class ViewGeometry:
    """Precomputed offsets for one perception rule (sight radius, cone, or a Chebyshev square).

    Attributes:
        radius_cells: The largest Chebyshev distance involved.
        groups: One offset group per heading index (0..7).
    """

    radius_cells: int
    groups: tuple[_HeadingGroup, ...]

    @classmethod
    def cone(cls, radius_cells: float, cone_deg: float) -> ViewGeometry:
        """Sight radius ``radius_cells`` (Euclidean, cell centres) and a ``cone_deg`` view cone.

        The Moore neighbourhood is always included (Eq. 2).
        """
        return _cone_geometry(float(radius_cells), float(cone_deg))

    @classmethod
    def square(cls, chebyshev_radius: int) -> ViewGeometry:
        """All cells within a Chebyshev radius, any heading (the initial observation)."""
        return _square_geometry(int(chebyshev_radius))

    def flat_groups(
        self, padded_height: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The eight groups end to end, for the compiled :func:`perceive`.

        Returns:
            ``group_start`` (9 offsets: heading ``h`` is ``[group_start[h], group_start[h+1])``),
            each offset's flat step on a grid of ``padded_height`` rows, its parent's index in
            these arrays (-1 for the Moore ring) and whether it belongs to the view.
        """
        group_start, dx, dy, parent, in_view = self._concatenated
        return group_start, dx * padded_height + dy, parent, in_view

    @cached_property
    def scratch_row(self) -> int:
        """The most cells one viewer can perceive: its own and its largest group's."""
        return max(g.dx.size for g in self.groups) + 1

    @cached_property
    def _concatenated(self) -> tuple[np.ndarray, ...]:
        sizes = [g.dx.size for g in self.groups]
        group_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        parent = np.concatenate(
            [
                np.where(g.parent >= 0, g.parent + group_start[h], -1)
                for h, g in enumerate(self.groups)
            ]
        ).astype(np.int64)
        return (
            group_start,
            np.concatenate([g.dx for g in self.groups]).astype(np.int64),
            np.concatenate([g.dy for g in self.groups]).astype(np.int64),
            parent,
            np.concatenate([g.in_view for g in self.groups]).astype(np.bool_),
        )


def _build(offsets: np.ndarray, in_view_per_heading: np.ndarray) -> ViewGeometry:
    cheb = np.max(np.abs(offsets), axis=1)
    order = np.lexsort((offsets[:, 1], offsets[:, 0], cheb))
    offsets, cheb, in_view_per_heading = (
        offsets[order],
        cheb[order],
        in_view_per_heading[:, order],
    )
    index = {(int(x), int(y)): i for i, (x, y) in enumerate(offsets)}
    parent = np.array(
        [index.get(parent_offset(int(x), int(y)), -1) for x, y in offsets],
        dtype=np.int64,
    )
    if np.any((parent < 0) & (cheb > 1)):
        raise ValueError("line-of-sight chain leaves the offset set")
    groups = []
    for h in range(8):
        needed = in_view_per_heading[h].copy()
        for k in range(len(offsets) - 1, -1, -1):
            if needed[k] and parent[k] >= 0:
                needed[parent[k]] = True
        keep = np.flatnonzero(needed)
        local = np.full(len(offsets), -1, dtype=np.int64)
        local[keep] = np.arange(keep.size)
        local_parent = np.where(
            parent[keep] >= 0, local[np.maximum(parent[keep], 0)], -1
        )
        kept_cheb = cheb[keep]
        rings = tuple(
            (
                int(np.searchsorted(kept_cheb, r, "left")),
                int(np.searchsorted(kept_cheb, r, "right")),
            )
            for r in range(1, int(cheb.max()) + 1)
        )
        groups.append(
            _HeadingGroup(
                dx=offsets[keep, 0].copy(),
                dy=offsets[keep, 1].copy(),
                parent=local_parent,
                in_view=in_view_per_heading[h, keep].copy(),
                rings=tuple(r for r in rings if r[1] > r[0]),
            )
        )
    return ViewGeometry(int(cheb.max()), tuple(groups))


@lru_cache(maxsize=8)
def _cone_geometry(radius: float, cone_deg: float) -> ViewGeometry:
    r = int(np.floor(radius))
    xs, ys = np.meshgrid(np.arange(-r, r + 1), np.arange(-r, r + 1), indexing="ij")
    offsets = np.stack([xs.ravel(), ys.ravel()], axis=1)
    dist2 = (offsets**2).sum(axis=1)
    offsets = offsets[(dist2 > 0) & (dist2 <= radius * radius + 1e-9)]
    unit = offsets / np.linalg.norm(offsets, axis=1, keepdims=True)
    headings = HEADING_VECTORS / np.linalg.norm(HEADING_VECTORS, axis=1, keepdims=True)
    cos_half = np.cos(np.radians(cone_deg) / 2)
    in_cone = headings @ unit.T >= cos_half - 1e-9
    moore = np.max(np.abs(offsets), axis=1) == 1
    return _build(offsets, in_cone | moore[None, :])


@lru_cache(maxsize=8)
def _square_geometry(radius: int) -> ViewGeometry:
    xs, ys = np.meshgrid(
        np.arange(-radius, radius + 1), np.arange(-radius, radius + 1), indexing="ij"
    )
    offsets = np.stack([xs.ravel(), ys.ravel()], axis=1)
    offsets = offsets[np.any(offsets != 0, axis=1)]
    return _build(offsets, np.ones((8, len(offsets)), dtype=bool))


@dataclass(frozen=True, eq=False)
class Perception:
    """Perceived cells of a batch of viewers, as ``(viewer, flat cell)`` pairs sorted by viewer.

    ``flat = x * height + y``. Each viewer's own cell is included. Viewer ``v``'s cells are
    ``cell[start[v]:start[v + 1]]``; :attr:`viewer` (the viewer of every pair) is built on
    first use only.
    """

    cell: np.ndarray
    start: np.ndarray

    @property
    def n_viewers(self) -> int:
        """Viewers in the batch."""
        return self.start.size - 1

    @cached_property
    def viewer(self) -> np.ndarray:
        """Viewer index (in the batch) of every pair, ascending."""
        return np.repeat(np.arange(self.n_viewers), np.diff(self.start))

    def viewer_of(self, pairs: np.ndarray) -> np.ndarray:
        """Viewer index of the pairs at positions ``pairs`` (without building :attr:`viewer`)."""
        return np.searchsorted(self.start, pairs, side="right") - 1

    def cells_of(self, viewer: int) -> np.ndarray:
        """Flat cells perceived by one viewer (index in the batch)."""
        return self.cell[self.start[viewer] : self.start[viewer + 1]]


def perceive(
    geometry: ViewGeometry,
    opaque: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    headings: np.ndarray,
    previous: Perception | None = None,
    reuse: np.ndarray | None = None,
    scratch: np.ndarray | None = None,
    allocate: Callable[[int], np.ndarray] | None = None,
) -> Perception:
    """Perception maps of all viewers at ``(xs[i], ys[i])`` facing ``headings[i]`` (0..7).

    Each viewer's cells are its own, then the visible cells of its heading group in offset
    order (rings outward). The line of sight is propagated offset by offset: an offset sees
    through its parent when the parent is in sight and not opaque, the Moore ring always. The
    loop is compiled (:func:`_compiled_perceive`, Numba): each viewer not copied from
    ``previous`` looks into a row of ``scratch``, then every viewer's cells are copied into one
    array, from its row or from ``previous``.

    Args:
        geometry: The perception rule.
        opaque: ``[x, y]`` line-of-sight blockers of the effective grid.
        xs: Viewer x coordinates.
        ys: Viewer y coordinates.
        headings: Heading indices (see :data:`HEADING_VECTORS`).
        previous: An earlier perception by the same rule on the same ``opaque`` grid.
        reuse: Per viewer, its viewer index in ``previous`` when it looked from the same cell
            with the same heading there (its cells are copied), else ``-1``.
        scratch: A working int64 array to use when it is large enough (a fresh one costs
            page faults every call).
        allocate: Gives the int64 array of a given size for the perception's cells (default:
            a new one).
    """
    width, height = opaque.shape
    r = geometry.radius_cells
    padded_height = height + 2 * r
    # the plaza padded by the radius: opaque outside, and each padded cell's plaza cell (-1 off)
    padded = np.ones((width + 2 * r, padded_height), dtype=bool)
    padded[r : r + width, r : r + height] = opaque
    plaza_cell = np.full(padded.shape, -1, dtype=np.int64)
    plaza_cell[r : r + width, r : r + height] = np.arange(width * height).reshape(
        width, height
    )
    xs = np.ascontiguousarray(xs, dtype=np.int64)
    ys = np.ascontiguousarray(ys, dtype=np.int64)
    headings = np.ascontiguousarray(headings, dtype=np.int64)
    if previous is None or reuse is None:
        previous = Perception(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
        reuse = np.full(xs.size, -1, dtype=np.int64)
    reuse = np.ascontiguousarray(reuse, dtype=np.int64)
    group_start, delta, parent, in_view = geometry.flat_groups(padded_height)
    here = (xs + r) * padded_height + ys + r
    # fresh viewers look, each into its own row of a scratch array
    fresh = np.flatnonzero(reuse < 0)
    stride = geometry.scratch_row
    if scratch is None or scratch.size < fresh.size * stride:
        scratch = np.empty(fresh.size * stride, dtype=np.int64)
    scratch = scratch[: fresh.size * stride].reshape(fresh.size, stride)
    look, copy = _compiled_perceive()
    seen = look(
        padded.ravel(),
        plaza_cell.ravel(),
        here[fresh],
        headings[fresh],
        group_start,
        delta,
        parent,
        in_view,
        scratch,
    )
    per_viewer = np.empty(xs.size, dtype=np.int64)
    per_viewer[fresh] = seen
    copied = np.flatnonzero(reuse >= 0)
    per_viewer[copied] = np.diff(previous.start)[reuse[copied]]
    start = np.zeros(xs.size + 1, dtype=np.int64)
    np.cumsum(per_viewer, out=start[1:])
    size = int(start[-1])
    cell = np.empty(size, dtype=np.int64) if allocate is None else allocate(size)
    slot = np.full(xs.size, -1, dtype=np.int64)
    slot[fresh] = np.arange(fresh.size)
    copy(scratch, slot, previous.cell, previous.start, reuse, start, cell)
    return Perception(cell, start)


class RepeatedViews:
    """Perceives for agent rows, copying the cells of each row whose viewpoint held.

    A viewer that looks from the same cell with the same heading as at the last call, on the
    same line-of-sight grid, perceives the same cells in the same order; in a jam most do.

    The cells of a perception live in one of two buffers used in turn (a fresh array of tens of
    MB a step costs more in page faults than the copying): a perception is valid until the
    next-but-one call, so what must last longer copies its cells.

    Args:
        geometry: The perception rule.
        rows: Agent rows there are (``perceive`` takes any of them).
    """

    def __init__(self, geometry: ViewGeometry, rows: int) -> None:
        self.geometry = geometry
        self._viewpoint = np.full((rows, 3), -1, dtype=np.int64)
        self._index = np.full(rows, -1, dtype=np.int64)
        """Each row's viewer index in :attr:`_last` (``-1``: not in it)."""
        self._last: Perception | None = None
        self._opaque: np.ndarray | None = None
        self.copied = 0
        """Viewers whose cells the last call copied."""
        self._scratch = np.empty(0, dtype=np.int64)
        self._buffers = [np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)]
        self._turn = 0

    def __getstate__(self) -> dict[str, object]:
        """For a checkpoint: the rule and the rows, not the last perception or its buffers.

        A restored model perceives every viewer afresh once, which gives the same cells; the
        buffers are hundreds of MB for 10,000 pedestrians.
        """
        state = self.__dict__.copy()
        empty = np.empty(0, dtype=np.int64)
        state.update(
            _viewpoint=np.full_like(self._viewpoint, -1),
            _index=np.full_like(self._index, -1),
            _last=None,
            _opaque=None,
            _scratch=empty,
            _buffers=[empty, empty.copy()],
        )
        return state

    def perceive(
        self,
        opaque: np.ndarray,
        rows: np.ndarray,
        xs: np.ndarray,
        ys: np.ndarray,
        headings: np.ndarray,
    ) -> Perception:
        """:func:`perceive` for the viewers of agent ``rows`` (distinct), in that order."""
        if self._opaque is None or not np.array_equal(self._opaque, opaque):
            self._index[:] = -1
            self._opaque = opaque.copy()
        viewpoint = np.column_stack([xs, ys, headings]).astype(np.int64)
        held = np.all(self._viewpoint[rows] == viewpoint, axis=1)
        reuse = np.where(held, self._index[rows], -1)
        self.copied = int(np.count_nonzero(reuse >= 0))
        fresh = rows.size - self.copied
        if self._scratch.size < fresh * self.geometry.scratch_row:
            self._scratch = np.empty(rows.size * self.geometry.scratch_row, np.int64)
        self._turn = 1 - self._turn
        perception = perceive(
            self.geometry,
            opaque,
            xs,
            ys,
            headings,
            self._last,
            reuse,
            self._scratch,
            self._buffer,
        )
        self._viewpoint[rows] = viewpoint
        self._index[:] = -1
        self._index[rows] = np.arange(rows.size)
        self._last = perception
        return perception

    def _buffer(self, size: int) -> np.ndarray:
        """``size`` cells of this turn's buffer (grown by a quarter when too small)."""
        if self._buffers[self._turn].size < size:
            self._buffers[self._turn] = np.empty(size + size // 4, dtype=np.int64)
        return self._buffers[self._turn][:size]


@cache
def _compiled_perceive():
    """:func:`_look` and :func:`_copy` compiled, once a process.

    Not ``parallel``: Numba's default threading layer must not be entered from two threads at
    once, and an app may step two models on two threads.
    """
    import numba  # noqa: PLC0415  (no import-time cost)

    compile_ = numba.njit(cache=True, nogil=True)
    return compile_(_look), compile_(_copy)


def _look(
    blocked_at, plaza_at, here, headings, group_start, delta, parent, in_view, scratch
):  # pragma: no cover
    """Each viewer's own cell, then its visible cells in offset order, into its scratch row.

    Returns the number of cells of each viewer. An offset is in sight when its parent is in
    sight and not opaque (the Moore ring always); offsets come ring by ring, parents first.
    """
    counts = np.empty(here.size, dtype=np.int64)
    for v in range(here.size):
        k0 = group_start[headings[v]]
        k1 = group_start[headings[v] + 1]
        base = here[v]
        los = np.empty(k1 - k0, dtype=np.bool_)
        scratch[v, 0] = plaza_at[base]
        m = 1
        for k in range(k0, k1):
            p = parent[k]
            sight = p < 0 or (los[p - k0] and not blocked_at[base + delta[p]])
            los[k - k0] = sight
            if sight and in_view[k]:
                cell = plaza_at[base + delta[k]]
                if cell >= 0:
                    scratch[v, m] = cell
                    m += 1
        counts[v] = m
    return counts


def _copy(
    scratch, slot, previous_cell, previous_start, reuse, start, out
):  # pragma: no cover
    """Each viewer's cells into ``out``: from its scratch row, or from ``previous``."""
    for v in range(slot.size):
        at = start[v]
        m = start[v + 1] - at
        if slot[v] >= 0:
            out[at : at + m] = scratch[slot[v], :m]
        else:
            first = previous_start[reuse[v]]
            out[at : at + m] = previous_cell[first : first + m]


_UNIT_HEADINGS = HEADING_VECTORS / np.linalg.norm(
    HEADING_VECTORS, axis=1, keepdims=True
)
_STEP_HEADING = {(dx, dy): h for h, (dx, dy) in enumerate(MOORE_STEPS)}


def heading_index(dx: float, dy: float) -> int:
    """Heading index (0 east, counter-clockwise) nearest to the direction ``(dx, dy)``."""
    step = (
        _STEP_HEADING.get((int(dx), int(dy)))
        if float(dx).is_integer() and float(dy).is_integer()
        else None
    )
    if step is not None:
        return step
    return int(np.argmax(_UNIT_HEADINGS @ np.array([dx, dy], dtype=float)))
