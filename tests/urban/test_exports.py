"""``mlm urban export``: an urban run in MATSim's and GeoPandas' terms, read back by them.

The plans file is checked against MATSim's ``population_v6`` structure
(:mod:`~mesa_llm_mobility.urban.matsim_schema`) and parsed with ``xml.etree``: one person per
traveller, one leg per departed trip with its trip id and departure; the trips and legs CSVs
hold the run's trips; the links, facilities and trips layers are read back by
``geopandas.read_parquet`` / ``read_file`` and their counts are the run's. A refused export
exits with status 2, one line, and writes nothing.
"""

from __future__ import annotations

import datetime as dt
import gzip
from xml.etree import ElementTree as ET

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cli import main
from mesa_llm_mobility.urban.matsim_export import LEG_CSV_COLUMNS, TRIP_CSV_COLUMNS
from mesa_llm_mobility.urban.matsim_schema import (
    check_population_v6,
    parse_matsim_time,
)
from mesa_llm_mobility.urban.replay import load_run_scenario
from tests.urban.runs import run_urban

AGENTS = 6


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """Six travellers, two days: drives and transit trips (about 3 s)."""
    return run_urban(
        tmp_path_factory.mktemp("urban-export") / "run", days=2, n_agents=AGENTS, seed=3
    ).run


@pytest.fixture(scope="module")
def trips(run) -> pd.DataFrame:
    trips = run.read_table("trips")
    return trips[trips["departure"].notna()]


def _export(run_dir, fmt, out, *extra) -> int:
    return main(
        ["urban", "export", str(run_dir), "--format", fmt, "--out", str(out), *extra]
    )


def _persons(path) -> dict[str, ET.Element]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as file:
        root = ET.parse(file).getroot()
    return {person.get("id"): person for person in root.findall("person")}


def _leg_trip_id(leg: ET.Element) -> str:
    return next(a.text for a in leg.iter("attribute") if a.get("name") == "trip_id")


def test_matsim_plans_hold_every_traveller_and_trip(run, trips, tmp_path):
    assert {"drive", "transit"} <= set(trips["mode"])
    out = tmp_path / "plans.xml.gz"
    assert _export(run.path, "matsim-plans", out) == 0
    summary = check_population_v6(out)
    assert summary.persons == summary.plans == AGENTS
    assert summary.legs == len(trips)
    assert summary.activities == len(trips) + AGENTS
    assert summary.crs is None  # the reference town: drawing units
    persons = _persons(out)
    assert set(persons) == set(run.read_table("positions")["agent"])
    for agent, own in trips.sort_values("departure").groupby("agent"):
        plan = persons[agent].find("plan")
        legs = plan.findall("leg")
        assert [_leg_trip_id(leg) for leg in legs] == list(own["trip_id"])
        departures = [parse_matsim_time(leg.get("dep_time")) for leg in legs]
        np.testing.assert_allclose(departures, own["departure"] * 60.0)
        travel = [parse_matsim_time(leg.get("trav_time")) for leg in legs]
        np.testing.assert_allclose(travel, (own["arrival"] - own["departure"]) * 60.0)
        modes = {"drive": "car", "transit": "pt", "walk": "walk"}
        assert [leg.get("mode") for leg in legs] == [modes[m] for m in own["mode"]]
        activities = plan.findall("activity")
        assert activities[0].get("type") == "home"
        ends = [parse_matsim_time(a.get("end_time")) for a in activities[:-1]]
        assert ends == departures
        assert "end_time" not in activities[-1].attrib


def test_matsim_plans_of_one_day(run, trips, tmp_path):
    out = tmp_path / "day2.xml"
    assert _export(run.path, "matsim-plans", out, "--day", "2") == 0
    summary = check_population_v6(out)
    day2 = trips[trips["day"] == 2]
    assert summary.persons == AGENTS and summary.legs == len(day2)
    legs = [leg for person in _persons(out).values() for leg in person.iter("leg")]
    by_id = day2.set_index("trip_id")["departure"]
    for leg in legs:
        expected = (by_id[_leg_trip_id(leg)] - 1440.0) * 60.0
        assert parse_matsim_time(leg.get("dep_time")) == pytest.approx(expected)


def test_matsim_trips_and_legs_csv(run, trips, tmp_path):
    trips_out, legs_out = tmp_path / "trips.csv", tmp_path / "legs.csv.gz"
    assert _export(run.path, "matsim-trips", trips_out) == 0
    assert _export(run.path, "matsim-legs", legs_out) == 0
    table = pd.read_csv(trips_out, sep=";")
    assert tuple(table.columns) == TRIP_CSV_COLUMNS
    assert sorted(table["trip_id"]) == sorted(trips["trip_id"])
    expected = trips.set_index("trip_id").loc[table["trip_id"]]
    seconds = table["dep_time"].map(parse_matsim_time).to_numpy()
    np.testing.assert_allclose(seconds, expected["departure"] * 60.0)
    travel = table["trav_time"].map(parse_matsim_time).to_numpy()
    np.testing.assert_allclose(
        travel, (expected["arrival"] - expected["departure"]) * 60
    )
    legs = pd.read_csv(legs_out, sep=";")
    assert tuple(legs.columns) == LEG_CSV_COLUMNS
    assert set(legs["trip_id"]) == set(trips["trip_id"])
    for trip in trips.itertuples():
        own = legs[legs["trip_id"] == trip.trip_id]
        assert list(own["leg_number"]) == list(range(1, len(own) + 1))
        if trip.mode == "drive":
            assert list(own["mode"]) == ["car"]
            assert parse_matsim_time(own["dep_time"].iloc[0]) == trip.departure * 60
        else:
            assert "pt" in set(own["mode"]) and set(own["mode"]) <= {"pt", "walk"}
            assert own.loc[own["mode"] == "pt", "transit_line"].notna().all()
            assert own["start_link"].iloc[0] == next(iter(trip.path))
            assert own["end_link"].iloc[-1] == list(trip.path)[-1]


def test_links_layer_sums_the_link_states(run, tmp_path):
    out = tmp_path / "links.parquet"
    assert _export(run.path, "links", out, "--period", "30") == 0
    links = gpd.read_parquet(out)
    states = run.read_table("link_states")
    assert links["vehicles_entered"].sum() == states["entered"].sum() > 0
    assert ((links["period_end"] - links["period_start"]) == 30).all()
    np.testing.assert_allclose(links["flow_veh_h"], links["vehicles_entered"] * 2.0)
    periods = states.assign(p=(states["time"] % 1440) // 30)
    keys = periods[["link", "direction", "day", "p"]].drop_duplicates()
    assert len(links) == len(keys)
    assert set(links.geom_type) == {"LineString"}
    assert links.crs is None
    assert set(links["kind"]) == {"road", "transit"}
    assert links["riders_entered"].sum() > 0


def test_facilities_and_trips_layers(run, trips, tmp_path):
    facilities_out, trips_out = (
        tmp_path / "facilities.geojson",
        tmp_path / "trips.parquet",
    )
    assert _export(run.path, "facilities", facilities_out) == 0
    assert _export(run.path, "trips", trips_out) == 0
    facilities = gpd.read_file(facilities_out)
    scenario = load_run_scenario(run)
    assert sorted(facilities["facility"]) == sorted(scenario.facilities)
    assert facilities["departures"].sum() == len(trips)
    assert facilities["arrivals"].sum() == trips["arrival"].notna().sum()
    assert set(facilities.geom_type) == {"Point"}
    layer = gpd.read_parquet(trips_out)
    assert sorted(layer["trip_id"]) == sorted(trips["trip_id"])
    midnight = pd.Timestamp(dt.date.fromisoformat(str(run.config["start_date"])))
    expected = trips.set_index("trip_id").loc[layer["trip_id"], "departure"]
    assert list(layer["departure_at"]) == list(
        midnight + pd.to_timedelta(expected.to_numpy(), unit="min")
    )
    assert set(layer.geom_type) <= {"LineString", "Point"}


def test_a_refused_export_writes_nothing(run, tmp_path, capsys):
    out_dir = tmp_path / "out"
    cases = [
        (run.path, "matsim-plans", "plans.csv", (), "plans.csv"),
        (run.path, "sumo", "plans.xml", (), "unknown urban export format 'sumo'"),
        (run.path, "matsim-plans", "plans.xml", ("--period", "30"), "--period"),
        (run.path, "links", "l.parquet", ("--period", "7"), "--period 7"),
        (run.path, "trips", "t.parquet", ("--day", "3"), "no day 3"),
        (tmp_path, "trips", "t.parquet", (), "not a run directory"),
    ]
    for run_dir, fmt, name, extra, words in cases:
        assert _export(run_dir, fmt, out_dir / name, *extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
        assert not out_dir.exists() or not any(out_dir.iterdir())
