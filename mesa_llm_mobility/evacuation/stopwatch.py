"""Wall time per phase of the evacuation's step, measured by wrapping the phases.

:class:`PhaseTimer` is a context manager factory: ``with timer("perception"): observe(...)``
adds the block's wall time to ``timer.seconds["perception"]``. Phases may nest: the time of an
inner phase (the route planner's waits, timed as ``"routing"`` wherever they happen) counts for
the inner phase only and is left out of the enclosing one, so the phases' seconds add up to the
wall time of the steps. Timing never changes what a run does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

STEP_PHASES = ("perception", "decisions", "routing", "movement", "other")
"""The evacuation step's timed phases: perception (gates, perception, beliefs, sightings),
decisions (contexts and the brain), routing (every route search, wherever it runs), movement
(proposals, the adversary's planning, conflict resolution) and other (communication, fear,
memory revisions, applying decisions, evacuations, attacks, records)."""


class PhaseTimer:
    """Wall seconds spent in each named phase, nested phases excluded from their enclosing one.

    Args:
        phases: The phase names (each starts at 0 s); others are added on first use.

    Attributes:
        seconds: Seconds per phase so far.
    """

    def __init__(self, phases: tuple[str, ...] = STEP_PHASES) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(phases, 0.0)
        self._nested: list[float] = []
        """Per open phase (innermost last): seconds of the phases nested in it so far."""

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        """Time the ``with`` block as ``phase`` (its nested phases' time excluded).

        Args:
            phase: The phase name.
        """
        self._nested.append(0.0)
        start = perf_counter()
        try:
            yield
        finally:
            elapsed = perf_counter() - start
            nested = self._nested.pop()
            self.seconds[phase] = self.seconds.get(phase, 0.0) + elapsed - nested
            if self._nested:
                self._nested[-1] += elapsed
