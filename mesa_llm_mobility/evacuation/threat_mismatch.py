"""Directional mismatch under remembered threat evidence (paper Sec. 3.2, post hoc analysis).

For each threat-avoidance decision made on remembered evidence (a recorded last sighting, the
adversary not in view) whose first executed step (the step in which the decision took effect)
moved the pedestrian, the paper measures the
change of distance to the adversary's last observed cell and to its actual cell at the step's
onset, both held fixed. The step is a *mismatch* when it increased the first distance but
decreased the second; mismatch rates are taken among the steps that moved away from the last
observed cell, with 95 % percentile intervals from resampling the paired blocks. The evidence
age is the time since the last sighting.

The run tables do not store the last sighting cell, so :func:`last_sightings` reconstructs it:
the latest step at or before the decision's request at which the pedestrian's perception map
(the model's own view cone and line of sight, from its recorded cell and heading) held the
adversary's recorded cell. Reconstructed at the decisions that saw the threat, it agrees with
the recorded ``sees_threat`` (checked in the tests).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.perception import ViewGeometry, perceive
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, OPAQUE_CODES, Plaza
from mesa_llm_mobility.evacuation.revisions import THREAT_AVOIDANCE
from mesa_llm_mobility.evacuation.routing import bearing_deg
from mesa_llm_mobility.evacuation.scene import CONE_DEG, SIGHT_RADIUS_M
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND

_HEADING_OF_BEARING = {
    round(bearing_deg(*MOORE_STEPS[h]), 1): h for h in range(len(MOORE_STEPS))
}

MISMATCH_DTYPES = {
    "agent_id": "int64",
    "request_step": "int64",
    "last_seen_step": "int64",
    "evidence_age_s": "float64",
    "step": "int64",
    "away_from_last_seen": "bool",
    "toward_actual": "bool",
    "mismatch": "bool",
}
"""Column types, so that runs without a row pool with the others."""

MISMATCH_COLUMNS = (
    "agent_id",
    "request_step",
    "last_seen_step",
    "evidence_age_s",
    "step",
    "away_from_last_seen",
    "toward_actual",
    "mismatch",
)


def sees_adversary(
    positions: pd.DataFrame, plaza: Plaza, agent_id: int, steps: np.ndarray
) -> np.ndarray:
    """Whether pedestrian ``agent_id`` perceived the adversary's cell at each of ``steps``.

    Args:
        positions: The run's ``positions`` table (pedestrian and adversary rows).
        plaza: The run's plaza.
        agent_id: The pedestrian.
        steps: Steps to check (the pedestrian and the adversary recorded at each).

    Returns:
        One boolean per step.
    """
    steps = np.asarray(steps, dtype=np.int64)
    if steps.size == 0:
        return np.zeros(0, dtype=bool)
    me = positions[
        (positions["agent_id"] == agent_id) & (positions["kind"] == "pedestrian")
    ].set_index("step")
    them = positions[positions["kind"] == "adversary"].set_index("step")
    where = me.loc[steps]
    headings = where["heading"].round(1).map(_HEADING_OF_BEARING).to_numpy(np.int64)
    view = ViewGeometry.cone(SIGHT_RADIUS_M / plaza.cell_size_m, CONE_DEG)
    opaque = np.isin(plaza.raw, OPAQUE_CODES)
    perception = perceive(
        view,
        opaque,
        where["x"].to_numpy(np.int64),
        where["y"].to_numpy(np.int64),
        headings,
    )
    adversary = them.loc[steps]
    target = adversary["x"].to_numpy(np.int64) * plaza.height + adversary["y"].to_numpy(
        np.int64
    )
    hits = perception.cell == target[perception.viewer]
    return np.bincount(perception.viewer[hits], minlength=steps.size) > 0


def last_sightings(
    positions: pd.DataFrame,
    events: pd.DataFrame,
    plaza: Plaza,
    agent_id: int,
    request_steps: np.ndarray,
) -> np.ndarray:
    """The latest step at or before each request at which the pedestrian saw the adversary.

    Args:
        positions: The run's ``positions`` table.
        events: Its ``events`` table (``sighting_adversary`` marks the start of each sighting).
        plaza: The run's plaza.
        agent_id: The pedestrian.
        request_steps: The decisions' request steps.

    Returns:
        One step per request (``-1``: never seen by then).
    """
    starts = np.sort(
        events.loc[
            (events["event"] == "sighting_adversary")
            & (events["agent_id"] == agent_id),
            "step",
        ].to_numpy(np.int64)
    )
    out = np.full(len(request_steps), -1, dtype=np.int64)
    if starts.size == 0 or len(request_steps) == 0:
        return out
    last_step = int(np.max(request_steps))
    steps = np.arange(int(starts[0]), last_step + 1)
    recorded = set(
        positions.loc[
            (positions["agent_id"] == agent_id) & (positions["kind"] == "pedestrian"),
            "step",
        ].tolist()
    )
    steps = np.array([s for s in steps.tolist() if s in recorded], dtype=np.int64)
    seen = steps[sees_adversary(positions, plaza, agent_id, steps)]
    for k, request in enumerate(np.asarray(request_steps).tolist()):
        before = seen[seen <= request]
        if before.size:
            out[k] = int(before[-1])
    return out


def mismatch_steps(
    epochs: pd.DataFrame,
    positions: pd.DataFrame,
    events: pd.DataFrame,
    plaza: Plaza,
) -> pd.DataFrame:
    """One run's first executed steps of threat-avoidance decisions on remembered evidence.

    Args:
        epochs: The run's :func:`~.revisions.decision_epochs` (``goal``, ``sees_threat``,
            ``remembered_threat``, ``applied_step``).
        positions: The run's ``positions`` table.
        events: Its ``events`` table.
        plaza: Its plaza.

    Returns:
        One row per decision whose first executed step moved (:data:`MISMATCH_COLUMNS`).
    """
    chosen = epochs[
        (epochs["goal"] == THREAT_AVOIDANCE)
        & epochs["remembered_threat"].astype(bool)
        & ~epochs["sees_threat"].astype(bool)
    ]
    rows: list[tuple] = []
    adversary = positions[positions["kind"] == "adversary"].set_index("step")
    for agent_id, mine in chosen.groupby("agent_id"):
        track = positions[
            (positions["agent_id"] == agent_id) & (positions["kind"] == "pedestrian")
        ].set_index("step")
        seen_at = last_sightings(
            positions, events, plaza, int(agent_id), mine["request_step"].to_numpy()
        )
        for decision, last_seen in zip(
            mine.itertuples(index=False), seen_at.tolist(), strict=True
        ):
            if last_seen < 0:
                continue
            step = int(decision.applied_step)
            if step not in track.index or step + 1 not in track.index:
                continue
            before = track.loc[step, ["x", "y"]].to_numpy(float)
            after = track.loc[step + 1, ["x", "y"]].to_numpy(float)
            if np.array_equal(before, after):  # no executed step: not evaluated
                continue
            last_cell = adversary.loc[last_seen, ["x", "y"]].to_numpy(float)
            actual = adversary.loc[step, ["x", "y"]].to_numpy(float)
            change_last = np.hypot(*(after - last_cell)) - np.hypot(
                *(before - last_cell)
            )
            change_actual = np.hypot(*(after - actual)) - np.hypot(*(before - actual))
            away = bool(change_last > 1e-9)
            toward = bool(change_actual < -1e-9)
            rows.append(
                (
                    int(agent_id),
                    int(decision.request_step),
                    last_seen,
                    (int(decision.request_step) - last_seen) / STEPS_PER_SECOND,
                    step,
                    away,
                    toward,
                    away and toward,
                )
            )
    return pd.DataFrame(rows, columns=list(MISMATCH_COLUMNS)).astype(MISMATCH_DTYPES)
