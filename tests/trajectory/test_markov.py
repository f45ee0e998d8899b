"""The Markov chain baseline, fitted on a tiny hand-made history and checked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.markov import MarkovChainBaseline
from mesa_llm_mobility.trajectory.staypoints import STAY_COLUMNS, validate_staypoints

from .conftest import stays_table

P1, P2, P3 = (1, 34.0, -118.0), (2, 34.1, -118.1), (3, 34.05, -118.2)


def _visit(agent, poi, activity, start, end):
    return (agent, poi[0], poi[1], poi[2], activity, start, end)


@pytest.fixture(scope="module")
def history():
    rows = []
    for day, work_end, lunch in (
        ("01", "17:00", False),
        ("02", "12:00", True),
        ("03", "17:00", False),
    ):
        date = f"2024-01-{day}"
        following = f"2024-01-{int(day) + 1:02d}T00:00"
        rows.append(_visit("a", P1, "Home", f"{date}T00:00", f"{date}T08:00"))
        rows.append(_visit("a", P2, "Work", f"{date}T09:00", f"{date}T{work_end}"))
        if lunch:
            rows.append(_visit("a", P3, "EatOut", f"{date}T12:30", f"{date}T13:30"))
        rows.append(_visit("a", P1, "Home", f"{date}T18:00", following))
    # a Saturday: a weekend chain of its own
    rows.append(_visit("a", P1, "Home", "2024-01-06T00:00", "2024-01-06T11:00"))
    rows.append(_visit("a", P3, "EatOut", "2024-01-06T11:10", "2024-01-06T13:00"))
    rows.append(_visit("a", P1, "Home", "2024-01-06T13:30", "2024-01-07T00:00"))
    # b only has weekdays: its weekend days come from the chain of all its days
    rows.append(_visit("b", P3, "Home", "2024-01-01T00:00", "2024-01-01T10:00"))
    rows.append(_visit("b", P2, "Work", "2024-01-01T10:30", "2024-01-02T00:00"))
    return validate_staypoints(stays_table(rows))


def test_transition_probabilities_are_the_hand_counted_ones(history):
    fitted = MarkovChainBaseline.fit(history, bin_minutes=60)
    weekday = fitted.chain("a", 0)
    home0, work9 = ("Home", 1, 0), ("Work", 2, 9)
    lunch12, home18 = ("EatOut", 3, 12), ("Home", 1, 18)
    assert weekday.days == 3
    assert set(weekday.states) == {home0, work9, lunch12, home18}
    assert weekday.start_probs[weekday.index(home0)] == 1.0
    assert weekday.probability(home0, work9) == 1.0
    assert weekday.probability(work9, home18) == pytest.approx(2 / 3)
    assert weekday.probability(work9, lunch12) == pytest.approx(1 / 3)
    assert weekday.probability(lunch12, home18) == 1.0
    assert weekday.probability(home18, None) == 1.0
    np.testing.assert_allclose(weekday.transition_probs.sum(axis=1), 1.0)
    # Work's observed visits (start minute, dwell): 9:00 for 480, 9:00 for 180, 9:00 for 480
    np.testing.assert_allclose(weekday.starts[weekday.index(work9)], [540, 540, 540])
    np.testing.assert_allclose(weekday.durations[weekday.index(work9)], [480, 180, 480])

    weekend = fitted.chain("a", 5)
    assert weekend.days == 1
    assert weekend.probability(home0, ("EatOut", 3, 11)) == 1.0
    everything = fitted.chains[("a", "all")]
    assert (
        everything.days == 4 and everything.start_probs[everything.index(home0)] == 1.0
    )
    assert everything.probability(home0, work9) == pytest.approx(3 / 4)
    assert fitted.chain("b", 6) is fitted.chains[("b", "all")]


def test_generated_days_follow_the_chain(history):
    fitted = MarkovChainBaseline.fit(history, bin_minutes=60)
    mondays = list(pd.date_range("2024-02-05", periods=300, freq="7D"))
    generated = fitted.generate(mondays, rng=7)
    assert list(generated.columns) == list(STAY_COLUMNS)
    validate_staypoints(generated)
    days = (
        generated[generated["agent_id"] == "a"]
        .groupby(generated["start"].dt.normalize())["activity"]
        .agg(tuple)
    )
    assert len(days) == 300
    assert set(days) == {("Home", "Work", "Home"), ("Home", "Work", "EatOut", "Home")}
    lunch_share = (days == ("Home", "Work", "EatOut", "Home")).mean()
    assert abs(lunch_share - 1 / 3) < 0.1  # 300 draws: the sd is 0.027
    # every visit is one observed (start, dwell) pair of its state, pushed after the last
    work = generated[(generated["agent_id"] == "a") & (generated["activity"] == "Work")]
    assert set(work["start"].dt.strftime("%H:%M")) == {"09:00"}
    assert set((work["end"] - work["start"]).dt.total_seconds() / 60) <= {480.0, 180.0}
    assert (
        generated["end"] <= generated["start"].dt.normalize() + pd.Timedelta(days=1)
    ).all()


def test_bad_settings_are_refused(history):
    with pytest.raises(ValueError, match="bin_minutes must divide a day"):
        MarkovChainBaseline.fit(history, bin_minutes=7)
    with pytest.raises(ValueError, match="non-empty history"):
        MarkovChainBaseline.fit(history.iloc[:0])
