"""The crowd's exit knowledge: which openings each pedestrian saw or was told of, and when.

:class:`Knowledge` is the state the exit-information channel reads and writes: the messages
already passed (sender, receiver, opening: each once) and the run's record of openings seen and
information passed (:class:`~.exit_knowledge.ExitKnowledgeRecorder`, whose tables the analysis
reads). The recorder reads four things of the world, through this object: the effective
layer (an opening's true state), the row -> agent id map, the positions (whether a sight was
from the opening's Moore neighbourhood) and the clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from mesa_llm_mobility.evacuation.layers import EffectiveLayer
from mesa_llm_mobility.evacuation.timing import Clock

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.crowd import Crowd


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

    def provide(self, model: Knowledge, receiver: int, opening: int) -> None:
        """Note exit information the system gives a pedestrian (no sender)."""


class Knowledge:
    """Exit information passed and the record of exit knowledge.

    Args:
        recorder: The record of openings seen and information passed.
        effective: The effective layer (the openings' true states).
        crowd: The crowd (its rows' agent ids and positions, read by the recorder).
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
        crowd: Crowd,
        clock: Clock,
    ) -> None:
        self.info_sent: set[tuple[int, int, int]] = set()
        self.recorder = recorder
        self.effective = effective
        self._crowd = crowd
        self._clock = clock

    @property
    def tick(self) -> int:
        """The current step (read by the recorder)."""
        return self._clock.tick

    def uid(self, row: int) -> int:
        """The agent id of a crowd row (read by the recorder)."""
        return int(self._crowd.ids[row])

    @property
    def pos(self) -> np.ndarray:
        """The crowd's cells, one row per pedestrian (read by the recorder)."""
        return self._crowd.pos

    def observe(self, viewers: np.ndarray, cells: np.ndarray, step: int) -> None:
        """Record what ``viewers[k]`` saw of openings in ``cells[k]`` at ``step`` (crowd rows)."""
        self.recorder.observe(self, viewers, cells, step)

    def inform(self, sender: int, receiver: int, opening: int) -> None:
        """Record one message of exit information (crowd rows, opening number)."""
        self.recorder.inform(self, sender, receiver, opening)

    def provide(self, receiver: int, opening: int) -> None:
        """Record exit information the system gives crowd row ``receiver`` at initialisation."""
        self.recorder.provide(self, receiver, opening)
