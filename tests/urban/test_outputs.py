from __future__ import annotations

import pandas as pd

from mesa_llm_mobility.urban import outputs
from mesa_llm_mobility.urban.agents import PlanRevisionRecord


def test_revisions_frame_splits_the_absolute_minute():
    frame = outputs.revisions_frame(
        [PlanRevisionRecord(1440 + 485, "en_route", "5", "interrupt", "late", "Ana")]
    )
    assert frame.iloc[0].tolist() == [
        2,
        485,
        "Ana",
        "en_route",
        "5",
        "interrupt",
        "late",
    ]


def test_commute_frame_of_no_trips_has_its_columns():
    trips = pd.DataFrame(columns=["planned_arrival", "arrival", "departure", "late"])
    assert list(outputs.commute_frame(trips).columns) == list(outputs.COMMUTE_COLUMNS)


def test_summary_counts_interruptions_and_plan_errors():
    trips = pd.DataFrame(
        {"arrival": [10.0], "planned_arrival": [9.0], "late": [1.0], "delay": [2.0],
         "mode": ["drive"]}
    )  # fmt: skip
    record = PlanRevisionRecord(5, "en_route", "5", "interrupt", "", "Ana")
    summary = outputs.summary(
        trips,
        pd.DataFrame(columns=["kind", "outcome"]),
        llm=None,
        plan_errors={"vehicle": 2},
        revisions=[record],
    )
    assert summary["interruptions"] == 1 and summary["plan_errors"] == {"vehicle": 2}
    assert summary["punctuality"] == 0.0 and summary["mode_shares"] == {"drive": 1.0}
