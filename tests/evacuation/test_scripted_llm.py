"""The scripted pedestrians (mesa_llm_mobility/evacuation/scripted_llm.py).

The realistic answerer words the token-exact answerer's decisions like a real model. Through
the real LLM brain against the local server, whatever the engine derives from an answer must
come out the same for both. Tolerance over the runs below (6 runs of 11 pedestrians, 45 s):
shouts heard and exit-information messages within 15 % of the exact answerer's total (and 2
absolute), the goal-revision rate within 0.05 and the evacuated share within 0.10.
"""

from __future__ import annotations

import json

import pytest

from mesa_llm_mobility.cognition.json_extract import extract_json
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.evacuation import scripted_llm
from mesa_llm_mobility.evacuation.decisions import EvacuationDecision
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.revisions import (
    CATEGORY_OF_GOAL,
    EXIT_SEEKING,
    ORDINARY,
    THREAT_AVOIDANCE,
    goal_category,
)

pytestmark = pytest.mark.slow  # its module fixtures take more than ten seconds

PROMPT = """TIME 12.00 s. You face N. Current view:
??...
.@.A.
?....
AFFECT (engine): Fear: 0.60 (afraid); active stimuli: armed person in sight.
HEARD: nothing
MESSAGES: none
STALE THREAT RECORD: none
OPENINGS YOU KNOW: none
ROUTE OPTIONS (id: anchor, offset, length, familiarity, people, clearance, reach):
R1: to frontier (edge of what you know) at offset (+3, +0) E, 3 cells, ...
R2: to exit exit2 at offset (+9, -4) SE, 10 cells, ...
STANDING GOAL: intent 'tour', urgency 0.10, situation normal.
FEEDBACK ON YOUR PREVIOUS ANSWER: accepted
"""


def test_the_scripted_decision_reads_the_prompt():
    danger = scripted_llm.scripted_decision(PROMPT)
    assert (danger.situation, danger.goal, danger.route_id) == (
        "danger",
        "threat",
        "R2",
    )
    assert danger.urgency == pytest.approx(0.9)
    calm = (
        PROMPT.replace(".@.A.", ".@...")
        .replace("armed person in sight", "none")
        .replace("Fear: 0.60", "Fear: 0.00")
    )
    touring = scripted_llm.scripted_decision(calm)
    assert (touring.situation, touring.goal, touring.route_id) == (
        "normal",
        "ordinary",
        "R1",
    )
    heard = calm.replace("HEARD: nothing", "HEARD: someone shouting in alarm to the W")
    assert scripted_llm.scripted_decision(heard).situation == "unsure"
    lost = calm.replace("R1:", "X1:").replace("R2:", "X2:")
    assert scripted_llm.scripted_decision(lost).action == "turn_and_observe"


def test_realistic_answers_vary_but_mean_the_same_and_are_valid():
    decision = scripted_llm.scripted_decision(PROMPT)
    exact = scripted_llm.exact_answer(decision)
    assert exact["goal"] == exact["intent"] == "escape" and "shout" not in exact
    shapes, spellings = set(), set()
    for variant in range(60):
        text = scripted_llm._wrapped(
            scripted_llm.realistic_answer(decision, variant), variant
        )
        answer = extract_json(text)
        parsed = EvacuationDecision.model_validate(answer)  # unknown fields ignored
        assert CATEGORY_OF_GOAL[parsed.goal] == THREAT_AVOIDANCE
        spellings.add(answer["goal"])
        if parsed.intent is not None:
            assert goal_category(parsed.intent) == THREAT_AVOIDANCE
        assert (parsed.action, parsed.situation, parsed.route_id) == (
            "move",
            "danger",
            "R2",
        )
        shapes.add(frozenset(answer))
    minimal = frozenset({"action", "situation", "goal", "urgency", "route_id"})
    assert minimal in shapes  # the required fields only
    assert len(spellings) >= 3  # the category spelled in several ways
    assert any("reasoning" in s or "confidence" in s for s in shapes)  # unknown fields
    assert any("shout" not in s and "context_capsule" in s for s in shapes)
    for goal, category in (("exit", EXIT_SEEKING), ("ordinary", ORDINARY)):
        assert {goal_category(p) for p in scripted_llm.PARAPHRASES[goal]} == {category}


RUNS = [("A", 1), ("D", 5), ("H", 3), ("B", 2), ("C", 7), ("F", 4)]
LIMIT_S = 45.0


def _channel_numbers(responder) -> dict[str, float]:
    shouts = messages = goal = later = evacuated = pedestrians = rejected = 0
    with FakeLLMServer(responder) as server:
        for composition, block in RUNS:
            model = EvacuationModel(
                composition=composition,
                block=block,
                rng=0,
                brain="llm:openai/fake-model",
                brain_options={
                    "api_base": server.api_base,
                    "api_key": "sk-local",
                    "timeout_s": 30.0,
                    "max_attempts": 2,
                },
                time_limit_s=LIMIT_S,
            )
            model.run()
            model.close()
            events = model.events_frame()
            decisions = model.decisions_frame()
            outcomes = model.pedestrians_frame()["outcome"]
            shouts += int((events["event"] == "shout_heard").sum())
            messages += int((events["event"] == "exit_info_received").sum())
            after = decisions[decisions["trigger"] != "initial"]
            goal += int((after["revision_level"] == "goal").sum())
            later += len(after)
            rejected += int((decisions["outcome"] != "ok").sum())
            evacuated += int((outcomes == "evacuated").sum())
            pedestrians += len(outcomes)
    return {
        "shouts_heard": shouts,
        "exit_messages": messages,
        "goal_revision_rate": goal / later if later else float("nan"),
        "evacuated_share": evacuated / pedestrians,
        "rejected": rejected,
    }


@pytest.fixture(scope="module")
def channel_numbers():
    numbers = {
        "exact": _channel_numbers(scripted_llm.exact_respond),
        "realistic": _channel_numbers(scripted_llm.realistic_respond),
    }
    print(
        json.dumps(numbers, indent=1)
    )  # the numbers, whether the comparison holds or not
    return numbers


@pytest.mark.slow
def test_the_realistic_answers_are_all_accepted(channel_numbers):
    assert channel_numbers["exact"]["rejected"] == 0
    assert channel_numbers["realistic"]["rejected"] == 0
    assert channel_numbers["exact"]["shouts_heard"] > 0
    assert channel_numbers["exact"]["exit_messages"] > 0


@pytest.mark.slow
def test_channels_fire_as_with_exact_tokens(channel_numbers):
    exact, realistic = channel_numbers["exact"], channel_numbers["realistic"]
    for key in ("shouts_heard", "exit_messages"):
        assert abs(realistic[key] - exact[key]) <= max(2, 0.15 * exact[key]), key
    assert realistic["goal_revision_rate"] == pytest.approx(
        exact["goal_revision_rate"], abs=0.05
    )
    assert realistic["evacuated_share"] == pytest.approx(
        exact["evacuated_share"], abs=0.10
    )


def test_the_token_exact_answerer_keeps_the_original_responder():
    # the goldens use scripted_llm.respond: it must not change with the new answerers
    body = {
        "messages": [
            {"role": "system", "content": "x"},
            {"role": "user", "content": PROMPT},
        ]
    }
    answer = json.loads(scripted_llm.respond(body))
    assert answer["intent"] == "seek_exit" and answer["route_id"] == "R1"
