"""Directional mismatch under remembered evidence (mesa_llm_mobility/evacuation/threat_mismatch.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.plaza import load_plaza
from mesa_llm_mobility.evacuation.revisions import THREAT_AVOIDANCE
from mesa_llm_mobility.evacuation.threat_mismatch import (
    last_sightings,
    mismatch_steps,
    sees_adversary,
)


@pytest.fixture(scope="module")
def finished():
    return EvacuationModel(composition="H", block=3, rng=2).run()


def test_reconstructed_sightings_are_the_recorded_ones(finished):
    model = finished
    positions = model.positions_frame()
    decisions = model.decisions_frame()
    recorded = decisions["inputs"].str.contains("sees_A=True")
    assert recorded.sum() >= 3  # the run has sightings to compare
    for agent_id, mine in decisions.groupby("agent_id"):
        seen = sees_adversary(
            positions, model.plaza, agent_id, mine["request_step"].to_numpy()
        )
        assert seen.tolist() == recorded[mine.index].tolist(), agent_id


def _positions(pedestrian: list[tuple[int, int]], adversary: list[tuple[int, int]]):
    rows = []
    for step, ((px, py), (ax, ay)) in enumerate(
        zip(pedestrian, adversary, strict=True)
    ):
        rows.append([step, 1, "pedestrian", px, py, 90.0])  # heading east
        rows.append([step, 2, "adversary", ax, ay, 90.0])
    return pd.DataFrame(rows, columns=["step", "agent_id", "kind", "x", "y", "heading"])


def test_a_step_away_from_the_last_sighting_toward_the_adversary_is_a_mismatch():
    plaza = load_plaza()
    # the pedestrian stands at (95, 75) facing east; the adversary is 10 cells east of it
    # (in view) for steps 0-2, then jumps 20 cells west (behind it, out of the cone)
    steps = 12
    pedestrian = [(95, 75)] * 10 + [(94, 75)] * (steps - 10)
    adversary = [(105, 75)] * 3 + [(75, 75)] * (steps - 3)
    positions = _positions(pedestrian, adversary)
    events = pd.DataFrame(
        {"event": ["sighting_adversary"], "agent_id": [1], "step": [0]}
    )
    assert last_sightings(positions, events, plaza, 1, np.array([6, 1])).tolist() == [
        2,
        1,
    ]
    epochs = pd.DataFrame(
        {
            "agent_id": [1],
            "request_step": [6],
            "applied_step": [9],
            "goal": [THREAT_AVOIDANCE],
            "sees_threat": [False],
            "remembered_threat": [True],
        }
    )
    table = mismatch_steps(epochs, positions, events, plaza)
    row = table.iloc[0]
    assert row["last_seen_step"] == 2 and row["evidence_age_s"] == pytest.approx(4 / 3)
    # the step west (at step 9) moved away from the last sighting and toward the adversary
    assert row["away_from_last_seen"] and row["toward_actual"] and row["mismatch"]
    # a decision whose first step does not move is not evaluated
    still = epochs.assign(applied_step=3)
    assert mismatch_steps(still, positions, events, plaza).empty
