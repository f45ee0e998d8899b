"""The evacuation's events table, kept column by column.

A crowd of 10,000 records millions of events over a run (almost all of them the first shout a
pedestrian hears from another), with a handful of event names and a few dozen distinct details.
:class:`EventLog` keeps each row as a step, an event code, two agent ids and a detail code in
typed arrays (about 20 bytes a row instead of a tuple of Python objects, about 150), and builds
the same table as a list of row tuples would (:data:`EVENT_COLUMNS`; an agent id column holds
``NaN`` where a row has none).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.timing import step_time_s

EVENT_COLUMNS = ("step", "time_s", "event", "agent_id", "other_id", "detail")
"""Columns of the events table."""

NO_AGENT = -1
"""Stored in an agent id column for a row without that agent (ids are never negative)."""


class EventLog:
    """Rows of the events table: step, event, agent id, other agent id, detail.

    Args:
        ids: The agent id of every crowd row, for :meth:`record` and :meth:`record_many`
            (``None``: rows are agent ids).
    """

    def __init__(self, ids: np.ndarray | None = None) -> None:
        self._ids = ids
        self._step = array("q")
        self._event = array("i")
        self._agent = array("q")
        self._other = array("q")
        self._detail = array("i")
        self._codes: dict[str, int] = {}
        self._texts: list[str] = []

    def __len__(self) -> int:
        return len(self._step)

    def _code(self, text: str) -> int:
        code = self._codes.get(text)
        if code is None:
            code = self._codes[text] = len(self._texts)
            self._texts.append(text)
        return code

    def add(
        self, step: int, event: str, agent: int | None, other: int | None, detail: str
    ) -> None:
        """Append one row (``agent`` and ``other`` are agent ids, ``None`` for none)."""
        self._step.append(step)
        self._event.append(self._code(event))
        self._agent.append(NO_AGENT if agent is None else agent)
        self._other.append(NO_AGENT if other is None else other)
        self._detail.append(self._code(detail))

    def add_many(
        self,
        step: int,
        event: str,
        agents: np.ndarray,
        others: np.ndarray,
        details: Sequence[str],
    ) -> None:
        """Append rows of one step and event, in order (agent ids as integer arrays)."""
        count = len(details)
        self._step.extend([step] * count)
        self._event.extend([self._code(event)] * count)
        self._agent.extend(np.asarray(agents, dtype=np.int64).tolist())
        self._other.extend(np.asarray(others, dtype=np.int64).tolist())
        self._detail.extend([self._code(text) for text in details])

    def record(
        self,
        step: int,
        event: str,
        agent: int | None,
        other: int | None,
        detail: str = "",
    ) -> None:
        """Append one row of crowd rows ``agent`` and ``other`` (``None``: none)."""
        ids = self._ids
        self.add(
            step,
            event,
            None if agent is None else int(agent if ids is None else ids[agent]),
            None if other is None else int(other if ids is None else ids[other]),
            detail,
        )

    def record_many(
        self,
        step: int,
        event: str,
        agents: np.ndarray,
        others: np.ndarray,
        details: Sequence[str],
    ) -> None:
        """Append rows of one step and event of crowd rows ``agents`` and ``others``."""
        ids = self._ids
        self.add_many(
            step,
            event,
            agents if ids is None else ids[agents],
            others if ids is None else ids[others],
            details,
        )

    def frame(self) -> pd.DataFrame:
        """The table (:data:`EVENT_COLUMNS`), as a list of its row tuples would build it."""
        steps = np.frombuffer(self._step, dtype=np.int64).copy()
        unique, at = np.unique(steps, return_inverse=True)
        times = np.array([step_time_s(int(s)) for s in unique], dtype=float)[at]
        texts = np.array(self._texts, dtype=object)
        columns = {
            "step": steps,
            "time_s": times if len(steps) else np.zeros(0),
            "event": texts[np.frombuffer(self._event, dtype=np.int32)]
            if len(steps)
            else [],
            "agent_id": _agent_ids(self._agent),
            "other_id": _agent_ids(self._other),
            "detail": texts[np.frombuffer(self._detail, dtype=np.int32)]
            if len(steps)
            else [],
        }
        if not len(steps):
            return pd.DataFrame([], columns=list(EVENT_COLUMNS))
        return pd.DataFrame(columns, columns=list(EVENT_COLUMNS))


def _agent_ids(stored: array) -> np.ndarray:
    """An id column as pandas infers it from the rows: int, float with NaN, or all ``None``."""
    ids = np.frombuffer(stored, dtype=np.int64)
    missing = ids == NO_AGENT
    if not missing.any():
        return ids.copy()
    if missing.all():
        return np.full(len(ids), None, dtype=object)
    return np.where(missing, np.nan, ids.astype(float))
