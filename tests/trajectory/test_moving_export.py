"""``mlm traj export``: a trajectory run's stays as GeoPandas and MovingPandas read them.

The stays file is read back by ``geopandas.read_parquet`` / ``read_file`` and must hold the
trajectories table's stays at their longitude and latitude; the points file is rebuilt into a
``movingpandas.TrajectoryCollection`` with one trajectory per individual, from the first stay's
start to the last stay's end; the lines file has one line per individual. A refused export
exits with status 2, one line, and writes nothing.
"""

from __future__ import annotations

import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.trajectory.moving_export import trajectory_collection
from mesa_llm_mobility.trajectory.staypoints import write_numosim
from mesa_llm_mobility.trajectory.synth import synthesize
from tests.trajectory.runs import generation_config, run_generation

with warnings.catch_warnings():
    warnings.simplefilter(
        "ignore"
    )  # its optional smoother (Stone Soup) is not installed
    import movingpandas as mpd


@pytest.fixture(scope="module")
def generation(tmp_path_factory):
    folder = tmp_path_factory.mktemp("traj-export")
    write_numosim(synthesize(6, 2, seed=3).stays, folder / "city")
    config = generation_config(folder / "city", days=2, seed=7)
    return run_generation(folder / "gen.parquet", config)


def _export(run_dir, fmt, out) -> int:
    return main(["traj", "export", str(run_dir), "--format", fmt, "--out", str(out)])


@pytest.mark.parametrize("suffix", [".parquet", ".geojson"])
def test_geopandas_reads_back_every_stay(generation, tmp_path, suffix):
    stays = generation.trajectories
    out = tmp_path / f"stays{suffix}"
    assert _export(generation.run.path, "stays", out) == 0
    frame = gpd.read_parquet(out) if suffix == ".parquet" else gpd.read_file(out)
    assert frame.crs.to_epsg() == 4326
    assert len(frame) == len(stays) > 0
    np.testing.assert_array_equal(frame["agent_id"], stays["agent_id"])
    np.testing.assert_array_equal(frame["poi_id"], stays["poi_id"])
    np.testing.assert_allclose(frame.geometry.x, stays["longitude"])
    np.testing.assert_allclose(frame.geometry.y, stays["latitude"])
    minutes = (stays["end"] - stays["start"]).dt.total_seconds() / 60.0
    np.testing.assert_allclose(frame["duration_min"], minutes)
    if suffix == ".parquet":  # GeoParquet keeps the local times with their zone
        pd.testing.assert_series_equal(
            frame["start"], stays["start"], check_names=False, check_dtype=False
        )


def test_movingpandas_rebuilds_one_trajectory_per_individual(generation, tmp_path):
    stays = generation.trajectories
    out = tmp_path / "points.parquet"
    assert _export(generation.run.path, "trajectory-points", out) == 0
    points = gpd.read_parquet(out)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The inplace keyword")
        collection = mpd.TrajectoryCollection(points, "agent_id", t="t")
    people = sorted(stays["agent_id"].unique())
    assert len(people) == 6
    assert sorted(t.id for t in collection.trajectories) == people
    assert len(collection) == len(trajectory_collection(generation.run))
    zone = stays["start"].dt.tz
    assert set(points["timezone"]) == {str(zone)}
    for trajectory in collection.trajectories:
        own = stays[stays["agent_id"] == trajectory.id]
        assert trajectory.get_start_time() == own["start"].min().tz_localize(None)
        assert trajectory.get_end_time() == own["end"].max().tz_localize(None)
        # a stay is two points, where it starts and ends, unless it starts as the last ended
        times = pd.concat([own["start"], own["end"]]).drop_duplicates()
        assert trajectory.size() == len(times)
        first = trajectory.get_start_location()
        assert (first.x, first.y) == pytest.approx(
            (own["longitude"].iloc[0], own["latitude"].iloc[0])
        )


def test_one_line_per_individual(generation, tmp_path):
    out = tmp_path / "lines.geojson"
    assert _export(generation.run.path, "trajectory-lines", out) == 0
    lines = gpd.read_file(out)
    stays = generation.trajectories
    assert sorted(lines["agent_id"]) == sorted(stays["agent_id"].unique())
    assert set(lines.geom_type) == {"LineString"}
    moved = stays.groupby("agent_id")["poi_id"].nunique() > 1
    lengths = lines.set_index("agent_id")["length"]
    assert (lengths[moved[moved].index] > 0).all()


def test_a_refused_export_writes_nothing(generation, tmp_path, capsys):
    out_dir = tmp_path / "out"
    cases = [
        (generation.run.path, "stays", out_dir / "s.shp", "s.shp"),
        (generation.run.path, "gpx", out_dir / "s.parquet", "format 'gpx'"),
        (tmp_path, "stays", out_dir / "s.parquet", "not a run directory"),
    ]
    for run_dir, fmt, out, words in cases:
        assert _export(run_dir, fmt, out) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
        assert not out_dir.exists() or not any(out_dir.iterdir())
