"""The decision role's prompt: seven policy blocks, identity section, every user-message item."""

import dataclasses

import pytest

from mesa_llm_mobility.evacuation.decision_context import (
    PreviousDecision,
    StaleSighting,
)
from mesa_llm_mobility.evacuation.decisions import EVACUATION_MOVE
from mesa_llm_mobility.evacuation.messages import ExitHint, HeardShout
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.personality import ARCHETYPES
from mesa_llm_mobility.evacuation.prompts import (
    CAPSULE_RULE,
    POLICY_BLOCKS,
    SHARED_POLICY,
)


@pytest.fixture(scope="module")
def context():
    model = EvacuationModel(composition="H", rng=3, time_limit_s=1)
    base = model.decision_request(model.pedestrians[0], "test").context
    return dataclasses.replace(
        base,
        heard_shouts=(HeardShout("NE", 9, 2.0),),
        exit_hints=(ExitHint(4, "exit2", "exit", "E", 20, 1.0, (10, 10)),),
        stale_sighting=StaleSighting((-12, 30), "NW", 12.9, 7.33),
        capsule="seek_exit: R2 confirmed open",
        memory="I saw an armed person near the south gate.",
        previous=PreviousDecision(
            "seek_exit",
            0.6,
            "unsure",
            "exit",
            "exit1",
            (100, 100),
            "rejected: route_id 'R7' was not offered (offered: R1, R2)",
        ),
    )


def test_system_prompt_is_the_shared_policy_with_its_seven_blocks_then_the_identity(
    context,
):
    system = EVACUATION_MOVE.messages(context)[0]["content"]
    names = [name for name, _ in POLICY_BLOCKS]
    assert names == [
        "IDENTITY",
        "MAP",
        "JUDGMENT",
        "INTENT",
        "ROUTE OPTIONS",
        "PAST EXPERIENCE",
        "OUTPUT",
    ]
    # the kind's JSON-schema instruction comes first (a prefix providers cache), then the policy
    assert system.startswith("Answer with a single JSON object")
    policy_at = system.index(SHARED_POLICY)
    positions = [system.index(f"{name}: ") for name in names]
    assert positions == sorted(positions)
    for glyph in "?.#TEGgX@pDA":
        assert f" {glyph} " in SHARED_POLICY
    assert "dx > 0 is east" in SHARED_POLICY and "dy > 0 north" in SHARED_POLICY
    assert "shortest route need not" in SHARED_POLICY
    assert CAPSULE_RULE in SHARED_POLICY and "500 characters" in CAPSULE_RULE
    identity = system[policy_at + len(SHARED_POLICY) :]
    assert f"pedestrian {context.agent_id}, adult" in identity
    profile = ARCHETYPES["anxious_conformist"]
    assert "neuroticism 72 (very high; salient:" in identity
    for domain in "OCEAN":
        assert f"{profile.score(domain):.0f} (" in identity
        assert profile.anchors()[domain] in identity


def test_user_message_carries_every_item_of_the_turn(context):
    user = EVACUATION_MOVE.messages(context)[1]["content"]
    assert context.view.text in user
    assert f"Fear: {context.fear:.2f} ({context.fear_level}); active stimuli:" in user
    assert "HEARD: someone shouting in alarm to the NE, about 9 m away" in user
    assert "MESSAGES: pedestrian 4 told you an open exit lies to the E" in user
    stale = user.split("STALE THREAT RECORD: ")[1].split("\n")[0]
    assert stale.startswith("STALE:") and "7 s ago" in stale
    assert "now NW of you, 13 m away" in stale
    for option in context.options:
        assert f"\n{option.describe()}" in user
    assert "STANDING GOAL: intent 'seek_exit', urgency 0.60, situation unsure." in user
    assert (
        "FEEDBACK ON YOUR PREVIOUS ANSWER: rejected: route_id 'R7' was not offered"
        in user
    )
    assert "CONTEXT CAPSULE (<= 500 chars): seek_exit: R2 confirmed open" in user
    assert (
        "LONG-TERM MEMORY (<= 1,200 chars): I saw an armed person near the south gate."
        in user
    )


def test_a_first_decision_says_there_is_no_goal_or_feedback_yet(context):
    first = dataclasses.replace(
        context,
        previous=None,
        heard_shouts=(),
        exit_hints=(),
        stale_sighting=None,
        capsule="",
        memory="",
    )
    user = EVACUATION_MOVE.messages(first)[1]["content"]
    assert "FEEDBACK ON YOUR PREVIOUS ANSWER: none (first decision)." in user
    assert "HEARD: nothing" in user and "STALE THREAT RECORD: none" in user
    assert "CONTEXT CAPSULE (<= 500 chars): (empty)" in user
