"""The memory role: the rule writer's templates and forgetting, revisions due at the boundary."""

import dataclasses

import numpy as np
import pytest

from mesa_llm_mobility.cognition.brain import RuleBrain
from mesa_llm_mobility.cognition.kinds import DecisionRequest
from mesa_llm_mobility.evacuation.memory_role import (
    EVACUATION_MEMORY,
    MemoryContext,
    TurnSummary,
    compose_memory,
    fact_key,
    split_sentences,
)
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.prompts import MEMORY_CHARS
from mesa_llm_mobility.evacuation.timing import due_step
from mesa_llm_mobility.memory.store import MemoryStore

GATE = ("gate", "gate1", "open", "N", 12.0)


def turn(**changes):
    base = TurnSummary(
        time_s=3.0,
        visible_people=2,
        adversary_ids=(),
        body_ids=(),
        openings_in_view=(GATE,),
        fear=0.1,
        fear_level="calm",
        events=("heard someone shouting in alarm to the NE, about 9 m away (0 s ago)",),
        known_openings=(GATE,),
        stale_threat=None,
        told=(),
        action="move",
        situation="normal",
        intent="tour",
        urgency=0.1,
        target="gate gate1",
        feedback="accepted: move",
    )
    return dataclasses.replace(base, **changes)


def test_the_rule_writer_writes_one_fact_a_sentence_in_the_first_person():
    text = compose_memory("", turn())
    facts = split_sentences(text)
    assert facts == [
        "I know of the gate gate1 to the N, about 12 m away, open when I last saw it.",
        "I heard someone shouting in alarm to the NE, about 9 m away (0 s ago).",
        "I can see 2 other people around me.",
        "I feel calm.",
        "I decided to tour toward gate gate1.",
    ]
    assert fact_key(facts[0]) == "opening:gate1" and fact_key(facts[1]) is None


def test_transient_facts_are_forgotten_by_omission_and_lasting_ones_carried():
    first = compose_memory(
        "", turn(adversary_ids=(12,), told=((4, "exit", "E"),), body_ids=(7,))
    )
    assert "I saw an armed person rushing at the crowd at 3 s." in first
    later = compose_memory(
        first,
        turn(
            time_s=9.0,
            events=(),
            visible_people=0,
            known_openings=(),
            stale_threat=("S", 14.2, 6.0),
            fear_level="afraid",
            intent="escape",
            target="exit exit1",
        ),
    )
    # lasting: the gate (not restated), what pedestrian 4 said, the body; the sighting became
    # the stale record
    assert "I know of the gate gate1 to the N" in later
    assert "Pedestrian 4 told me an open exit lies to the E." in later
    assert "I saw a person lying motionless on the ground." in later
    assert "I last saw the armed person 6 s ago, now to my S, about 14 m away." in later
    assert "rushing at the crowd at 3 s" not in later
    # transient: the shout, the people, the old feeling and plan are gone
    assert "shouting" not in later and "people around me" not in later
    assert "I feel calm." not in later and "I feel afraid." in later
    assert later.endswith("I decided to escape toward exit exit1.")


def test_a_rejected_turn_keeps_the_standing_intent_and_the_text_stays_within_the_limit():
    text = compose_memory("", turn(action=None, target=None, intent="seek_exit"))
    assert "My last answer was rejected, so I keep trying to seek exit." in text
    many = tuple(
        ("exit", f"exit{k}", "open", "E", float(k)) for k in range(60)
    )  # far more facts than fit
    long = compose_memory("", turn(known_openings=many))
    assert len(long) <= MEMORY_CHARS
    # transient facts go first, then the oldest lasting ones: the newest openings stay
    assert "I feel calm." not in long and "I decided" not in long
    assert long.endswith("exit59 to the E, about 59 m away, open when I last saw it.")
    assert "exit0 " not in long


def test_the_memory_kind_renders_the_current_memory_and_the_turn():
    context = MemoryContext(agent_id=3, version=2, memory="I feel calm.", turn=turn())
    system, user = (m["content"] for m in EVACUATION_MEMORY.messages(context))
    assert "1,200 characters" in system and "what you leave out is forgotten" in system
    assert "CURRENT MEMORY: I feel calm." in user
    assert "- people in view: 2" in user and "- armed persons (A) in view: none" in user
    assert "openings in view: gate gate1 open, N, 12 m" in user
    assert "- decision: move, situation normal, intent 'tour'" in user
    result = RuleBrain(rng=0).decide(DecisionRequest(EVACUATION_MEMORY, 3, context))
    assert result.output.memory == compose_memory("I feel calm.", turn())
    too_long = EVACUATION_MEMORY.parse(context, '{"memory": "' + "x" * 1201 + '"}')
    assert too_long[0] is None and "at most 1200 characters" in too_long[1][0]


@pytest.fixture(scope="module")
def rule_run():
    store = MemoryStore.ephemeral(embedding="hash", defer_writes=True)
    model = EvacuationModel(composition="A", rng=0, time_limit_s=20, memory_store=store)
    model.run()
    yield model, store
    model.close()
    store.close()


def test_every_revision_is_recorded_and_falls_due_at_the_next_boundary(rule_run):
    model, _store = rule_run
    versions = model.memory_versions_frame()
    assert not versions.empty
    for agent_id, rows in versions.groupby("agent_id"):
        assert rows["version"].tolist() == list(range(1, len(rows) + 1))
        assert model.crowd.by_uid[agent_id].memory_version == len(rows)
        assert model.crowd.by_uid[agent_id].memory_text == rows["memory"].iloc[-1]
    assert (versions["applied_step"] == versions["request_step"].map(due_step)).all()
    assert (versions["chars"] == versions["memory"].str.len()).all()
    assert (versions["chars"] <= MEMORY_CHARS).all()
    decisions = model.decisions_frame()
    # one revision per committed decision, unless it fell due after the pedestrian left
    assert len(versions) <= len(decisions)


def test_revisions_are_in_the_agents_chroma_streams(rule_run):
    model, store = rule_run
    model.close()  # writes the deferred revisions
    versions = model.memory_versions_frame()
    for agent_id, rows in versions.groupby("agent_id"):
        nodes = store.stream(agent_id).nodes()
        assert [n.content for n in nodes] == rows["memory"].tolist()
        assert all(
            f"v{v}" in n.keywords for n, v in zip(nodes, rows["version"], strict=True)
        )
        assert np.allclose([n.created for n in nodes], rows["time_s"] / 60.0)
