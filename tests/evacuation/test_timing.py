import pytest

from mesa_llm_mobility.evacuation.timing import (
    DT_S,
    STEPS_PER_SECOND,
    due_step,
    step_time_s,
)


def test_one_second_is_three_steps():
    assert STEPS_PER_SECOND == 3 and DT_S == 1.0 / 3.0
    assert step_time_s(3) == 1.0 and step_time_s(1) == 0.3333


@pytest.mark.parametrize(
    ("request_step", "due"), [(0, 3), (1, 6), (2, 6), (3, 6), (4, 9)]
)
def test_a_decision_takes_effect_at_a_whole_second_at_least_one_second_later(
    request_step, due
):
    assert due_step(request_step) == due
    assert due % STEPS_PER_SECOND == 0 and due - request_step >= STEPS_PER_SECOND
