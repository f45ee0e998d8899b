"""Plaza maps: the plain-text format, its validating loader and the static layers it yields.

A plaza file has three sections::

    [plaza]
    name: reference
    cell_size_m: 0.4
    [openings]
    ; glyph  id     kind  width_m
    1        exit1  exit  1.4
    4        gate1  gate  4.0
    [map]
    ###########...

The map holds one glyph per cell, north up: ``#`` wall or outside, ``.`` walkable ground,
``T`` tree or fixed obstacle, ``s`` pedestrian start cell (walkable), ``a`` threat entry cell
(walkable), plus one glyph per opening declared in ``[openings]``. Openings are straight runs of
cells on the raster boundary; gates close during the emergency, exits stay open. Every problem is
reported as :class:`PlazaFormatError` naming the file, line and column.

Grid coordinates follow Mesa: ``(x, y)`` with ``x`` east and ``y`` north, so the first map line is
``y = height - 1``. Layers are numpy arrays indexed ``[x, y]``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import IntEnum
from importlib import resources
from pathlib import Path

import numpy as np

from mesa_llm_mobility.user_files import read_text


class Terrain(IntEnum):
    """Terrain codes of the raw and effective layers (and of beliefs)."""

    WALL = 0
    FLOOR = 1
    TREE = 2
    EXIT = 3
    GATE_OPEN = 4
    GATE_CLOSING = 5
    GATE_CLOSED = 6
    UNKNOWN = 255


TERRAIN_GLYPH: dict[int, str] = {
    Terrain.WALL: "#",
    Terrain.FLOOR: ".",
    Terrain.TREE: "T",
    Terrain.EXIT: "E",
    Terrain.GATE_OPEN: "G",
    Terrain.GATE_CLOSING: "g",
    Terrain.GATE_CLOSED: "X",
    Terrain.UNKNOWN: "?",
}
"""The symbolic view's terrain glyphs (spec glyph table)."""

PASSABLE_CODES = (Terrain.FLOOR, Terrain.EXIT, Terrain.GATE_OPEN, Terrain.GATE_CLOSING)
OPAQUE_CODES = (Terrain.WALL, Terrain.TREE)

FIXED_GLYPHS = {
    "#": Terrain.WALL,
    ".": Terrain.FLOOR,
    "T": Terrain.TREE,
    "s": Terrain.FLOOR,
    "a": Terrain.FLOOR,
}
OPENING_KINDS = ("exit", "gate")
SECTIONS = ("plaza", "openings", "map")


_PASSABLE_LUT = np.zeros(256, dtype=bool)
_PASSABLE_LUT[list(PASSABLE_CODES)] = True


def passable_mask(codes: np.ndarray) -> np.ndarray:
    """Boolean mask of cells a pedestrian may stand on, for any array of terrain codes."""
    return _PASSABLE_LUT[np.asarray(codes, dtype=np.uint8)]


class PlazaFormatError(ValueError):
    """A plaza file is malformed; the message names file, line and column."""

    def __init__(
        self, source: str, line: int | None, column: int | None, problem: str
    ) -> None:
        where = source
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {problem}")
        self.source = source
        self.line = line
        self.column = column
        self.problem = problem


@dataclass(frozen=True)
class Opening:
    """One opening of the plaza.

    Attributes:
        glyph: Its map glyph.
        opening_id: Identifier (``exit1``, ``gate2``...).
        kind: ``"exit"`` (always open) or ``"gate"`` (closes in the emergency).
        width_m: Declared width in metres.
        cells: Its cells ``(x, y)``, in order along the boundary.
        order: Index among openings of the same kind, in legend order (exit 1 = 0).
    """

    glyph: str
    opening_id: str
    kind: str
    width_m: float
    cells: tuple[tuple[int, int], ...]
    order: int

    @property
    def center(self) -> tuple[int, int]:
        """The middle cell of the opening."""
        return self.cells[len(self.cells) // 2]


@dataclass(frozen=True, eq=False)
class Plaza:
    """A loaded, validated plaza: the raw and semantic layers.

    Attributes:
        name: The plaza's name.
        source: File the plaza was read from.
        cell_size_m: Cell edge length in metres.
        raw: ``[x, y]`` terrain codes of the fixed geometry (openings as EXIT or GATE_OPEN).
        opening_index: ``[x, y]`` index into :attr:`openings`, ``-1`` elsewhere (semantic layer).
        spawn_cells: Pedestrian start cells in reading order (north-west first).
        threat_cell: The adversary's entry cell.
        openings: Openings in legend order.
        description: Free text from the ``[plaza]`` section.
    """

    name: str
    source: str
    cell_size_m: float
    raw: np.ndarray
    opening_index: np.ndarray
    spawn_cells: tuple[tuple[int, int], ...]
    threat_cell: tuple[int, int]
    openings: tuple[Opening, ...]
    description: str = ""

    @property
    def width(self) -> int:
        """Cells west to east."""
        return int(self.raw.shape[0])

    @property
    def height(self) -> int:
        """Cells south to north."""
        return int(self.raw.shape[1])

    @property
    def walkable_cells(self) -> int:
        """Interior walkable cells (floor, start and threat cells; openings excluded)."""
        return int(np.count_nonzero(self.raw == Terrain.FLOOR))

    @property
    def walkable_area_m2(self) -> float:
        """Walkable area in square metres."""
        return self.walkable_cells * self.cell_size_m**2

    @property
    def exits(self) -> tuple[Opening, ...]:
        """The evacuation exits, in legend order."""
        return tuple(o for o in self.openings if o.kind == "exit")

    @property
    def gates(self) -> tuple[Opening, ...]:
        """The entrance gates, in legend order."""
        return tuple(o for o in self.openings if o.kind == "gate")

    def tree_groups(self) -> int:
        """Number of tree groups (8-connected components of tree cells)."""
        return count_components(self.raw == Terrain.TREE)

    def walkable_coords(self) -> np.ndarray:
        """``(n, 2)`` array of interior walkable cells."""
        return np.argwhere(self.raw == Terrain.FLOOR)


def count_components(mask: np.ndarray) -> int:
    """Number of 8-connected components of ``mask``."""
    from scipy.ndimage import label  # noqa: PLC0415  (keeps import light)

    _, n = label(mask, structure=np.ones((3, 3), dtype=int))
    return int(n)


def reference_plaza_path() -> Path:
    """Path of the shipped reference plaza file."""
    return Path(
        str(
            resources.files("mesa_llm_mobility.evacuation") / "plazas" / "reference.txt"
        )
    )


def load_plaza(source: str | Path | None = None) -> Plaza:
    """Load and validate a plaza file.

    Args:
        source: A path, ``"reference"`` or ``None`` for the shipped reference plaza.

    Raises:
        PlazaFormatError: naming file, line and column of the first problem found.
        UserFileError: naming the file when it is missing, a directory, unreadable or not
            UTF-8.
    """
    if source is None or str(source) == "reference":
        path = reference_plaza_path()
    else:
        path = Path(source)
    text = read_text(path, "plaza map")
    return parse_plaza(text, source=str(path))


def parse_plaza(text: str, *, source: str = "<string>") -> Plaza:
    """Parse plaza text (see the module docstring for the format).

    Raises:
        PlazaFormatError: naming ``source``, line and column of the first problem found.
    """
    sections: dict[str, list[tuple[int, str]]] = {}
    current: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if current != "map" and (not stripped or stripped.startswith(";")):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped[1:-1].strip()
            if current not in SECTIONS:
                raise PlazaFormatError(
                    source, number, 1, f"unknown section [{current}]"
                )
            sections[current] = []
            continue
        if current is None:
            raise PlazaFormatError(source, number, 1, "text before the first [section]")
        if current == "map" and not line.rstrip("\n"):
            continue
        sections[current].append(
            (number, line.rstrip("\r\n") if current == "map" else stripped)
        )
    for name in SECTIONS:
        if name not in sections:
            raise PlazaFormatError(source, None, None, f"missing section [{name}]")

    meta: dict[str, str] = {}
    for number, line in sections["plaza"]:
        if ":" not in line:
            raise PlazaFormatError(
                source, number, 1, f"expected 'key: value', got {line!r}"
            )
        key, value = (part.strip() for part in line.split(":", 1))
        meta[key] = value
    try:
        cell_size = float(meta.get("cell_size_m", "0.4"))
    except ValueError:
        raise PlazaFormatError(
            source, None, None, f"cell_size_m is not a number: {meta['cell_size_m']!r}"
        ) from None
    if cell_size <= 0:
        raise PlazaFormatError(
            source, None, None, f"cell_size_m must be positive, got {cell_size}"
        )

    legend: dict[str, tuple[int, str, str, float]] = {}
    for number, line in sections["openings"]:
        parts = line.split()
        if len(parts) != 4:
            raise PlazaFormatError(
                source, number, 1, f"expected 'glyph id kind width_m', got {line!r}"
            )
        glyph, opening_id, kind, width_text = parts
        if len(glyph) != 1 or glyph in FIXED_GLYPHS or glyph == "?":
            raise PlazaFormatError(
                source,
                number,
                1,
                f"opening glyph {glyph!r} must be one character not among {sorted(FIXED_GLYPHS)}",
            )
        if glyph in legend:
            raise PlazaFormatError(
                source, number, 1, f"opening glyph {glyph!r} declared twice"
            )
        if kind not in OPENING_KINDS:
            raise PlazaFormatError(
                source,
                number,
                1 + line.find(kind),
                f"opening kind must be 'exit' or 'gate', got {kind!r}",
            )
        try:
            width = float(width_text)
        except ValueError:
            raise PlazaFormatError(
                source,
                number,
                1 + line.find(width_text),
                f"width_m is not a number: {width_text!r}",
            ) from None
        if width <= 0:
            raise PlazaFormatError(
                source,
                number,
                1 + line.find(width_text),
                f"width_m must be positive, got {width}",
            )
        legend[glyph] = (number, opening_id, kind, width)
    if not legend:
        raise PlazaFormatError(source, None, None, "no openings declared in [openings]")

    rows = sections["map"]
    if not rows:
        raise PlazaFormatError(source, None, None, "empty [map]")
    width = len(rows[0][1])
    height = len(rows)
    raw = np.zeros((width, height), dtype=np.uint8)
    opening_index = np.full((width, height), -1, dtype=np.int16)
    glyph_to_index = {glyph: i for i, glyph in enumerate(legend)}
    opening_cells: dict[str, list[tuple[int, int, int, int]]] = {
        glyph: [] for glyph in legend
    }
    spawns: list[tuple[int, int]] = []
    threats: list[tuple[int, int, int, int]] = []
    for row, (number, line) in enumerate(rows):
        if len(line) != width:
            raise PlazaFormatError(
                source,
                number,
                min(len(line), width) + 1,
                f"map row has {len(line)} cells, expected {width}",
            )
        y = height - 1 - row
        for x, glyph in enumerate(line):
            if glyph in FIXED_GLYPHS:
                raw[x, y] = FIXED_GLYPHS[glyph]
                if glyph == "s":
                    spawns.append((x, y))
                elif glyph == "a":
                    threats.append((x, y, number, x + 1))
            elif glyph in legend:
                kind = legend[glyph][2]
                raw[x, y] = Terrain.EXIT if kind == "exit" else Terrain.GATE_OPEN
                opening_index[x, y] = glyph_to_index[glyph]
                opening_cells[glyph].append((x, y, number, x + 1))
            else:
                raise PlazaFormatError(
                    source, number, x + 1, f"unknown glyph {glyph!r}"
                )

    openings: list[Opening] = []
    kind_counts = {"exit": 0, "gate": 0}
    for glyph, (number, opening_id, kind, width_m) in legend.items():
        cells = opening_cells[glyph]
        if not cells:
            raise PlazaFormatError(
                source,
                number,
                1,
                f"opening {opening_id} ({glyph!r}) has no cells in [map]",
            )
        for x, y, line_no, col in cells:
            if not (x in (0, width - 1) or y in (0, height - 1)):
                raise PlazaFormatError(
                    source,
                    line_no,
                    col,
                    f"{kind} {opening_id} cell is not on the map boundary",
                )
        xs = {c[0] for c in cells}
        ys = {c[1] for c in cells}
        straight = (len(xs) == 1 and max(ys) - min(ys) + 1 == len(cells)) or (
            len(ys) == 1 and max(xs) - min(xs) + 1 == len(cells)
        )
        if not straight:
            _, _, line_no, col = cells[0]
            raise PlazaFormatError(
                source,
                line_no,
                col,
                f"{kind} {opening_id} is not one straight run of cells",
            )
        if abs(len(cells) * cell_size - width_m) > cell_size / 2 + 1e-9:
            _, _, line_no, col = cells[0]
            raise PlazaFormatError(
                source,
                line_no,
                col,
                f"{kind} {opening_id} is {len(cells)} cells ({len(cells) * cell_size:.2f} m) wide, declared {width_m} m",
            )
        ordered = tuple(
            sorted(((x, y) for x, y, _, _ in cells), key=lambda c: (c[0], -c[1]))
        )
        openings.append(
            Opening(glyph, opening_id, kind, width_m, ordered, kind_counts[kind])
        )
        kind_counts[kind] += 1

    if not spawns:
        raise PlazaFormatError(
            source, None, None, "no pedestrian start cells ('s') in [map]"
        )
    if len(threats) != 1:
        where = threats[1] if len(threats) > 1 else None
        raise PlazaFormatError(
            source,
            where[2] if where else None,
            where[3] if where else None,
            f"expected exactly one threat entry cell ('a'), found {len(threats)}",
        )
    threat_x, threat_y, _, _ = threats[0]

    reach = reachable_from(raw, spawns[0])
    for x, y in [*spawns, (threat_x, threat_y)]:
        if not reach[x, y]:
            row = height - 1 - y
            raise PlazaFormatError(
                source,
                rows[row][0],
                x + 1,
                f"cell ({x}, {y}) is not connected to the first start cell",
            )
    for opening in openings:
        if not any(reach[x, y] for x, y in opening.cells):
            x, y = opening.cells[0]
            row = height - 1 - y
            raise PlazaFormatError(
                source,
                rows[row][0],
                x + 1,
                f"{opening.kind} {opening.opening_id} is unreachable from the start cells",
            )

    spawns.sort(key=lambda c: (-c[1], c[0]))
    return Plaza(
        name=meta.get("name", Path(source).stem),
        source=source,
        cell_size_m=cell_size,
        raw=raw,
        opening_index=opening_index,
        spawn_cells=tuple(spawns),
        threat_cell=(threat_x, threat_y),
        openings=tuple(openings),
        description=meta.get("description", ""),
    )


MOORE_STEPS: tuple[tuple[int, int], ...] = (
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
)
"""The eight Moore steps, counter-clockwise from east; index = heading index (45 degree units)."""

MOORE_STEP_X = np.array([dx for dx, _dy in MOORE_STEPS], dtype=np.int64)
"""The x of each of :data:`MOORE_STEPS` (for compiled loops)."""
MOORE_STEP_Y = np.array([dy for _dx, dy in MOORE_STEPS], dtype=np.int64)
"""The y of each of :data:`MOORE_STEPS` (for compiled loops)."""


def diagonal_allowed(passable: np.ndarray, x: int, y: int, dx: int, dy: int) -> bool:
    """Corner rule: a diagonal step may not cut between two blocked orthogonal cells.

    Following the paper (Sec. 2.3.6), the step ``(x, y) -> (x+dx, y+dy)`` is refused only when both
    ``(x+dx, y)`` and ``(x, y+dy)`` are blocked.
    """
    if dx == 0 or dy == 0:
        return True
    return bool(passable[x + dx, y] or passable[x, y + dy])


def reachable_from(raw: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Cells reachable from ``start`` by legal 8-neighbour steps on the raw layer."""
    passable = passable_mask(raw)
    width, height = raw.shape
    seen = np.zeros_like(passable)
    seen[start] = True
    queue = deque([start])
    while queue:
        x, y = queue.popleft()
        for dx, dy in MOORE_STEPS:
            nx, ny = x + dx, y + dy
            if (
                0 <= nx < width
                and 0 <= ny < height
                and passable[nx, ny]
                and not seen[nx, ny]
                and diagonal_allowed(passable, x, y, dx, dy)
            ):
                seen[nx, ny] = True
                queue.append((nx, ny))
    return seen
