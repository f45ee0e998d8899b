"""The senses: what each pedestrian perceives, believes and hears.

:class:`Senses` holds the crowd's evidence between the phases of a step: this step's perception
of the active pedestrians (written by :func:`~.evidence.observe`, read by the decision
contexts), the private belief maps it feeds, the sightings and stimuli that move fear, and the
shouts heard (written by :func:`~.communication.communicate`).
"""

from __future__ import annotations

import numpy as np

from mesa_llm_mobility.evacuation.hearing import ShoutLog
from mesa_llm_mobility.evacuation.layers import BeliefStore
from mesa_llm_mobility.evacuation.perception import (
    Perception,
    RepeatedViews,
    ViewGeometry,
)
from mesa_llm_mobility.evacuation.plaza import Plaza


class Senses:
    """Perception, beliefs, sightings and hearing of ``n`` pedestrians (rows of the crowd).

    Args:
        plaza: The plaza (for the belief maps).
        n_pedestrians: Pedestrians.
        view: Their view cone.

    Attributes:
        views: The perception rule, copying the cells of viewpoints that held.
        belief: The private belief maps (paper Sec. 2.2.1).
        shouts: The shouts heard recently, and who ever heard whom.
        perception: This step's perception of the active pedestrians (``None`` before the first).
        batch_index: Per row, its viewer number in :attr:`perception` (``-1``: not perceiving).
        sees_adversary: Per row, whether it sees the adversary now.
        sees_casualty: Per row, whether it sees a person lying motionless now.
        fleeing_seen: Per row, how many fleeing (shouting, active) pedestrians it sees now.
        adversary_distance_m: Per row, the distance to the adversary when seen, else ``inf``.
        hears_until: Per row, the step until which it hears a shout (the affect stimulus).
    """

    def __init__(self, plaza: Plaza, n_pedestrians: int, view: ViewGeometry) -> None:
        n = n_pedestrians
        self.views = RepeatedViews(view, n)
        self.belief = BeliefStore(plaza, n)
        self.shouts = ShoutLog(n)
        self.perception: Perception | None = None
        self.batch_index = np.full(n, -1, dtype=np.int64)
        self.sees_adversary = np.zeros(n, dtype=bool)
        self.sees_casualty = np.zeros(n, dtype=bool)
        self.fleeing_seen = np.zeros(n, dtype=np.int64)
        self.adversary_distance_m = np.full(n, np.inf)
        self.hears_until = np.full(n, -1, dtype=np.int64)
