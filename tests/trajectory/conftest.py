"""Small synthetic histories shared by the trajectory tests (built once per session)."""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.staypoints import STAY_COLUMNS, split_history
from mesa_llm_mobility.trajectory.synth import synthesize
from tests.conftest import (
    local_server_options,
    slow_sometimes,  # noqa: F401  (the trajectory suites import it here)
)


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
    frame = pd.DataFrame(rows, columns=list(STAY_COLUMNS))
    for column in ("start", "end"):
        frame[column] = pd.to_datetime(frame[column], format="ISO8601").dt.tz_localize(
            timezone
        )
    return frame


def day_structure(stays):
    """One row per (individual, local date): visits, first and last activity, last end minute."""
    start = stays["start"]
    date = start.dt.normalize()
    frame = stays.assign(
        date=date, end_minute=(stays["end"] - date).dt.total_seconds() / 60.0
    ).sort_values(["agent_id", "start"], kind="stable")
    days = frame.groupby(["agent_id", "date"], sort=True)
    return pd.DataFrame(
        {
            "visits": days.size(),
            "first_activity": days["activity"].first(),
            "last_activity": days["activity"].last(),
            "last_end_minute": days["end_minute"].last(),
        }
    ).reset_index()


def assert_days_like_history(generated, history, mean_tolerance):
    """Generated days end at Home at midnight, with the history's visits per day."""
    real = day_structure(history)
    assert (real["last_end_minute"] == 1440).all()  # the data's shape, midnight at home
    assert (real["last_activity"] == "Home").all()
    days = day_structure(generated)
    assert (days["last_activity"] == "Home").all(), days["last_activity"].value_counts()
    assert (days["first_activity"] == "Home").all()
    assert (days["last_end_minute"] == 1440).all(), days["last_end_minute"].describe()
    assert abs(days["visits"].mean() - real["visits"].mean()) <= mean_tolerance, (
        days["visits"].mean(),
        real["visits"].mean(),
    )
    assert days["visits"].std() <= 1.5 * real["visits"].std()
    ranges = real.groupby("agent_id")["visits"].agg(["min", "max"])
    within = days.join(ranges, on="agent_id")
    assert within["visits"].between(within["min"], within["max"]).all()


def llm_options(server, ledger, key, **extra):
    """Brain options for the local server: short timeouts, bounded retries, 16 in flight."""
    return local_server_options(
        server, key, **{"max_concurrency": 16, "ledger": ledger, **extra}
    )
