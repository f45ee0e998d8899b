"""The positions table: every entity on the grid at every step (the recorded frames).

:class:`PositionsLog` keeps one frame of arrays a step (who is on the grid, where, facing where,
how afraid, in which situation) and builds the ``positions`` table from them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.agents import ACTIVE, REACHED, STATUS_NAMES
from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS
from mesa_llm_mobility.evacuation.routing import bearing_deg
from mesa_llm_mobility.evacuation.timing import DT_S

POSITION_COLUMNS = (
    "step",
    "time_s",
    "agent_id",
    "kind",
    "x",
    "y",
    "heading",
    "fear",
    "situation",
)
"""Columns of the positions table."""

_HEADING_BEARINGS = np.array([round(bearing_deg(*MOORE_STEPS[h]), 1) for h in range(8)])


class PositionsLog:
    """The recorded frames of a run (none when ``enabled`` is false: large crowds).

    Args:
        enabled: Whether frames are kept.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._frames: list[dict[str, np.ndarray]] = []

    def record(self, crowd: Crowd, step: int) -> None:
        """Add the frame of ``step``: active pedestrians, bodies, those resolved at this step, A."""
        if not self.enabled:
            return
        n = crowd.n_pedestrians
        status = crowd.status
        on_grid = np.flatnonzero(
            (status == ACTIVE) | (status == REACHED) | (crowd.resolved_step == step)
        )
        ids = crowd.ids[np.append(on_grid, n)]
        situations = [
            STATUS_NAMES[int(status[i])]
            if status[i] != ACTIVE
            else crowd.pedestrians[i].situation
            for i in on_grid
        ]
        self._frames.append(
            {
                "step": np.full(ids.size, step),
                "agent_id": ids,
                "kind": np.array(["pedestrian"] * on_grid.size + ["adversary"]),
                "x": np.append(crowd.pos[on_grid, 0], crowd.pos[n, 0]),
                "y": np.append(crowd.pos[on_grid, 1], crowd.pos[n, 1]),
                "heading": np.append(crowd.heading[on_grid], crowd.heading[n]),
                "fear": np.append(crowd.fear[on_grid], np.nan),
                "situation": np.array([*situations, str(crowd.adversary.state.mode)]),
            }
        )

    def frame(self) -> pd.DataFrame:
        """The table: ``step, time_s, agent_id, kind, x, y, heading, fear, situation``.

        ``heading`` is a compass bearing in degrees (0 north, 90 east); ``situation`` is the
        pedestrian's appraisal while active, ``evacuated``/``reached`` on its resolving step
        (bodies stay as ``reached``), and the adversary's mode.
        """
        if not self._frames:
            return pd.DataFrame(columns=list(POSITION_COLUMNS))
        data = {
            key: np.concatenate([f[key] for f in self._frames])
            for key in self._frames[0]
        }
        frame = pd.DataFrame(data)
        frame["time_s"] = (frame["step"] * DT_S).round(4)
        frame["heading"] = _HEADING_BEARINGS[frame["heading"].to_numpy()]
        return frame[list(POSITION_COLUMNS)]
