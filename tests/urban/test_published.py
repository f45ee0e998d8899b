"""The published GATSim run as our tables (urban/published.py): import, shipped data, run dir."""

from __future__ import annotations

import json
from importlib import resources

import pandas as pd
import pytest

from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.urban import macro
from mesa_llm_mobility.urban.published import (
    TABLES,
    import_published_run,
    load_published_run,
    memory_check,
    read_published_tables,
    run_folder,
    summary_lines,
    write_published_tables,
    write_run_directory,
)
from mesa_llm_mobility.urban.published_movements import PublishedDataError
from mesa_llm_mobility.urban.replay import snapshot_run


@pytest.fixture(scope="module")
def shipped():
    return load_published_run()


def test_import_a_checkout(gatsim_checkout):
    run = import_published_run(gatsim_checkout)
    assert set(run.tables) == set(TABLES)
    assert run.trips["agent"].tolist() == ["Ann Lee", "Bea Roy"]
    assert run.info["missing_minutes"] == [] and run.info["days"] == 1
    # Ann's remembered trip counts from 07:20, 40 minutes: it matches the movements exactly
    assert run.info["memory_check"] == {
        "remembered": 1,
        "exact": 1,
        "later_start": 0,
        "unmatched": 0,
    }
    people = {p["name"]: p for p in run.population["people"]}
    assert people["Bea Roy"]["household_vehicles"] == 0
    assert len(run.tables["plans"]) == 6 and set(run.tables["plans"]["source"]) == {
        "plan"
    }
    assert len(run.tables["memories"]) == 1
    assert summary_lines(run)[1].endswith("no minute missing")


def test_the_run_folder_itself_or_a_checkout(gatsim_checkout, tmp_path):
    folder = gatsim_checkout / "gatsim" / "storage" / "experiment_2"
    assert run_folder(gatsim_checkout) == folder
    assert run_folder(folder) == folder
    with pytest.raises(PublishedDataError, match="not a GATSim checkout"):
        run_folder(tmp_path / "nothing")


def test_tables_round_trip_through_files(gatsim_checkout, tmp_path):
    run = import_published_run(gatsim_checkout)
    write_published_tables(run, tmp_path / "data")
    back = read_published_tables(tmp_path / "data")
    for name in TABLES:
        pd.testing.assert_frame_equal(
            back.tables[name].reset_index(drop=True),
            run.tables[name].reset_index(drop=True),
            check_dtype=False,
        )
    assert back.info == json.loads(json.dumps(run.info))
    assert back.population == run.population


def test_memory_check_sorts_remembered_trips():
    trips = pd.DataFrame(
        {
            "agent": ["a", "a"],
            "departure": [100.0, 300.0],
            "arrival": [140.0, 330.0],
            "origin": ["Home", "Work"],
            "destination": ["Work", "Home"],
            "travel_time": [40.0, 30.0],
        }
    )
    remembered = pd.DataFrame(
        {
            "agent": ["a", "a", "a"],
            "origin": ["Home", "Work", "Work"],
            "destination": ["Work", "Home", "Gym"],
            "mode": ["drive"] * 3,
            "start": [100, 310, 310],
            "minutes": [40, 20, 20],
        }
    )
    # the second is timed from a revision at 310 (same arrival); the third matches nothing
    assert memory_check(trips, remembered) == {
        "remembered": 3,
        "exact": 1,
        "later_start": 1,
        "unmatched": 1,
    }


# ----------------------------------------------------------------------------- shipped data
def test_the_shipped_run_is_whole(shipped):
    assert shipped.info["missing_minutes"] == []
    assert shipped.info["last_minute"] == 4008 and shipped.days == 3
    assert shipped.trips["agent"].nunique() == 60
    assert len(shipped.population["people"]) == 70
    # every trip the personas remember agrees with a trip found in the movements
    check = shipped.info["memory_check"]
    assert check["exact"] + check["later_start"] >= check["remembered"] - 1


def test_the_bundled_population_is_the_shipped_one(shipped):
    bundled = (
        resources.files("mesa_llm_mobility.urban")
        / "scenarios"
        / "population_gatsim.json"
    )
    assert json.loads(bundled.read_text("utf-8")) == shipped.population


def test_the_published_days_measured(shipped):
    measures = macro.day_metrics(shipped.trips).set_index("day")
    # what the importer computes (docs/experiments/urban_macro.md quotes these)
    assert measures["starters"].tolist() == [47, 47, 48]
    assert measures["starters_on_time"].tolist() == [16, 19, 22]
    assert measures.loc[1, "starters_late_by_plan"] == 28
    assert measures.loc[1, "starters_mean_departure"] == pytest.approx(449.06, abs=0.01)
    assert measures.loc[1, "starters_median_departure"] == 450


def test_every_timed_trip_keeps_its_link_times(shipped):
    trips = shipped.trips[shipped.trips["arrival"].notna()]
    traversals = shipped.tables["traversals"]
    per_trip = traversals.groupby("trip_id").agg(
        tail=("tail", "min"), head=("head", "max")
    )
    joined = trips.join(per_trip, on="trip_id")
    assert (joined["tail"] == joined["departure"]).all()
    # the prototype enters the destination facility the minute after the last node
    assert (joined["arrival"] - joined["head"] == 1).all()


def test_the_published_run_as_a_saved_run(shipped, tmp_path):
    directory = write_run_directory(shipped, tmp_path / "run")
    opened = RunDirectory.open(directory.path)
    assert opened.metadata["model"] == "urban" and opened.config["events"] is False
    assert opened.table_days("trips") == [1, 2, 3]
    states = opened.read_table("link_states", days=[1])
    assert len(states) == 1440 * 58
    figure = snapshot_run(opened, times=["07:30"], days=[1], out=tmp_path / "snap.png")
    assert figure.is_file()
    with pytest.raises(Exception, match="already exists"):
        write_run_directory(shipped, tmp_path / "run")
