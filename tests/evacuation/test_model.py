import numpy as np
import pandas as pd
import pytest

from mesa_llm_mobility.cognition.brain import Brain, RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionResult, Outcome
from mesa_llm_mobility.evacuation.decisions import (
    EvacuationDecision,
    Offset,
    validate_evacuation_move,
)
from mesa_llm_mobility.evacuation.memory_role import EVACUATION_MEMORY
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.plaza import Terrain, load_plaza


@pytest.fixture(scope="module")
def plaza():
    return load_plaza()


def check_invariants(model):
    pos = model.positions_frame()
    raw = model.plaza.raw
    schedule = model.scene.effective.schedule
    previous = None
    for step, frame in pos.groupby("step"):
        cells = list(zip(frame["x"], frame["y"], strict=True))
        assert len(cells) == len(set(cells)), f"two entities in one cell at step {step}"
        codes = raw[frame["x"].to_numpy(), frame["y"].to_numpy()]
        assert not np.isin(codes, (Terrain.WALL, Terrain.TREE)).any()
        if (
            codes == Terrain.GATE_OPEN
        ).any():  # entered during step - 1: the gate was passable then
            assert schedule.state_at((step - 1) / 3) != "closed"
        current = {row.agent_id: (row.x, row.y) for row in frame.itertuples()}
        if previous is not None:
            for agent, (x, y) in current.items():
                if agent in previous:
                    px, py = previous[agent]
                    assert max(abs(x - px), abs(y - py)) <= 1, (
                        f"agent {agent} jumped at step {step}"
                    )
            moved = {
                a: (previous[a], c)
                for a, c in current.items()
                if a in previous and previous[a] != c
            }
            for a, (src, dst) in moved.items():
                for b, (src2, dst2) in moved.items():
                    assert not (a != b and src == dst2 and dst == src2), (
                        f"swap of {a} and {b} at step {step}"
                    )
        previous = current
    # moves happen only on entities' own kind rules: the adversary never stands on an opening
    adv = pos[pos["kind"] == "adversary"]
    assert (
        model.plaza.opening_index[adv["x"].to_numpy(), adv["y"].to_numpy()] < 0
    ).all()


@pytest.mark.parametrize(("composition", "block", "seed"), [("H", 3, 1), ("C", 5, 2)])
def test_whole_run_invariants_and_resolution(plaza, composition, block, seed):
    model = EvacuationModel(
        plaza=plaza, composition=composition, block=block, rng=seed, time_limit_s=120
    )
    model.run()
    assert not model.running
    check_invariants(model)
    peds = model.pedestrians_frame()
    assert len(peds) == 11
    if model.tick < model.limit_steps:
        assert (peds["outcome"] != "unresolved").all()
    assert set(peds["outcome"]) <= {"evacuated", "reached", "unresolved"}
    evacuated = peds[peds["outcome"] == "evacuated"]
    assert evacuated["exit_used"].notna().all()
    decisions = model.decisions_frame()
    assert set(decisions["revision_level"]) <= {"goal", "plan", "execution", "none"}
    assert (decisions["cells_committed"] <= 20).all()
    assert (
        decisions.groupby("agent_id")["applied_step"].min() == 0
    ).all()  # initial decisions at t = 0
    assert (
        decisions["applied_step"] % 3 == 0
    ).all()  # decisions take effect at 1 s boundaries
    later = decisions[decisions["applied_step"] > 0]
    assert (
        later["applied_step"] >= later["request_step"] + 3
    ).all()  # ... at or after t + 1 s
    events = model.events_frame()
    assert {"gate_state"} <= set(events["event"])
    gates = events[events["event"] == "gate_state"]
    assert list(gates["detail"])[-2:] == ["gate1:closed", "gate2:closed"]


def test_dense_crowd_invariants(plaza):
    model = EvacuationModel(
        plaza=plaza,
        composition={"average": 150, "anxious_conformist": 150},
        rng=4,
        time_limit_s=20,
    )
    model.run()
    check_invariants(model)
    assert model.tick == 60


def test_same_seed_same_run(plaza):
    a = EvacuationModel(
        plaza=plaza, composition="F", block=2, rng=7, time_limit_s=30
    ).run()
    b = EvacuationModel(
        plaza=plaza, composition="F", block=2, rng=7, time_limit_s=30
    ).run()
    pd.testing.assert_frame_equal(a.positions_frame(), b.positions_frame())
    pd.testing.assert_frame_equal(a.decisions_frame(), b.decisions_frame())


def test_blocks_permute_start_cells_and_compositions_count(plaza):
    one = EvacuationModel(plaza=plaza, composition="E", block=1, rng=0, time_limit_s=1)
    two = EvacuationModel(plaza=plaza, composition="E", block=2, rng=0, time_limit_s=1)
    starts_one = [a.start for a in one.pedestrians]
    starts_two = [a.start for a in two.pedestrians]
    assert sorted(starts_one) == sorted(starts_two) == sorted(plaza.spawn_cells)
    assert starts_one != starts_two
    assert [a.personality.archetype for a in one.pedestrians].count(
        "anxious_conformist"
    ) == 3
    with pytest.raises(ValueError, match="start cells; use random_spawn=True"):
        EvacuationModel(plaza=plaza, composition={"average": 12}, random_spawn=False)


def test_gates_close_on_schedule_and_block_movement(plaza):
    model = EvacuationModel(
        plaza=plaza,
        composition="A",
        rng=0,
        gates_closing_at_s=0.0,
        gates_closed_at_s=1.0,
        time_limit_s=3,
    )
    model.run()
    gate = plaza.gates[0].cells[0]
    assert model.scene.effective.codes[gate] == Terrain.GATE_CLOSED
    assert not model.scene.effective.passable[gate]


def test_time_limit_leaves_unresolved(plaza):
    model = EvacuationModel(plaza=plaza, composition="A", rng=0, time_limit_s=2)
    model.run()
    assert model.tick == 6
    assert "unresolved" in set(model.pedestrians_frame()["outcome"])
    frame = model.datacollector.get_model_vars_dataframe()
    assert len(frame) == 7 and frame["active"].iloc[0] == 11


@pytest.mark.parametrize("composition", list("ABCDEFGH"))
def test_every_composition_runs(plaza, composition):
    model = EvacuationModel(
        plaza=plaza, composition=composition, block=4, rng=11, time_limit_s=8
    )
    model.run()
    assert model.tick == 24 or not np.any(model.crowd.status == 0)
    assert len(model.outcomes_frame()) == 11


class TargetBrain(Brain):
    """Answers with a target offset (the first option's anchor, via a waypoint on its path).

    Memory revisions are the rule writer's.
    """

    name = "target"

    def decide_all(self, requests, *, tags=None):
        results = []
        for request in requests:
            ctx = request.context
            if request.kind is EVACUATION_MEMORY:
                results.append(
                    DecisionResult(
                        request,
                        request.kind.apply_rule_policy(request, self.rng),
                        Outcome.OK,
                    )
                )
                continue
            option = ctx.options[0]
            height = ctx.grid_size[1]
            wx, wy = divmod(option.path[min(2, len(option.path) - 1)], height)
            out = EvacuationDecision(
                action="move",
                situation="normal",
                intent="tour",
                urgency=0.1,
                target_offset=Offset(
                    dx=option.anchor_offset[0], dy=option.anchor_offset[1]
                ),
                waypoint_offset=Offset(
                    dx=wx - ctx.position[0], dy=wy - ctx.position[1]
                ),
            )
            assert validate_evacuation_move(ctx, out) == []
            results.append(DecisionResult(request, out, Outcome.OK))
        return results


def test_target_offsets_and_waypoints_are_routed_on_the_belief_map(plaza):
    model = EvacuationModel(
        plaza=plaza, composition="A", rng=2, brain=TargetBrain(), time_limit_s=15
    )
    model.run()
    check_invariants(model)
    decisions = model.decisions_frame()
    assert decisions["target_dx"].notna().all()
    accepted = decisions[decisions["accepted"]]
    assert len(accepted) > 11 and (accepted["cells_committed"] > 0).mean() > 0.9
    assert set(decisions.loc[~decisions["accepted"], "commit_reason"].dropna()) <= {
        "target no longer reachable through observed cells from your current cell"
    }


def test_unreachable_target_is_rejected_with_a_reason(plaza):
    model = EvacuationModel(
        plaza=plaza, composition={"average": 1}, rng=0, time_limit_s=1
    )
    agent = model.pedestrians[0]
    request = model.decision_request(agent, "test")
    ctx = request.context
    far = Offset(
        dx=plaza.threat_cell[0] - ctx.position[0],
        dy=plaza.threat_cell[1] - ctx.position[1],
    )
    out = EvacuationDecision(
        action="move",
        situation="unsure",
        intent="explore",
        urgency=0.4,
        target_offset=far,
    )
    assert "not observed" in validate_evacuation_move(ctx, out)[0]
    model.apply_decision(DecisionResult(request, out, Outcome.OK))
    row = model.decisions_frame().iloc[-1]
    assert not row["accepted"] and "no longer reachable" in row["commit_reason"]
    assert agent.previous.feedback.startswith("rejected:")


def test_runs_on_a_user_map_file(tmp_path):
    rows = [
        "#####4####",
        "#s.......#",
        "#..TT....#",
        "#........1",
        "#.a....s.1",
        "#........#",
        "##########",
    ]
    text = (
        "[plaza]\nname: tiny\ncell_size_m: 0.4\n[openings]\n1 exit1 exit 0.8\n4 gate1 gate 0.4\n[map]\n"
        + "\n".join(rows)
        + "\n"
    )
    path = tmp_path / "tiny.txt"
    path.write_text(text)
    model = EvacuationModel(
        plaza=str(path), composition={"bold_solitary": 2}, rng=5, time_limit_s=30
    ).run()
    check_invariants(model)
    assert model.plaza.name == "tiny"
    assert set(model.pedestrians_frame()["outcome"]) <= {
        "evacuated",
        "reached",
        "unresolved",
    }
    assert model.pedestrians_frame()["shortest_exit_m"].notna().all()


def test_first_sighting_triggers_reassessment_and_raises_fear(plaza):
    model = EvacuationModel(
        plaza=plaza, composition="H", block=3, rng=1, time_limit_s=120
    ).run()
    events = model.events_frame()
    decisions = model.decisions_frame()
    positions = model.positions_frame().set_index(["step", "agent_id"])
    first = (
        events[events["event"] == "sighting_adversary"]
        .groupby("agent_id")["step"]
        .min()
    )
    assert len(first) > 0
    kappa = 1 + (72 - 50) / 100  # anxious-conformist
    for agent_id, step in first.items():
        requested = decisions[
            (decisions["agent_id"] == agent_id) & (decisions["request_step"] == step)
        ]
        resolved = (
            model.pedestrians_frame()
            .set_index("agent_id")
            .loc[agent_id, "resolved_step"]
        )
        still_active_when_due = (
            resolved is None or pd.isna(resolved) or resolved > step + 5
        )
        if still_active_when_due:
            assert (requested["trigger"] == "first_sighting").any()
            assert (requested["situation"] == "danger").all()
        assert (
            positions.loc[(step + 1, agent_id), "fear"] >= min(1.0, kappa * 0.8) - 1e-9
        )


def test_constructor_calls_no_brain_and_the_first_step_decides(plaza):
    calls = []

    class CountingBrain(RuleBrain):
        def decide_all(self, requests, *, tags=None):
            calls.append((len(requests), dict(tags or {})))
            return super().decide_all(requests, tags=tags)

    model = EvacuationModel(
        plaza=plaza, composition="A", rng=0, brain=CountingBrain(rng=0), time_limit_s=2
    )
    assert calls == [] and model.decisions_frame().empty
    assert model.seed == 0
    model.step()
    assert calls[0] == (model.n_pedestrians, {"step": 0})
    assert set(model.decisions_frame()["kind"]) == {"EvacuationMove"}
    with EvacuationModel(plaza=plaza, composition="A", rng=7, time_limit_s=1) as seeded:
        assert seeded.seed == 7 and seeded.run() is seeded


def test_a_refused_world_closes_the_brain(plaza):
    closed = []

    class ClosingBrain(RuleBrain):
        def close(self):
            closed.append(True)
            super().close()

    with pytest.raises(ValueError, match="start cells; use random_spawn=True"):
        EvacuationModel(
            plaza=plaza,
            composition={"average": 12},
            random_spawn=False,
            brain=ClosingBrain(rng=0),
        )
    assert closed == [True]
    with pytest.raises(ValueError, match="unknown composition"):  # refused before
        EvacuationModel(plaza=plaza, composition="Q", brain=ClosingBrain(rng=0))
    assert closed == [True]
