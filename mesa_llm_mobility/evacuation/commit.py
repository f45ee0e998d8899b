"""Committing a decision: the engine's side of an ``EvacuationMove`` answer.

:func:`apply_decision` installs a brain's answer when it falls due: it joins the chosen option's
path to where the pedestrian stands now (:func:`stitch`) or routes anew over the pedestrian's
believed map (:func:`route_now`), commits at most ``COMMIT_CELLS`` cells, sets the standing goal
and feedback, and records the decision's row (:meth:`MobilityModel.record_decision`).
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, NamedTuple

from mesa_llm_mobility.evacuation.decisions import (
    EvacuationContext,
    EvacuationDecision,
    PreviousDecision,
)
from mesa_llm_mobility.evacuation.memory_flow import queue_revision, turn_summary
from mesa_llm_mobility.evacuation.perception import heading_index
from mesa_llm_mobility.evacuation.plaza import Terrain
from mesa_llm_mobility.evacuation.route_planner import RouteQuery, SentQueries
from mesa_llm_mobility.evacuation.routing import COMMIT_CELLS, RouteOption
from mesa_llm_mobility.evacuation.timing import step_time_s

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition.kinds import DecisionResult
    from mesa_llm_mobility.evacuation.agents import Pedestrian
    from mesa_llm_mobility.evacuation.model import EvacuationModel


def revision_level(
    agent: Pedestrian,
    out: EvacuationDecision,
    anchor: tuple[int, int] | None,
    opening: str | None,
    route: list[int],
) -> str:
    """How far a new decision revises the standing one (``goal``, ``plan``, ``execution``, ``none``).

    ``goal``: intent or appraisal changed; ``plan``: the anchor moved more than 3 cells (and is
    not the same opening); ``execution``: same anchor, different first three cells; ``none``
    otherwise and for a first decision.
    """
    prev = agent.previous
    if prev is None:
        return "none"
    if out.intent != prev.intent or out.situation != prev.situation:
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
    """What :func:`send_new_routes` found and sent for a step's due answers."""

    targets: dict[int, MoveTarget]
    """Each move answer's :func:`_move_target`, by its position in ``due``."""
    needs: list[int]
    """The positions in ``due`` whose path cannot be stitched on (a new route is needed)."""
    routes: SentQueries
    """Their route queries, as sent."""


def send_new_routes(
    model: EvacuationModel,
    due: list[tuple[Pedestrian, DecisionResult[EvacuationContext, EvacuationDecision]]],
) -> RoutesSent:
    """Send the route queries of the due answers whose path cannot be stitched on.

    A decision's new route depends only on its pedestrian's cell and beliefs, which nothing
    between this step's perception and the decisions' application changes (shouts, exit
    information, fear and memory revisions do not, nor does applying another pedestrian's
    decision), so the routes are sent to the model's route planner before that work: its
    worker processes, if any, answer them meanwhile. The stitched paths are kept for
    :func:`apply_decisions` for the same reason.
    """
    targets, needs, queries = {}, [], []
    for k, (agent, result) in enumerate(due):
        out = result.output
        if out is None or out.action != "move":
            continue
        i = agent.index
        here = (int(model.pos[i, 0]), int(model.pos[i, 1]))
        context: EvacuationContext = result.request.context
        targets[k] = target = _move_target(model, i, here, context, out)
        if not target.route:
            needs.append(k)
            queries.append(route_query(model, i, here, target.anchor, out, context))
    return RoutesSent(targets, needs, model.route_planner.send(queries))


def apply_decisions(
    model: EvacuationModel,
    due: list[tuple[Pedestrian, DecisionResult[EvacuationContext, EvacuationDecision]]],
    sent: RoutesSent | None = None,
) -> None:
    """:func:`apply_decision` for each due answer in turn, the new routes they need planned together.

    Args:
        model: The model.
        due: The answers due now, in order.
        sent: What :func:`send_new_routes` sent for ``due`` earlier in the step (``None``: sent
            now).
    """
    sent = sent if sent is not None else send_new_routes(model, due)
    start = perf_counter()
    answers = sent.routes.answers()
    model.timing["routing"] += perf_counter() - start
    fresh = dict(zip(sent.needs, answers, strict=True))
    for k, (agent, result) in enumerate(due):
        apply_decision(model, agent, result, fresh.get(k), sent.targets.get(k))


def apply_decision(
    model: EvacuationModel,
    agent: Pedestrian,
    result: DecisionResult[EvacuationContext, EvacuationDecision],
    fresh_route: list[int] | None = None,
    target: MoveTarget | None = None,
) -> None:
    """Install a decision at its due step and add its row to the decisions table.

    The target is checked against the pedestrian's current cell (it walked while the decision
    was pending): an option's path is stitched on (:func:`stitch`), else routed anew over the
    believed map (:func:`route_now`, or ``fresh_route`` when that route is already planned);
    an unreachable target is rejected with a reason. At most ``COMMIT_CELLS`` cells are
    committed.

    Args:
        model: The model.
        agent: The pedestrian the decision is for.
        result: The brain's answer to its ``EvacuationMove`` request.
        fresh_route: The :func:`route_now` answer of this decision, planned beforehand.
        target: The :func:`_move_target` of a move answer, found beforehand.
    """
    context: EvacuationContext = result.request.context
    out: EvacuationDecision | None = result.output
    if out is None:
        keep_previous(model, agent, result)
        return
    i = agent.index
    x, y = int(model.pos[i, 0]), int(model.pos[i, 1])
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
            else _move_target(model, i, (x, y), context, out)
        )
        if not route:
            route = (
                fresh_route
                if fresh_route is not None
                else route_now(model, i, (x, y), anchor, out, context)
            )
            if not route and (x, y) != anchor:
                accepted, reason = (
                    False,
                    "target no longer reachable through observed cells from your current cell",
                )
    elif out.action == "turn_and_observe":
        if out.target_offset is not None and (
            out.target_offset.dx or out.target_offset.dy
        ):
            model.heading[i] = heading_index(out.target_offset.dx, out.target_offset.dy)
        else:
            model.heading[i] = (model.heading[i] + 4) % 8
    level = revision_level(agent, out, anchor, opening, route) if accepted else "none"
    committed = route[:COMMIT_CELLS]
    if accepted:
        agent.route, agent.route_pos = committed, 0
        agent.route_anchor, agent.route_opening = (
            anchor,
            opening if kind in ("exit", "gate") else None,
        )
        agent.situation, agent.intent, agent.urgency = (
            out.situation,
            out.intent,
            out.urgency,
        )
        agent.shouting = out.shout and out.action == "move"
        agent.capsule = out.context_capsule
        feedback = f"accepted: {out.action}" + (
            f", {len(committed)} cells committed toward {kind} {opening or ''}".rstrip()
            if out.action == "move"
            else ""
        )
    else:
        feedback = f"rejected: {reason}"
    agent.previous = PreviousDecision(
        out.intent, out.urgency, out.situation, kind, opening, anchor, feedback
    )
    agent.last_effect_step = model.tick
    agent.blocked_steps = 0
    nearest_known = None
    known = context.known_openings
    usable = [o for o in known if o.state != "closed"]
    if usable:
        nearest_known = min(usable, key=lambda o: o.distance_m).opening_id
    target = None
    if out.action == "move":
        target = (
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
    _remember_turn(model, agent, context, out, target if accepted else None, feedback)
    model.record_decision(
        result,
        _time_columns(model, context),
        **_context_columns(context),
        action=out.action,
        situation=out.situation,
        intent=out.intent,
        urgency=out.urgency,
        route_id=out.route_id,
        target_dx=out.target_offset.dx if out.target_offset else None,
        target_dy=out.target_offset.dy if out.target_offset else None,
        anchor_kind=kind,
        opening_id=opening,
        shout=bool(out.shout),
        cells_committed=len(committed) if accepted else 0,
        accepted=accepted,
        commit_reason=reason or None,
        revision_level=level,
        nearest_known_opening=nearest_known,
        x=x,
        y=y,
    )


def _move_target(
    model: EvacuationModel,
    i: int,
    here: tuple[int, int],
    context: EvacuationContext,
    out: EvacuationDecision,
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
        route = stitch(model, i, here, context.position, option.path)
        return MoveTarget(anchor, option, option.opening_id, option.anchor_kind, route)
    assert out.target_offset is not None
    anchor = (
        context.position[0] + out.target_offset.dx,
        context.position[1] + out.target_offset.dy,
    )
    return MoveTarget(anchor, None, None, "target", [])


def _remember_turn(
    model: EvacuationModel,
    agent: Pedestrian,
    context: EvacuationContext,
    out: EvacuationDecision | None,
    target: str | None,
    feedback: str,
) -> None:
    """Queue the memory role's revision for the turn just committed."""
    queue_revision(
        model,
        agent,
        turn_summary(
            context,
            out,
            intent=agent.intent,
            target=target,
            feedback=feedback,
            time_s=step_time_s(model.tick),
        ),
    )


def _time_columns(model: EvacuationModel, context: EvacuationContext) -> dict[str, Any]:
    return {
        "request_step": context.step,
        "applied_step": model.tick,
        "time_s": step_time_s(model.tick),
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
    model: EvacuationModel,
    agent: Pedestrian,
    result: DecisionResult[EvacuationContext, EvacuationDecision],
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
            agent.intent,
            agent.urgency,
            agent.situation,
            prev.route_kind if prev else None,
            prev.opening_id if prev else None,
            prev.anchor if prev else None,
            feedback,
        )
        _remember_turn(model, agent, context, None, None, feedback)
    agent.last_effect_step = model.tick
    agent.blocked_steps = 0
    model.record_decision(
        result,
        _time_columns(model, context),
        **_context_columns(context),
        situation=agent.situation,
        intent=agent.intent,
        urgency=agent.urgency,
        shout=agent.shouting,
        cells_committed=0,
        accepted=False,
        commit_reason=result.reason,
        revision_level="none",
        x=int(model.pos[agent.index, 0]),
        y=int(model.pos[agent.index, 1]),
    )


def stitch(
    model: EvacuationModel,
    i: int,
    here: tuple[int, int],
    decided_at: tuple[int, int],
    path: tuple[int, ...],
) -> list[int]:
    """Join the option's path from the current cell without a new search, when possible.

    The pedestrian walked its old route while the decision was pending; if a cell of the new
    path (the farthest one) is one legal step away, the route continues from there.
    """
    if here == decided_at:
        return list(path)
    height = model.plaza.height
    believed = model.belief
    for j in range(min(len(path), 8) - 1, -1, -1):
        tx, ty = divmod(path[j], height)
        dx, dy = tx - here[0], ty - here[1]
        if (dx, dy) == (0, 0):
            return list(path[j + 1 :])
        if max(abs(dx), abs(dy)) == 1:
            if dx and dy:
                a = (
                    believed.knows(i, (here[0] + dx) * height + here[1])
                    and model.plaza.raw[here[0] + dx, here[1]] == Terrain.FLOOR
                )
                b = (
                    believed.knows(i, here[0] * height + here[1] + dy)
                    and model.plaza.raw[here[0], here[1] + dy] == Terrain.FLOOR
                )
                if not (a or b):
                    continue
            return list(path[j:])
    return []


def route_now(
    model: EvacuationModel,
    i: int,
    here: tuple[int, int],
    target: tuple[int, int],
    out: EvacuationDecision,
    context: EvacuationContext,
) -> list[int]:
    """Route from the current cell to ``target`` over the believed map (via the waypoint, if any).

    Returns:
        The flat cells of the route (empty when the target is unreachable).
    """
    start = perf_counter()
    route = model.route_planner.solver.route(
        route_query(model, i, here, target, out, context)
    )
    model.timing["routing"] += perf_counter() - start
    return route


def route_query(
    model: EvacuationModel,
    i: int,
    here: tuple[int, int],
    target: tuple[int, int],
    out: EvacuationDecision,
    context: EvacuationContext,
) -> RouteQuery:
    """The query of :func:`route_now`: the believed codes of pedestrian ``i``'s window now."""
    window = model.belief.window(i, here)
    waypoint = None
    if out.waypoint_offset is not None:
        waypoint = (
            context.position[0] + out.waypoint_offset.dx,
            context.position[1] + out.waypoint_offset.dy,
        )
    return RouteQuery(model.belief.codes_in(i, window), window, here, target, waypoint)
