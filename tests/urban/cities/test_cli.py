"""``mlm urban import-osm`` and ``import-gtfs``: files written, one-line errors, exit codes."""

from __future__ import annotations

import json

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.urban.scenario import load_scenario

from .conftest import HELSINKI_GTFS


def test_import_osm_writes_a_scenario_and_prints_what_it_found(
    grid_osm, tmp_path, capsys
):
    out = tmp_path / "grid.json"
    assert (
        main(
            [
                "urban",
                "import-osm",
                str(grid_osm),
                "--out",
                str(out),
                "--consolidate",
                "0",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    town = load_scenario(out)
    assert f"{len(town.nodes)} nodes, {len(town.road_links)} links" in printed
    assert "Coffee shop 1" in printed and "home 1" in printed


def test_import_errors_are_one_line_and_exit_2(tmp_path, capsys):
    missing = tmp_path / "nowhere.osm"
    assert (
        main(["urban", "import-osm", str(missing), "--out", str(tmp_path / "x.json")])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err == f"mlm: error: {missing}: no such OSM file"
    assert not (tmp_path / "x.json").exists()


def _import_gtfs(scenario, out, date: str) -> int:
    return main(
        [
            "urban",
            "import-gtfs",
            str(HELSINKI_GTFS),
            "--scenario",
            str(scenario),
            "--out",
            str(out),
            "--date",
            date,
        ]
    )


def test_import_gtfs_adds_the_lines(helsinki, tmp_path, capsys):
    path, _ = helsinki
    out = tmp_path / "transit.json"
    assert _import_gtfs(path, out, "2025-03-10") == 0
    lines = json.loads(out.read_text("utf-8"))["metro_lines"]
    assert f"{out}: {len(lines)} transit lines" in capsys.readouterr().out
    assert _import_gtfs(path, out, "2025-03-09") == 2
    assert "no trip runs on 2025-03-09" in capsys.readouterr().err
