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


def slow_sometimes(body):
    """A latency of 0-0.3 s by prompt, for the local server: answers arrive out of order."""
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.05


def llm_options(server, ledger, key, **extra):
    """Brain options for the local server: short timeouts, bounded retries, 16 in flight."""
    return {
        "api_base": server.api_base,
        "api_key": key,
        "timeout_s": 1.0,
        "max_attempts": 3,
        "max_total_s": 8.0,
        "max_concurrency": 16,
        "ledger": ledger,
        **extra,
    }
