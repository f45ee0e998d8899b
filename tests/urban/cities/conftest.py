"""Small OSM extracts written by the tests, and the bundled Helsinki example."""

from __future__ import annotations

from pathlib import Path

import pytest

from mesa_llm_mobility.urban.cities.osm import import_osm

DATA = Path(__file__).parents[3] / "mesa_llm_mobility" / "urban" / "cities" / "data"
HELSINKI_PBF = DATA / "helsinki.osm.pbf"
HELSINKI_GTFS = DATA / "helsinki_trams_gtfs.zip"

LON0, LAT0 = 24.94, 60.17
STEP = 0.002  # about 110 m of longitude and 220 m of latitude


def grid_osm_xml(n: int = 4, *, facilities: bool = True, roads: bool = True) -> str:
    """An n x n grid of two-way residential streets, one one-way primary, a few facilities."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<osm version="0.6">']
    ids = {}
    for i in range(n):
        for j in range(n):
            ids[(i, j)] = 1000 + i * n + j
            lines.append(
                f'<node id="{ids[(i, j)]}" version="1" lat="{LAT0 + j * STEP:.6f}" '
                f'lon="{LON0 + i * STEP:.6f}"/>'
            )
    way = 1
    if roads:
        for j in range(n):
            refs = "".join(f'<nd ref="{ids[(i, j)]}"/>' for i in range(n))
            kind = (
                '<tag k="highway" v="primary"/><tag k="oneway" v="yes"/>'
                if j == 0
                else '<tag k="highway" v="residential"/>'
            )
            lines.append(f'<way id="{way}" version="1">{refs}{kind}</way>')
            way += 1
        for i in range(n):
            refs = "".join(f'<nd ref="{ids[(i, j)]}"/>' for j in range(n))
            lines.append(
                f'<way id="{way}" version="1">{refs}<tag k="highway" v="residential"/>'
                '<tag k="maxspeed" v="40"/></way>'
            )
            way += 1
    if facilities:
        extra = [
            (
                5001,
                LON0 + 0.0005,
                LAT0 + 0.0005,
                '<tag k="amenity" v="cafe"/><tag k="name" v="Cafe One"/>',
            ),
            (5002, LON0 + 0.0045, LAT0 + 0.0045, '<tag k="amenity" v="school"/>'),
            (5003, LON0 + 0.0025, LAT0 + 0.0005, '<tag k="office" v="company"/>'),
            (5004, LON0 + 0.0005, LAT0 + 0.0045, '<tag k="shop" v="bakery"/>'),
        ]
        for node_id, lon, lat, tags in extra:
            lines.append(
                f'<node id="{node_id}" version="1" lat="{lat:.6f}" lon="{lon:.6f}">{tags}</node>'
            )
        corners = [
            (6001, 0.001, 0.001),
            (6002, 0.0015, 0.001),
            (6003, 0.0015, 0.0015),
            (6004, 0.001, 0.0015),
        ]
        for node_id, dx, dy in corners:
            lines.append(
                f'<node id="{node_id}" version="1" lat="{LAT0 + dy:.6f}" lon="{LON0 + dx:.6f}"/>'
            )
        refs = "".join(f'<nd ref="{c[0]}"/>' for c in [*corners, corners[0]])
        lines.append(
            f'<way id="{way}" version="1">{refs}<tag k="building" v="apartments"/>'
            '<tag k="building:levels" v="5"/></way>'
        )
    lines.append("</osm>")
    return "\n".join(lines) + "\n"


@pytest.fixture
def grid_osm(tmp_path: Path) -> Path:
    path = tmp_path / "grid.osm"
    path.write_text(grid_osm_xml(), "utf-8")
    return path


@pytest.fixture(scope="session")
def helsinki(tmp_path_factory: pytest.TempPathFactory):
    """The bundled extract imported once (JSON path, scenario)."""
    out = tmp_path_factory.mktemp("helsinki") / "helsinki.json"
    return out, import_osm(HELSINKI_PBF, out=out)
