"""The next-visit model's pieces: predictions, the top-k deviation, back-off, time models."""

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.realism.next_visit import (
    BackoffModel,
    Prediction,
    TimeModel,
    top_k_deviation,
)


def test_top_k_deviation_is_zero_inside_the_top_k_and_entropy_relative_outside():
    prediction = Prediction.of({"a": 0.6, "b": 0.3, "c": 0.05, "d": 0.05}, 0, k=2)
    assert prediction.kth == 0.3
    assert top_k_deviation(0.3, prediction) == 0.0
    entropy = -sum(p * np.log(p) for p in (0.6, 0.3, 0.05, 0.05))
    assert prediction.entropy == pytest.approx(entropy)
    assert top_k_deviation(0.05, prediction) == pytest.approx(-np.log(0.05) - entropy)
    # the same miss costs more where the next visit is predictable
    predictable = Prediction.of({"a": 0.98, "b": 0.01, "c": 0.01}, 0, k=1)
    diffuse = Prediction.of(
        {"a": 0.2, "b": 0.2, "c": 0.2}, 40, k=1
    )  # 40 more share 0.4
    assert diffuse.kth == 0.2
    assert diffuse.entropy == pytest.approx(-3 * 0.2 * np.log(0.2) - 0.4 * np.log(0.01))
    assert top_k_deviation(0.01, predictable) > top_k_deviation(0.01, diffuse) + 2.0


def test_backoff_model_prefers_the_specific_context():
    contexts = [["a"] * 6, [("u", "a")] * 3 + [("v", "a")] * 3]
    tokens = ["x", "x", "x", "y", "y", "y"]
    model = BackoffModel.fit(contexts, tokens, tau=1.0, k=1)
    p_u = model.probabilities(("a", ("u", "a")), ["x", "y", "z"])
    assert p_u[0] > 0.7 > p_u[1] > p_u[2] > 0
    assert model.deviation(("a", ("u", "a")), "x") == 0.0
    assert model.deviation(("a", ("u", "a")), "y") > 0.0


def test_time_model_shrinks_a_few_visits_towards_the_population():
    frame = pd.DataFrame(
        {
            "agent_id": [1, 2, 2, 2, 2, 2, 2],
            "day": [0, 0, 1, 2, 3, 4, 5],
            "visit": [1, 1, 1, 1, 1, 1, 1],
            "activity": ["Work"] * 7,
        }
    )
    frame = pd.concat(
        [frame, frame.assign(visit=0, activity="Home")], ignore_index=True
    )
    frame = frame.sort_values(["agent_id", "day", "visit"], kind="stable")
    frame = frame.reset_index(drop=True)
    minutes = np.where(frame["activity"] == "Work", 540.0, 0.0)
    minutes[
        (frame["agent_id"] == 1).to_numpy() & (frame["activity"] == "Work").to_numpy()
    ] = 600.0
    model = TimeModel.fit(frame, minutes, floor=10.0)
    work = (frame["activity"] == "Work").to_numpy()
    margins = model.margins(frame, np.where(work, 600.0, 0.0))[work]
    # individual 2 always came at 540 (six visits): 600 is far for them; individual 1 was seen
    # once at 600, shrunk towards the population (mean 548.6) with 3 pseudo-visits
    population_mean = (600 + 6 * 540) / 7
    population_variance = np.var([600] + [540] * 6) + 100
    mean_1 = 0.25 * 600 + 0.75 * population_mean
    variance_1 = 0.25 * 100 + 0.75 * population_variance
    assert margins[0] == pytest.approx(0.5 * (600 - mean_1) ** 2 / variance_1)
    mean_2 = 6 / 9 * 540 + 3 / 9 * population_mean
    variance_2 = 6 / 9 * 100 + 3 / 9 * population_variance
    assert margins[1] == pytest.approx(0.5 * (600 - mean_2) ** 2 / variance_2)
    assert margins[1] > 3 * margins[0]
    assert (margins[1:] == margins[1]).all()
    home = model.margins(frame, np.zeros(len(frame)))[~work]
    assert (home == 0).all()  # every day starts at midnight, as in training
