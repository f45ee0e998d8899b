"""Mesa agents of the evacuation model: pedestrians and the adversary.

Both are :class:`mesa.discrete_space.CellAgent`; ``agent.cell`` is where they stand, a view of
their row in the crowd's arrays (:class:`~.crowd.Crowd`: positions, headings, status and fear,
``agent.index`` is the row), which perception and movement use vectorised. The agents hold the
per-person state that is not numeric: the committed route, the pending decision, the standing
goal, memory and received messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import mesa
from mesa.discrete_space import CellAgent

from mesa_llm_mobility.evacuation.adversary import AdversaryState
from mesa_llm_mobility.evacuation.messages import ExitHint

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition.kinds import DecisionResult
    from mesa_llm_mobility.evacuation.decision_context import (
        EvacuationContext,
        PreviousDecision,
    )
    from mesa_llm_mobility.evacuation.decisions import EvacuationDecision
    from mesa_llm_mobility.evacuation.personality import Personality


ACTIVE, EVACUATED, REACHED = 0, 1, 2
STATUS_NAMES = {ACTIVE: "active", EVACUATED: "evacuated", REACHED: "reached"}


@dataclass
class PendingDecision:
    """A decision requested at ``request_step`` that takes effect at ``due_step``."""

    request_step: int
    due_step: int
    result: DecisionResult[EvacuationContext, EvacuationDecision]


@dataclass
class PedestrianMemory:
    """What the engine remembers for a pedestrian between decisions (its evidence record)."""

    hints: dict[str, ExitHint] = field(default_factory=dict)
    hint_steps: dict[str, int] = field(default_factory=dict)
    last_sighting: tuple[tuple[int, int], int] | None = None
    seen_adversary_ever: bool = False
    seen_casualty_ever: bool = False


class Pedestrian(CellAgent):
    """An adult pedestrian with a private belief map and a Five-Factor personality.

    Args:
        model: The model it belongs to.
        index: Its row in the crowd's arrays.
        personality: The profile.
        start: Start cell.
        height: The plaza's height in cells (flat cell numbers are ``x * height + y``).

    Attributes:
        index: Row in the crowd's arrays.
        personality: The profile.
        start: Start cell.
        route: Committed cells (flat), at most 20 per decision.
        route_pos: Next index into ``route``.
        pending: The pending decision, if any.
        previous: Standing goal and feedback of the last applied decision.
        capsule: Short-term context capsule (<= 500 characters).
        memory_text: Long-term first-person memory (<= 1,200 characters), as the memory role
            last rewrote it.
        memory_version: Revisions of ``memory_text`` so far.
        shouting: Whether it shouts while moving (decided to escape).
        visited: Flat cells walked (familiarity).
    """

    def __init__(
        self,
        model: mesa.Model,
        index: int,
        personality: Personality,
        start: tuple[int, int],
        height: int,
    ) -> None:
        super().__init__(model)
        self.index = index
        self.personality = personality
        self.start = start
        self.route: list[int] = []
        self.route_pos = 0
        self.route_opening: str | None = None
        self.pending: PendingDecision | None = None
        self.previous: PreviousDecision | None = None
        self.capsule = ""
        self.memory_text = ""
        self.memory_version = 0
        self.situation = "normal"
        self.intent = "tour"
        self.urgency = 0.0
        self.shouting = False
        self.last_effect_step = -(10**9)
        self.blocked_steps = 0
        self.visited: set[int] = {start[0] * height + start[1]}
        self.memory = PedestrianMemory()

    @property
    def route_remaining(self) -> int:
        """Committed cells not yet walked."""
        return len(self.route) - self.route_pos


class Adversary(CellAgent):
    """The armed person: adult physics, 12 m / 120 degree perception, fixed patrol-pursuit policy."""

    def __init__(self, model: mesa.Model, index: int) -> None:
        super().__init__(model)
        self.index = index
        self.state = AdversaryState()
        self.goal: tuple[int, int] | None = None
