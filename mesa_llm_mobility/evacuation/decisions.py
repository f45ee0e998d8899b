"""The ``EvacuationMove`` decision kind: context, output schema, prompt, validator and rule policy.

A pedestrian states what it knows (ASCII view, route options with attributes, engine-computed fear,
heard shouts and exit hints, a memory summary, its personality, feedback on its previous answer);
a brain answers with an appraisal (situation), a standing goal (intent, urgency), an action and
either an offered route or a target offset. The validator enforces the paper's rule that a target
must be an observed, passable cell reachable through observed cells (Sec. 2.2.3).

The rule policy is the classical baseline: appraisal from evidence (direct sight of A or D ->
danger; a shout, fleeing neighbours or remembered evidence -> unsure; else normal), urgency from
fear and appraisal, and a route choice among the offered options scored with personality weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind
from mesa_llm_mobility.evacuation.ascii_view import SymbolicView
from mesa_llm_mobility.evacuation.communication import ExitHint, HeardShout
from mesa_llm_mobility.evacuation.move_schema import move_request_schema
from mesa_llm_mobility.evacuation.personality import Personality
from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.prompts import CAPSULE_CHARS, render_evacuation_prompt
from mesa_llm_mobility.evacuation.routing import RouteOption

Situation = Literal["normal", "unsure", "danger"]
Action = Literal["move", "wait", "turn_and_observe"]


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


class Offset(BaseModel):
    """A cell offset relative to ``@``: dx east, dy north."""

    dx: int = Field(ge=-200, le=200)
    dy: int = Field(ge=-200, le=200)


class EvacuationDecision(BaseModel):
    """The answer to an ``EvacuationMove`` request."""

    action: Action
    situation: Situation = Field(description="your appraisal: normal, unsure or danger")
    intent: str = Field(
        min_length=1,
        max_length=80,
        description="standing goal, e.g. tour, explore, seek_exit, follow_others, escape",
    )
    urgency: float = Field(ge=0.0, le=1.0)
    route_id: str | None = Field(
        default=None, description="id of an offered route (R1...)"
    )
    target_offset: Offset | None = Field(
        default=None,
        description="target cell relative to @ when no offered route suits",
    )
    waypoint_offset: Offset | None = None
    shout: bool = Field(default=False, description="shout a warning while moving")
    context_capsule: str = Field(default="", max_length=CAPSULE_CHARS)


def _offset_errors(context: EvacuationContext, offset: Offset, label: str) -> list[str]:
    width, height = context.grid_size
    x, y = context.position[0] + offset.dx, context.position[1] + offset.dy
    where = f"{label} ({offset.dx:+d}, {offset.dy:+d})"
    if (offset.dx, offset.dy) == (0, 0):
        return [f"{where} is your own cell; choose another cell"]
    if not (0 <= x < width and 0 <= y < height):
        return [f"{where} lies outside the map"]
    code, reachable = context.believed(x, y)
    if code == Terrain.UNKNOWN:
        return [
            f"{where} is a cell you have not observed ('?'); choose an observed cell"
        ]
    if not passable_mask(np.array([code]))[0]:
        return [f"{where} is not passable (wall, tree or closed gate)"]
    if not reachable:
        return [f"{where} cannot be reached through cells you have observed"]
    return []


def validate_evacuation_move(
    context: EvacuationContext, decision: EvacuationDecision
) -> list[str]:
    """Domain checks: an offered route id, or an observed, passable, reachable target (and waypoint)."""
    errors: list[str] = []
    if decision.action == "move":
        if (decision.route_id is None) == (decision.target_offset is None):
            errors.append(
                "action 'move' needs exactly one of route_id or target_offset"
            )
        if decision.route_id is not None and context.option(decision.route_id) is None:
            offered = ", ".join(o.route_id for o in context.options) or "none"
            errors.append(
                f"route_id {decision.route_id!r} was not offered (offered: {offered})"
            )
        if decision.target_offset is not None:
            errors.extend(
                _offset_errors(context, decision.target_offset, "target_offset")
            )
        if decision.waypoint_offset is not None:
            errors.extend(
                _offset_errors(context, decision.waypoint_offset, "waypoint_offset")
            )
    elif decision.route_id is not None:
        errors.append(f"action {decision.action!r} takes no route_id")
    return errors


def _angle_between(a: tuple[float, float], b: tuple[float, float]) -> float:
    na, nb = math.hypot(*a), math.hypot(*b)
    if na == 0 or nb == 0:
        return 0.0
    return (a[0] * b[0] + a[1] * b[1]) / (na * nb)


_COMPASS_VECTORS = {
    "E": (1, 0),
    "NE": (1, 1),
    "N": (0, 1),
    "NW": (-1, 1),
    "W": (-1, 0),
    "SW": (-1, -1),
    "S": (0, -1),
    "SE": (1, -1),
}


def appraise(context: EvacuationContext) -> Situation:
    """Appraisal from evidence: direct sight -> danger; shout, fleeing, remembered -> unsure."""
    if context.sees_adversary or context.sees_casualty:
        return "danger"
    previous = context.previous.situation if context.previous else "normal"
    if context.stale_sighting is not None:
        return "danger" if context.fear >= 0.45 else "unsure"
    if (
        context.heard_shouts
        or context.fleeing_neighbours > 0
        or context.exit_hints
        or previous != "normal"
    ):
        return "danger" if previous == "danger" and context.fear >= 0.45 else "unsure"
    return "normal"


def urgency_for(situation: Situation, fear: float) -> float:
    """Urgency from appraisal and fear: normal 0.1 + 0.2 f, unsure 0.35 + 0.4 f, danger 0.6 + 0.4 f."""
    base, slope = {"normal": (0.1, 0.2), "unsure": (0.35, 0.4), "danger": (0.6, 0.4)}[
        situation
    ]
    return round(min(1.0, base + slope * fear), 3)


def score_options(
    context: EvacuationContext,
    situation: Situation,
    intent: str,
    rng: np.random.Generator,
) -> list[float]:
    """Personality-weighted utility of every offered option (plus Gumbel noise from ``rng``).

    Terms: shortness (strong when evacuating), exit anchors (unsure/danger), familiarity and keeping
    the previous anchor (conscientiousness), people along the route (neuroticism + agreeableness:
    follow the crowd), frontier exploration (openness; touring when normal), clearance from visible
    A or D, direction of exit hints, and away from shouts and the stale sighting.
    """
    p = context.personality
    z_o, z_c, z_a, z_n = p.z("O"), p.z("C"), p.z("A"), p.z("N")
    evacuating = situation != "normal"
    scores = []
    for option in context.options:
        s = -(1.5 if evacuating else 0.2) * option.length_cells / 100.0
        is_opening = option.anchor_kind != "frontier"
        if (
            is_opening
        ):  # evacuating: head out; touring: an opening is no place to stroll to
            s += (3.0 if situation == "danger" else 2.5) if evacuating else -1.0
        s += (0.3 + 0.15 * z_c) * option.familiarity
        prev = context.previous
        if prev is not None and prev.anchor is not None:
            ax = context.position[0] + option.anchor_offset[0]
            ay = context.position[1] + option.anchor_offset[1]
            if max(abs(ax - prev.anchor[0]), abs(ay - prev.anchor[1])) <= 3 or (
                is_opening and option.opening_id == prev.opening_id
            ):
                s += 0.5 + 0.25 * z_c
        crowd = 0.15 * (z_n + z_a) + (0.5 if intent == "follow_others" else 0.0)
        s += crowd * min(option.visible_people, 5) / 5.0
        if option.anchor_kind == "frontier":
            s += 0.25 * z_o + (0.6 if not evacuating else 0.0)
        if option.threat_clearance_m is not None:
            s += (2.0 + 0.3 * z_n) * min(option.threat_clearance_m, 12.0) / 12.0
        direction = (float(option.anchor_offset[0]), float(option.anchor_offset[1]))
        if evacuating and not is_opening:
            for hint in context.exit_hints:
                s += 1.0 * _angle_between(direction, _COMPASS_VECTORS[hint.direction])
            for shout in context.heard_shouts[:3]:
                s -= 0.3 * _angle_between(direction, _COMPASS_VECTORS[shout.direction])
        if context.stale_sighting is not None:
            s -= 0.8 * _angle_between(direction, context.stale_sighting.offset)
        if option.alternative:
            s -= 0.1
        scores.append(s + 0.3 * float(rng.gumbel()))
    return scores


def evacuation_rule_policy(
    context: EvacuationContext, rng: np.random.Generator
) -> EvacuationDecision:
    """The classical rule-based pedestrian (baseline of the paper's comparison)."""
    situation = appraise(context)
    urgency = urgency_for(situation, context.fear)
    p = context.personality
    if situation == "danger":
        intent = "escape"
    elif situation == "unsure":
        intent = (
            "follow_others"
            if (p.z("A") + p.z("N")) / 2 > 0.5 and context.fleeing_neighbours > 0
            else "seek_exit"
        )
    else:
        intent = "explore" if p.z("O") > 0.5 else "tour"
    if not context.options:
        return EvacuationDecision(
            action="turn_and_observe",
            situation=situation,
            intent=intent,
            urgency=urgency,
            context_capsule=f"{intent}: no route known, looking around",
        )
    scores = score_options(context, situation, intent, rng)
    best = context.options[int(np.argmax(scores))]
    shout = situation == "danger"
    target = (
        f"{best.anchor_kind} {best.opening_id}"
        if best.opening_id
        else f"frontier {best.direction}"
    )
    capsule = f"{intent} (urgency {urgency:.2f}); took {best.route_id} toward {target}"
    return EvacuationDecision(
        action="move",
        situation=situation,
        intent=intent,
        urgency=urgency,
        route_id=best.route_id,
        shout=shout,
        context_capsule=capsule,
    )


EVACUATION_MOVE: DecisionKind[EvacuationContext, EvacuationDecision] = DecisionKind(
    name="EvacuationMove",
    context_type=EvacuationContext,
    output_schema=EvacuationDecision,
    render_prompt=render_evacuation_prompt,
    rule_policy=evacuation_rule_policy,
    validate=validate_evacuation_move,
    request_schema=move_request_schema,
)
"""The pedestrian's decision kind."""
