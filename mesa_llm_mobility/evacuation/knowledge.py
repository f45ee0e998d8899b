"""The crowd's exit knowledge: which openings each pedestrian saw or was told of, and when.

:class:`Knowledge` is the state the exit-information channel reads and writes: the messages
already passed (sender, receiver, opening: each once) and the run's record of openings seen and
information passed (:class:`~.exit_knowledge.ExitKnowledgeRecorder`, whose tables the analysis
reads). The recorder reads three things of the world, through this object: the effective
layer (an opening's true state), the row -> agent id map and the clock.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from mesa_llm_mobility.evacuation.layers import EffectiveLayer
from mesa_llm_mobility.evacuation.timing import Clock


class OpeningRecorder(Protocol):
    """What :class:`Knowledge` records through (:class:`~.exit_knowledge.ExitKnowledgeRecorder`)."""

    is_opening: np.ndarray
    """Per flat cell: whether it belongs to an opening."""

    def observe(
        self, model: Knowledge, viewers: np.ndarray, cells: np.ndarray, step: int
    ) -> None:
        """Note what ``viewers[k]`` saw of openings in ``cells[k]``."""

    def inform(
        self, model: Knowledge, sender: int, receiver: int, opening: int
    ) -> None:
        """Note one message of exit information."""


class Knowledge:
    """Exit information passed and the record of exit knowledge.

    Args:
        recorder: The record of openings seen and information passed.
        effective: The effective layer (the openings' true states).
        ids: Agent id of every crowd row.
        clock: The run's clock.

    Attributes:
        info_sent: Exit information already passed: ``(sender row, receiver row, opening number)``.
        recorder: The ``opening_observations`` and ``exit_information`` tables' rows.
        effective: The effective layer (read by the recorder).
    """

    def __init__(
        self,
        recorder: OpeningRecorder,
        effective: EffectiveLayer,
        ids: np.ndarray,
        clock: Clock,
    ) -> None:
        self.info_sent: set[tuple[int, int, int]] = set()
        self.recorder = recorder
        self.effective = effective
        self._ids = ids
        self._clock = clock

    @property
    def tick(self) -> int:
        """The current step (read by the recorder)."""
        return self._clock.tick

    def uid(self, row: int) -> int:
        """The agent id of a crowd row (read by the recorder)."""
        return int(self._ids[row])

    def observe(self, viewers: np.ndarray, cells: np.ndarray, step: int) -> None:
        """Record what ``viewers[k]`` saw of openings in ``cells[k]`` at ``step`` (crowd rows)."""
        self.recorder.observe(self, viewers, cells, step)

    def inform(self, sender: int, receiver: int, opening: int) -> None:
        """Record one message of exit information (crowd rows, opening number)."""
        self.recorder.inform(self, sender, receiver, opening)
