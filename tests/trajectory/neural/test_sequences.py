"""Fixed-interval day sequences: the history's own cells go back to stays in the same cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.metrics import build_timelines
from mesa_llm_mobility.trajectory.staypoints import local_dates, validate_staypoints

pytest.importorskip("jax")

from mesa_llm_mobility.trajectory.neural.sequences import DaySequences


def test_history_days_go_back_to_stays_in_the_same_cells(small_split):
    history = small_split.history
    sequences = DaySequences.fit(history)
    assert sequences.tokens.shape[1] == 96
    assert sequences.tokens.max() < sequences.vocabulary
    # the first 5 days of the history, back to stays and laid on the grid again
    rows = np.arange(5)
    dates = [
        pd.Timestamp(local_dates(history[history["agent_id"] == agent]).min())
        + pd.Timedelta(days=int(offset))
        for agent, offset in zip(sequences.agents[rows], rows, strict=True)
    ]
    stays = sequences.to_stays(sequences.tokens[rows], sequences.agents[rows], dates)
    validate_staypoints(stays)
    assert set(sequences.agents[rows]) == {
        sequences.agents[0]
    }  # one person's first days
    again = build_timelines(stays, sequences.grid, sequences.timezone).days
    # (the last stay ends at the next midnight, which the timeline counts as one more day)
    assert (again[: rows.size] == sequences.cells[sequences.tokens[rows]]).all()
    # a day of one cell is one stay from midnight to midnight
    flat = np.full((1, 96), sequences.tokens[0, 0])
    one = sequences.to_stays(flat, [sequences.agents[0]], [dates[0]])
    assert len(one) == 1
    assert (one["end"] - one["start"]).iloc[0] == pd.Timedelta(days=1)


def test_weekday_and_day_type_follow_the_dates(small_split):
    sequences = DaySequences.fit(small_split.history)
    assert set(np.unique(sequences.weekdays)) == set(range(7))
    assert ((sequences.weekdays >= 5) == (sequences.day_types == 1)).all()
    rng = np.random.default_rng(0)
    agent = sequences.agents[0]
    first = sequences.first_tokens([agent] * 7, list(range(7)), rng)
    own_days = sequences.agents == agent
    for weekday, token in enumerate(first):
        same = own_days & (sequences.weekdays == weekday)
        assert token in set(sequences.tokens[same, 0])
