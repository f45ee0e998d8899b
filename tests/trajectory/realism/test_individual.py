"""The individual-level (BeSTAD-like) detector: clusters of normal days and their shift."""

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.realism import individual_scores
from mesa_llm_mobility.trajectory.realism.controls import swap_individuals
from mesa_llm_mobility.trajectory.realism.individual import (
    INDIVIDUAL_SCORE_COLUMNS,
    alignment_shift,
)


def test_alignment_and_shift_of_two_habits():
    rng = np.random.default_rng(0)
    weekday = rng.normal(0.0, 0.05, size=(10, 4))
    weekend = rng.normal(1.0, 0.05, size=(10, 4))
    normal = np.vstack([weekday, weekend])
    same = np.vstack([weekday[:3] + 0.01, weekend[:3] - 0.01])
    alignment, shift, clusters = alignment_shift(normal, same)
    assert clusters == 3  # min(3, 20 // 4)
    assert shift < 0.1
    # only weekdays later: the routine moved to one of its habits
    _, only_weekdays, _ = alignment_shift(normal, weekday[:6])
    assert only_weekdays > shift + 0.1
    # days unlike any normal one: far from every centre
    far, _, _ = alignment_shift(normal, normal[:6] + 3.0)
    assert far > 5 * alignment


def test_one_normal_day_is_one_cluster():
    alignment, shift, clusters = alignment_shift(np.zeros((1, 3)), np.ones((2, 3)))
    assert clusters == 1
    assert shift == 0.0
    assert alignment == pytest.approx(np.sqrt(3) / 0.1)


def test_swapped_individuals_stand_out(halves):
    real, other = halves
    scored = individual_scores(real, other, include_real=True)
    swapped = individual_scores(
        real, swap_individuals(other, seed=1), include_real=True
    )
    assert list(scored.columns) == list(INDIVIDUAL_SCORE_COLUMNS)
    assert scored.groupby("source").size().to_dict() == {"generated": 40, "real": 40}
    # the same individuals on both sides, with equally many days
    by_source = scored.pivot(index="agent_id", columns="source", values="days")
    assert (by_source["real"] == by_source["generated"]).all()
    generated = swapped[swapped["source"] == "generated"].set_index("agent_id")["score"]
    real_scores = swapped[swapped["source"] == "real"].set_index("agent_id")["score"]
    assert (generated > real_scores).mean() > 0.9
    only_generated = individual_scores(real, other)
    assert set(only_generated["source"]) == {"generated"}
