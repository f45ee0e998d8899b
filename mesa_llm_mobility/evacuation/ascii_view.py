"""The symbolic view: a north-up ASCII matrix of the perception map's bounding box.

Glyphs (spec table; paper Table 3): ``?`` unknown, ``.`` walkable, ``#`` wall/outside, ``T`` tree,
``E`` exit, ``G`` gate open, ``g`` gate closing, ``X`` gate closed, ``@`` self, ``p`` pedestrian,
``D`` person lying motionless, ``A`` armed person rushing at the crowd. Terrain is written first,
then entities are overlaid; every cell of the box outside the perception map is ``?``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from mesa_llm_mobility.evacuation.plaza import TERRAIN_GLYPH, Terrain

_GLYPHS = np.full(256, "?", dtype="<U1")
for _code, _glyph in TERRAIN_GLYPH.items():
    _GLYPHS[_code] = _glyph
_GLYPHS[Terrain.UNKNOWN] = "?"


def render_view(
    cells: np.ndarray,
    height: int,
    codes: np.ndarray,
    self_cell: tuple[int, int],
    entities: Mapping[int, str] | None = None,
) -> tuple[str, tuple[int, int]]:
    """Render one viewer's perception map.

    Args:
        cells: Flat cells (``x * height + y``) of the perception map.
        height: Grid height (cells).
        codes: Flat effective terrain codes.
        self_cell: The viewer's ``(x, y)`` (drawn ``@``).
        entities: Flat cell -> entity glyph (``p``, ``D``, ``A``) for entities on perceived cells.

    Returns:
        The view (rows north to south, joined by newlines) and the ``(x, y)`` of its north-west
        corner, so that the glyph at row ``r``, column ``c`` is cell ``(x0 + c, y0 - r)``.
    """
    xs, ys = np.divmod(np.asarray(cells, dtype=np.int64), height)
    x0, x1, y0, y1 = int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max())
    grid = np.full((y1 - y0 + 1, x1 - x0 + 1), "?", dtype="<U1")
    grid[y1 - ys, xs - x0] = _GLYPHS[codes[cells]]
    for flat, glyph in (entities or {}).items():
        x, y = divmod(int(flat), height)
        if x0 <= x <= x1 and y0 <= y <= y1 and grid[y1 - y, x - x0] != "?":
            grid[y1 - y, x - x0] = glyph
    sx, sy = self_cell
    grid[y1 - sy, sx - x0] = "@"
    return "\n".join("".join(row) for row in grid), (x0, y1)


@dataclass(frozen=True, eq=False)
class SymbolicView:
    """One viewer's perception snapshot; :attr:`text` renders it (once, on first use).

    Rendering is deferred so that the rule brain, which reads the same facts from the context's
    other fields, does not pay for text it never reads.
    """

    cells: np.ndarray
    height: int
    codes: np.ndarray
    self_cell: tuple[int, int]
    entities: Mapping[int, str] = field(default_factory=dict)

    @cached_property
    def text(self) -> str:
        """The north-up ASCII matrix."""
        return render_view(
            self.cells, self.height, self.codes, self.self_cell, self.entities
        )[0]

    def __str__(self) -> str:
        return self.text
