"""The columnar events table builds the same frame as its row tuples."""

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.event_log import EVENT_COLUMNS, EventLog
from mesa_llm_mobility.evacuation.timing import step_time_s


def _rows_frame(rows):
    return pd.DataFrame(
        [(s, step_time_s(s), e, a, o, d) for s, e, a, o, d in rows],
        columns=list(EVENT_COLUMNS),
    )


@pytest.mark.parametrize(
    "rows",
    [
        [
            (0, "gate_state", None, None, "gate1:open"),
            (3, "evacuated", 7, None, "exit1"),
        ],
        [(1, "shout_heard", 4, 9, "N ~10 m"), (1, "shout_heard", 5, 9, "NE ~15 m")],
        [
            (0, "gate_state", None, None, "g:open"),
            (2, "gate_state", None, None, "g:closing"),
        ],
        [(5, "reached", 3, 11, "0.40 m"), (7, "sighting_casualty", 2, None, "")],
    ],
    ids=["some-missing", "none-missing", "all-missing", "mixed-columns"],
)
def test_the_frame_is_the_row_tuples_frame(rows):
    log = EventLog()
    for row in rows:
        log.add(*row)
    assert len(log) == len(rows)
    pd.testing.assert_frame_equal(log.frame(), _rows_frame(rows), check_exact=True)


def test_an_empty_log_has_the_columns():
    frame = EventLog().frame()
    assert list(frame.columns) == list(EVENT_COLUMNS) and frame.empty


def test_add_many_is_add_row_by_row():
    rng = np.random.default_rng(3)
    agents, others = rng.integers(1, 500, 40), rng.integers(1, 500, 40)
    details = [f"{d} ~{5 * k} m" for d, k in zip("NESW" * 10, range(40), strict=True)]
    one, many = EventLog(), EventLog()
    one.add(0, "gate_state", None, None, "gate1:open")
    many.add(0, "gate_state", None, None, "gate1:open")
    for a, o, d in zip(agents.tolist(), others.tolist(), details, strict=True):
        one.add(12, "shout_heard", a, o, d)
    many.add_many(12, "shout_heard", agents, others, details)
    pd.testing.assert_frame_equal(one.frame(), many.frame(), check_exact=True)
    assert many.frame()["detail"].tolist()[1:] == details
