"""The evacuation's clock: the step length, the counts of steps built on it, and the run's :class:`Clock`.

One Mesa step is one physical step of ``DT_S`` = 1/3 s; decisions take effect at 1 s boundaries
(every ``STEPS_PER_SECOND`` steps). Every module of the evacuation reads its time constants here.
"""

from __future__ import annotations

STEPS_PER_SECOND = 3
"""Physical steps per simulated second."""

DT_S = 1.0 / STEPS_PER_SECOND
"""Length of one physical step in seconds (1/3 s)."""

MIN_BLOCK, MAX_BLOCK = 1, 8
"""Matched blocks of the paper's 8 x 8 design."""

BLOCKED_STEPS_REDECIDE = 6
"""Steps (2 s) a pedestrian stands blocked before it asks for a new decision (our choice)."""

SHOUT_MEMORY_S = 10.0
"""How long a heard shout stays in a pedestrian's decision context (seconds)."""

DIRECTNESS_WINDOW_STEPS = 30
"""Steps (10 s) after a decision over which its movement directness is measured."""


def step_time_s(step: int) -> float:
    """Simulated seconds at ``step``, rounded as every table stores them (4 decimals).

    Args:
        step: Physical step since the emergency started.

    Returns:
        ``round(step * DT_S, 4)``.
    """
    return round(step * DT_S, 4)


def due_step(step: int) -> int:
    """The step at which a decision requested at ``step`` takes effect.

    A decision requested at ``step`` takes effect at the first whole second at least one second
    later: ``ceil((step + STEPS_PER_SECOND) / STEPS_PER_SECOND) * STEPS_PER_SECOND``.

    Args:
        step: The request's step.

    Returns:
        The step at which the decision is applied.
    """
    return -(-(step + STEPS_PER_SECOND) // STEPS_PER_SECOND) * STEPS_PER_SECOND


class Clock:
    """The run's step counter and its end (the state every phase reads the time from).

    Args:
        limit_steps: The step at which the run ends at the latest.

    Attributes:
        tick: Physical steps done so far (the current step's number while it runs).
        limit_steps: The run's time limit in steps.
    """

    def __init__(self, limit_steps: int) -> None:
        self.tick = 0
        self.limit_steps = limit_steps

    @property
    def time_s(self) -> float:
        """Simulated seconds since the emergency started."""
        return self.tick * DT_S

    @property
    def at_boundary(self) -> bool:
        """Whether the current step starts a whole second (decisions take effect then)."""
        return self.tick % STEPS_PER_SECOND == 0

    @property
    def timed_out(self) -> bool:
        """Whether the time limit is reached."""
        return self.tick >= self.limit_steps

    def advance(self) -> None:
        """Count one more physical step."""
        self.tick += 1
