"""The four layers of the plaza: raw, semantic, effective (with gate states) and private beliefs.

The raw and semantic layers come from :class:`~mesa_llm_mobility.evacuation.plaza.Plaza`. The
effective layer adds the current gate states and is the physical authority for movement and line
of sight. Beliefs are private: each pedestrian knows only the cells it perceived, with the step of
its last observation, and the gate state it last saw (paper Sec. 2.2.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from mesa_llm_mobility.evacuation.plaza import (
    OPAQUE_CODES,
    Plaza,
    Terrain,
    passable_mask,
)


class GateState(StrEnum):
    """States of an entrance gate during the emergency."""

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


GATE_CODE = {
    GateState.OPEN: Terrain.GATE_OPEN,
    GateState.CLOSING: Terrain.GATE_CLOSING,
    GateState.CLOSED: Terrain.GATE_CLOSED,
}


@dataclass(frozen=True)
class GateSchedule:
    """When gates start closing and become closed, in seconds after the emergency starts (t = 0).

    The paper gives no closing start; its Fig. 8 example has the gate closed at 11.67 s, which is
    the default closed time here. The closing start (5 s) is this implementation's choice.
    """

    closing_at_s: float = 5.0
    closed_at_s: float = 35.0 / 3.0

    def __post_init__(self) -> None:
        if not 0 <= self.closing_at_s <= self.closed_at_s:
            raise ValueError(
                f"need 0 <= closing_at_s <= closed_at_s, got {self.closing_at_s}, {self.closed_at_s}"
            )

    def state_at(self, time_s: float) -> GateState:
        """Gate state at simulated time ``time_s`` (open -> closing -> closed)."""
        if time_s >= self.closed_at_s - 1e-9:
            return GateState.CLOSED
        if time_s >= self.closing_at_s - 1e-9:
            return GateState.CLOSING
        return GateState.OPEN


class EffectiveLayer:
    """Raw + semantic layers + current gate states: the physical authority.

    Attributes:
        codes: ``[x, y]`` terrain codes now.
        passable: ``[x, y]`` cells an entity may enter now.
        opaque: ``[x, y]`` cells that block line of sight.
        gate_state: The current gate state.
    """

    def __init__(self, plaza: Plaza, schedule: GateSchedule) -> None:
        self.plaza = plaza
        self.schedule = schedule
        self.codes = plaza.raw.copy()
        self.gate_mask = plaza.raw == Terrain.GATE_OPEN
        self.opaque = np.isin(plaza.raw, OPAQUE_CODES)
        self.gate_state = GateState.OPEN
        self.passable = passable_mask(self.codes)

    def update(self, time_s: float) -> GateState | None:
        """Apply the gate schedule at ``time_s``; return the new state when it changed."""
        state = self.schedule.state_at(time_s)
        if state == self.gate_state:
            return None
        self.gate_state = state
        self.codes[self.gate_mask] = GATE_CODE[state]
        self.passable = passable_mask(self.codes)
        return state


class BeliefStore:
    """Private belief maps of ``n`` pedestrians.

    ``seen_step[i, flat]`` is the last step at which pedestrian ``i`` perceived cell ``flat``
    (``-1``: never). Terrain is static except gates, whose last seen state per pedestrian is kept
    in ``gate_seen``; so a belief costs two bytes per cell.
    """

    def __init__(self, plaza: Plaza, n_agents: int) -> None:
        self.width, self.height = plaza.raw.shape
        self.static_codes = plaza.raw.ravel().copy()
        self.gate_flat = np.flatnonzero(plaza.raw.ravel() == Terrain.GATE_OPEN)
        self._gate_slot = np.full(self.static_codes.size, -1, dtype=np.int32)
        self._gate_slot[self.gate_flat] = np.arange(self.gate_flat.size)
        self.seen_step = np.full(
            (n_agents, self.width * self.height), -1, dtype=np.int16
        )
        self.gate_seen = np.full(
            (n_agents, self.gate_flat.size), Terrain.UNKNOWN, dtype=np.uint8
        )

    def observe(
        self,
        agents: np.ndarray,
        flat_cells: np.ndarray,
        step: int,
        effective_codes: np.ndarray,
    ) -> None:
        """Record that ``agents[k]`` perceived ``flat_cells[k]`` at ``step`` (pairs, same length)."""
        self.seen_step[agents, flat_cells] = step
        slots = self._gate_slot[flat_cells]
        gates = slots >= 0
        if gates.any():
            self.gate_seen[agents[gates], slots[gates]] = effective_codes.ravel()[
                flat_cells[gates]
            ]

    def codes(self, agent: int) -> np.ndarray:
        """Believed terrain codes of one agent, flat, ``UNKNOWN`` where never observed."""
        codes = np.where(
            self.seen_step[agent] >= 0, self.static_codes, Terrain.UNKNOWN
        ).astype(np.uint8)
        codes[self.gate_flat] = np.where(
            self.seen_step[agent, self.gate_flat] >= 0,
            self.gate_seen[agent],
            Terrain.UNKNOWN,
        )
        return codes

    def passable(self, agent: int) -> np.ndarray:
        """Flat mask of cells the agent believes passable (observed and passable when seen)."""
        return passable_mask(self.codes(agent))
