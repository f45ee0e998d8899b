"""Evidence: what the crowd perceives at a step and how it moves their fear.

:func:`observe` runs every active pedestrian's perception, writes it to the private beliefs and
finds sightings of the adversary and of casualties and fleeing neighbours; :func:`update_crowd_fear`
turns the strongest stimulus into fear (:mod:`.affect`).
"""

from __future__ import annotations

import numpy as np

from mesa_llm_mobility.evacuation.affect import StimulusIntensities, update_fear
from mesa_llm_mobility.evacuation.agents import ACTIVE, REACHED
from mesa_llm_mobility.evacuation.crowd import Crowd
from mesa_llm_mobility.evacuation.event_log import EventLog
from mesa_llm_mobility.evacuation.knowledge import Knowledge
from mesa_llm_mobility.evacuation.perception import Perception, perceive
from mesa_llm_mobility.evacuation.scene import Scene
from mesa_llm_mobility.evacuation.senses import Senses
from mesa_llm_mobility.evacuation.timing import DT_S, Clock


def observe_initial(
    crowd: Crowd, senses: Senses, knowledge: Knowledge, scene: Scene
) -> None:
    """The first look around (a square of ``INITIAL_CHEBYSHEV`` cells) written to the beliefs.

    Reads the crowd and the scene; writes the beliefs and the exit knowledge (step 0).
    """
    active = crowd.active_indices()
    perc = perceive(
        scene.initial_view,
        scene.effective.opaque,
        crowd.pos[active, 0],
        crowd.pos[active, 1],
        crowd.heading[active],
    )
    senses.belief.observe(active[perc.viewer], perc.cell, 0, scene.effective.codes)
    knowledge.observe(active[perc.viewer], perc.cell, 0)


def observe(
    crowd: Crowd,
    senses: Senses,
    knowledge: Knowledge,
    scene: Scene,
    clock: Clock,
    events: EventLog,
) -> None:
    """Perception of all active pedestrians; beliefs, sightings and fleeing neighbours.

    Reads the crowd, the scene and the clock; writes the senses (this step's perception for the
    decision contexts, beliefs, sightings), the exit knowledge, each sighting pedestrian's
    remembered last sighting of the adversary, and the first step of each sighting as an event.
    """
    n = crowd.n_pedestrians
    active = crowd.active_indices()
    pos, effective = crowd.pos, scene.effective
    perc = senses.views.perceive(
        effective.opaque, active, pos[active, 0], pos[active, 1], crowd.heading[active]
    )
    senses.perception = perc
    senses.batch_index[:] = -1
    senses.batch_index[active] = np.arange(active.size)
    senses.belief.observe_views(
        active,
        np.column_stack([pos[active], crowd.heading[active]]),
        perc.start,
        perc.cell,
        effective.opaque,
        clock.tick,
        effective.codes,
    )
    on_openings = np.flatnonzero(knowledge.recorder.is_opening[perc.cell])
    knowledge.observe(
        active[perc.viewer_of(on_openings)], perc.cell[on_openings], clock.tick
    )
    sees_a, sees_d, senses.fleeing_seen = sightings(crowd, active, perc)
    adversary_xy = pos[n]
    d = np.hypot(*(pos[:n] - adversary_xy).T) * scene.cell_size_m
    senses.adversary_distance_m = np.where(sees_a, d, np.inf)
    for i in np.flatnonzero(sees_a & ~senses.sees_adversary):
        events.record(clock.tick, "sighting_adversary", int(i), n, f"{d[i]:.1f} m")
    for i in np.flatnonzero(sees_d & ~senses.sees_casualty):
        events.record(clock.tick, "sighting_casualty", int(i), None)
    for i in np.flatnonzero(sees_a):
        crowd.pedestrians[i].memory.last_sighting = (
            (int(adversary_xy[0]), int(adversary_xy[1])),
            clock.tick,
        )
    senses.sees_adversary = sees_a
    senses.sees_casualty = sees_d


def _notable_cells(crowd: Crowd, shouting: np.ndarray) -> np.ndarray:
    """Flat cells a viewer reacts to: the adversary's, a casualty's, an active shouter's."""
    n = crowd.n_pedestrians
    occupancy = crowd.occupancy.ravel()
    held = np.flatnonzero(occupancy >= 0)
    entity = occupancy[held]
    notable = entity == n
    ped = np.flatnonzero(entity < n)
    status = crowd.status[entity[ped]]
    notable[ped] = (status == REACHED) | ((status == ACTIVE) & shouting[entity[ped]])
    return held[notable]


def sightings(
    crowd: Crowd, active: np.ndarray, perc: Perception
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Who sees the adversary, who sees a casualty, and how many fleeing shouters each sees.

    Only the pairs of a notable cell (the adversary's, casualties' and active shouters' cells) are
    gathered; the rule is the pairwise one: a pedestrian row ``i`` in ``active`` perceiving a
    cell held by another entity ``e`` sees the adversary when ``e`` is the adversary's row, a
    casualty when ``e`` has status ``REACHED``, a fleeing neighbour when ``e`` is active and
    shouting.
    """
    shouting = np.array([a.shouting for a in crowd.pedestrians], dtype=bool)
    is_notable = np.zeros(crowd.occupancy.size, dtype=bool)
    is_notable[_notable_cells(crowd, shouting)] = True
    pairs = np.flatnonzero(is_notable[perc.cell])
    viewers = active[perc.viewer_of(pairs)]
    seen = crowd.occupancy.ravel()[perc.cell[pairs]]
    return sightings_of_pairs(crowd, viewers, seen, shouting)


def sightings_of_pairs(
    crowd: Crowd,
    viewers: np.ndarray,
    seen: np.ndarray,
    shouting: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sightings` from (viewer row, occupant of the perceived cell) pairs, ``-1`` empty."""
    n = crowd.n_pedestrians
    other = (seen >= 0) & (seen != viewers)
    viewers, seen = viewers[other], seen[other]
    sees_a = np.zeros(n, dtype=bool)
    sees_a[viewers[seen == n]] = True
    is_ped = seen < n
    ped_viewers, ped_seen = viewers[is_ped], seen[is_ped]
    sees_d = np.zeros(n, dtype=bool)
    sees_d[ped_viewers[crowd.status[ped_seen] == REACHED]] = True
    fleeing = (crowd.status[ped_seen] == ACTIVE) & shouting[ped_seen]
    return sees_a, sees_d, np.bincount(ped_viewers[fleeing], minlength=n)


def update_crowd_fear(
    crowd: Crowd, senses: Senses, stimuli: StimulusIntensities, clock: Clock
) -> None:
    """Advance every active pedestrian's fear by one step from its strongest stimulus.

    Reads the senses (sightings, distance, fleeing neighbours, shouts heard) and the clock;
    writes the crowd's fear (paper Eq. 4).
    """
    z = stimuli.strongest(
        senses.sees_adversary,
        senses.adversary_distance_m,
        senses.sees_casualty,
        senses.fleeing_seen,
        senses.hears_until > clock.tick,
    )
    active = crowd.status == ACTIVE
    crowd.fear = np.where(
        active, update_fear(crowd.fear, z, crowd.kappa, crowd.rho, DT_S), crowd.fear
    )
