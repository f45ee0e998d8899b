"""The links and trips exports of a run on an imported city follow the roads' geometry."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest
from pyproj import Transformer

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.urban.export_geometry import scenario_coordinates
from tests.urban.runs import run_urban


@pytest.fixture(scope="module")
def city_run(helsinki, tmp_path_factory):
    path, scenario = helsinki
    out = tmp_path_factory.mktemp("city-export") / "run"
    return run_urban(out, scenario=str(path), n_agents=20, days=1, seed=1).run, scenario


def _export(run_dir, fmt, out) -> gpd.GeoDataFrame:
    code = main(["urban", "export", str(run_dir), "--format", fmt, "--out", str(out)])
    assert code == 0
    return gpd.read_file(out)


def test_links_follow_their_roads_in_longitude_and_latitude(city_run, tmp_path):
    run, scenario = city_run
    links = _export(run.path, "links", tmp_path / "links.geojson")
    assert links.crs.to_epsg() == 4326
    coordinates = scenario_coordinates(scenario)
    to_utm = Transformer.from_crs(
        "EPSG:4326", coordinates.projected_crs, always_xy=True
    )
    bent = [r for r in scenario.road_links.values() if r.geometry is not None]
    assert len(bent) >= 10
    checked = 0
    for road in bent:
        rows = links[links["link"] == road.name]
        for row in rows.itertuples():
            points = np.asarray(row.geometry.coords)
            course = np.asarray(road.geometry, dtype=float)
            if row.from_node != road.from_node:  # the other direction: reversed
                course = course[::-1]
            assert len(points) == len(course)
            assert tuple(points[0]) == pytest.approx(coordinates.lonlat[row.from_node])
            assert tuple(points[-1]) == pytest.approx(coordinates.lonlat[row.to_node])
            east, north = to_utm.transform(points[1:-1, 0], points[1:-1, 1])
            inner = np.column_stack([east, north])
            assert np.abs(inner - course[1:-1]).max() < 0.5  # metres
            checked += 1
    assert checked >= len(bent)
    straight = links[~links["link"].isin([r.name for r in bent])]
    assert (straight.geometry.apply(lambda g: len(g.coords)) == 2).all()


def test_trips_run_along_their_links(city_run, tmp_path):
    run, scenario = city_run
    trips = _export(run.path, "trips", tmp_path / "trips.geojson")
    moved = trips[trips.geometry.geom_type == "LineString"]
    assert len(moved) > 0
    bent = {r.name for r in scenario.road_links.values() if r.geometry is not None}
    along_bent = moved[moved["path"].apply(lambda p: bool(set(p) & bent))]
    assert len(along_bent) > 0
    for row in along_bent.itertuples():
        # more points than the nodes passed: the bent links' inner points are in the line
        assert len(row.geometry.coords) > len(row.path) + 1
