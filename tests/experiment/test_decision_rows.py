"""The decisions table is the one its row dicts build."""

from types import SimpleNamespace

import pandas as pd

from mesa_llm_mobility.experiment.base_model import MobilityModel


class Toy(MobilityModel):
    time_columns = ("day", "minute")
    decision_columns = ("mode", "cost", "note")


ROWS = [
    {"mode": "car", "cost": 2.5, "note": "queue"},
    {"mode": "metro"},  # cost and note missing
    {"mode": None, "cost": 3, "note": None, "ignored": 1},  # not a column: dropped
    {"mode": "walk", "cost": 1.0, "minute": 99},  # a column overriding a time column
]


def _result(agent_id, reason=None):
    return SimpleNamespace(agent_id=agent_id, kind="Toy", outcome="ok", reason=reason)


def _dict_rows():
    rows = []
    for k, columns in enumerate(ROWS):
        row = {"day": 1, "minute": 10 + k}
        row.update(agent_id=k, kind="Toy", outcome="ok", reason="r" if k == 1 else None)
        row.update(columns)
        rows.append(row)
    return rows


def test_the_table_is_the_one_the_row_dicts_build():
    model = Toy(rng=0)
    for k, columns in enumerate(ROWS):
        model.record_decision(
            _result(k, "r" if k == 1 else None), {"day": 1, "minute": 10 + k}, **columns
        )
    expected = pd.DataFrame(_dict_rows(), columns=Toy.decision_table_columns())
    pd.testing.assert_frame_equal(model.decisions_frame(), expected, check_exact=True)
    assert model.decisions_frame()["minute"].tolist() == [10, 11, 12, 99]
