import numpy as np
import pytest

from mesa_llm_mobility.evacuation.plaza import (
    PlazaFormatError,
    Terrain,
    load_plaza,
    parse_plaza,
    reachable_from,
)

HEADER = """[plaza]
name: mini
cell_size_m: 0.4
[openings]
1 exit1 exit 0.8
4 gate1 gate 0.4
[map]
"""

GOOD = ["##4###", "#s...#", "#.T..1", "#..a.1", "######"]


def mini(rows: list[str]) -> str:
    return HEADER + "\n".join(rows) + "\n"


def test_reference_plaza_has_the_papers_numbers():
    plaza = load_plaza()
    assert (plaza.width, plaza.height) == (155, 164)
    assert plaza.width * plaza.cell_size_m == pytest.approx(62.0)
    assert plaza.height * plaza.cell_size_m == pytest.approx(65.6)
    assert plaza.walkable_area_m2 == pytest.approx(1201.12)
    assert plaza.tree_groups() == 25
    assert len(plaza.spawn_cells) == 11
    assert [o.opening_id for o in plaza.exits] == ["exit1", "exit2", "exit3"]
    assert [o.width_m for o in plaza.exits] == [1.4, 3.5, 1.1]
    assert all(o.width_m == 4.0 and len(o.cells) == 10 for o in plaza.gates)
    assert all(x == plaza.width - 1 for o in plaza.exits for x, _ in o.cells)
    ys = sorted(y for o in plaza.gates for _, y in o.cells)
    assert ys[0] == 0 and ys[-1] == plaza.height - 1  # one gate south, one north
    assert plaza.raw[plaza.threat_cell] == Terrain.FLOOR


def test_parse_mini_map_orientation_and_layers():
    plaza = parse_plaza(mini(GOOD), source="mini.txt")
    assert (plaza.width, plaza.height) == (6, 5)
    assert plaza.spawn_cells == ((1, 3),)  # second line is y = 3 (north up)
    assert plaza.threat_cell == (3, 1)
    assert plaza.raw[2, 2] == Terrain.TREE
    assert plaza.raw[2, 4] == Terrain.GATE_OPEN
    assert plaza.opening_index[5, 1] == 0 and plaza.opening_index[5, 2] == 0
    assert plaza.openings[0].cells == ((5, 2), (5, 1))


@pytest.mark.parametrize(
    ("rows", "line", "column", "words"),
    [
        (["##4###", "#s..?#", "#.T..1", "#..a.1", "######"], 9, 5, "unknown glyph '?'"),
        (
            ["##4###", "#s...#", "#.T1.#", "#..a1#", "######"],
            10,
            4,
            "not on the map boundary",
        ),
        (["##4###", "#s...#", "#.T#.1", "#.#a#1", "######"], None, None, "ragged"),
    ],
)
def test_loader_errors_name_file_line_and_column(rows, line, column, words):
    if words == "ragged":
        rows = ["##4###", "#s...#", "#.T..1", "#..a.1#", "######"]
        with pytest.raises(
            PlazaFormatError, match=r"mini\.txt:11:7: map row has 7 cells, expected 6"
        ):
            parse_plaza(mini(rows), source="mini.txt")
        return
    with pytest.raises(PlazaFormatError) as info:
        parse_plaza(mini(rows), source="mini.txt")
    assert info.value.source == "mini.txt"
    assert (info.value.line, info.value.column) == (line, column)
    assert words in str(info.value)
    assert str(info.value).startswith(f"mini.txt:{line}:{column}: ")


def test_unreachable_exit_is_an_error():
    rows = ["##4###", "#s..##", "#.T#.1", "#.a#.1", "######"]
    with pytest.raises(PlazaFormatError, match="exit exit1 is unreachable"):
        parse_plaza(mini(rows), source="mini.txt")


def test_missing_spawn_and_threat_and_sections():
    with pytest.raises(PlazaFormatError, match="no pedestrian start cells"):
        parse_plaza(
            mini(["##4###", "#....#", "#.T..1", "#..a.1", "######"]), source="m"
        )
    with pytest.raises(PlazaFormatError, match="exactly one threat entry cell"):
        parse_plaza(
            mini(["##4###", "#s...#", "#.T..1", "#....1", "######"]), source="m"
        )
    with pytest.raises(PlazaFormatError, match=r"missing section \[openings\]"):
        parse_plaza("[plaza]\nname: x\n[map]\n#s#\n", source="m")


def test_width_mismatch_and_bad_legend():
    with pytest.raises(
        PlazaFormatError, match=r"exit exit1 is 2 cells \(0.80 m\) wide, declared 2.0 m"
    ):
        parse_plaza(
            mini(GOOD).replace("1 exit1 exit 0.8", "1 exit1 exit 2.0"), source="m"
        )
    with pytest.raises(
        PlazaFormatError, match=r"m:5:9: opening kind must be 'exit' or 'gate'"
    ):
        parse_plaza(
            mini(GOOD).replace("1 exit1 exit 0.8", "1 exit1 door 0.8"), source="m"
        )
    with pytest.raises(PlazaFormatError, match="must be one character not among"):
        parse_plaza(
            mini(GOOD).replace("1 exit1 exit 0.8", "T exit1 exit 0.8"), source="m"
        )


def test_corner_rule_in_reachability():
    raw = np.full((3, 3), Terrain.WALL, dtype=np.uint8)
    raw[0, 0] = raw[1, 1] = Terrain.FLOOR  # diagonal between two walls: refused
    assert not reachable_from(raw, (0, 0))[1, 1]
    raw[1, 0] = Terrain.FLOOR  # one orthogonal open: allowed (and reachable anyway)
    assert reachable_from(raw, (0, 0))[1, 1]
