from __future__ import annotations

import pytest
from matplotlib.animation import FFMpegWriter
from PIL import Image

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban.replay import (
    animate_run,
    animation_clocks,
    load_run_scenario,
    snapshot_run,
)


@pytest.fixture(scope="module")
def run_path(finished_run):
    return finished_run.run.path


# ---------------------------------------------------------------------------- the scenario
def test_load_run_scenario(run_path):
    assert load_run_scenario(run_path).name == "nguyen_dupuis"
    assert load_run_scenario(RunDirectory.open(run_path)).name == "nguyen_dupuis"


def test_load_run_scenario_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match=r"nope: no such run directory"):
        load_run_scenario(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        ValueError, match=r"not a run directory \(missing config.json\)"
    ):
        load_run_scenario(tmp_path / "empty")
    RunDirectory.create(tmp_path / "incomplete", {}, model="urban")
    with pytest.raises(
        ValueError, match=r"incomplete/config.json: no 'scenario' entry"
    ):
        load_run_scenario(tmp_path / "incomplete")
    RunDirectory.create(tmp_path / "lost", {"scenario": "atlantis"}, model="urban")
    with pytest.raises(
        ValueError,
        match=r"lost/config.json: the run's scenario cannot be loaded: atlantis: no such",
    ):
        load_run_scenario(tmp_path / "lost")
    RunDirectory.create(tmp_path / "evac", {}, model="evacuation")
    with pytest.raises(
        ValueError, match=r"a run of the evacuation model, not of the urban model"
    ):
        load_run_scenario(tmp_path / "evac")


# ---------------------------------------------------------------------------- snapshots
def test_snapshot_run_grid_sizes(run_path, tmp_path):
    default = snapshot_run(run_path, dpi=50)
    assert default == run_path / "plots" / "snapshot_0700-0730-0800-0830.png"
    small = snapshot_run(
        run_path, ["07:45", 500], days=[2], out=tmp_path / "one.png", dpi=50
    )
    assert small == tmp_path / "one.png"
    with Image.open(default) as grid, Image.open(small) as one:
        # figure of (2.6 x times + 0.4) x (2.3 x days + 0.7) inches
        assert grid.size == (round(10.8 * 50), round(5.3 * 50))  # 2 days x 4 times
        assert one.size == (round(5.6 * 50), round(3.0 * 50))  # 1 day x 2 times
        assert grid.width / one.width == pytest.approx(10.8 / 5.6, rel=0.01)
    named = snapshot_run(run_path, ["08:00"], days=[1, 2], dpi=30)
    assert named.name == "snapshot_0800_day1-2.png"


def test_snapshot_run_errors(run_path, tmp_path):
    with pytest.raises(
        ValueError, match=r"day 3 is not in the run .*days recorded 1, 2"
    ):
        snapshot_run(run_path, days=[1, 3])
    with pytest.raises(
        ValueError, match=r"time: expected 'HH:MM' or minutes, got '7h'"
    ):
        snapshot_run(run_path, ["07:00", "7h"])
    with pytest.raises(ValueError, match=r"'24:30' is not a time of day"):
        snapshot_run(run_path, ["24:30"])
    with pytest.raises(ValueError, match=r"no such run directory"):
        snapshot_run(tmp_path / "nope")
    with pytest.raises(ValueError, match="at least one time"):
        snapshot_run(run_path, [])


# ---------------------------------------------------------------------------- animations
def test_animation_clocks():
    assert animation_clocks("07:00", "07:30", 10) == [420.0, 430.0, 440.0, 450.0]
    assert len(animation_clocks()) == 73  # 05:00 to 11:00 every 5 minutes
    assert animation_clocks("07:00", "07:25", 10)[-1] == 440.0
    with pytest.raises(ValueError, match="must be after start"):
        animation_clocks("08:00", "07:00")
    with pytest.raises(ValueError, match="every_minutes must be positive"):
        animation_clocks(every_minutes=0)


def test_animate_run_writes_an_animated_gif(run_path):
    path = animate_run(run_path, 2, start="07:00", end="07:30", fps=4, dpi=40)
    assert path == run_path / "plots" / "day2_0700-0730.gif"
    with Image.open(path) as gif:
        assert gif.format == "GIF"
        assert gif.is_animated
        assert gif.n_frames == 7
        assert gif.size == (round(6.4 * 40), round(5.4 * 40))
        assert gif.info["duration"] == 250


def test_animate_run_errors(run_path, tmp_path, monkeypatch):
    with pytest.raises(
        ValueError, match=r"day 3 is not in the run .*days recorded 1, 2"
    ):
        animate_run(run_path, 3)
    with pytest.raises(
        ValueError, match=r"start: expected 'HH:MM' or minutes, got 'x'"
    ):
        animate_run(run_path, start="x")
    with pytest.raises(ValueError, match=r"no such run directory"):
        animate_run(tmp_path / "nope")
    with pytest.raises(ValueError, match=r"cannot write a \.png animation; use \.gif"):
        animate_run(run_path, out=tmp_path / "day.png")
    with pytest.raises(ValueError, match=r"fps must be positive"):
        animate_run(run_path, fps=0)
    monkeypatch.setattr(FFMpegWriter, "isAvailable", classmethod(lambda cls: False))
    with pytest.raises(ValueError, match=r"\.mp4 needs ffmpeg on the PATH"):
        animate_run(run_path, out=tmp_path / "day.mp4")
    assert not list(tmp_path.glob("day.*"))


# ---------------------------------------------------------------------------- command line
def test_cli_snapshot_and_animate(run_path, tmp_path, capsys):
    png, gif = tmp_path / "grid.png", tmp_path / "day1.gif"
    options = ["--times", "07:00,08:00", "--days", "1", "--dpi", "40"]
    assert main(["urban", "snapshot", str(run_path), *options, "--out", str(png)]) == 0
    assert capsys.readouterr().out.strip() == f"snapshots written to {png}"
    with Image.open(png) as image:
        assert image.size == (round(5.6 * 40), round(3.0 * 40))
    options = [
        "--day",
        "1",
        "--start",
        "07:00",
        "--end",
        "07:40",
        "--every",
        "10",
        "--dpi",
        "30",
    ]
    assert main(["urban", "animate", str(run_path), *options, "--out", str(gif)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"animation of 5 frames written to {gif}"
    )
    with Image.open(gif) as image:
        assert image.n_frames == 5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["snapshot", "{run}", "--days", "1,9"], "day 9 is not in the run"),
        (["snapshot", "{run}", "--days", "one"], "--days: expected day numbers"),
        (["snapshot", "{run}", "--times", "7 am"], "time: expected 'HH:MM'"),
        (["snapshot", "{missing}"], "no such run directory"),
        (["animate", "{run}", "--day", "0"], "day 0 is not in the run"),
        (["animate", "{run}", "--out", "x.webm"], "cannot write a .webm animation"),
        (["animate", "{run}", "--end", "04:00"], "must be after start"),
    ],
)
def test_cli_errors_are_one_line(run_path, tmp_path, capsys, argv, message):
    argv = [a.format(run=run_path, missing=tmp_path / "missing") for a in argv]
    assert main(["urban", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("mlm: error: ")
    assert message in captured.err
