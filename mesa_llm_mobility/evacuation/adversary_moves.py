"""The adversary in the world: its distance fields, its proposed move and its attack.

The policy itself is the pure state machine of :mod:`.adversary`; this module connects it to the
model's arrays (perception, the physical grid without openings, the pedestrians' status).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mesa_llm_mobility.evacuation.adversary import (
    ATTACK_RADIUS_M,
    AdversaryMode,
    next_state,
)
from mesa_llm_mobility.evacuation.agents import ACTIVE, REACHED
from mesa_llm_mobility.evacuation.perception import perceive
from mesa_llm_mobility.evacuation.plaza import MOORE_STEPS

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.model import EvacuationModel


def distance_field(model: EvacuationModel, goal: tuple[int, int]) -> np.ndarray:
    """Distances to ``goal`` on the physical grid (openings excluded), cached for patrol goals."""
    cached = model.adversary_fields.get(goal)
    if cached is not None:
        return cached
    height = model.plaza.height
    flat_pass = (model.effective.passable & ~model.opening_mask).ravel()
    dist, _ = model.graph.shortest_paths(flat_pass, goal[0] * height + goal[1])
    if goal in model.waypoints:
        model.adversary_fields[goal] = dist
    return dist


def propose_move(model: EvacuationModel) -> tuple[int, int]:
    """The adversary's proposed cell for this step: its policy's goal, one step down the field.

    It perceives with the pedestrians' cone, advances its state machine
    (:func:`~mesa_llm_mobility.evacuation.adversary.next_state`) and proposes the legal
    neighbouring cell (never an opening, no corner cutting) closest to the goal, free or held by
    an active pedestrian.

    Args:
        model: The model after this step's decisions.

    Returns:
        The proposed cell (its own cell when no neighbour is closer).
    """
    n = model.n_pedestrians
    adversary = model.adversary
    here = (int(model.pos[n, 0]), int(model.pos[n, 1]))
    perc = perceive(
        model.view,
        model.effective.opaque,
        model.pos[n : n + 1, 0],
        model.pos[n : n + 1, 1],
        model.heading[n : n + 1],
    )
    seen = model.occupancy.ravel()[perc.cell]
    visible = {
        int(e): (int(model.pos[e, 0]), int(model.pos[e, 1]))
        for e in seen.tolist()
        if 0 <= e < n and model.status[e] == ACTIVE
    }
    adversary.state, goal = next_state(adversary.state, here, visible, model.waypoints)
    adversary.goal = goal
    dist = distance_field(model, goal)
    height = model.plaza.height
    best, best_d = here, dist[here[0] * height + here[1]]
    for dx, dy in MOORE_STEPS:
        nx, ny = here[0] + dx, here[1] + dy
        d = dist[nx * height + ny] + (0.0 if not (dx and dy) else 1e-6)
        if (
            d < best_d - 1e-9
            and model.effective.passable[nx, ny]
            and not model.opening_mask[nx, ny]
            and (
                model.effective.passable[nx, here[1]]
                or model.effective.passable[here[0], ny]
            )
        ):
            occupant = model.occupancy[nx, ny]
            if occupant < 0 or (occupant < n and model.status[occupant] == ACTIVE):
                best, best_d = (nx, ny), d
    return best


def attack(model: EvacuationModel) -> None:
    """Reach the nearest active pedestrian within ``ATTACK_RADIUS_M``, if any (one per step).

    A lock on the victim ends: the adversary resumes its patrol.
    """
    n = model.n_pedestrians
    active = model.active_indices()
    if not active.size:
        return
    d = np.hypot(*(model.pos[active] - model.pos[n]).T) * model.cell_size_m
    within = d <= ATTACK_RADIUS_M + 1e-9
    if not within.any():
        return
    candidates = active[within]
    dist = d[within]
    victim = int(candidates[np.argmin(dist)])
    model.status[victim] = REACHED
    model.resolved_step[victim] = model.tick
    model.pedestrians[victim].shouting = False
    model.pedestrians[victim].pending = None
    model.record_event("reached", victim, n, f"{dist.min():.2f} m")
    if (
        model.adversary.state.mode == AdversaryMode.LOCK
        and model.adversary.state.target == victim
    ):
        model.adversary.state = model.adversary.state.__class__(
            AdversaryMode.PATROL, model.adversary.state.patrol_index
        )
