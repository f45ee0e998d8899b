"""The algorithmic adversary's patrol-pursuit policy (paper Sec. 2.3.7), as a pure state machine.

With no pedestrian visible it patrols exits 1-3 then gates 1-2 and back to exit 1. When pedestrians
enter its perception map it locks onto the nearest for six turns, updating the last seen cell while
contact lasts. After losing sight it searches toward the last seen cell for up to eight turns, then
resumes the patrol from its current index. Its attack radius is 2.0 m.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

LOCK_TURNS = 6
SEARCH_TURNS = 8
ATTACK_RADIUS_M = 2.0


class AdversaryMode(StrEnum):
    """The three modes of the policy."""

    PATROL = "patrol"
    LOCK = "lock"
    SEARCH = "search"


@dataclass(frozen=True)
class AdversaryState:
    """Policy state.

    Attributes:
        mode: Current mode.
        patrol_index: Index of the patrol waypoint being approached.
        target: Locked pedestrian id (LOCK only).
        last_seen: Last cell where the locked pedestrian was seen.
        turns_left: Turns left in the current lock or search.
    """

    mode: AdversaryMode = AdversaryMode.PATROL
    patrol_index: int = 0
    target: int | None = None
    last_seen: tuple[int, int] | None = None
    turns_left: int = 0


def _nearest(position: tuple[int, int], visible: Mapping[int, tuple[int, int]]) -> int:
    return min(
        visible,
        key=lambda i: (
            (visible[i][0] - position[0]) ** 2 + (visible[i][1] - position[1]) ** 2,
            i,
        ),
    )


def _lock_nearest(
    state: AdversaryState,
    position: tuple[int, int],
    visible: Mapping[int, tuple[int, int]],
) -> tuple[AdversaryState, tuple[int, int]]:
    """Lock onto the nearest visible pedestrian for ``LOCK_TURNS`` turns."""
    target = _nearest(position, visible)
    locked = AdversaryState(
        AdversaryMode.LOCK, state.patrol_index, target, visible[target], LOCK_TURNS - 1
    )
    return locked, visible[target]


def next_state(
    state: AdversaryState,
    position: tuple[int, int],
    visible: Mapping[int, tuple[int, int]],
    waypoints: tuple[tuple[int, int], ...],
) -> tuple[AdversaryState, tuple[int, int]]:
    """One turn of the policy.

    Args:
        state: The state before the turn.
        position: The adversary's cell.
        visible: Active pedestrians in its perception map, id -> cell.
        waypoints: Patrol cells (exits 1-3 then gates 1-2).

    Returns:
        The new state and the cell to move toward this turn.
    """
    if visible and state.mode != AdversaryMode.LOCK:
        return _lock_nearest(state, position, visible)
    if state.mode == AdversaryMode.LOCK:
        if state.target in visible:
            seen = visible[state.target]
            if state.turns_left <= 0:
                return _lock_nearest(state, position, visible)
            return replace(state, last_seen=seen, turns_left=state.turns_left - 1), seen
        if visible:
            return _lock_nearest(state, position, visible)
        assert state.last_seen is not None
        return AdversaryState(
            AdversaryMode.SEARCH,
            state.patrol_index,
            None,
            state.last_seen,
            SEARCH_TURNS - 1,
        ), state.last_seen
    if state.mode == AdversaryMode.SEARCH:
        assert state.last_seen is not None
        if state.turns_left > 0 and position != state.last_seen:
            return replace(state, turns_left=state.turns_left - 1), state.last_seen
        state = AdversaryState(AdversaryMode.PATROL, state.patrol_index)
    index = state.patrol_index
    waypoint = waypoints[index]
    if max(abs(position[0] - waypoint[0]), abs(position[1] - waypoint[1])) <= 1:
        index = (index + 1) % len(waypoints)
    return AdversaryState(AdversaryMode.PATROL, index), waypoints[index]
