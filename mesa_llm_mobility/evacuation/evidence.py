"""Evidence: what the crowd perceives at a step and how it moves their fear.

:func:`observe` runs every active pedestrian's perception, writes it to the private beliefs and
finds sightings of the adversary and of casualties and fleeing neighbours; :func:`update_crowd_fear`
turns the strongest stimulus into fear (:mod:`.affect`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mesa_llm_mobility.evacuation.affect import update_fear
from mesa_llm_mobility.evacuation.agents import ACTIVE, REACHED
from mesa_llm_mobility.evacuation.perception import perceive
from mesa_llm_mobility.evacuation.timing import DT_S

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.model import EvacuationModel


def observe_initial(model: EvacuationModel) -> None:
    """The first look around (a square of ``INITIAL_CHEBYSHEV`` cells) written to the beliefs."""
    active = model.active_indices()
    perc = perceive(
        model.initial_view,
        model.effective.opaque,
        model.pos[active, 0],
        model.pos[active, 1],
        model.heading[active],
    )
    model.belief.observe(active[perc.viewer], perc.cell, 0, model.effective.codes)
    model.exit_knowledge.observe(model, active[perc.viewer], perc.cell, 0)


def observe(model: EvacuationModel) -> None:
    """Perception of all active pedestrians; beliefs, sightings and fleeing neighbours.

    Writes this step's perception (:attr:`EvacuationModel.perception`) for the decision contexts
    and records the first step of each sighting as an event.
    """
    n = model.n_pedestrians
    active = model.active_indices()
    perc = perceive(
        model.view,
        model.effective.opaque,
        model.pos[active, 0],
        model.pos[active, 1],
        model.heading[active],
    )
    model.perception = perc
    model.batch_index[:] = -1
    model.batch_index[active] = np.arange(active.size)
    viewers = active[perc.viewer]
    model.belief.observe_views(
        active,
        np.column_stack([model.pos[active], model.heading[active]]),
        perc.viewer,
        perc.cell,
        model.effective.opaque,
        model.tick,
        model.effective.codes,
    )
    model.exit_knowledge.observe(model, viewers, perc.cell, model.tick)
    seen = model.occupancy.ravel()[perc.cell]
    other = (seen >= 0) & (seen != viewers)
    viewers, seen = viewers[other], seen[other]
    sees_a = np.zeros(n, dtype=bool)
    sees_a[viewers[seen == n]] = True
    is_ped = seen < n
    ped_viewers, ped_seen = viewers[is_ped], seen[is_ped]
    bodies = model.status[ped_seen] == REACHED
    sees_d = np.zeros(n, dtype=bool)
    sees_d[ped_viewers[bodies]] = True
    shouting = np.array([a.shouting for a in model.pedestrians], dtype=bool)
    fleeing = (model.status[ped_seen] == ACTIVE) & shouting[ped_seen]
    model.fleeing_seen = np.bincount(ped_viewers[fleeing], minlength=n)
    adversary_xy = model.pos[n]
    d = np.hypot(*(model.pos[:n] - adversary_xy).T) * model.cell_size_m
    model.adversary_distance_m = np.where(sees_a, d, np.inf)
    for i in np.flatnonzero(sees_a & ~model.seen_adversary_now):
        model.record_event("sighting_adversary", int(i), n, f"{d[i]:.1f} m")
    for i in np.flatnonzero(sees_d & ~model.seen_casualty_now):
        model.record_event("sighting_casualty", int(i), None)
    for i in np.flatnonzero(sees_a):
        model.pedestrians[i].memory.last_sighting = (
            (int(adversary_xy[0]), int(adversary_xy[1])),
            model.tick,
        )
    model.seen_adversary_now = sees_a
    model.seen_casualty_now = sees_d


def update_crowd_fear(model: EvacuationModel) -> None:
    """Advance every active pedestrian's fear by one step from its strongest stimulus."""
    z = model.stimuli.strongest(
        model.seen_adversary_now,
        model.adversary_distance_m,
        model.seen_casualty_now,
        model.fleeing_seen,
        model.hears_until > model.tick,
    )
    active = model.status == ACTIVE
    model.fear = np.where(
        active, update_fear(model.fear, z, model.kappa, model.rho, DT_S), model.fear
    )
