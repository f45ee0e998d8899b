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
from mesa_llm_mobility.evacuation.perception import Perception, perceive
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
    perc = model.views.perceive(
        model.effective.opaque,
        active,
        model.pos[active, 0],
        model.pos[active, 1],
        model.heading[active],
    )
    model.perception = perc
    model.batch_index[:] = -1
    model.batch_index[active] = np.arange(active.size)
    model.belief.observe_views(
        active,
        np.column_stack([model.pos[active], model.heading[active]]),
        perc.start,
        perc.cell,
        model.effective.opaque,
        model.tick,
        model.effective.codes,
    )
    on_openings = np.flatnonzero(model.exit_knowledge.is_opening[perc.cell])
    model.exit_knowledge.observe(
        model, active[perc.viewer_of(on_openings)], perc.cell[on_openings], model.tick
    )
    sees_a, sees_d, model.fleeing_seen = sightings(model, active, perc)
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


def _notable_cells(model: EvacuationModel, shouting: np.ndarray) -> np.ndarray:
    """Flat cells a viewer reacts to: the adversary's, a casualty's, an active shouter's."""
    n = model.n_pedestrians
    occupancy = model.occupancy.ravel()
    held = np.flatnonzero(occupancy >= 0)
    entity = occupancy[held]
    notable = entity == n
    ped = np.flatnonzero(entity < n)
    status = model.status[entity[ped]]
    notable[ped] = (status == REACHED) | ((status == ACTIVE) & shouting[entity[ped]])
    return held[notable]


def sightings(
    model: EvacuationModel, active: np.ndarray, perc: Perception
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Who sees the adversary, who sees a casualty, and how many fleeing shouters each sees.

    Only the pairs of a notable cell (the adversary's, casualties' and active shouters' cells) are
    gathered; the rule is the pairwise one: a pedestrian row ``i`` in ``active`` perceiving a
    cell held by another entity ``e`` sees the adversary when ``e`` is the adversary's row, a
    casualty when ``e`` has status ``REACHED``, a fleeing neighbour when ``e`` is active and
    shouting.
    """
    shouting = np.array([a.shouting for a in model.pedestrians], dtype=bool)
    is_notable = np.zeros(model.occupancy.size, dtype=bool)
    is_notable[_notable_cells(model, shouting)] = True
    pairs = np.flatnonzero(is_notable[perc.cell])
    viewers = active[perc.viewer_of(pairs)]
    seen = model.occupancy.ravel()[perc.cell[pairs]]
    return sightings_of_pairs(model, viewers, seen, shouting)


def sightings_of_pairs(
    model: EvacuationModel,
    viewers: np.ndarray,
    seen: np.ndarray,
    shouting: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sightings` from (viewer row, occupant of the perceived cell) pairs, ``-1`` empty."""
    n = model.n_pedestrians
    other = (seen >= 0) & (seen != viewers)
    viewers, seen = viewers[other], seen[other]
    sees_a = np.zeros(n, dtype=bool)
    sees_a[viewers[seen == n]] = True
    is_ped = seen < n
    ped_viewers, ped_seen = viewers[is_ped], seen[is_ped]
    sees_d = np.zeros(n, dtype=bool)
    sees_d[ped_viewers[model.status[ped_seen] == REACHED]] = True
    fleeing = (model.status[ped_seen] == ACTIVE) & shouting[ped_seen]
    return sees_a, sees_d, np.bincount(ped_viewers[fleeing], minlength=n)


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
