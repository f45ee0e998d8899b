import dataclasses

import numpy as np
import pytest

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionRequest
from mesa_llm_mobility.evacuation.decision_context import StaleSighting
from mesa_llm_mobility.evacuation.decisions import (
    EVACUATION_MOVE,
    EvacuationDecision,
    Offset,
    appraise,
    evacuation_rule_policy,
    urgency_for,
    validate_evacuation_move,
)
from mesa_llm_mobility.evacuation.messages import ExitHint, HeardShout
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.personality import ARCHETYPES
from mesa_llm_mobility.evacuation.plaza import Terrain


@pytest.fixture(scope="module")
def context():
    model = EvacuationModel(composition="A", rng=3, time_limit_s=1)
    return model.decision_request(model.pedestrians[0], "test").context


def decision(**kw):
    base = {"action": "move", "situation": "normal", "intent": "tour", "urgency": 0.2}
    base.update(kw)
    return EvacuationDecision(**base)


def test_context_carries_the_real_view_and_options(context):
    lines = context.view.text.split("\n")
    assert "@" in context.view.text
    assert len({len(line) for line in lines}) == 1
    assert set(context.view.text) <= set("?.#TEGgX@pDA\n")
    assert context.options and all(o.route_id.startswith("R") for o in context.options)
    messages = EVACUATION_MOVE.messages(context)
    assert context.view.text in messages[1]["content"]
    assert context.options[0].describe() in messages[1]["content"]
    assert "neuroticism 50 (average)" in messages[0]["content"]
    assert "JSON" in messages[0]["content"]


def test_validator_names_the_problem(context):
    assert (
        validate_evacuation_move(
            context, decision(route_id=context.options[0].route_id)
        )
        == []
    )
    errors = validate_evacuation_move(context, decision(route_id="R9"))
    assert errors and "was not offered" in errors[0]
    assert (
        "exactly one of route_id or target_offset"
        in validate_evacuation_move(context, decision())[0]
    )
    # the belief arrays cover the pedestrian's belief window, from belief_origin
    x, y = context.position
    lx, ly = x - context.belief_origin[0], y - context.belief_origin[1]
    codes = context.belief_codes.copy()
    reachable = context.reachable.copy()
    codes[lx + 2, ly] = Terrain.UNKNOWN
    codes[lx - 2, ly] = Terrain.TREE
    codes[lx, ly + 2] = Terrain.FLOOR
    reachable[lx, ly + 2] = False
    ctx = dataclasses.replace(context, belief_codes=codes, reachable=reachable)
    assert (
        "not observed"
        in validate_evacuation_move(ctx, decision(target_offset=Offset(dx=2, dy=0)))[0]
    )
    assert (
        "not passable"
        in validate_evacuation_move(ctx, decision(target_offset=Offset(dx=-2, dy=0)))[0]
    )
    assert (
        "cannot be reached"
        in validate_evacuation_move(ctx, decision(target_offset=Offset(dx=0, dy=2)))[0]
    )
    assert (
        "outside the map"
        in validate_evacuation_move(ctx, decision(target_offset=Offset(dx=-200, dy=0)))[
            0
        ]
    )
    assert (
        "your own cell"
        in validate_evacuation_move(ctx, decision(target_offset=Offset(dx=0, dy=0)))[0]
    )


def test_kind_parse_rejects_bad_json_and_domain_errors(context):
    output, errors = EVACUATION_MOVE.parse(context, '{"action": "run"}')
    assert output is None and any("action" in e for e in errors)
    output, errors = EVACUATION_MOVE.parse(
        context,
        '{"action": "move", "situation": "danger", "intent": "escape", "urgency": 0.9, "route_id": "R42"}',
    )
    assert output is None and "was not offered" in errors[0]


def test_appraisal_from_evidence(context):
    assert appraise(context) == "normal"
    assert appraise(dataclasses.replace(context, sees_adversary=True)) == "danger"
    assert appraise(dataclasses.replace(context, sees_casualty=True)) == "danger"
    assert (
        appraise(dataclasses.replace(context, heard_shouts=(HeardShout("N", 10, 1.0),)))
        == "unsure"
    )
    assert appraise(dataclasses.replace(context, fleeing_neighbours=2)) == "unsure"
    stale = StaleSighting((5, 5), "NE", 2.8, 4.0)
    assert (
        appraise(dataclasses.replace(context, stale_sighting=stale, fear=0.5))
        == "danger"
    )
    assert (
        appraise(dataclasses.replace(context, stale_sighting=stale, fear=0.1))
        == "unsure"
    )


def test_urgency_formula():
    assert urgency_for("normal", 0.0) == pytest.approx(0.1)
    assert urgency_for("unsure", 0.5) == pytest.approx(0.55)
    assert urgency_for("danger", 1.0) == pytest.approx(1.0)


def test_rule_policy_escapes_shouts_and_prefers_openings_when_in_danger(context):
    ctx = dataclasses.replace(context, sees_adversary=True, fear=0.9)
    out = evacuation_rule_policy(ctx, np.random.default_rng(0))
    assert out.situation == "danger" and out.intent == "escape" and out.shout
    assert out.urgency >= 0.6
    assert validate_evacuation_move(ctx, out) == []
    calm = evacuation_rule_policy(context, np.random.default_rng(0))
    assert calm.situation == "normal" and not calm.shout
    assert calm.intent in ("tour", "explore")


def test_rule_policy_is_deterministic_under_the_rng_and_personality_matters(context):
    a = evacuation_rule_policy(context, np.random.default_rng(5))
    b = evacuation_rule_policy(context, np.random.default_rng(5))
    assert a == b
    bold = dataclasses.replace(context, personality=ARCHETYPES["bold_solitary"])
    assert (
        evacuation_rule_policy(bold, np.random.default_rng(5)).intent == "explore"
    )  # O = 68


def test_exit_hints_pull_frontier_choices(context):
    frontier = [o for o in context.options if o.anchor_kind == "frontier"]
    if len(frontier) < 2:
        pytest.skip("needs two frontier options")
    target = frontier[-1]
    hint = ExitHint(7, "exit2", "exit", target.direction, 20, 1.0, (0, 0))
    ctx = dataclasses.replace(
        context, exit_hints=(hint,), heard_shouts=(HeardShout("N", 10, 1.0),)
    )
    picks = [
        evacuation_rule_policy(ctx, np.random.default_rng(s)).route_id
        for s in range(20)
    ]
    assert picks.count(target.route_id) >= 10


def test_brain_answers_requests_in_one_batch(context):
    brain = RuleBrain(rng=1)
    results = brain.decide_all(
        [
            DecisionRequest(EVACUATION_MOVE, 1, context),
            DecisionRequest(EVACUATION_MOVE, 2, context),
        ]
    )
    assert [r.agent_id for r in results] == [1, 2]
    assert all(isinstance(r.output, EvacuationDecision) for r in results)
