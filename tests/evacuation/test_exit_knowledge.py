"""The opening_observations and exit_information tables (mesa_llm_mobility/evacuation/exit_knowledge.py)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.evacuation.exit_knowledge import (
    USABLE_STATES,
    ExitKnowledgeRecorder,
    KnowledgeCutoff,
    exit_knowledge_measure,
    mark_adjacent,
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
    # a row per change of state, and one more for the first sight from afar after an
    # adjacent one: no (agent, opening, state, adjacent) twice, no adjacent after afar
    assert not observed.duplicated(
        ["agent_id", "opening_id", "state", "adjacent"]
    ).any()
    for _, rows in observed.groupby(["agent_id", "opening_id", "state"]):
        assert rows["adjacent"].tolist() in ([True], [False], [True, False])


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
        pos=np.array([[40, 40]]),
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
    assert seen[
        ["step", "agent_id", "state", "usable", "adjacent"]
    ].values.tolist() == [[3, 100, "open", True, False]]


def test_run_directory_holds_both_tables(tmp_path):
    run = run_evacuation(
        tmp_path / "run", composition="A", block=1, time_limit_s=20
    ).run
    names = set(run.table_names())
    assert {"opening_observations", "exit_information"} <= names
    assert len(run.read_table("opening_observations")) > 0


# ------------------------------------------------------------------ the paper's measure
OBS = ["step", "agent_id", "opening_id", "kind", "state", "usable", "adjacent"]
INFO = [
    "step",
    "sender_id",
    "receiver_id",
    "opening_id",
    "kind",
    "state",
    "usable",
    "hops",
    "source",
]


def _measure():
    pedestrians = pd.DataFrame(
        {
            "agent_id": [1, 2, 3, 4, 5, 6, 7, 8, 9],
            "resolved_step": [40, 50, 60, 20, None, 90, 80, 12, 30],
        }
    )
    observations = pd.DataFrame(
        [
            [3, 1, "exit1", "exit", "open", True, False],  # 1: saw an exit from afar
            [
                0,
                3,
                "gate1",
                "gate",
                "open",
                True,
                False,
            ],  # 3: gate open, killed after closure
            [
                0,
                4,
                "gate1",
                "gate",
                "open",
                True,
                False,
            ],  # 4: left through it before closure
            [5, 6, "exit1", "exit", "open", True, False],  # 6: exit1 from afar ...
            [40, 6, "gate2", "gate", "closed", False, False],  # ... and a closed gate
            [
                11,
                8,
                "exit2",
                "exit",
                "open",
                True,
                True,
            ],  # 8: first sight adjacent, out at 12
            [4, 9, "exit3", "exit", "open", True, True],  # 9: adjacent at 4 ...
            [7, 9, "exit3", "exit", "open", True, False],  # ... then from afar at 7
        ],
        columns=OBS,
    )
    information = pd.DataFrame(
        [
            [10, 1, 2, "exit1", "exit", "open", True, 1, "peer"],  # 2: told
            [
                12,
                9,
                6,
                "exit2",
                "exit",
                "open",
                True,
                1,
                "peer",
            ],  # 6: and told of exit2
            [
                100,
                1,
                7,
                "exit2",
                "exit",
                "open",
                True,
                1,
                "peer",
            ],  # 7: told after death
            [
                0,
                None,
                5,
                "gate1",
                "gate",
                "open",
                True,
                0,
                "system",
            ],  # 5: system, a gate
        ],
        columns=INFO,
    ).astype({"sender_id": "Int64", "hops": "Int64"})
    return exit_knowledge_measure(
        pedestrians,
        observations,
        information,
        KnowledgeCutoff(gate_closed_at_step=35, end_step=720),
    ).set_index("agent_id")


def test_knowledge_counts_only_what_was_known_before_the_final_approach():
    k = _measure()
    assert k["usable_exits_known"].to_dict() == {
        1: 1,
        2: 1,
        3: 0,
        4: 1,
        5: 0,  # a system-told gate, unresolved at 720 > closure
        6: 2,
        7: 0,
        8: 0,  # first saw its exit from the Moore neighbourhood: did not know it
        9: 1,
    }
    # the measure that counts every sight knows pedestrian 8's exit: true by construction
    assert k.loc[8, "usable_exits_known_any_sight"] == 1
    assert k["exits_known"].to_dict() == {
        1: 1,
        2: 1,
        3: 0,
        4: 0,
        5: 0,
        6: 2,
        7: 0,
        8: 0,
        9: 1,
    }
    assert k["knowledge_source"].to_dict() == {
        1: "observed",
        2: "told",
        3: "only closed gate",
        4: "observed",
        5: "only closed gate",
        6: "observed",
        7: "none",
        8: "none",
        9: "observed",
    }
    assert k.loc[1, "first_usable_s"] == pytest.approx(1.0)  # step 3 = 1 s
    assert k.loc[9, "first_usable_s"] == pytest.approx(7 / 3)  # the sight from afar
    assert k.loc[2, "first_usable_source"] == "told"
    assert pd.isna(k.loc[7, "first_usable_s"])
    assert k.loc[6, "observed_usable"] and k.loc[6, "told_usable"]
    assert k["openings_seen"].to_dict()[6] == 2 and k.loc[8, "openings_seen"] == 0


def test_system_provided_exit_knowledge_is_its_own_source():
    pedestrians = pd.DataFrame({"agent_id": [1, 2], "resolved_step": [50, 60]})
    information = pd.DataFrame(
        [
            [0, None, 1, "exit2", "exit", "open", True, 0, "system"],
            [0, None, 2, "exit2", "exit", "open", True, 0, "system"],
        ],
        columns=INFO,
    ).astype({"sender_id": "Int64", "hops": "Int64"})
    observations = pd.DataFrame(
        [[9, 2, "exit1", "exit", "open", True, False]], columns=OBS
    )
    k = exit_knowledge_measure(
        pedestrians, observations, information, KnowledgeCutoff(35, 720)
    ).set_index("agent_id")
    assert k["knowledge_source"].to_dict() == {1: "system", 2: "observed"}
    assert k.loc[1, "system_usable"] and k.loc[1, "first_usable_s"] == 0.0


def test_the_measure_needs_the_adjacent_column():
    with pytest.raises(ValueError, match="adjacent"):
        exit_knowledge_measure(
            pd.DataFrame({"agent_id": [1], "resolved_step": [3]}),
            pd.DataFrame(columns=[c for c in OBS if c != "adjacent"]),
            pd.DataFrame(columns=INFO),
            KnowledgeCutoff(35, 720),
        )


def test_adjacent_rows_mark_the_moore_neighbourhood_of_the_opening(finished):
    model = finished
    observed = model.opening_observations_frame()
    positions = model.positions_frame().set_index(["step", "agent_id"])
    cells = {o.opening_id: np.array(o.cells) for o in model.plaza.openings}
    for row in observed.itertuples():
        x, y = positions.loc[(row.step, row.agent_id), ["x", "y"]]
        chebyshev = np.abs(cells[row.opening_id] - [x, y]).max(axis=1).min()
        assert row.adjacent == (chebyshev <= 1)
    recomputed = mark_adjacent(
        observed.drop(columns="adjacent"), model.positions_frame(), model.plaza
    )
    assert recomputed["adjacent"].tolist() == observed["adjacent"].tolist()


def test_a_later_sight_from_afar_adds_a_row_after_an_adjacent_one():
    plaza = load_plaza()
    recorder = ExitKnowledgeRecorder(plaza)
    exit_number = next(k for k, o in enumerate(plaza.openings) if o.kind == "exit")
    x, y = plaza.openings[exit_number].cells[0]
    model = SimpleNamespace(
        tick=0,
        uid=lambda i: i + 1,
        effective=SimpleNamespace(codes=plaza.raw.copy()),
        pos=np.array([[x - 1, y]]),
    )
    cell = np.array([x * plaza.height + y])
    recorder.observe(model, np.array([0]), cell, 1)  # adjacent
    recorder.observe(model, np.array([0]), cell, 2)  # adjacent again: nothing new
    model.pos = np.array([[x - 10, y]])
    recorder.observe(model, np.array([0]), cell, 3)  # from afar: a row
    recorder.observe(model, np.array([0]), cell, 4)  # nothing new
    model.pos = np.array([[x - 1, y]])
    recorder.observe(model, np.array([0]), cell, 5)  # adjacent after afar: nothing new
    seen = recorder.observations_frame()
    assert seen[["step", "adjacent"]].values.tolist() == [[1, True], [3, False]]


def test_system_provided_rows_have_no_sender():
    plaza = load_plaza()
    recorder = ExitKnowledgeRecorder(plaza)
    model = SimpleNamespace(
        tick=0,
        uid=lambda i: i + 1,
        effective=SimpleNamespace(codes=plaza.raw.copy()),
    )
    recorder.provide(model, 4, 0)
    info = recorder.information_frame()
    assert info["sender_id"].isna().all() and info["hops"].tolist() == [0]
    assert info["source"].tolist() == ["system"] and info["receiver_id"].tolist() == [5]
