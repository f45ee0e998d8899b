"""Committing a decision: the engine's side of an ``EvacuationMove`` answer.

:func:`take_due_answers` collects the answers whose 1 s boundary has come; :func:`plan_routes_ahead`
sends the new routes they need to the route planner early in the step (its worker processes
route while the step communicates and updates fear); :func:`apply_decisions` then installs each
answer (:func:`apply_decision`): it joins the chosen option's path to where the pedestrian stands
now (:func:`stitch`) or takes the route planned anew over the pedestrian's believed map, commits
at most ``COMMIT_CELLS`` cells, sets the standing goal and feedback, states the memory revision of
the turn and records the decision's row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

import numpy as np

from mesa_llm_mobility.cognition.kinds import DecisionResult
from mesa_llm_mobility.evacuation.agents import ACTIVE, Pedestrian
from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.decision_context import (
    EvacuationContext,
    PreviousDecision,
)
from mesa_llm_mobility.evacuation.decision_output import EvacuationDecision
from mesa_llm_mobility.evacuation.decisions import decides_to_escape
from mesa_llm_mobility.evacuation.layers import BeliefStore
from mesa_llm_mobility.evacuation.memory_flow import MemoryFlow, turn_summary
from mesa_llm_mobility.evacuation.perception import heading_index
from mesa_llm_mobility.evacuation.plaza import Terrain
from mesa_llm_mobility.evacuation.route_planner import (
    RoutePlanner,
    RouteQuery,
    SentQueries,
)
from mesa_llm_mobility.evacuation.routing import COMMIT_CELLS, RouteOption
from mesa_llm_mobility.evacuation.timing import Clock, step_time_s

type MoveAnswer = DecisionResult[EvacuationContext, EvacuationDecision]
"""A brain's answer to an ``EvacuationMove`` request."""

type DueAnswer = tuple[Pedestrian, MoveAnswer]
"""An answer whose boundary has come, with its pedestrian."""


class DecisionRecorder(Protocol):
    """Adds a row to the decisions table (:meth:`MobilityModel.record_decision`)."""

    def __call__(
        self, result: DecisionResult[Any, Any], time: Mapping[str, Any], **columns: Any
    ) -> None:
        """Record ``result`` at ``time`` with the model's own ``columns``."""


def revision_level(
    agent: Pedestrian,
    out: EvacuationDecision,
    anchor: tuple[int, int] | None,
    opening: str | None,
    route: list[int],
) -> str:
    """How far a new decision revises the standing one (``goal``, ``plan``, ``execution``, ``none``).

    ``goal``: the goal's category changed (the paper's goal layer, Sec. 2.3.2: what the
    pedestrian is trying to do; its words in ``intent`` may change freely without one, and so
    may urgency, whose change the analysis relates to goal revisions); ``plan``: the anchor
    moved more than 3 cells (and is not the same opening); ``execution``: same anchor,
    different first three cells; ``none`` otherwise and for a first decision.
    """
    prev = agent.previous
    if prev is None:
        return "none"
    if out.goal != prev.goal:
        return "goal"
    same_anchor = (anchor is None and prev.anchor is None) or (
        anchor is not None
        and prev.anchor is not None
        and (
            max(abs(anchor[0] - prev.anchor[0]), abs(anchor[1] - prev.anchor[1])) <= 3
            or (opening is not None and opening == prev.opening_id)
        )
    )
    if not same_anchor:
        return "plan"
    if route[:3] != agent.route[agent.route_pos : agent.route_pos + 3]:
        return "execution"
    return "none"


class MoveTarget(NamedTuple):
    """Where a move answer goes (:func:`_move_target`)."""

    anchor: tuple[int, int]
    option: RouteOption | None
    opening: str | None
    kind: str
    route: list[int]
    """The option's path stitched on from the current cell; empty: a new route is needed."""


class RoutesSent(NamedTuple):
    """What :func:`plan_routes_ahead` found and sent for a step's due answers."""

    targets: dict[int, MoveTarget]
    """Each move answer's :func:`_move_target`, by its position in ``due``."""
    needs: list[int]
    """The positions in ``due`` whose path cannot be stitched on (a new route is needed)."""
    routes: SentQueries
    """Their route queries, as sent."""


def take_due_answers(crowd: Crowd, step: int) -> list[DueAnswer]:
    """The pending answers of active pedestrians due at ``step``, in row order (taken).

    Reads and clears each such pedestrian's pending decision.
    """
    due = []
    status = crowd.status.tolist()
    for agent in crowd.pedestrians:
        pending = agent.pending
        if (
            status[agent.index] == ACTIVE
            and pending is not None
            and pending.due_step <= step
        ):
            agent.pending = None
            due.append((agent, pending.result))
    return due


def plan_routes_ahead(
    due: list[DueAnswer],
    crowd: Crowd,
    belief: BeliefStore,
    raw: np.ndarray,
    planner: RoutePlanner,
) -> RoutesSent:
    """Send the route queries of the due answers whose path cannot be stitched on.

    A decision's new route depends only on its pedestrian's cell and beliefs, which nothing
    between this step's perception and the decisions' application changes (shouts, exit
    information, fear and memory revisions do not, nor does applying another pedestrian's
    decision), so the routes are sent to the route planner before that work: its worker
    processes, if any, answer them meanwhile. The stitched paths are kept for
    :func:`apply_decisions` for the same reason.

    Args:
        due: The answers due now.
        crowd: The crowd (positions, read).
        belief: The belief maps (read).
        raw: The plaza's raw layer (corner rules of a stitch).
        planner: Receives the route queries.

    Returns:
        The targets found and the routes sent.
    """
    targets, needs, queries = {}, [], []
    for k, (agent, result) in enumerate(due):
        out = result.output
        if out is None or out.action != "move":
            continue
        i = agent.index
        here = (int(crowd.pos[i, 0]), int(crowd.pos[i, 1]))
        context: EvacuationContext = result.request.context
        targets[k] = target = _move_target(i, here, context, out, belief, raw)
        if not target.route:
            needs.append(k)
            queries.append(route_query(i, here, target.anchor, out, context, belief))
    return RoutesSent(targets, needs, planner.send(queries))


def apply_decisions(
    due: list[DueAnswer],
    sent: RoutesSent,
    crowd: Crowd,
    belief: BeliefStore,
    raw: np.ndarray,
    clock: Clock,
    memory: MemoryFlow,
    record: DecisionRecorder,
) -> None:
    """:func:`apply_decision` for each due answer in turn, with the routes planned ahead.

    Args:
        due: The answers due now, in order.
        sent: What :func:`plan_routes_ahead` sent for ``due`` earlier in the step.
        crowd: As for :func:`apply_decision`.
        belief: As for :func:`apply_decision`.
        raw: As for :func:`apply_decision`.
        clock: As for :func:`apply_decision`.
        memory: As for :func:`apply_decision`.
        record: As for :func:`apply_decision`.
    """
    fresh = dict(zip(sent.needs, sent.routes.answers(), strict=True))
    for k, (agent, result) in enumerate(due):
        apply_decision(
            agent,
            result,
            crowd,
            belief,
            raw,
            clock,
            memory,
            record,
            fresh_route=fresh.get(k),  # type: ignore[arg-type]  (route answers)
            target=sent.targets.get(k),
        )


def apply_decision(
    agent: Pedestrian,
    result: MoveAnswer,
    crowd: Crowd,
    belief: BeliefStore,
    raw: np.ndarray,
    clock: Clock,
    memory: MemoryFlow,
    record: DecisionRecorder,
    *,
    planner: RoutePlanner | None = None,
    fresh_route: list[int] | None = None,
    target: MoveTarget | None = None,
) -> None:
    """Install a decision at its due step and add its row to the decisions table.

    The target is checked against the pedestrian's current cell (it walked while the decision
    was pending): an option's path is stitched on (:func:`stitch`), else ``fresh_route`` (the
    route planned ahead) or a route planned now by ``planner`` over the believed map; an
    unreachable target is rejected with a reason. At most ``COMMIT_CELLS`` cells are committed.

    Reads the crowd's positions, the beliefs and the raw layer; writes the pedestrian's route,
    standing goal, capsule, feedback and (``turn_and_observe``) the crowd's heading of it, the
    memory revision request of the turn and the decision's row.

    Args:
        agent: The pedestrian the decision is for.
        result: The brain's answer to its ``EvacuationMove`` request.
        crowd: The crowd.
        belief: The belief maps.
        raw: The plaza's raw layer.
        clock: The clock (the step the decision takes effect).
        memory: Receives the memory revision request of the turn.
        record: Records the decision's row.
        planner: Plans a route now when ``fresh_route`` is not given.
        fresh_route: The route of this decision, planned beforehand.
        target: The :func:`_move_target` of a move answer, found beforehand.
    """
    context: EvacuationContext = result.request.context
    out: EvacuationDecision | None = result.output
    if out is None:
        keep_previous(agent, result, crowd, clock, memory, record)
        return
    i = agent.index
    x, y = int(crowd.pos[i, 0]), int(crowd.pos[i, 1])
    anchor: tuple[int, int] | None = None
    option = None
    opening: str | None = None
    kind: str | None = None
    route: list[int] = []
    accepted, reason = True, ""
    if out.action == "move":
        anchor, option, opening, kind, route = (
            target
            if target is not None
            else _move_target(i, (x, y), context, out, belief, raw)
        )
        if not route:
            if fresh_route is None:
                assert planner is not None, "a route to plan needs the planner"
                fresh_route = planner.route(
                    route_query(i, (x, y), anchor, out, context, belief)
                )
            route = fresh_route
            if not route and (x, y) != anchor:
                accepted, reason = (
                    False,
                    "target no longer reachable through observed cells from your current cell",
                )
    elif out.action == "turn_and_observe":
        if out.target_offset is not None and (
            out.target_offset.dx or out.target_offset.dy
        ):
            crowd.heading[i] = heading_index(out.target_offset.dx, out.target_offset.dy)
        else:
            crowd.heading[i] = (crowd.heading[i] + 4) % 8
    level = revision_level(agent, out, anchor, opening, route) if accepted else "none"
    committed = route[:COMMIT_CELLS]
    if accepted:
        agent.route, agent.route_pos = committed, 0
        agent.route_opening = opening if kind in ("exit", "gate") else None
        agent.situation, agent.goal, agent.urgency = (
            out.situation,
            out.goal,
            out.urgency,
        )
        if out.intent is not None:  # left out: the standing intent stays
            agent.intent = out.intent
        agent.shouting = decides_to_escape(context, out)
        if out.context_capsule is not None:  # left out: the notes stay
            agent.capsule = out.context_capsule
        feedback = f"accepted: {out.action}" + (
            f", {len(committed)} cells committed toward {kind} {opening or ''}".rstrip()
            if out.action == "move"
            else ""
        )
    else:
        feedback = f"rejected: {reason}"
    agent.previous = PreviousDecision(
        out.goal,
        out.intent if out.intent is not None else agent.intent,
        out.urgency,
        out.situation,
        kind,
        opening,
        anchor,
        feedback,
    )
    agent.last_effect_step = clock.tick
    agent.blocked_steps = 0
    nearest_known = None
    known = context.known_openings
    usable = [o for o in known if o.state != "closed"]
    if usable:
        nearest_known = min(usable, key=lambda o: o.distance_m).opening_id
    target_words = None
    if out.action == "move":
        target_words = (
            f"{kind} {opening}"
            if opening
            else (
                f"the frontier to the {option.direction}"
                if kind == "frontier" and option is not None
                else f"the cell at offset ({out.target_offset.dx:+d}, {out.target_offset.dy:+d})"
                if out.target_offset is not None
                else None
            )
        )
    _remember_turn(
        agent,
        context,
        out,
        target_words if accepted else None,
        feedback,
        clock,
        memory,
    )
    record(
        result,
        _time_columns(clock, context),
        **_context_columns(context),
        action=out.action,
        situation=out.situation,
        goal=out.goal,
        intent=out.intent if out.intent is not None else agent.intent,
        urgency=out.urgency,
        route_id=out.route_id,
        target_dx=out.target_offset.dx if out.target_offset else None,
        target_dy=out.target_offset.dy if out.target_offset else None,
        anchor_kind=kind,
        opening_id=opening,
        shout=agent.shouting,
        cells_committed=len(committed) if accepted else 0,
        accepted=accepted,
        commit_reason=reason or None,
        revision_level=level,
        nearest_known_opening=nearest_known,
        x=x,
        y=y,
    )


def _move_target(
    i: int,
    here: tuple[int, int],
    context: EvacuationContext,
    out: EvacuationDecision,
    belief: BeliefStore,
    raw: np.ndarray,
) -> MoveTarget:
    """Where a move answer goes: anchor, option, opening and anchor kind, and a route.

    The route is the option's path stitched on from ``here`` (:func:`stitch`); it is empty when
    the answer needs a new route (no option, or the path cannot be joined).
    """
    option = context.option(out.route_id) if out.route_id else None
    if option is not None:
        anchor = (
            context.position[0] + option.anchor_offset[0],
            context.position[1] + option.anchor_offset[1],
        )
        route = stitch(i, here, context.position, option.path, belief, raw)
        return MoveTarget(anchor, option, option.opening_id, option.anchor_kind, route)
    assert out.target_offset is not None
    anchor = (
        context.position[0] + out.target_offset.dx,
        context.position[1] + out.target_offset.dy,
    )
    return MoveTarget(anchor, None, None, "target", [])


def _remember_turn(
    agent: Pedestrian,
    context: EvacuationContext,
    out: EvacuationDecision | None,
    target: str | None,
    feedback: str,
    clock: Clock,
    memory: MemoryFlow,
) -> None:
    """Queue the memory role's revision for the turn just committed."""
    memory.request(
        agent,
        turn_summary(
            context,
            out,
            intent=agent.intent,
            target=target,
            feedback=feedback,
            time_s=step_time_s(clock.tick),
        ),
    )


def _time_columns(clock: Clock, context: EvacuationContext) -> dict[str, Any]:
    return {
        "request_step": context.step,
        "applied_step": clock.tick,
        "time_s": step_time_s(clock.tick),
    }


def _context_columns(context: EvacuationContext) -> dict[str, Any]:
    return {
        "trigger": context.trigger,
        "inputs": context.summary(),
        "fear": context.fear,
        "sees_threat": context.sees_adversary or context.sees_casualty,
        "remembered_threat": context.stale_sighting is not None,
        "heard_shouts": len(context.heard_shouts),
        "n_options": len(context.options),
    }


def keep_previous(
    agent: Pedestrian,
    result: MoveAnswer,
    crowd: Crowd,
    clock: Clock,
    memory: MemoryFlow,
    record: DecisionRecorder,
) -> None:
    """A rejected answer (paper semantics): nothing changes but the feedback for the next turn.

    The pedestrian keeps its route, standing goal and capsule; the reason for the rejection is
    its feedback on the next turn, and the row records ``outcome`` ``rejected``. A call that
    failed (no answer: :attr:`DecisionResult.transport_failed`) is no answer to give feedback
    on: the feedback and the memory stay as they were (infrastructure never enters a mind).
    """
    context: EvacuationContext = result.request.context
    prev = agent.previous
    if not result.transport_failed:
        feedback = (
            f"rejected: {result.reason or 'invalid answer'}; your previous plan stays"
        )
        agent.previous = PreviousDecision(
            agent.goal,
            agent.intent,
            agent.urgency,
            agent.situation,
            prev.route_kind if prev else None,
            prev.opening_id if prev else None,
            prev.anchor if prev else None,
            feedback,
        )
        _remember_turn(agent, context, None, None, feedback, clock, memory)
    agent.last_effect_step = clock.tick
    agent.blocked_steps = 0
    record(
        result,
        _time_columns(clock, context),
        **_context_columns(context),
        situation=agent.situation,
        goal=agent.goal,
        intent=agent.intent,
        urgency=agent.urgency,
        shout=agent.shouting,
        cells_committed=0,
        accepted=False,
        commit_reason=result.reason,
        revision_level="none",
        x=int(crowd.pos[agent.index, 0]),
        y=int(crowd.pos[agent.index, 1]),
    )


def stitch(
    i: int,
    here: tuple[int, int],
    decided_at: tuple[int, int],
    path: tuple[int, ...],
    belief: BeliefStore,
    raw: np.ndarray,
) -> list[int]:
    """Join the option's path from the current cell without a new search, when possible.

    The pedestrian walked its old route while the decision was pending; if a cell of the new
    path (the farthest one) is one legal step away, the route continues from there.
    """
    if here == decided_at:
        return list(path)
    height = raw.shape[1]
    for j in range(min(len(path), 8) - 1, -1, -1):
        tx, ty = divmod(path[j], height)
        dx, dy = tx - here[0], ty - here[1]
        if (dx, dy) == (0, 0):
            return list(path[j + 1 :])
        if max(abs(dx), abs(dy)) == 1:
            if dx and dy:
                a = (
                    belief.knows(i, (here[0] + dx) * height + here[1])
                    and raw[here[0] + dx, here[1]] == Terrain.FLOOR
                )
                b = (
                    belief.knows(i, here[0] * height + here[1] + dy)
                    and raw[here[0], here[1] + dy] == Terrain.FLOOR
                )
                if not (a or b):
                    continue
            return list(path[j:])
    return []


def route_query(
    i: int,
    here: tuple[int, int],
    target: tuple[int, int],
    out: EvacuationDecision,
    context: EvacuationContext,
    belief: BeliefStore,
) -> RouteQuery:
    """The query of a new route from ``here`` to ``target`` (via the answer's waypoint, if any).

    It carries the believed codes of pedestrian ``i``'s belief window now.
    """
    window = belief.window(i, here)
    waypoint = None
    if out.waypoint_offset is not None:
        waypoint = (
            context.position[0] + out.waypoint_offset.dx,
            context.position[1] + out.waypoint_offset.dy,
        )
    return RouteQuery(belief.codes_in(i, window), window, here, target, waypoint)
