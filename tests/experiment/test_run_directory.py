from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import pickle

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility import __version__
from mesa_llm_mobility.experiment.run_directory import (
    CheckpointError,
    RunDirectory,
    RunDirectoryError,
    fork,
    to_jsonable,
)


def trips(day: int, n: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "trip_id": [f"d{day}t{k}" for k in range(n)],
            "mode": ["drive", "walk", "transit"][:n],
            "departure": [1440.0 * (day - 1) + 420 + k for k in range(n)],
        }
    )


@pytest.fixture
def run(tmp_path):
    return RunDirectory.create(tmp_path / "run", {"days": 3, "seed": 0}, model="toy")


# ---------------------------------------------------------------------------- create / open
def test_create_writes_json_safe_config_and_metadata(tmp_path):
    config = {
        "scenario": tmp_path / "town.json",
        "seed": np.int64(7),
        "share": np.float32(0.5),
        "weights": np.array([1, 2]),
        "modes": ("drive", "walk"),
        "brain": {"model": "rule", "concurrency": np.int32(4)},
    }
    run = RunDirectory.create(
        tmp_path / "r", config, extra={"embedding": {"name": "hash"}}, model="toy"
    )
    stored = json.loads((tmp_path / "r" / "config.json").read_text())
    assert stored == {
        "scenario": str(tmp_path / "town.json"),
        "seed": 7,
        "share": 0.5,
        "weights": [1, 2],
        "modes": ["drive", "walk"],
        "brain": {"model": "rule", "concurrency": 4},
    }
    assert run.config == stored
    meta = run.metadata
    assert meta["package_version"] == __version__
    assert meta["python"].count(".") == 2
    assert meta["mesa_version"].startswith("3.5")
    created = dt.datetime.fromisoformat(meta["created"])
    assert created.utcoffset() == dt.timedelta(0)
    assert meta["extra"] == {"embedding": {"name": "hash"}}
    run.update_metadata({"embedding": {"name": "minilm"}, "brain": "rule"})
    assert RunDirectory.open(run.path).metadata["extra"] == {
        "embedding": {"name": "minilm"},
        "brain": "rule",
    }


def test_standard_locations(run):
    assert run.ledger_path == run.path / "ledger.jsonl"
    assert run.memory_dir == run.path / "memory"
    assert run.tables_dir == run.path / "tables"
    assert run.checkpoints_dir == run.path / "checkpoints"
    assert run.plots_dir == run.path / "plots"
    assert run.source_ledger_path is None


def test_create_refuses_existing_run_unless_overwrite(run):
    with pytest.raises(RunDirectoryError, match=r"run.*non-empty.*overwrite=True"):
        RunDirectory.create(run.path, {"days": 1}, model="toy")
    run.write_table("trips", trips(1))
    again = RunDirectory.create(run.path, {"days": 1}, overwrite=True, model="toy")
    assert again.config == {"days": 1}
    assert again.table_names() == []


def test_create_never_deletes_a_foreign_folder(tmp_path):
    (tmp_path / "precious.txt").write_text("keep")
    with pytest.raises(RunDirectoryError, match=r"not a run directory.*refusing"):
        RunDirectory.create(tmp_path, {}, overwrite=True, model="toy")
    assert (tmp_path / "precious.txt").read_text() == "keep"
    RunDirectory.create(tmp_path / "empty_ok", {}, model="toy")  # a new folder is fine
    (tmp_path / "empty").mkdir()
    RunDirectory.create(tmp_path / "empty", {}, model="toy")  # and so is an empty one


def test_create_after_a_creation_cut_short(tmp_path):
    # a worker killed inside create() leaves only the temporary file of its config
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / ".config.json.k2j4a.tmp").write_text('{"days"')
    run = RunDirectory.create(cut, {"days": 1}, model="toy")
    assert run.config == {"days": 1}
    assert sorted(p.name for p in cut.iterdir()) == ["config.json", "metadata.json"]
    # anything else beside such a file is still somebody's folder
    other = tmp_path / "other"
    other.mkdir()
    (other / ".config.json.x.tmp").write_text("")
    (other / "notes.txt").write_text("keep")
    with pytest.raises(RunDirectoryError, match="non-empty"):
        RunDirectory.create(other, {}, model="toy")
    assert (other / "notes.txt").read_text() == "keep"


def test_config_errors_name_the_field(tmp_path):
    with pytest.raises(TypeError, match=r"config\['brain'\]\['client'\].*object"):
        RunDirectory.create(
            tmp_path / "r", {"brain": {"client": object()}}, model="toy"
        )
    with pytest.raises(ValueError, match=r"config\['rate'\]: nan"):
        RunDirectory.create(tmp_path / "r", {"rate": float("nan")}, model="toy")
    assert not (tmp_path / "r").exists()


def test_to_jsonable_sets_and_keys():
    assert to_jsonable({1: {"b", "a"}, np.int64(2): None}) == {
        "1": ["a", "b"],
        "2": None,
    }


def test_open_errors(tmp_path):
    with pytest.raises(RunDirectoryError, match="no such run directory"):
        RunDirectory.open(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirectoryError, match="not a directory"):
        RunDirectory.open(tmp_path / "file")
    with pytest.raises(
        RunDirectoryError, match=r"not a run directory \(missing config.json\)"
    ):
        RunDirectory.open(tmp_path)
    run = RunDirectory.create(tmp_path / "r", {"a": 1}, model="toy")
    run.metadata_path.unlink()
    with pytest.raises(RunDirectoryError, match=r"missing metadata\.json"):
        RunDirectory.open(run.path)
    run = RunDirectory.create(tmp_path / "s", {"a": 1}, model="toy")
    run.config_path.write_text('{\n  "a": 1,\n}\n')
    with pytest.raises(
        RunDirectoryError, match=r"config.json: not valid JSON \(line 3, column 1\)"
    ):
        RunDirectory.open(run.path)


# ---------------------------------------------------------------------------- tables
def test_whole_table_round_trip(run):
    frame = trips(1)
    path = run.write_table("summary", frame)
    assert path == run.tables_dir / "summary.parquet"
    pd.testing.assert_frame_equal(run.read_table("summary"), frame)
    pd.testing.assert_frame_equal(pd.read_parquet(path), frame)


def test_partitioned_table_appends_without_rewriting(run):
    first = run.write_table("trips", trips(1), day=1)
    stamp = first.stat().st_mtime_ns
    run.write_table("trips", trips(2, n=2), day=2)
    run.write_table("trips", trips(10, n=1), day=10)  # sorts numerically, not as text
    assert first.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in (run.tables_dir / "trips").iterdir()) == [
        "day=1.parquet",
        "day=10.parquet",
        "day=2.parquet",
    ]
    table = run.read_table("trips")
    assert list(table["day"]) == [1, 1, 1, 2, 2, 10]
    assert table["day"].dtype == np.int64
    assert list(table.columns) == ["trip_id", "mode", "departure", "day"]
    # plain pandas reads the folder too (all parts, with their day column)
    plain = pd.read_parquet(run.tables_dir / "trips")
    assert sorted(plain["day"]) == [1, 1, 1, 2, 2, 10]
    assert run.table_days("trips") == [1, 2, 10]
    assert run.table_names() == ["trips"]
    assert list(run.read_table("trips", days=[10, 2])["day"]) == [10, 2, 2]


def test_partitioned_table_rewrites_one_day_and_checks_day_column(run):
    run.write_table("trips", trips(1), day=1)
    # a day column that matches is fine
    run.write_table("trips", trips(1, n=1).assign(day=1), day=1)
    assert len(run.read_table("trips")) == 1
    with pytest.raises(ValueError, match="column 'day' disagrees with day=2"):
        run.write_table("trips", trips(1).assign(day=1), day=2)


def test_table_errors(run):
    with pytest.raises(
        RunDirectoryError, match=r"no table 'trips' \(stored tables: none\)"
    ):
        run.read_table("trips")
    run.write_table("summary", trips(1))
    with pytest.raises(
        RunDirectoryError, match=r"'summary' is already stored whole-run"
    ):
        run.write_table("summary", trips(1), day=1)
    run.write_table("trips", trips(1), day=1)
    with pytest.raises(RunDirectoryError, match=r"'trips' is already stored per-day"):
        run.write_table("trips", trips(1))
    with pytest.raises(RunDirectoryError, match=r"stored tables: summary, trips"):
        run.read_table("links")
    with pytest.raises(
        RunDirectoryError, match=r"'trips' has no day 3 \(stored days: 1\)"
    ):
        run.read_table("trips", days=[1, 3])
    with pytest.raises(RunDirectoryError, match=r"stored days: none, a whole-run"):
        run.read_table("summary", days=[1])
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="table name"):
            run.write_table(bad, trips(1))
    with pytest.raises(ValueError, match="day must be a whole number"):
        run.write_table("trips", trips(1), day=-1)


# ---------------------------------------------------------------------------- checkpoints
def test_checkpoint_round_trip_and_index(run):
    assert run.latest_checkpoint() is None
    run.write_checkpoint(
        1, {"model": {"agents": [1, 2]}, "rng": np.random.default_rng(0)}
    )
    run.write_checkpoint(2, {"model": {"agents": [1, 2, 3]}})
    assert run.checkpoint_numbers() == [1, 2]
    day, state = run.latest_checkpoint()
    assert day == 2
    assert state == {"model": {"agents": [1, 2, 3]}}
    assert run.read_checkpoint(1)["rng"].integers(100) == np.random.default_rng(
        0
    ).integers(100)
    index = json.loads((run.checkpoints_dir / "index.json").read_text())["checkpoints"]
    assert [entry["file"] for entry in index] == [
        "checkpoint_1.pkl",
        "checkpoint_2.pkl",
    ]
    assert all(len(entry["sha256"]) == 64 for entry in index)
    assert dt.datetime.fromisoformat(index[0]["created"]).utcoffset() == dt.timedelta(0)
    # no temporary files are left behind
    assert sorted(p.name for p in run.checkpoints_dir.iterdir()) == [
        "checkpoint_1.pkl",
        "checkpoint_2.pkl",
        "index.json",
    ]


def test_checkpoint_write_is_atomic(run, monkeypatch):
    run.write_checkpoint(1, {"x": 1})

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run.write_checkpoint(1, {"x": Unpicklable()})
    assert run.read_checkpoint(1) == {"x": 1}

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        run.write_checkpoint(1, {"x": 2})
    monkeypatch.undo()
    assert run.read_checkpoint(1) == {"x": 1}
    assert sorted(p.name for p in run.checkpoints_dir.iterdir()) == [
        "checkpoint_1.pkl",
        "index.json",
    ]


def test_corrupt_checkpoint_names_file_and_falls_back(run, caplog):
    run.write_checkpoint(1, {"day": 1})
    path = run.write_checkpoint(2, {"day": 2})
    path.write_bytes(path.read_bytes()[:-5])  # truncated
    with pytest.raises(
        CheckpointError, match=r"checkpoint_2.pkl: corrupt or truncated"
    ):
        run.read_checkpoint(2)
    with pytest.raises(CheckpointError, match=r"checkpoint_2.pkl"):
        run.latest_checkpoint()
    with caplog.at_level(logging.WARNING):
        assert run.latest_checkpoint(skip_corrupt=True) == (1, {"day": 1})
    assert "checkpoint_2.pkl" in caplog.text
    (run.checkpoints_dir / "checkpoint_1.pkl").unlink()
    with pytest.raises(
        CheckpointError, match=r"checkpoint_1.pkl: checkpoint file is missing"
    ):
        run.read_checkpoint(1)
    assert run.latest_checkpoint(skip_corrupt=True) is None


def test_unpicklable_checkpoint_names_file(run):
    path = run.write_checkpoint(3, {"x": 1})
    data = b"not a pickle"
    path.write_bytes(data)
    index = json.loads(run.checkpoint_index_path.read_text())
    index["checkpoints"][0]["sha256"] = hashlib.sha256(data).hexdigest()
    run.checkpoint_index_path.write_text(json.dumps(index))
    with pytest.raises(
        CheckpointError, match=r"checkpoint_3.pkl: cannot unpickle checkpoint"
    ):
        run.read_checkpoint(3)


def test_checkpoint_errors(run):
    with pytest.raises(CheckpointError, match=r"no checkpoint 4 \(checkpoints: none\)"):
        run.read_checkpoint(4)
    with pytest.raises(TypeError, match="mapping"):
        run.write_checkpoint(1, [1, 2])
    run.checkpoints_dir.mkdir()
    run.checkpoint_index_path.write_text("{")
    with pytest.raises(RunDirectoryError, match=r"index.json: not valid JSON \(line 1"):
        run.latest_checkpoint()
    run.checkpoint_index_path.write_text('{"checkpoints": [{"day": 1}]}')
    with pytest.raises(CheckpointError, match=r"index.json: checkpoints\[0\] needs"):
        run.latest_checkpoint()


# ---------------------------------------------------------------------------- fork
def test_fork(tmp_path):
    source = RunDirectory.create(
        tmp_path / "source",
        {"days": 3, "brain": {"model": "rule", "temperature": 0.0}},
        model="toy",
        model_class="tests.Toy",
    )
    source.update_metadata({"embedding": {"name": "hash"}})
    for day in (1, 2, 3):
        source.write_table("trips", trips(day), day=day)
        source.write_checkpoint(day, {"day": day})
    snapshot = source.memory_snapshot_path(2)
    snapshot.mkdir()
    (snapshot / "chroma.sqlite3").write_bytes(b"memories of day 2")
    source.write_table("summary", trips(1))
    source.ledger_path.write_text('{"kind": "DailyPlan"}\n')

    config = {"days": 5, "brain": {"model": "rule", "temperature": 0.7}}
    run = fork(source.path, tmp_path / "fork", at=2, config=config, changes={"days": 5})
    assert run.config == config
    meta = run.metadata
    assert meta["forked_from"] == str(source.path.resolve())
    assert meta["forked_at"] == 2
    assert meta["changes"] == {"days": 5}
    assert (meta["model"], meta["model_class"]) == ("toy", "tests.Toy")
    assert meta["extra"] == {"embedding": {"name": "hash"}}
    assert run.checkpoint_numbers() == [2]
    assert run.latest_checkpoint() == (2, {"day": 2})
    assert list(run.read_table("trips")["day"].unique()) == [1, 2]
    assert run.table_names() == ["trips"]
    copied = run.memory_snapshot_path(2) / "chroma.sqlite3"
    assert copied.read_bytes() == b"memories of day 2"
    assert run.source_ledger_path == source.path.resolve() / "ledger.jsonl"
    assert run.source_ledger_path.read_text().startswith('{"kind"')
    assert not run.ledger_path.exists()
    # the source is untouched
    assert source.checkpoint_numbers() == [1, 2, 3]
    assert source.table_days("trips") == [1, 2, 3]


def test_fork_errors(tmp_path):
    source = RunDirectory.create(tmp_path / "source", {"days": 3}, model="toy")
    source.write_checkpoint(1, {"day": 1})
    same = {"config": source.config, "changes": {}}
    with pytest.raises(CheckpointError, match=r"no checkpoint 2 \(checkpoints: 1\)"):
        fork(source, tmp_path / "fork", at=2, **same)
    assert not (tmp_path / "fork").exists()
    with pytest.raises(RunDirectoryError, match="into itself"):
        fork(source, source.path, at=1, overwrite=True, **same)
    with pytest.raises(RunDirectoryError, match="not a run directory"):
        fork(tmp_path, tmp_path / "fork", at=1, **same)
    fork(source, tmp_path / "fork", at=1, **same)
    with pytest.raises(RunDirectoryError, match="overwrite=True"):
        fork(source, tmp_path / "fork", at=1, **same)
    replaced = fork(source, tmp_path / "fork", at=1, overwrite=True, **same)
    assert replaced.checkpoint_numbers() == [1]


def test_pickle_state_is_a_dict(run):
    run.write_checkpoint(0, {"initial": True})
    raw = pickle.loads((run.checkpoints_dir / "checkpoint_0.pkl").read_bytes())
    assert raw == {"initial": True}


def test_checkpoints_are_numbered_by_the_model(tmp_path):
    run = RunDirectory.create(tmp_path / "steps", {"seed": 0}, model="toy")
    run.write_checkpoint(0, {"tick": 0})
    run.write_checkpoint(180, {"tick": 180})
    assert run.checkpoint_numbers() == [0, 180]
    assert run.latest_checkpoint() == (180, {"tick": 180})
    index = json.loads(run.checkpoint_index_path.read_text())["checkpoints"]
    assert [(entry["number"], entry["file"]) for entry in index] == [
        (0, "checkpoint_0.pkl"),
        (180, "checkpoint_180.pkl"),
    ]
    with pytest.raises(
        CheckpointError, match=r"no checkpoint 5 \(checkpoints: 0, 180\)"
    ):
        run.read_checkpoint(5)
    with pytest.raises(ValueError, match="checkpoint must be a whole number >= 0"):
        run.write_checkpoint(-1, {})


def test_open_refuses_another_format_or_another_model_in_one_line(tmp_path):
    run = RunDirectory.create(tmp_path / "urban", {"days": 1}, model="urban")
    assert RunDirectory.open(run.path, model="urban").model_name == "urban"
    with pytest.raises(
        RunDirectoryError,
        match=r"urban: a run of the urban model, not of the evacuation model: open it "
        "with its own model's command",
    ):
        RunDirectory.open(run.path, model="evacuation")
    metadata = json.loads(run.metadata_path.read_text())
    del metadata["format_version"]  # as written by an earlier development version
    run.metadata_path.write_text(json.dumps(metadata))
    with pytest.raises(RunDirectoryError) as refused:
        RunDirectory.open(run.path)
    message = str(refused.value)
    assert "\n" not in message
    assert (
        "run-directory format 1; this version reads format 2: run it again" in message
    )


def test_remove_checkpoint(run):
    for day in (1, 2, 3):
        run.write_checkpoint(day, {"day": day})
    run.remove_checkpoint(2)
    assert run.checkpoint_numbers() == [1, 3]
    assert not run.checkpoint_path(2).exists()
    assert run.read_checkpoint(3) == {"day": 3}
    with pytest.raises(CheckpointError, match="no checkpoint 2 to remove"):
        run.remove_checkpoint(2)
