"""The ``EvacuationMove`` decision kind: output schema, validator and rule policy.

A pedestrian states what it knows (:class:`~.decision_context.EvacuationContext`: ASCII view,
route options with attributes, engine-computed fear, heard shouts and exit hints, a memory
summary, its personality, feedback on its previous answer; rendered by :mod:`.prompts`);
a brain answers with an appraisal (situation), a standing goal (intent, urgency), an action and
either an offered route or a target offset. The validator enforces the paper's rule that a target
must be an observed, passable cell reachable through observed cells (Sec. 2.2.3).

The rule policy is the classical baseline: appraisal from evidence (direct sight of A or D ->
danger; a shout, fleeing neighbours or remembered evidence -> unsure; else normal), urgency from
fear and appraisal, and a route choice among the offered options scored with personality weights.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind
from mesa_llm_mobility.evacuation.decision_context import EvacuationContext
from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.prompts import CAPSULE_CHARS, render_evacuation_prompt

Situation = Literal["normal", "unsure", "danger"]
Action = Literal["move", "wait", "turn_and_observe"]


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
)
"""The pedestrian's decision kind."""
