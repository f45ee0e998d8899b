"""Regenerate ``mesa_llm_mobility/evacuation/plazas/reference.txt`` (the stand-in plaza).

The real plaza geometry is not public. This script draws a faithful stand-in with the paper's
numbers: a 155 x 164 raster of 0.4 m cells, exactly 7,507 walkable cells (1,201.12 m2), 25 tree
groups, two 4.0 m gates (north, south), three east exits 1.4 / 3.5 / 1.1 m wide, 11 start cells and
one threat entry cell. Layout: a north-south courtyard along the east boundary and a west wing in
the middle, where the threat enters.

Run: ``python scripts/build_reference_plaza.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

WIDTH, HEIGHT = 155, 164
TARGET_WALKABLE = 7507  # 1,201.12 m2 / 0.16 m2
OUT = (
    Path(__file__).resolve().parents[1]
    / "mesa_llm_mobility"
    / "evacuation"
    / "plazas"
    / "reference.txt"
)


def build() -> list[str]:
    """The map rows, north first."""
    grid = np.full((HEIGHT, WIDTH), "#")  # [row, col], row 0 = north
    grid[1:163, 116:154] = "."  # courtyard, 38 cells wide
    wing_rows = slice(72, 94)  # west wing, 22 rows
    grid[wing_rows, 40:116] = "."
    # 20 tree groups in the courtyard (4 columns x 5 rows), 5 in the wing; sizes 2x2 .. 3x4
    sizes = [(2, 3), (3, 3), (3, 2), (2, 2), (3, 4)]
    k = 0
    for i, row in enumerate((14, 44, 100, 126, 150)):
        for j, col in enumerate((120, 129, 138, 147)):
            h, w = sizes[k % len(sizes)]
            r = row + (j % 2) * 3
            c = col + (i % 2)
            grid[r : r + h, c : c + w] = "T"
            k += 1
    for j, col in enumerate((52, 66, 80, 94, 106)):
        h, w = sizes[(k + j) % len(sizes)]
        r = 77 + (j % 2) * 7
        grid[r : r + h, col : col + w] = "T"
    # trim the wing's west end cell by cell until the walkable count is exact
    walkable = int(np.count_nonzero(grid == "."))
    col = 40
    while walkable > TARGET_WALKABLE:
        for row in range(wing_rows.start, wing_rows.stop):
            if walkable == TARGET_WALKABLE:
                break
            if grid[row, col] == ".":
                grid[row, col] = "#"
                walkable -= 1
        col += 1
    assert walkable == TARGET_WALKABLE, walkable
    # openings: gates 10 cells (4.0 m) at the north and south ends, exits on the east boundary
    grid[0, 130:140] = "4"
    grid[163, 130:140] = "5"
    grid[30:34, 154] = (
        "1"  # 4 cells = 1.6 m for 1.4 m (nearest whole cells, within half a cell)
    )
    grid[78:87, 154] = "2"  # 9 cells = 3.6 m for 3.5 m
    grid[134:137, 154] = "3"  # 3 cells = 1.2 m for 1.1 m
    # 11 start cells spread over courtyard and wing; threat entry at the wing's west end
    for row, col in (
        (6, 124),
        (20, 150),
        (40, 133),
        (60, 121),
        (76, 70),
        (88, 100),
        (84, 140),
        (110, 128),
        (120, 150),
        (140, 120),
        (158, 136),
    ):
        assert grid[row, col] == ".", (row, col)
        grid[row, col] = "s"
    assert grid[82, 50] == "."
    grid[82, 50] = "a"
    return ["".join(r) for r in grid]


HEADER = """; Reference plaza: a STAND-IN with the paper's numbers, not the real geometry (which is not public).
; 155 x 164 cells of 0.4 m (62.0 x 65.6 m), 7,507 walkable cells = 1,201.12 m2, 25 tree groups,
; gates 4.0 m north and south, exits 1.4 / 3.5 / 1.1 m on the east boundary (whole cells: 4 / 9 / 3),
; 11 pedestrian start cells (s) and one threat entry cell (a). Regenerate with
; scripts/build_reference_plaza.py, or copy and edit by hand.
[plaza]
name: reference
cell_size_m: 0.4
description: stand-in plaza with the paper's dimensions; courtyard along the east boundary, west wing
[openings]
; glyph id     kind  width_m
1       exit1  exit  1.4
2       exit2  exit  3.5
3       exit3  exit  1.1
4       gate1  gate  4.0
5       gate2  gate  4.0
[map]
"""


if __name__ == "__main__":
    OUT.write_text(HEADER + "\n".join(build()) + "\n", encoding="utf-8")
