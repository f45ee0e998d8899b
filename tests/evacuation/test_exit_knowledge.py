"""The opening_observations and exit_information tables (mesa_llm_mobility/evacuation/exit_knowledge.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mesa_llm_mobility.evacuation.exit_knowledge import (
    USABLE_STATES,
    ExitKnowledgeRecorder,
)
from mesa_llm_mobility.evacuation.layers import GateSchedule
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.plaza import load_plaza
from mesa_llm_mobility.evacuation.timing import DT_S
from tests.evacuation.runs import run_evacuation


@pytest.fixture(scope="module")
def finished():
    return EvacuationModel(composition="H", block=3, rng=2).run()


def test_every_opening_a_pedestrian_believes_it_saw_has_an_observation_row(finished):
    model = finished
    observed = model.opening_observations_frame()
    for agent in model.pedestrians:
        believed = {
            o.opening_id
            for k, o in enumerate(model.plaza.openings)
            if np.any(
                model.senses.belief.known(agent.index, model.scene.opening_cells[k])
            )
        }
        rows = set(observed.loc[observed["agent_id"] == agent.unique_id, "opening_id"])
        assert rows == believed, agent.unique_id


def test_the_state_seen_is_the_gate_schedule_at_that_time(finished):
    observed = finished.opening_observations_frame()
    assert len(observed)
    schedule = GateSchedule()
    for row in observed.itertuples():
        expected = (
            "open" if row.kind == "exit" else str(schedule.state_at(row.step * DT_S))
        )
        assert row.state == expected
        assert row.usable == (row.state in USABLE_STATES)
    # a row per change of state only: no (agent, opening, state) twice
    assert not observed.duplicated(["agent_id", "opening_id", "state"]).any()


def test_exit_information_mirrors_the_received_events_with_hops(finished):
    info = finished.exit_information_frame()
    events = finished.events_frame()
    received = events[events["event"] == "exit_info_received"]
    assert len(info) == len(received) > 0
    assert list(
        zip(
            info["step"],
            info["receiver_id"],
            info["sender_id"],
            info["opening_id"],
            strict=False,
        )
    ) == list(
        zip(
            received["step"],
            received["agent_id"],
            received["other_id"],
            received["detail"],
            strict=False,
        )
    )
    observed = finished.opening_observations_frame()
    for row in info.itertuples():
        saw = observed[
            (observed["agent_id"] == row.sender_id)
            & (observed["opening_id"] == row.opening_id)
            & (observed["step"] <= row.step)
        ]
        if len(saw):
            assert row.hops == 1


def test_hops_count_relays_and_unknown_sources():
    plaza = load_plaza()
    recorder = ExitKnowledgeRecorder(plaza)
    model = SimpleNamespace(
        tick=30,
        uid=lambda i: i + 100,
        effective=SimpleNamespace(codes=plaza.raw.copy()),
    )
    exit_number = next(k for k, o in enumerate(plaza.openings) if o.kind == "exit")
    x, y = plaza.openings[exit_number].cells[0]
    cell = np.array([x * plaza.height + y])
    recorder.observe(model, np.array([0]), cell, 3)
    recorder.inform(model, 0, 1, exit_number)  # saw it: 1 hop
    recorder.inform(model, 1, 2, exit_number)  # told by 0: 2 hops
    recorder.inform(model, 5, 6, exit_number)  # neither saw nor was told: unknown
    info = recorder.information_frame()
    assert info["hops"].tolist()[:2] == [1, 2]
    assert info["hops"].isna().tolist() == [False, False, True]
    assert info["sender_id"].tolist() == [100, 101, 105]
    seen = recorder.observations_frame()
    assert seen[["step", "agent_id", "state", "usable"]].values.tolist() == [
        [3, 100, "open", True]
    ]


def test_run_directory_holds_both_tables(tmp_path):
    run = run_evacuation(
        tmp_path / "run", composition="A", block=1, time_limit_s=20
    ).run
    names = set(run.table_names())
    assert {"opening_observations", "exit_information"} <= names
    assert len(run.read_table("opening_observations")) > 0
