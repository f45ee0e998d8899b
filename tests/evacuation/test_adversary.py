from mesa_llm_mobility.evacuation.adversary import (
    LOCK_TURNS,
    SEARCH_TURNS,
    AdversaryMode,
    AdversaryState,
    next_state,
)

WAYPOINTS = ((10, 0), (10, 5), (10, 9), (0, 9), (0, 0))


def test_patrol_visits_exits_then_gates_and_wraps():
    state = AdversaryState()
    state, goal = next_state(state, (3, 3), {}, WAYPOINTS)
    assert goal == (10, 0) and state.mode == AdversaryMode.PATROL
    state, goal = next_state(
        state, (10, 1), {}, WAYPOINTS
    )  # within one cell: next waypoint
    assert goal == (10, 5) and state.patrol_index == 1
    state = AdversaryState(patrol_index=4)
    state, goal = next_state(state, (0, 0), {}, WAYPOINTS)
    assert goal == (10, 0) and state.patrol_index == 0


def test_lock_nearest_for_six_turns_then_reselect():
    state, goal = next_state(
        AdversaryState(patrol_index=2), (5, 5), {1: (9, 9), 2: (6, 7)}, WAYPOINTS
    )
    assert state.mode == AdversaryMode.LOCK and state.target == 2 and goal == (6, 7)
    for turn in range(LOCK_TURNS - 1):
        state, goal = next_state(
            state, (5, 5), {1: (6, 5), 2: (6, 7 + turn)}, WAYPOINTS
        )
        assert state.target == 2 and goal == (6, 7 + turn) and state.last_seen == goal
    state, goal = next_state(state, (5, 5), {1: (6, 5), 2: (6, 9)}, WAYPOINTS)
    assert state.target == 1 and goal == (6, 5)  # lock expired: nearest again


def test_search_toward_last_seen_for_eight_turns_then_resume_patrol():
    state, _ = next_state(
        AdversaryState(patrol_index=3), (5, 5), {7: (8, 8)}, WAYPOINTS
    )
    state, goal = next_state(state, (5, 5), {}, WAYPOINTS)
    assert state.mode == AdversaryMode.SEARCH and goal == (8, 8)
    turns = 1
    while state.mode == AdversaryMode.SEARCH:
        state, goal = next_state(state, (5, 5), {}, WAYPOINTS)
        turns += 1
    assert turns == SEARCH_TURNS + 1
    assert (
        state.mode == AdversaryMode.PATROL
        and state.patrol_index == 3
        and goal == WAYPOINTS[3]
    )


def test_search_reacquires_and_ends_at_last_seen_cell():
    state = AdversaryState(AdversaryMode.SEARCH, 1, None, (8, 8), 5)
    new, goal = next_state(state, (5, 5), {4: (2, 2)}, WAYPOINTS)
    assert new.mode == AdversaryMode.LOCK and new.target == 4
    new, goal = next_state(state, (8, 8), {}, WAYPOINTS)
    assert new.mode == AdversaryMode.PATROL and goal == WAYPOINTS[1]
