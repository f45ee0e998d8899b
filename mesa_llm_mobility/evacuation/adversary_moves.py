"""The adversary in the world: its distance fields, its proposed move and its attack.

The policy itself is the pure state machine of :mod:`.adversary`; this module connects it to the
world's state (perception, the physical grid without openings, the pedestrians' status).
"""

from __future__ import annotations

import numpy as np

from mesa_llm_mobility.evacuation.adversary import (
    ATTACK_RADIUS_M,
    AdversaryMode,
    AdversaryState,
    next_state,
)
from mesa_llm_mobility.evacuation.agents import ACTIVE, REACHED
from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.event_log import EventLog
from mesa_llm_mobility.evacuation.perception import perceive
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS
from mesa_llm_mobility.evacuation.scene import Scene
from mesa_llm_mobility.evacuation.timing import Clock


def distance_field(scene: Scene, goal: tuple[int, int]) -> np.ndarray:
    """Distances to ``goal`` on the physical grid (openings excluded), cached for patrol goals."""
    cached = scene.adversary_fields.get(goal)
    if cached is not None:
        return cached
    height = scene.plaza.height
    flat_pass = (scene.effective.passable & ~scene.opening_mask).ravel()
    dist, _ = scene.graph.shortest_paths(flat_pass, goal[0] * height + goal[1])
    if goal in scene.waypoints:
        scene.adversary_fields[goal] = dist
    return dist


def propose_move(crowd: Crowd, scene: Scene) -> tuple[int, int]:
    """The adversary's proposed cell for this step: its policy's goal, one step down the field.

    It perceives with the pedestrians' cone, advances its state machine
    (:func:`~mesa_llm_mobility.evacuation.adversary.next_state`) and proposes the legal
    neighbouring cell (never an opening, no corner cutting) closest to the goal, free or held by
    an active pedestrian.

    Reads the crowd and the scene; writes the adversary's policy state (and the scene's cache
    of distance fields).

    Returns:
        The proposed cell (its own cell when no neighbour is closer).
    """
    n = crowd.adversary_row
    adversary = crowd.adversary
    pos, occupancy, status = crowd.pos, crowd.occupancy, crowd.status
    passable = scene.effective.passable
    here = (int(pos[n, 0]), int(pos[n, 1]))
    perc = perceive(
        scene.view,
        scene.effective.opaque,
        pos[n : n + 1, 0],
        pos[n : n + 1, 1],
        crowd.heading[n : n + 1],
    )
    seen = occupancy.ravel()[perc.cell]
    visible = {
        int(e): (int(pos[e, 0]), int(pos[e, 1]))
        for e in seen.tolist()
        if 0 <= e < n and status[e] == ACTIVE
    }
    adversary.state, goal = next_state(adversary.state, here, visible, scene.waypoints)
    adversary.goal = goal
    dist = distance_field(scene, goal)
    height = scene.plaza.height
    best, best_d = here, dist[here[0] * height + here[1]]
    for dx, dy in MOORE_STEPS:
        nx, ny = here[0] + dx, here[1] + dy
        d = dist[nx * height + ny] + (0.0 if not (dx and dy) else 1e-6)
        if (
            d < best_d - 1e-9
            and passable[nx, ny]
            and not scene.opening_mask[nx, ny]
            and (passable[nx, here[1]] or passable[here[0], ny])
        ):
            occupant = occupancy[nx, ny]
            if occupant < 0 or (occupant < n and status[occupant] == ACTIVE):
                best, best_d = (nx, ny), d
    return best


def attack(crowd: Crowd, scene: Scene, clock: Clock, events: EventLog) -> None:
    """Reach the nearest active pedestrian within ``ATTACK_RADIUS_M``, if any (one per step).

    A lock on the victim ends: the adversary resumes its patrol. Reads the crowd's positions;
    writes the victim's status, its shouting and pending decision, the adversary's policy
    state and the ``reached`` event.
    """
    n = crowd.adversary_row
    active = crowd.active_indices()
    if not active.size:
        return
    d = np.hypot(*(crowd.pos[active] - crowd.pos[n]).T) * scene.cell_size_m
    within = d <= ATTACK_RADIUS_M + 1e-9
    if not within.any():
        return
    candidates = active[within]
    dist = d[within]
    victim = int(candidates[np.argmin(dist)])
    crowd.resolve([victim], REACHED, clock.tick)
    crowd.pedestrians[victim].shouting = False
    crowd.pedestrians[victim].pending = None
    events.record(clock.tick, "reached", victim, n, f"{dist.min():.2f} m")
    state = crowd.adversary.state
    if state.mode == AdversaryMode.LOCK and state.target == victim:
        crowd.adversary.state = AdversaryState(AdversaryMode.PATROL, state.patrol_index)
