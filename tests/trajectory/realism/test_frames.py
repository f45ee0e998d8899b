"""The visit table and the split every detector scores."""

import datetime

import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.realism.frames import (
    RealismError,
    split_for_detection,
    visit_table,
)
from tests.trajectory.conftest import stays_table


def test_visit_table_counts_minutes_from_the_local_midnight():
    stays = stays_table(
        [
            (1, 10, 34.0, -118.0, "Home", "2024-03-09T00:00", "2024-03-09T08:30"),
            (1, 11, 34.1, -118.1, "Work", "2024-03-09T09:00", "2024-03-09T17:00"),
            (1, 10, 34.0, -118.0, "Home", "2024-03-09T17:30", "2024-03-10T00:00"),
            (1, 10, 34.0, -118.0, "Home", "2024-03-10T00:00", "2024-03-10T10:00"),
        ],
        timezone="America/Los_Angeles",
    )
    table = visit_table(stays, "real stay points")
    assert table["day"].tolist() == [datetime.date(2024, 3, 9)] * 3 + [
        datetime.date(2024, 3, 10)
    ]
    assert table["visit"].tolist() == [0, 1, 2, 0]
    assert table["start_minute"].tolist() == [0.0, 540.0, 1050.0, 0.0]
    # wall clock, so the daylight-saving night of 2024-03-10 still ends 10:00 at minute 600
    assert table["end_minute"].tolist() == [510.0, 1020.0, 1440.0, 600.0]
    assert table["previous_poi"].tolist() == [None, 10, 11, None]


def test_split_pairs_equally_many_days_per_individual(halves):
    real, other = halves
    split = split_for_detection(real, other, seed=3)
    days = {
        name: getattr(split, name).groupby("agent_id")["day"].nunique()
        for name in ("train", "real", "generated")
    }
    assert (days["train"] == 7).all()  # half of each individual's 14 real days
    pd.testing.assert_series_equal(days["real"], days["generated"])
    assert (days["real"] == 7).all()
    train_days = set(zip(split.train["agent_id"], split.train["day"], strict=True))
    eval_days = set(zip(split.real["agent_id"], split.real["day"], strict=True))
    assert not train_days & eval_days
    assert split.unmatched == 0
    again = split_for_detection(real, other, seed=3)
    pd.testing.assert_frame_equal(split.real, again.real)
    assert not split.real.equals(split_for_detection(real, other, seed=4).real)


def test_individuals_on_one_side_are_left_out_and_counted(halves):
    real, other = halves
    split = split_for_detection(
        real[real["agent_id"] < 30], other[other["agent_id"] >= 20]
    )
    assert set(split.real["agent_id"]) == set(range(20, 30))
    assert split.unmatched == 30  # 20 real-only, 10 generated-only
    with pytest.raises(RealismError, match="train_fraction must be in"):
        split_for_detection(real, other, train_fraction=0.0)
