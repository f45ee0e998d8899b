"""``mlm evac export``: a run's pedestrians and plaza as PedPy reads them, and what it measures.

The trajectory file is read back by ``pedpy.load_trajectory`` and must hold exactly the
positions table's pedestrians, steps and cells (at cell centres, in metres); the walkable area
is read by ``pedpy.WalkableArea`` and every recorded position must lie in it; PedPy's flow
through an opening counts the pedestrians the run says evacuated through it. A refused export
exits with status 2, one line, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pedpy
import pytest
import shapely

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.evacuation.pedpy_export import (
    FRAME_RATE,
    opening_bottleneck,
    run_plaza,
)
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from tests.evacuation.runs import run_evacuation

CONFIG = {"composition": "A", "block": 1, "seed": 0, "time_limit_s": 30}
"""11 pedestrians for 90 steps: two evacuate (through exit2), one is reached."""


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> RunDirectory:
    return run_evacuation(tmp_path_factory.mktemp("evac-export") / "run", CONFIG).run


@pytest.fixture(scope="module")
def pedestrians(run) -> pd.DataFrame:
    positions = run.read_table("positions")
    return positions[positions["kind"] == "pedestrian"]


def _export(run_dir, fmt, out, *extra) -> int:
    return main(
        ["evac", "export", str(run_dir), "--format", fmt, "--out", str(out), *extra]
    )


def test_pedpy_reads_back_every_pedestrian_step(run, pedestrians, tmp_path, capsys):
    out = tmp_path / "trajectory.txt"
    assert _export(run.path, "pedpy-trajectory", out) == 0
    assert str(out) in capsys.readouterr().out
    trajectory = pedpy.load_trajectory(trajectory_file=out)
    assert isinstance(trajectory, pedpy.TrajectoryData)
    assert trajectory.frame_rate == FRAME_RATE == 3.0
    data = trajectory.data.sort_values(["id", "frame"]).reset_index(drop=True)
    expected = pedestrians.sort_values(["agent_id", "step"]).reset_index(drop=True)
    assert len(data) == len(expected) > 0
    assert sorted(data["id"].unique()) == sorted(expected["agent_id"].unique())
    assert data["id"].nunique() == 11
    frames = data.groupby("id")["frame"].agg(["min", "max", "size"])
    steps = expected.groupby("agent_id")["step"].agg(["min", "max", "size"])
    np.testing.assert_array_equal(frames.to_numpy(), steps.to_numpy())
    cell = run_plaza(run).cell_size_m
    np.testing.assert_array_equal(data["frame"], expected["step"])
    np.testing.assert_allclose(data["x"], (expected["x"] + 0.5) * cell, atol=1e-4)
    np.testing.assert_allclose(data["y"], (expected["y"] + 0.5) * cell, atol=1e-4)


def test_every_position_lies_in_pedpy_walkable_area(run, pedestrians, tmp_path):
    trajectory_file = tmp_path / "trajectory.txt"
    geometry_file = tmp_path / "plaza.wkt"
    assert _export(run.path, "pedpy-trajectory", trajectory_file) == 0
    assert _export(run.path, "pedpy-geometry", geometry_file) == 0
    area = pedpy.WalkableArea(geometry_file.read_text())
    plaza = run_plaza(run)
    walls = (plaza.raw.shape[0] * plaza.cell_size_m) * (
        plaza.raw.shape[1] * plaza.cell_size_m
    )
    assert 0 < area.polygon.area < walls
    trajectory = pedpy.load_trajectory(trajectory_file=trajectory_file)
    assert pedpy.is_trajectory_valid(traj_data=trajectory, walkable_area=area)
    centres = shapely.points(
        (pedestrians["x"].to_numpy() + 0.5) * plaza.cell_size_m,
        (pedestrians["y"].to_numpy() + 0.5) * plaza.cell_size_m,
    )
    assert shapely.contains(area.polygon, centres).all()


def test_pedpy_flow_through_an_opening_counts_who_evacuated_there(run):
    outcomes = run.read_table("outcomes")
    evacuated = outcomes[outcomes["outcome"] == "evacuated"]
    assert len(evacuated) > 0
    for opening, group in evacuated.groupby("exit_used"):
        measured = opening_bottleneck(run, str(opening))
        assert measured.crossings == len(group), opening
        assert measured.width_m > 0
        assert (measured.density["density"] >= 0).all()


def test_a_refused_export_writes_nothing(run, tmp_path, capsys):
    out_dir = tmp_path / "out"
    cases = [
        (run.path, "pedpy-trajectory", out_dir / "t.csv", "t.csv"),
        (run.path, "vtk", out_dir / "t.txt", "unknown evacuation export format 'vtk'"),
        (tmp_path, "pedpy-trajectory", out_dir / "t.txt", "not a run directory"),
    ]
    for run_dir, fmt, out, words in cases:
        assert _export(run_dir, fmt, out) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
        assert not out_dir.exists() or not any(out_dir.iterdir())


def test_a_run_without_positions_is_named(tmp_path, capsys):
    quiet = run_evacuation(
        tmp_path / "quiet", {**CONFIG, "time_limit_s": 2}, record_positions=False
    ).run
    out = tmp_path / "out" / "t.txt"
    assert _export(quiet.path, "pedpy-trajectory", out) == 2
    err = capsys.readouterr().err.strip()
    assert str(quiet.path) in err and "positions table holds no pedestrian" in err
    assert not Path(out).parent.exists() or not any(Path(out).parent.iterdir())
