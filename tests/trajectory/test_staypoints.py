"""Stay-point loaders and validation: NumoSim's layout, column mappings, one-line errors."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.staypoints import (
    ROW_COLUMN,
    STAY_COLUMNS,
    StayPointError,
    read_history,
    read_numosim,
    read_staypoints,
    split_history,
    write_numosim,
)
from mesa_llm_mobility.user_files import UserFileError


def _numosim(tmp_path, stays=None, pois=None):
    pois = (
        pois
        if pois is not None
        else pd.DataFrame(
            {
                "poi_id": [10, 11, 12],
                "latitude": [34.0, 34.01, 34.02],
                "longitude": [-118.2, -118.21, -118.22],
                "act_types": ["[1]", "[2]", "[5, 7]"],
            }
        )
    )
    stays = (
        stays
        if stays is not None
        else pd.DataFrame(
            {
                "agent_id": [1, 1, 1, 2],
                "poi_id": [10, 11, 12, 10],
                "start_datetime": [
                    "2024-01-01 00:00:00",
                    "2024-01-01 08:00:00",
                    "2024-01-01 17:30:00",
                    "2024-01-01 00:00:00",
                ],
                "end_datetime": [
                    "2024-01-01 07:30:00",
                    "2024-01-01 17:00:00",
                    "2024-01-01 18:00:00",
                    "2024-01-01 23:00:00",
                ],
            }
        )
    )
    stays.to_csv(tmp_path / "staypoints.csv", index=False)
    pois.to_csv(tmp_path / "poi.csv", index=False)
    return tmp_path


def test_numosim_layout_is_joined_with_activity_names_and_local_times(tmp_path):
    stays = read_numosim(_numosim(tmp_path))
    assert list(stays.columns[: len(STAY_COLUMNS)]) == list(STAY_COLUMNS)
    assert stays["activity"].tolist() == [
        "Home",
        "Work",
        "BuyGoods",
        "Home",
    ]  # first listed code
    assert str(stays["start"].dt.tz) == "America/Los_Angeles"
    assert stays["latitude"].tolist() == [34.0, 34.01, 34.02, 34.0]
    assert stays[ROW_COLUMN].tolist() == [1, 2, 3, 4]


def test_numosim_round_trip_through_parquet(tmp_path, small_city):
    write_numosim(small_city.stays, tmp_path)
    back = read_history(tmp_path)
    pd.testing.assert_frame_equal(
        back[list(STAY_COLUMNS)],
        small_city.stays[list(STAY_COLUMNS)],
        check_dtype=False,
    )


def test_a_parquet_file_with_a_stored_index_is_read_by_position(tmp_path, small_city):
    # a slice of a frame keeps its index (here from row 100), and Parquet stores it
    part = small_city.stays.iloc[100:160]
    path = tmp_path / "part.parquet"
    part.to_parquet(path)
    back = read_staypoints(path)
    pd.testing.assert_frame_equal(
        back[list(STAY_COLUMNS)],
        part[list(STAY_COLUMNS)].reset_index(drop=True),
        check_dtype=False,
    )


def test_column_mapping_and_codes(tmp_path):
    path = tmp_path / "visits.csv"
    pd.DataFrame(
        {
            "person": ["a", "a"],
            "place": ["p1", "p2"],
            "lat": [1.0, 1.1],
            "lng": [2.0, 2.1],
            "act": [1, "Work"],
            "arrive": ["2024-03-01T00:00:00+00:00", "2024-03-01T09:00:00+00:00"],
            "leave": ["2024-03-01T08:00:00+00:00", "2024-03-01T17:00:00+00:00"],
        }
    ).to_csv(path, index=False)
    mapping = {
        "agent_id": "person",
        "poi_id": "place",
        "latitude": "lat",
        "longitude": "lng",
        "activity": "act",
        "start": "arrive",
        "end": "leave",
    }
    stays = read_staypoints(path, columns=mapping, timezone="Europe/Paris")
    assert stays["activity"].tolist() == ["Home", "Work"]
    assert stays["start"].iloc[1] == pd.Timestamp("2024-03-01T10:00:00+01:00")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda s, p: (s.drop(columns="end_datetime"), p),
            "missing column 'end_datetime'",
        ),
        (
            lambda s, p: (s.assign(act_type=[1, 2, 17, 1]), p),
            "row 3, field act_type: unknown activity code 17",
        ),
        (
            lambda s, p: (
                s.assign(
                    end_datetime=s["end_datetime"].where(
                        s.index != 1, "2024-01-01 07:00:00"
                    )
                ),
                p,
            ),
            "row 2, field end: the visit ends",
        ),
        (
            lambda s, p: (
                s.assign(
                    start_datetime=s["start_datetime"].where(
                        s.index != 2, "2024-01-01 16:00:00"
                    )
                ),
                p,
            ),
            "row 3, field start: the visit of 1 starting",
        ),
        (
            lambda s, p: (s, p.assign(latitude=[34.0, None, 34.02])),
            "row 2, field latitude: POI 11 has no valid coordinate",
        ),
        (
            lambda s, p: (s.assign(poi_id=[10, 11, 99, 10]), p),
            "row 3, field poi_id: unknown POI 99",
        ),
    ],
)
def test_bad_input_gets_one_line_naming_file_row_and_field(tmp_path, change, expected):
    good = _numosim(tmp_path)
    stays, pois = change(
        pd.read_csv(good / "staypoints.csv"), pd.read_csv(good / "poi.csv")
    )
    _numosim(tmp_path, stays, pois)
    with pytest.raises(StayPointError) as raised:
        read_numosim(tmp_path)
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert message.startswith(str(tmp_path))
    assert isinstance(raised.value, UserFileError)


def test_overlap_names_both_rows(tmp_path):
    stays = pd.read_csv(_numosim(tmp_path) / "staypoints.csv")
    stays.loc[2, "start_datetime"] = "2024-01-01 16:00:00"
    _numosim(tmp_path, stays)
    with pytest.raises(StayPointError, match="overlaps the one of row 2"):
        read_numosim(tmp_path)


def test_unknown_file_and_format(tmp_path):
    with pytest.raises(StayPointError, match="no such stay-point file"):
        read_staypoints(tmp_path / "missing.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(
        StayPointError, match=r"unknown stay-point file format '\.json'"
    ):
        read_staypoints(tmp_path / "x.json")


def test_split_holds_out_each_individuals_last_days(small_city):
    split = split_history(small_city.stays, held_out_days=3)
    for frame, expected in ((split.history, 11), (split.held_out, 3)):
        days = frame.groupby("agent_id")["start"].apply(
            lambda s: s.dt.normalize().nunique()
        )
        assert (days == expected).all()
    assert split.history["start"].max() < split.held_out["start"].min()
    assert len(split.history) + len(split.held_out) == len(small_city.stays)
    with pytest.raises(ValueError, match="held_out_days"):
        split_history(small_city.stays, -1)
