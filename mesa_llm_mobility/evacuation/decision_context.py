"""What a pedestrian knows when it decides: the ``EvacuationMove`` request's context.

:class:`EvacuationContext` holds the pedestrian's private knowledge at its decision (view,
beliefs, fear, heard shouts, exit hints, known openings, route options, its standing goal and
the engine's feedback); the prompt (:mod:`.prompts`) renders it and the validator and the rule
policy (:mod:`.decisions`) read it. :mod:`.contexts` gathers it from the world's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mesa_llm_mobility.evacuation.ascii_view import SymbolicView
from mesa_llm_mobility.evacuation.messages import ExitHint, HeardShout
from mesa_llm_mobility.evacuation.personality import Personality
from mesa_llm_mobility.evacuation.plaza import Terrain
from mesa_llm_mobility.evacuation.routing import RouteOption


@dataclass(frozen=True)
class KnownOpening:
    """An opening in the pedestrian's belief map, as last seen."""

    opening_id: str
    kind: str
    state: str
    offset: tuple[int, int]
    direction: str
    distance_m: float
    seen_age_s: float

    def describe(self) -> str:
        """Prompt line."""
        return (
            f"{self.kind} {self.opening_id} ({self.state} when last seen {self.seen_age_s:.0f} s ago) at offset "
            f"({self.offset[0]:+d}, {self.offset[1]:+d}), {self.direction}, {self.distance_m:.0f} m"
        )


@dataclass(frozen=True)
class StaleSighting:
    """The remembered last sighting of the armed person, recomputed from the current cell."""

    offset: tuple[int, int]
    direction: str
    distance_m: float
    age_s: float

    def describe(self) -> str:
        """Prompt line (labelled stale, paper Sec. 2.3.3)."""
        return (
            f"STALE: you last saw the armed person (A) {self.age_s:.0f} s ago at offset ({self.offset[0]:+d}, {self.offset[1]:+d}), "
            f"now {self.direction} of you, {self.distance_m:.0f} m away; it may have moved"
        )


@dataclass(frozen=True)
class PreviousDecision:
    """The standing goal and the engine's feedback on the previous answer."""

    intent: str
    urgency: float
    situation: str
    route_kind: str | None
    opening_id: str | None
    anchor: tuple[int, int] | None
    feedback: str


@dataclass(frozen=True, eq=False)
class EvacuationContext:
    """What a pedestrian knows when it decides (all of it private).

    The fields after ``previous`` are engine data (validation, the memory role's turn summary)
    and are not shown to the decision maker.
    """

    agent_id: int
    step: int
    time_s: float
    trigger: str
    position: tuple[int, int]
    heading: str
    view: SymbolicView
    personality: Personality
    fear: float
    fear_level: str
    stimuli: tuple[str, ...]
    sees_adversary: bool
    sees_casualty: bool
    fleeing_neighbours: int
    visible_people: int
    heard_shouts: tuple[HeardShout, ...]
    exit_hints: tuple[ExitHint, ...]
    stale_sighting: StaleSighting | None
    known_openings: tuple[KnownOpening, ...]
    options: tuple[RouteOption, ...]
    capsule: str
    memory: str
    previous: PreviousDecision | None
    threat_offsets: tuple[tuple[int, int], ...] = ()
    adversary_ids: tuple[int, ...] = ()
    body_ids: tuple[int, ...] = ()
    grid_size: tuple[int, int] = (0, 0)
    reachable: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 0), dtype=bool), repr=False
    )
    """``[x, y]`` mask of the cells reachable through observed cells (the routing distance is
    finite), over the pedestrian's belief window (``belief_origin``); a mask rather than the
    float distances keeps a pending request small."""
    belief_codes: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.uint8), repr=False
    )
    """``[x, y]`` believed terrain codes over the belief window: the box of every cell the
    pedestrian perceived (cells outside it are unknown), not the whole plaza."""
    belief_origin: tuple[int, int] = (0, 0)
    """Plaza cell of the belief window's ``[0, 0]``."""

    def option(self, route_id: str) -> RouteOption | None:
        """The offered option with this id, if any."""
        return next((o for o in self.options if o.route_id == route_id), None)

    def believed(self, x: int, y: int) -> tuple[int, bool]:
        """The believed code of plaza cell ``(x, y)`` and whether it is reachable."""
        lx, ly = x - self.belief_origin[0], y - self.belief_origin[1]
        rows, columns = self.belief_codes.shape
        if not (0 <= lx < rows and 0 <= ly < columns):
            return int(Terrain.UNKNOWN), False
        return int(self.belief_codes[lx, ly]), bool(self.reachable[lx, ly])

    def summary(self) -> str:
        """Short inputs summary for the decisions table."""
        return (
            f"trigger={self.trigger}; fear={self.fear:.2f}; sees_A={self.sees_adversary}; sees_D={self.sees_casualty}; "
            f"shouts={len(self.heard_shouts)}; hints={len(self.exit_hints)}; stale={self.stale_sighting is not None}; "
            f"openings={len(self.known_openings)}; options={len(self.options)}"
        )
