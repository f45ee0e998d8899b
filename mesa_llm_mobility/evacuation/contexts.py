"""Decision contexts: what one pedestrian knows when it states an ``EvacuationMove`` request.

:func:`due_requests` finds the pedestrians whose trigger fires at a step and
:func:`decision_requests` gathers each one's context (view, beliefs, fear, shouts, hints, known
openings, route options) from the crowd, the senses and the scene. Nothing here decides or
changes the world (but each pedestrian's record of having ever seen A or D, which the
first-sighting trigger needs); the brain answers the requests and :mod:`.commit` applies the
answers.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mesa_llm_mobility.cognition.kinds import DecisionRequest, OnInvalid
from mesa_llm_mobility.evacuation.affect import fear_level
from mesa_llm_mobility.evacuation.agents import REACHED, Pedestrian
from mesa_llm_mobility.evacuation.ascii_view import SymbolicView
from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.decision_context import (
    EvacuationContext,
    KnownOpening,
    StaleSighting,
)
from mesa_llm_mobility.evacuation.decisions import EVACUATION_MOVE, EvacuationDecision
from mesa_llm_mobility.evacuation.layers import BeliefStore, BeliefWindow
from mesa_llm_mobility.evacuation.messages import (
    ExitHint,
    approximate_distance_m,
    heard_shout,
)
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS, Terrain
from mesa_llm_mobility.evacuation.route_planner import (
    OptionsAnswer,
    OptionsQuery,
    RoutePlanner,
)
from mesa_llm_mobility.evacuation.routing import OpeningAnchor, compass
from mesa_llm_mobility.evacuation.scene import Scene
from mesa_llm_mobility.evacuation.senses import Senses
from mesa_llm_mobility.evacuation.timing import (
    BLOCKED_STEPS_REDECIDE,
    DT_S,
    SHOUT_MEMORY_S,
    STEPS_PER_SECOND,
    Clock,
    step_time_s,
)

type MoveRequest = DecisionRequest[EvacuationContext, EvacuationDecision]
"""A pedestrian's ``EvacuationMove`` request."""

HIGH_EFFORT_TRIGGERS = frozenset({"first_sighting", "threat_visible"})
"""Triggers of direct visual evidence: decided at high reasoning effort (paper Sec. 3.4)."""


def reasoning_effort(trigger: str) -> str:
    """``"high"`` for decisions triggered by direct sight of A or D, else ``"low"``."""
    return "high" if trigger in HIGH_EFFORT_TRIGGERS else "low"


def known_openings(
    i: int,
    here: tuple[int, int],
    codes: np.ndarray,
    window: BeliefWindow,
    belief: BeliefStore,
    scene: Scene,
    clock: Clock,
) -> tuple[list[KnownOpening], list[OpeningAnchor]]:
    """The openings pedestrian ``i`` has seen, as it believes them, and the usable ones' anchors.

    Args:
        i: The pedestrian's row.
        here: Its cell.
        codes: Its believed terrain codes inside ``window`` (``[x, y]``).
        window: The part of the plaza ``codes`` covers (every cell the pedestrian knows).
        belief: The belief maps (when it last saw each opening cell).
        scene: The scene (the openings).
        clock: The clock (the age of a sight).

    Returns:
        The known openings (state, offset, distance, age of the last sight) and the anchors of
        those not believed closed, for route options.
    """
    height = scene.plaza.height
    x, y = here
    local_codes = codes.ravel()
    known, anchors = [], []
    bounds = scene.opening_bounds
    seen_all = belief.last_seen(i, scene.opening_cells_flat)
    for k in np.flatnonzero(np.maximum.reduceat(seen_all, bounds[:-1]) >= 0).tolist():
        opening, cells = scene.plaza.openings[k], scene.opening_cells[k]
        seen = seen_all[bounds[k] : bounds[k + 1]]
        cells_known = cells[seen >= 0]
        state_code = int(local_codes[window.to_local(cells_known[0])])
        state = {
            Terrain.EXIT: "open",
            Terrain.GATE_OPEN: "open",
            Terrain.GATE_CLOSING: "closing",
            Terrain.GATE_CLOSED: "closed",
        }[Terrain(state_code)]
        cx, cy = np.divmod(cells_known, height)
        nearest = int(np.argmin((cx - x) ** 2 + (cy - y) ** 2))
        dx, dy = int(cx[nearest]) - x, int(cy[nearest]) - y
        age = (clock.tick - int(seen.max())) * DT_S
        known.append(
            KnownOpening(
                opening.opening_id,
                opening.kind,
                state,
                (dx, dy),
                compass(dx, dy),
                round(math.hypot(dx, dy) * scene.cell_size_m, 1),
                round(age, 2),
            )
        )
        if state != "closed":
            anchors.append(
                OpeningAnchor(
                    opening.opening_id, opening.kind, int(cells_known[nearest])
                )
            )
    return known, anchors


def decision_requests(
    due: list[tuple[Pedestrian, str]],
    crowd: Crowd,
    senses: Senses,
    scene: Scene,
    clock: Clock,
    planner: RoutePlanner,
    on_invalid: OnInvalid,
) -> list[MoveRequest]:
    """The ``EvacuationMove`` requests of several pedestrians, their route options planned together.

    The context holds only what each pedestrian knows: its view, beliefs, fear, what it heard
    and was told, the openings it saw and the route options over its believed map. Each
    context's route-options query goes to the route planner as soon as it is drafted (worker
    processes, if any, start on the first ones while the rest are drafted); once all are
    answered the requests are completed in the order of ``due``.

    Args:
        due: The deciding pedestrians and why each decides now (``initial``,
            ``first_sighting``, ``threat_visible``, ``blocked``, ``route_end``).
        crowd: The crowd (read).
        senses: The senses, this step's perception computed (read).
        scene: The scene (read).
        clock: The clock (read).
        planner: Plans the route options.
        on_invalid: What the brain does with an invalid answer.

    Returns:
        The requests for the brain, in the order of ``due``.
    """
    stream = planner.stream(len(due))
    cutoff = clock.tick - SHOUT_MEMORY_S * STEPS_PER_SECOND
    rows = [agent.index for agent, _ in due]
    heard = senses.shouts.recent_many(rows, cutoff, 5)  # latest first, ties by shouter
    drafts = []
    for (agent, trigger), recent, seen in zip(
        due, heard, _in_view(rows, crowd, senses, scene.plaza.height), strict=True
    ):
        query, fields = _draft(
            agent, trigger, recent, seen, crowd, senses, scene, clock
        )
        stream.add(query, agent.index)
        drafts.append(fields)
    answers = stream.answers()
    requests = []
    for fields, answer in zip(drafts, answers, strict=True):
        assert isinstance(answer, OptionsAnswer)
        context = EvacuationContext(
            **fields, options=answer.options, reachable=answer.reachable
        )
        requests.append(
            DecisionRequest(
                EVACUATION_MOVE,
                context.agent_id,
                context,
                sampling={"reasoning_effort": reasoning_effort(context.trigger)},
                on_invalid=on_invalid,
            )
        )
    return requests


class _Seen(NamedTuple):
    """Who one pedestrian sees (:func:`_in_view`)."""

    cells: np.ndarray
    """Its perceived cells (a copy: the view outlives the step)."""
    entities: dict[int, str]
    """Each held cell of the view: ``A`` (the adversary), ``D`` (a body) or ``p``."""
    people: np.ndarray
    """``(k, 2)`` cells of the people, in the view's order."""
    threats: np.ndarray
    """``(t, 2)`` cells of A and D, in the view's order."""
    adversaries: int
    """How many of the threats are the adversary (0 or 1)."""
    body_ids: list[int]
    """The agent ids of the bodies, in the view's order."""


def _in_view(rows: list[int], crowd: Crowd, senses: Senses, height: int) -> list[_Seen]:
    """Who each pedestrian of ``rows`` sees, found for all of them in one pass of arrays."""
    perc = senses.perception
    assert perc is not None
    if not rows:
        return []
    n = crowd.n_pedestrians
    batch = senses.batch_index[rows]
    first, lengths = perc.start[batch], perc.start[batch + 1] - perc.start[batch]
    ends = np.cumsum(lengths)
    viewer = np.repeat(np.arange(len(rows)), lengths)
    cells = perc.cell[np.arange(ends[-1]) + np.repeat(first - ends + lengths, lengths)]
    occ = crowd.occupancy.ravel()[cells]
    held = (occ >= 0) & (occ != np.asarray(rows)[viewer])  # in each view's order
    held_cells, held_by, held_viewer = cells[held], occ[held], viewer[held]
    adversary = held_by == n
    body = ~adversary & (crowd.status[np.minimum(held_by, n - 1)] == REACHED)
    threat = adversary | body
    letters = np.where(adversary, "A", np.where(body, "D", "p")).tolist()
    xy = np.column_stack(np.divmod(held_cells, height))
    people, threats = xy[~threat], xy[threat]
    body_ids = crowd.ids[held_by[body]].tolist()

    def bounds(viewers: np.ndarray) -> list[int]:
        """Where each viewer's entries start and end in an array ordered by viewer."""
        return [0, *np.cumsum(np.bincount(viewers, minlength=len(rows))).tolist()]

    held_at = bounds(held_viewer)
    people_at = bounds(held_viewer[~threat])
    threats_at = bounds(held_viewer[threat])
    bodies_at = bounds(held_viewer[body])
    adversaries = np.bincount(held_viewer[adversary], minlength=len(rows)).tolist()
    held_list = held_cells.tolist()
    starts = [0, *ends.tolist()]
    return [
        _Seen(
            cells[starts[k] : starts[k + 1]].copy(),
            dict(
                zip(
                    held_list[held_at[k] : held_at[k + 1]],
                    letters[held_at[k] : held_at[k + 1]],
                    strict=True,
                )
            ),
            # slices of the step's arrays: only the query (sent or answered within the
            # step) holds them, never the context
            people[people_at[k] : people_at[k + 1]],
            threats[threats_at[k] : threats_at[k + 1]],
            adversaries[k],
            body_ids[bodies_at[k] : bodies_at[k + 1]],
        )
        for k in range(len(rows))
    ]


def _draft(
    agent: Pedestrian,
    trigger: str,
    recent: list[tuple[int, int, int, int]],
    seen: _Seen,
    crowd: Crowd,
    senses: Senses,
    scene: Scene,
    clock: Clock,
) -> tuple[OptionsQuery, dict[str, object]]:
    """One pedestrian's route-options query and every other field of its context.

    ``recent`` is what :meth:`.hearing.ShoutLog.recent` gives for the pedestrian and ``seen``
    what :func:`_in_view` gives.
    """
    i = agent.index
    height, width = scene.plaza.height, scene.plaza.width
    cell_size, tick = scene.cell_size_m, clock.tick
    x, y = int(crowd.pos[i, 0]), int(crowd.pos[i, 1])
    people, threats = seen.people, seen.threats
    threat_offsets = tuple(
        zip((threats[:, 0] - x).tolist(), (threats[:, 1] - y).tolist(), strict=True)
    )
    adversary_ids = [crowd.uid(crowd.adversary_row)] * seen.adversaries
    body_ids = seen.body_ids
    view = SymbolicView(
        seen.cells, height, scene.effective.codes_snapshot(), (x, y), seen.entities
    )
    belief = senses.belief
    window = belief.window(i, (x, y))
    codes = belief.codes_in(i, window)
    known, anchors = known_openings(i, (x, y), codes, window, belief, scene, clock)
    query = OptionsQuery(
        codes,
        window,
        (x, y),
        tuple(anchors),
        frozenset(agent.visited),
        people,
        threats,
    )
    memory = agent.memory
    shouts = tuple(
        heard_shout(
            (x, y),
            (sx, sy),
            cell_size,
            round(float(tick - step) * DT_S, 2),
        )
        for step, _s, sx, sy in recent
    )
    hints = tuple(
        ExitHint(
            h.sender,
            h.opening_id,
            h.kind,
            compass(h.cell[0] - x, h.cell[1] - y),
            approximate_distance_m(
                math.hypot(h.cell[0] - x, h.cell[1] - y) * cell_size
            ),
            round((tick - memory.hint_steps[h.opening_id]) * DT_S, 2),
            h.cell,
        )
        for h in memory.hints.values()
    )
    stale = None
    if memory.last_sighting is not None and not senses.sees_adversary[i]:
        (sx, sy), step = memory.last_sighting
        dx, dy = sx - x, sy - y
        stale = StaleSighting(
            (dx, dy),
            compass(dx, dy),
            round(math.hypot(dx, dy) * cell_size, 1),
            round((tick - step) * DT_S, 2),
        )
    stimuli = []
    if senses.sees_adversary[i]:
        stimuli.append("armed person in sight")
    if senses.sees_casualty[i]:
        stimuli.append("person lying motionless in sight")
    if senses.fleeing_seen[i]:
        stimuli.append(f"{senses.fleeing_seen[i]} people fleeing nearby")
    if senses.hears_until[i] > tick:
        stimuli.append("shouting heard")
    fields = {
        "agent_id": agent.unique_id,
        "step": tick,
        "time_s": step_time_s(tick),
        "trigger": trigger,
        "position": (x, y),
        "heading": compass(*MOORE_STEPS[int(crowd.heading[i])]),
        "view": view,
        "personality": agent.personality,
        "fear": round(float(crowd.fear[i]), 4),
        "fear_level": fear_level(float(crowd.fear[i])),
        "stimuli": tuple(stimuli),
        "sees_adversary": bool(senses.sees_adversary[i]),
        "sees_casualty": bool(senses.sees_casualty[i]),
        "fleeing_neighbours": int(senses.fleeing_seen[i]),
        "visible_people": len(people),
        "heard_shouts": shouts,
        "exit_hints": hints,
        "stale_sighting": stale,
        "known_openings": tuple(known),
        "capsule": agent.capsule,
        "memory": agent.memory_text,
        "previous": agent.previous,
        "threat_offsets": threat_offsets,
        "adversary_ids": tuple(adversary_ids),
        "body_ids": tuple(body_ids),
        "grid_size": (width, height),
        "belief_codes": codes,
        "belief_origin": (window.x0, window.y0),
    }
    return query, fields


def due_requests(
    crowd: Crowd,
    senses: Senses,
    scene: Scene,
    clock: Clock,
    planner: RoutePlanner,
    on_invalid: OnInvalid,
) -> list[MoveRequest]:
    """The requests of every active pedestrian whose trigger fires at this step.

    A first sighting of the adversary or a casualty always triggers; otherwise a pedestrian with
    no pending decision and none applied in the last second decides when the threat is visible,
    when it stood blocked ``BLOCKED_STEPS_REDECIDE`` steps, or near the end of its route.

    Reads the crowd, the senses (after this step's perception), the scene and the clock; writes
    each pedestrian's record of having ever seen A or D. The other arguments are those of
    :func:`decision_requests`.

    Returns:
        The requests, in pedestrian order.
    """
    due: list[tuple[Pedestrian, str]] = []
    k = clock.tick
    sees_a, sees_d = senses.sees_adversary, senses.sees_casualty
    for i in crowd.active_indices().tolist():
        agent = crowd.pedestrians[i]
        memory = agent.memory
        first_sight = (sees_a[i] and not memory.seen_adversary_ever) or (
            sees_d[i] and not memory.seen_casualty_ever
        )
        memory.seen_adversary_ever |= bool(sees_a[i])
        memory.seen_casualty_ever |= bool(sees_d[i])
        trigger = None
        if first_sight:
            trigger = "first_sighting"
        elif agent.pending is None and k - agent.last_effect_step >= STEPS_PER_SECOND:
            if sees_a[i]:
                trigger = "threat_visible"
            elif agent.blocked_steps >= BLOCKED_STEPS_REDECIDE:
                trigger = "blocked"
            elif agent.route_remaining <= 3:
                trigger = "route_end"
        if trigger is not None:
            due.append((agent, trigger))
    return decision_requests(due, crowd, senses, scene, clock, planner, on_invalid)
