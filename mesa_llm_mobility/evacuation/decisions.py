"""The ``EvacuationMove`` decision kind: output schema, validator and rule policy.

A pedestrian states what it knows (:class:`~.decision_context.EvacuationContext`: ASCII view,
route options with attributes, engine-computed fear, heard shouts and exit hints, a memory
summary, its personality, feedback on its previous answer; rendered by :mod:`.prompts`);
a brain answers with an appraisal (situation), a standing goal (intent, urgency), an action and
either an offered route or a target offset. The validator enforces the paper's rule that a target
must be an observed, passable cell reachable through observed cells (Sec. 2.2.3).

The rule policy is the classical baseline: appraisal from evidence (direct sight of A or D ->
danger; a shout, fleeing neighbours or remembered evidence -> unsure; else normal), urgency graded
from fear and the evidence (:func:`urgency_from_evidence`), and a route choice among the offered
options scored with personality weights. :func:`decides_to_escape` says which answers are a
decision to escape (the engine's shouting follows it).
"""

from __future__ import annotations

import math

import numpy as np

from mesa_llm_mobility.cognition.kinds import DecisionKind
from mesa_llm_mobility.evacuation.decision_context import EvacuationContext
from mesa_llm_mobility.evacuation.decision_output import (
    ESCAPE_GOAL,
    EvacuationDecision,
    Goal,
    Offset,
    Situation,
)
from mesa_llm_mobility.evacuation.move_schema import move_request_schema
from mesa_llm_mobility.evacuation.plaza import Terrain, passable_mask
from mesa_llm_mobility.evacuation.prompts import render_evacuation_prompt


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
    """Appraisal from evidence: direct sight -> danger; shout, fleeing, remembered -> unsure.

    Exit information from another pedestrian is evidence (someone is leaving); the plaza's
    system-provided exit information is not.
    """
    if context.sees_adversary or context.sees_casualty:
        return "danger"
    previous = context.previous.situation if context.previous else "normal"
    if context.stale_sighting is not None:
        return "danger" if context.fear >= 0.45 else "unsure"
    told = any(not hint.from_system for hint in context.exit_hints)
    if (
        context.heard_shouts
        or context.fleeing_neighbours > 0
        or told
        or previous != "normal"
    ):
        return "danger" if previous == "danger" and context.fear >= 0.45 else "unsure"
    return "normal"


SIGHT_SCALE_M = 12.0
"""Distance over which the proximity of a threat falls by e (the sight radius)."""

STALE_MEMORY_S = 30.0
"""Time over which a remembered sighting's weight falls by e."""

SHOUT_FADE_S = 10.0
"""Time over which a heard shout's weight falls by e (shouts stay in a context 10 s)."""


def _proximity(distance_m: float) -> float:
    return math.exp(-distance_m / SIGHT_SCALE_M)


def _recency(age_s: float, scale_s: float) -> float:
    return math.exp(-age_s / scale_s)


def threat_evidence(context: EvacuationContext) -> float:
    """How strongly the pedestrian's evidence says the threat is near and now, in [0, 1].

    The strongest of (the paper's evidence, Secs. 2.3.5-2.3.7, graded as the Protective Action
    Decision Model grades a threat's cues by their certainty, proximity and immediacy, Lindell
    and Perry 2012, and as environmental cues outweigh ambiguous social ones, Kuligowski 2013):

    - the armed person in direct sight: ``exp(-d / 12 m)`` of its distance ``d`` (a body only:
      0.8 of that);
    - a remembered sighting: ``0.9 exp(-d / 12 m) exp(-age / 30 s)``;
    - shouts heard (no threat coordinate): ``0.6 (1 - prod(1 - 0.35 exp(-age / 10 s)))`` over
      the shouts in the context, each adding less;
    - people seen fleeing: ``0.1`` per person, at most ``0.3``.
    """
    threat = 0.0
    if context.nearest_threat_m is not None:
        weight = 1.0 if context.sees_adversary else 0.8
        threat = weight * _proximity(context.nearest_threat_m)
    stale = context.stale_sighting
    if stale is not None:
        threat = max(
            threat,
            0.9 * _proximity(stale.distance_m) * _recency(stale.age_s, STALE_MEMORY_S),
        )
    silence = 1.0
    for shout in context.heard_shouts:
        silence *= 1.0 - 0.35 * _recency(shout.age_s, SHOUT_FADE_S)
    alarm = 0.6 * (1.0 - silence)
    crowd = 0.1 * min(context.fleeing_neighbours, 3)
    return max(threat, alarm, crowd)


def urgency_from_evidence(context: EvacuationContext) -> float:
    """The rule pedestrian's urgency, graded from fear and the evidence: ``0.05 + 0.5 f + 0.45 e``.

    ``f`` is the engine's fear (which already rises with the strongest stimulus and decays
    slowly, paper Eq. 4) and ``e`` the :func:`threat_evidence` (distance and recency of the
    threat, shouts heard, people fleeing), capped at 1 and rounded to 3 decimals. Without any
    evidence and without fear it is 0.05; a pedestrian beside the armed person, in high fear,
    about 0.93.
    """
    urgency = 0.05 + 0.5 * context.fear + 0.45 * threat_evidence(context)
    return round(min(1.0, urgency), 3)


def decides_to_escape(context: EvacuationContext, decision: EvacuationDecision) -> bool:
    """Whether an answer is a decision to escape, after which the pedestrian shouts as it moves.

    The paper (Sec. 2.3.7): "A pedestrian who has decided to escape, either after a direct
    sighting or through the model's situation assessment, shouts while moving." An answer
    decides to escape when it moves and either was made with A or D in direct sight, or
    assesses the situation as ``danger``, or states the goal ``escape``. Urgency does not
    enter: the paper ties the decision to the sighting or the assessment, and shouting is
    not a field of the answer (the paper's output has none).
    """
    if decision.action != "move":
        return False
    return (
        context.sees_adversary
        or context.sees_casualty
        or decision.situation == "danger"
        or decision.goal == ESCAPE_GOAL
    )


def score_options(
    context: EvacuationContext,
    situation: Situation,
    goal: Goal,
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
        crowd = 0.15 * (z_n + z_a) + (0.5 if goal == "follow_others" else 0.0)
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
    """The classical rule-based pedestrian (baseline of the paper's comparison).

    Appraisal by :func:`appraise`, urgency by :func:`urgency_from_evidence`, the goal from the
    appraisal (danger: escape; unsure: seek_exit, or follow_others for agreeable, neurotic
    pedestrians who see people fleeing; normal: tour, or explore for open ones; its words are
    the category's own), and the best of the offered options by :func:`score_options`.
    """
    situation = appraise(context)
    urgency = urgency_from_evidence(context)
    p = context.personality
    goal: Goal
    if situation == "danger":
        goal = "escape"
    elif situation == "unsure":
        goal = (
            "follow_others"
            if (p.z("A") + p.z("N")) / 2 > 0.5 and context.fleeing_neighbours > 0
            else "seek_exit"
        )
    else:
        goal = "explore" if p.z("O") > 0.5 else "tour"
    if not context.options:
        return EvacuationDecision(
            action="turn_and_observe",
            situation=situation,
            goal=goal,
            intent=goal,
            urgency=urgency,
            context_capsule=f"{goal}: no route known, looking around",
        )
    scores = score_options(context, situation, goal, rng)
    best = context.options[int(np.argmax(scores))]
    target = (
        f"{best.anchor_kind} {best.opening_id}"
        if best.opening_id
        else f"frontier {best.direction}"
    )
    capsule = f"{goal} (urgency {urgency:.2f}); took {best.route_id} toward {target}"
    return EvacuationDecision(
        action="move",
        situation=situation,
        goal=goal,
        intent=goal,
        urgency=urgency,
        route_id=best.route_id,
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
