"""Small synthetic histories shared by the trajectory tests (built once per session)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.staypoints import split_history
from mesa_llm_mobility.trajectory.synth import synthesize


@pytest.fixture(scope="session")
def small_city():
    """30 individuals, two weeks."""
    return synthesize(30, 2, seed=3)


@pytest.fixture(scope="session")
def small_split(small_city):
    """The small city's history with its last 3 days held out."""
    return split_history(small_city.stays, held_out_days=3)


def stays_table(rows, timezone="UTC"):
    """A stay-point table from (agent, poi, lat, lon, activity, start, end) tuples."""
    frame = pd.DataFrame(
        rows,
        columns=[
            "agent_id",
            "poi_id",
            "latitude",
            "longitude",
            "activity",
            "start",
            "end",
        ],
    )
    for column in ("start", "end"):
        frame[column] = pd.to_datetime(frame[column], format="ISO8601").dt.tz_localize(
            timezone
        )
    return frame
