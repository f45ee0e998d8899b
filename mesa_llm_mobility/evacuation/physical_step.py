"""The physical phases of a step: the gates' schedule, walking, and leaving through an opening.

:func:`update_gates` applies the emergency's gate schedule to the effective layer; :func:`walk`
lets every active pedestrian propose the next cell of its committed route and the adversary its
own, and has the crowd resolve the moves (paper Sec. 2.3.6); :func:`reach_openings` evacuates the
pedestrians standing on an opening.
"""

from __future__ import annotations

import numpy as np

from mesa_llm_mobility.evacuation.adversary_moves import propose_move
from mesa_llm_mobility.evacuation.agents import EVACUATED
from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.event_log import EventLog
from mesa_llm_mobility.evacuation.movement import BLOCKED, MOVED
from mesa_llm_mobility.evacuation.scene import Scene
from mesa_llm_mobility.evacuation.timing import Clock


def update_gates(scene: Scene, clock: Clock, events: EventLog) -> None:
    """Apply the gate schedule at the current time; a change of state is a ``gate_state`` event.

    Reads the clock; writes the scene's effective layer and the events.
    """
    changed = scene.effective.update(clock.time_s)
    if changed is not None:
        for opening in scene.plaza.gates:
            events.record(
                clock.tick, "gate_state", None, None, f"{opening.opening_id}:{changed}"
            )


def walk(crowd: Crowd, scene: Scene, rng: np.random.Generator) -> None:
    """Every entity proposes at most one Moore step and the crowd resolves them.

    An active pedestrian proposes the next cell of its committed route (a route whose next
    cell is no longer adjacent is dropped); the adversary plans its move
    (:func:`~.adversary_moves.propose_move`). After the resolution, a pedestrian that moved as
    proposed advances along its route, every moved pedestrian has walked its new cell, and a
    blocked pedestrian counts the steps it stood blocked (any move ends a blocked spell).

    Reads the scene; writes the crowd (positions and what follows them), the pedestrians'
    route progress and blocked spells, and the adversary's policy state; draws from ``rng``.
    """
    n = crowd.n_pedestrians
    height = scene.plaza.height
    proposals = crowd.pos.copy()
    active = crowd.active_indices().tolist()
    xy = crowd.pos.tolist()
    walking, next_cells = [], []
    for i in active:
        agent = crowd.pedestrians[i]
        if agent.route_pos < len(agent.route):
            tx, ty = divmod(agent.route[agent.route_pos], height)
            x, y = xy[i]
            if max(abs(tx - x), abs(ty - y)) == 1:
                walking.append(i)
                next_cells.append((tx, ty))
            else:
                agent.route, agent.route_pos = [], 0
    if walking:
        proposals[walking] = next_cells
    proposals[n] = propose_move(crowd, scene)
    moved, status = crowd.move(
        proposals, scene.effective.passable, rng, {n: scene.opening_mask}
    )
    for e, (x, y) in zip(moved, crowd.pos[moved].tolist(), strict=True):
        if e < n:
            agent = crowd.pedestrians[e]
            agent.visited.add(x * height + y)
            if status[e] == MOVED:
                agent.route_pos += 1
    for i in active:
        agent = crowd.pedestrians[i]
        agent.blocked_steps = agent.blocked_steps + 1 if status[i] == BLOCKED else 0


def reach_openings(
    crowd: Crowd, scene: Scene, clock: Clock, events: EventLog
) -> list[int]:
    """The active pedestrians standing on an opening evacuate at this step.

    Reads the crowd's positions and the plaza's openings; writes the crowd's status, resolving
    step and exit used, and the ``evacuated`` events. They stay on the grid until
    :meth:`~.crowd.Crowd.leave` (after the step's frame is recorded).

    Returns:
        Their rows.
    """
    active = crowd.active_indices()
    xs, ys = crowd.pos[active, 0], crowd.pos[active, 1]
    on_opening = active[scene.opening_mask[xs, ys]].tolist()
    crowd.resolve(on_opening, EVACUATED, clock.tick)
    plaza = scene.plaza
    for i in on_opening:
        x, y = crowd.pos[i]
        opening = plaza.openings[int(plaza.opening_index[x, y])]
        crowd.exit_used[i] = opening.opening_id
        crowd.pedestrians[i].pending = None
        events.record(clock.tick, "evacuated", i, None, opening.opening_id)
    return on_opening
