"""Exit knowledge: which openings each pedestrian saw, and which it was told about, and when.

The paper's headline measure is whether a pedestrian "knew a usable exit" (Sec. 4.2: 89.5 %
evacuated with that knowledge, 1.05 % without). Two event tables make it computable after a run:

- ``opening_observations``: one row each time a pedestrian perceives an opening in a state it has
  not recorded for that opening before (the first sight, and every later sight that shows a
  changed state, e.g. a gate seen open and later seen closed): ``step, time_s, agent_id,
  opening_id, kind, state, usable``.
- ``exit_information``: one row per message of exit information (sender -> receiver about an
  opening, once per triple, as :func:`~mesa_llm_mobility.evacuation.communication.communicate`
  sends them): ``step, time_s, sender_id, receiver_id, opening_id, kind, state, usable, hops``.
  ``state`` is the opening's true state when the message is passed (the message itself always
  says "open"); ``hops`` is 1 when the sender saw the opening itself, 1 + the sender's own hops
  when it was told, and missing when the sender neither saw nor was told of it.

``usable`` means the state was passable (an exit; a gate open or closing). The recorder only
adds rows; it changes nothing in the world, so runs stay identical with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.plaza import Terrain
from mesa_llm_mobility.evacuation.timing import step_time_s

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.knowledge import Knowledge
    from mesa_llm_mobility.evacuation.plaza import Plaza

OPENING_STATES: dict[int, str] = {
    Terrain.EXIT: "open",
    Terrain.GATE_OPEN: "open",
    Terrain.GATE_CLOSING: "closing",
    Terrain.GATE_CLOSED: "closed",
}
"""Terrain code of an opening cell -> the state a pedestrian sees."""

USABLE_STATES = frozenset({"open", "closing"})
"""Opening states a pedestrian can pass through."""

OBSERVATION_COLUMNS = (
    "step",
    "time_s",
    "agent_id",
    "opening_id",
    "kind",
    "state",
    "usable",
)
INFORMATION_COLUMNS = (
    "step",
    "time_s",
    "sender_id",
    "receiver_id",
    "opening_id",
    "kind",
    "state",
    "usable",
    "hops",
)


class ExitKnowledgeRecorder:
    """Collects the ``opening_observations`` and ``exit_information`` rows of one run.

    Args:
        plaza: The plaza (its openings and semantic opening layer).
    """

    def __init__(self, plaza: Plaza) -> None:
        self.plaza = plaza
        self._opening_of_cell = plaza.opening_index.ravel().astype(np.int64)
        self.is_opening = self._opening_of_cell >= 0
        """Per flat cell: whether it belongs to an opening (to pick the pairs worth passing)."""
        height = plaza.height
        self._first_cell = [
            int(o.cells[0][0]) * height + int(o.cells[0][1]) for o in plaza.openings
        ]
        self._state_seen: dict[tuple[int, int], str] = {}
        self._hops: dict[tuple[int, int], int] = {}
        self._observations: list[tuple] = []
        self._information: list[tuple] = []

    def state_now(self, model: Knowledge, opening: int) -> str:
        """The true state of opening number ``opening`` (effective layer)."""
        code = int(model.effective.codes.ravel()[self._first_cell[opening]])
        return OPENING_STATES[code]

    def observe(
        self,
        model: Knowledge,
        viewers: np.ndarray,
        cells: np.ndarray,
        step: int,
    ) -> None:
        """Note what ``viewers[k]`` saw of openings in ``cells[k]`` (perception pairs, rows).

        Args:
            model: The model (for the true opening states and agent ids).
            viewers: Pedestrian rows, one per perceived cell.
            cells: Flat cells perceived.
            step: The step of the perception.
        """
        hit = np.flatnonzero(self.is_opening[cells])
        if hit.size == 0:
            return
        opening = self._opening_of_cell[cells[hit]]
        pairs = np.unique(np.stack([viewers[hit], opening], axis=1), axis=0)
        for i, k in pairs.tolist():
            state = self.state_now(model, k)
            if self._state_seen.get((i, k)) == state:
                continue
            self._state_seen[(i, k)] = state
            o = self.plaza.openings[k]
            self._observations.append(
                (
                    step,
                    step_time_s(step),
                    model.uid(i),
                    o.opening_id,
                    o.kind,
                    state,
                    state in USABLE_STATES,
                )
            )

    def inform(
        self, model: Knowledge, sender: int, receiver: int, opening: int
    ) -> None:
        """Note one message of exit information (rows ``sender`` -> ``receiver``).

        Args:
            model: The model (at the step of the message).
            sender: The sender's row.
            receiver: The receiver's row.
            opening: The opening number.
        """
        if (sender, opening) in self._state_seen:
            hops: int | None = 1
        elif (sender, opening) in self._hops:
            hops = self._hops[(sender, opening)] + 1
        else:
            hops = None
        if hops is not None:
            known = self._hops.get((receiver, opening))
            self._hops[(receiver, opening)] = (
                hops if known is None else min(known, hops)
            )
        state = self.state_now(model, opening)
        o = self.plaza.openings[opening]
        self._information.append(
            (
                model.tick,
                step_time_s(model.tick),
                model.uid(sender),
                model.uid(receiver),
                o.opening_id,
                o.kind,
                state,
                state in USABLE_STATES,
                hops,
            )
        )

    def observations_frame(self) -> pd.DataFrame:
        """The ``opening_observations`` table (columns in :data:`OBSERVATION_COLUMNS`)."""
        return pd.DataFrame(self._observations, columns=list(OBSERVATION_COLUMNS))

    def information_frame(self) -> pd.DataFrame:
        """The ``exit_information`` table (columns in :data:`INFORMATION_COLUMNS`)."""
        frame = pd.DataFrame(self._information, columns=list(INFORMATION_COLUMNS))
        frame["hops"] = frame["hops"].astype("Int64")
        return frame
