"""GTFS to transit lines: snapping, the day's timetable, capacities, one-line errors, a ride."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from mesa_llm_mobility.urban.cities.gtfs import import_gtfs, parse_gtfs_time
from mesa_llm_mobility.urban.cities.osm import CityImportError
from mesa_llm_mobility.urban.cities.tables import TRANSIT_MODES
from mesa_llm_mobility.urban.demand import simulate_demand

from .conftest import HELSINKI_GTFS


def _refused(feed: Path, scenario: Path, match: str) -> str:
    """The one-line error of importing ``feed`` on the Monday, matching ``match``."""
    with pytest.raises(CityImportError, match=match) as raised:
        import_gtfs(feed, scenario, date="2025-03-10")
    assert "\n" not in str(raised.value)
    return str(raised.value)


def _rewritten(tmp_path: Path, table: str, change) -> Path:
    """A copy of the bundled feed with one table changed by ``change(frame) -> frame``."""
    target = tmp_path / "feed.zip"
    with zipfile.ZipFile(HELSINKI_GTFS) as source, zipfile.ZipFile(target, "w") as out:
        for name in source.namelist():
            data = source.read(name)
            if name == table:
                frame = change(pd.read_csv(io.BytesIO(data), dtype=str))
                data = frame.to_csv(index=False).encode()
            out.writestr(name, data)
    return target


@pytest.fixture(scope="module")
def city(helsinki, tmp_path_factory):
    path, _ = helsinki
    out = tmp_path_factory.mktemp("transit") / "city.json"
    return out, import_gtfs(HELSINKI_GTFS, path, date="2025-03-10", out=out)


def test_lines_are_snapped_and_run_the_days_timetable(city):
    _, town = city
    lines = town.metro_lines
    assert len(lines) >= 5
    for line in lines.values():
        assert len(set(line.stops)) == len(line.stops) >= 2
        assert all(stop in town.nodes for stop in line.stops)
        assert line.headway == 10 and line.travel_time == 2
        assert (line.service_start, line.service_end) == (6 * 60, 23 * 60)
        assert line.train_capacity == TRANSIT_MODES[0].capacity  # trams


def test_the_engine_carries_riders_on_an_imported_line(city):
    _, town = city
    line = next(iter(town.metro_lines.values()))
    trips = simulate_demand(
        town,
        [
            {
                "trip_id": 1,
                "origin": line.stops[0],
                "destination": line.stops[-1],
                "depart": 8 * 60,
                "mode": "transit",
                "path": list(line.link_names),
            }
        ],
    )
    row = trips.iloc[0]
    assert row["arrival"] > row["departure"]
    rode = (len(line.stops) - 1) * line.travel_time
    assert row["arrival"] - row["departure"] >= rode


def test_times_past_midnight_parse_and_broken_ones_are_named():
    assert parse_gtfs_time("25:30:00", "x") == 25 * 60 + 30
    with pytest.raises(CityImportError, match=r"feed: row 3: broken time '7:6O:00'"):
        parse_gtfs_time("7:6O:00", "feed: row 3")


def test_no_service_on_the_date_is_named(helsinki):
    path, _ = helsinki
    with pytest.raises(CityImportError, match="no trip runs on 2025-03-09"):
        import_gtfs(HELSINKI_GTFS, path, date="2025-03-09")  # a Sunday
    with pytest.raises(
        CityImportError,
        match=r"no service on 2035-01-01 \(the feed runs from 2024-01-01",
    ):
        import_gtfs(HELSINKI_GTFS, path, date="2035-01-01")


def test_a_broken_time_names_its_row(helsinki, tmp_path):
    path, _ = helsinki

    def corrupt(frame):
        frame.loc[5, ["arrival_time", "departure_time"]] = "8:6O:00"
        return frame

    feed = _rewritten(tmp_path, "stop_times.txt", corrupt)
    _refused(
        feed, path, r"feed\.zip: stop_times\.txt row 7 \(trip .*broken time '8:6O:00'"
    )


def test_a_trip_going_back_in_time_is_named(helsinki, tmp_path):
    path, _ = helsinki

    def backwards(frame):
        frame.loc[1, ["arrival_time", "departure_time"]] = "05:00:00"
        return frame

    feed = _rewritten(tmp_path, "stop_times.txt", backwards)
    _refused(feed, path, "goes back in time at stop")


def test_a_feed_far_from_the_network_is_refused(helsinki, tmp_path):
    path, _ = helsinki

    def north(frame):
        frame["stop_lat"] = (frame["stop_lat"].astype(float) + 1.0).astype(str)
        return frame

    feed = _rewritten(tmp_path, "stops.txt", north)
    _refused(
        feed,
        path,
        r"no line has two stops within 300 m of the network "
        r"\(nearest stop 'n\d+', 1[01]\d,\d{3} m away\)",
    )


def test_missing_tables_and_towns_without_coordinates_are_named(helsinki, tmp_path):
    path, _ = helsinki
    target = tmp_path / "partial.zip"
    with zipfile.ZipFile(HELSINKI_GTFS) as source, zipfile.ZipFile(target, "w") as out:
        for name in source.namelist():
            if name != "stop_times.txt":
                out.writestr(name, source.read(name))
    _refused(target, path, r"partial\.zip: missing table stop_times\.txt")
    town = (
        Path(__file__).parents[3]
        / "mesa_llm_mobility/urban/scenarios/nguyen_dupuis.json"
    )
    _refused(HELSINKI_GTFS, town, "nodes have no lon/lat")
