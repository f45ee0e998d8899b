"""OpenStreetMap to a scenario: the graph, the links, the facilities, and one-line errors."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from mesa_llm_mobility.urban.cities.osm import CityImportError, import_osm
from mesa_llm_mobility.urban.cities.tables import ROAD_CLASSES
from mesa_llm_mobility.urban.scenario import load_scenario

from .conftest import LAT0, LON0, STEP, grid_osm_xml


def _graph(scenario):
    graph = nx.DiGraph()
    graph.add_edges_from(
        (link.from_node, link.to_node) for link in scenario.road_links.values()
    )
    return graph


def test_a_grid_becomes_a_strongly_connected_network_with_its_facilities(
    grid_osm, tmp_path
):
    out = tmp_path / "grid.json"
    town = import_osm(grid_osm, out=out, consolidate_m=0)
    # simplification drops the two corners where two two-way streets just turn
    assert len(town.nodes) == 14
    graph = _graph(town)
    assert nx.is_strongly_connected(graph)
    # the one-way primary row has links one way only, the residential streets both ways
    assert load_scenario(out).road_links.keys() == town.road_links.keys()
    for link in town.road_links.values():
        assert link.model == "flow" and not link.two_way
        assert link.free_time == pytest.approx(link.length / link.speed)
    speeds = {round(link.speed * 60 / 1000) for link in town.road_links.values()}
    # maxspeed 40 on the columns, else the class's: residential rows, the primary row
    assert speeds == {
        40,
        ROAD_CLASSES["residential"].speed_kmh,
        ROAD_CLASSES["primary"].speed_kmh,
    }
    capacities = {link.capacity for link in town.road_links.values()}
    assert capacities == {
        ROAD_CLASSES["residential"].lane_capacity,
        ROAD_CLASSES["primary"].lanes * ROAD_CLASSES["primary"].lane_capacity,
    }
    kinds = {f.kind for f in town.facilities.values()}
    assert kinds == {"Coffee shop", "School", "Office", "Supermarket", "home"}
    assert "School" in town.facilities and "Coffee shop" in town.facilities
    home = next(f for f in town.facilities.values() if f.kind == "home")
    assert home.capacity == 2 * 4 * 5  # 5 levels of 4 dwellings, two residents each
    for node in town.nodes.values():
        assert LON0 - 1e-6 <= node.lon <= LON0 + 3 * STEP + 1e-6
        assert LAT0 - 1e-6 <= node.lat <= LAT0 + 3 * STEP + 1e-6


def test_consolidation_merges_intersections_closer_than_the_tolerance(grid_osm):
    apart = import_osm(grid_osm, consolidate_m=0)
    merged = import_osm(grid_osm, consolidate_m=60)  # columns 110 m apart, rows 220 m
    assert len(merged.nodes) < len(apart.nodes)
    assert nx.is_strongly_connected(_graph(merged))


def test_a_dead_end_one_way_is_cut_to_the_strongly_connected_part(tmp_path):
    text = grid_osm_xml(3).replace(
        "</osm>",
        '<node id="9001" version="1" lat="60.1" lon="24.9"/>'
        '<way id="99" version="1"><nd ref="1000"/><nd ref="9001"/>'
        '<tag k="highway" v="tertiary"/><tag k="oneway" v="yes"/></way></osm>',
    )
    path = tmp_path / "spur.osm"
    path.write_text(text, "utf-8")
    town = import_osm(path, consolidate_m=0)
    assert "n9001" not in town.nodes
    assert nx.is_strongly_connected(_graph(town))


def test_facilities_from_a_csv_replace_the_tags(grid_osm, tmp_path):
    csv = tmp_path / "places.csv"
    csv.write_text(
        "name,kind,lon,lat,capacity\n"
        f"Block A,home,{LON0},{LAT0},120\n"
        f"Works,Factory,{LON0 + STEP},{LAT0 + STEP},80\n",
        "utf-8",
    )
    town = import_osm(grid_osm, facilities_csv=csv, consolidate_m=0)
    assert {f.name: (f.kind, f.capacity) for f in town.facilities.values()} == {
        "Block A": ("home", 120),
        "Works": ("Factory", 80),
    }


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "Shed,barn,24.94,60.17",
            "places.csv: row 2: field 'kind': 'barn' is not one of",
        ),
        (
            "Shed,home,east,60.17",
            "places.csv: row 2: field 'lon': not a number: 'east'",
        ),
        ("Shed,home,24.94,95", "places.csv: row 2: field 'lat': 95.0 is out of range"),
        (
            "Shed,home,24.94,60.17,-3",
            "places.csv: row 2: field 'capacity': expected a whole",
        ),
    ],
)
def test_a_bad_csv_row_is_named(grid_osm, tmp_path, row, message):
    csv = tmp_path / "places.csv"
    csv.write_text("name,kind,lon,lat,capacity\n" + row + "\n", "utf-8")
    with pytest.raises(CityImportError, match=message.replace("(", r"\(")) as raised:
        import_osm(grid_osm, facilities_csv=csv)
    assert "\n" not in str(raised.value)


def test_bad_files_give_one_line_naming_the_file(tmp_path):
    with pytest.raises(CityImportError, match="no such OSM file"):
        import_osm(tmp_path / "missing.osm")
    text = tmp_path / "city.txt"
    text.write_text("x", "utf-8")
    with pytest.raises(
        CityImportError, match=r"city.txt: expected an .osm, .xml or .osm.pbf"
    ):
        import_osm(text)
    broken = tmp_path / "broken.osm"
    broken.write_text("<osm><node id='1' lat='x'", "utf-8")
    with pytest.raises(
        CityImportError, match=r"broken\.osm: not a readable OSM file"
    ) as raised:
        import_osm(broken)
    assert "\n" not in str(raised.value)
    empty = tmp_path / "paths.osm"
    empty.write_text(grid_osm_xml(roads=False), "utf-8")
    with pytest.raises(CityImportError, match=r"paths\.osm: no drivable way"):
        import_osm(empty)
    bare = tmp_path / "bare.osm"
    bare.write_text(grid_osm_xml(facilities=False), "utf-8")
    out = tmp_path / "bare.json"
    with pytest.raises(CityImportError, match=r"bare\.osm: no facility"):
        import_osm(bare, out=out)
    assert not out.exists()  # nothing half-written


def test_the_bundled_extract_imports_with_every_kind_the_rule_brain_visits(helsinki):
    out, town = helsinki
    doc = json.loads(out.read_text("utf-8"))
    assert "OpenStreetMap contributors" in doc["description"]
    assert nx.is_strongly_connected(_graph(town))
    assert len(town.nodes) >= 40 and len(town.road_links) >= 100
    for kind in ("School", "Gym", "Coffee shop", "Supermarket", "Food court", "Museum"):
        assert town.facilities[kind].kind == kind
    assert sum(f.capacity for f in town.facilities.values() if f.kind == "home") > 5000


def test_the_bundled_extract_keeps_the_roads_course_from_node_to_node(helsinki):
    out, town = helsinki
    bent = 0
    for link in town.road_links.values():
        if link.geometry is None:
            continue
        points = np.array(link.geometry)
        for point, node in ((points[0], link.from_node), (points[-1], link.to_node)):
            at = town.nodes[node]
            assert np.hypot(point[0] - at.x, point[1] - at.y) <= 0.1
        along = np.hypot(*np.diff(points, axis=0).T).sum()
        assert along == pytest.approx(link.length, rel=0.01, abs=1.0)
        start, end = points[0], points[-1]
        bent += along > np.hypot(*(end - start)) + 5.0
    assert bent >= 10  # many links are not straight
    doc = json.loads(out.read_text("utf-8"))
    for entry in doc["road_links"]:
        for x, y in entry.get("geometry", []):
            assert round(x, 1) == x and round(y, 1) == y
