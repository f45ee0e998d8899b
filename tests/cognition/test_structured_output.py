"""Structured outputs: one adapter per provider family, and the once-per-endpoint step-down."""

import numpy as np
import pytest
from pydantic import BaseModel

from mesa_llm_mobility.cognition.demo import DEPARTURE_CHOICE, demo_responder
from mesa_llm_mobility.cognition.kinds import DecisionKind, Outcome
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.openai_compatible import http_error
from mesa_llm_mobility.cognition.structured_output import (
    GRAMMAR_MAX_LENGTH,
    grammar_safe,
    mode_chain,
    rejects_format,
    response_params,
    schema_name,
    strict_schema,
)
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)

KEY = "sk-structured-output-test-77"


class WithDefault(BaseModel):
    value: int
    note: str = ""


OPTIONAL_KIND = DecisionKind(
    name="Optional note",
    context_type=WithDefault,
    output_schema=WithDefault,
    render_prompt=lambda context: [{"role": "user", "content": "?"}],
    rule_policy=lambda context, rng: WithDefault(value=1),
)


def test_each_family_gets_its_chain():
    assert mode_chain("openai/local", openai_compatible=True) == (
        "json_schema",
        "json_object_schema",
        "json_object",
        "none",
    )
    assert mode_chain("ollama/llama3.1", openai_compatible=False) == (
        "ollama_format",
        "json_object",
    )
    assert mode_chain("ollama_chat/qwen", openai_compatible=False)[0] == "ollama_format"
    # litellm's map says gpt-4o takes schemas; an unknown model gets JSON mode only
    assert mode_chain("openai/gpt-4o", openai_compatible=False) == (
        "json_schema",
        "json_object",
    )
    assert mode_chain("someprovider/unknown-x", openai_compatible=False) == (
        "json_object",
    )
    assert mode_chain("openai/x", openai_compatible=True, structured_output="none") == (
        "none",
    )
    with pytest.raises(ValueError, match="structured_output must be one of"):
        mode_chain("openai/x", openai_compatible=True, structured_output="grammar")


def test_json_schema_is_strict_when_every_field_is_required():
    params = response_params("json_schema", DEPARTURE_CHOICE)
    spec = params["response_format"]["json_schema"]
    assert params["response_format"]["type"] == "json_schema"
    assert spec["strict"] is True
    assert spec["name"] == "DepartureChoice"
    assert spec["schema"]["additionalProperties"] is False
    assert set(spec["schema"]["required"]) == set(spec["schema"]["properties"])


def test_a_schema_with_optional_fields_is_sent_unstrict():
    assert strict_schema(WithDefault.model_json_schema()) is None
    spec = response_params("json_schema", OPTIONAL_KIND)["response_format"][
        "json_schema"
    ]
    assert spec["strict"] is False
    assert spec["schema"] == WithDefault.model_json_schema()
    assert spec["name"] == "Optional_note"
    assert schema_name("") == "answer"


def test_llama_cpp_and_ollama_forms():
    schema = DEPARTURE_CHOICE.output_schema.model_json_schema()
    assert response_params("json_object_schema", DEPARTURE_CHOICE) == {
        "response_format": {"type": "json_object", "schema": grammar_safe(schema)}
    }
    assert response_params("ollama_format", DEPARTURE_CHOICE) == {"format": schema}
    assert response_params("json_object", DEPARTURE_CHOICE) == {
        "response_format": {"type": "json_object"}
    }
    assert response_params("none", DEPARTURE_CHOICE) == {}


def test_what_counts_as_a_rejected_format():
    assert rejects_format(http_error(400, "bad request", {}))
    assert rejects_format(http_error(422, "unprocessable", {}))
    assert rejects_format(http_error(500, "'json_schema' is not supported", {}))
    assert not rejects_format(http_error(500, "Simulated provider error", {}))
    assert not rejects_format(http_error(429, "response_format rate", {}))
    assert not rejects_format(TimeoutError())


@pytest.mark.parametrize("client", ["direct", "litellm"])
def test_a_llama_cpp_like_server_is_probed_once_then_remembered(
    tmp_path, batch, client
):
    """json_schema answered HTTP 500 (as llama.cpp does): one probe, then the schema in
    json_object for the whole run, with faults and slow, out-of-order answers around it."""
    responder = with_faults(demo_responder(), provider_faults(), every=5)
    with FakeLLMServer(
        responder,
        latency_s=lambda body: (len(body["messages"][-1]["content"]) % 5) * 0.02,
        rejected_formats={"json_schema"},
        rejected_status=500,
    ) as server:
        brain = LLMBrain(
            "openai/fake-model",
            api_base=server.api_base,
            api_key=KEY,
            client=client,
            rng=np.random.default_rng(0),
            ledger=Ledger(tmp_path / "ledger.jsonl"),
            timeout_s=1.0,
            max_attempts=3,
        )
        first = brain.decide_all(batch[:6])
        second = brain.decide_all(batch[6:])
        received = server.requests
        count = server.request_count
    brain.close()
    formats = [body.get("response_format", {}) for body in received]
    assert sum(f.get("type") == "json_schema" for f in formats) == 1
    assert brain.response_modes.mode == "json_object_schema"
    assert brain.response_modes.rejected == ["json_schema"]
    rows = brain.ledger.rows()
    summary = brain.ledger.summary().loc["all"]
    # calls a timeout gave up on may or may not have reached the server, under any load
    assert summary["http_answered"] <= count <= summary["http_calls"]
    records = Ledger.read(tmp_path / "ledger.jsonl")
    assert {r["response_mode"] for r in records if r["attempts"]} == {
        "json_object_schema"
    }
    assert len(rows) == len(batch)
    assert all(
        r.outcome in {Outcome.OK, Outcome.REPAIRED, Outcome.FALLBACK}
        for r in first + second
    )
    # the schema sent is the kind's own, without the length bounds a grammar cannot hold
    sent = next(f for f in formats if f.get("type") == "json_object")
    schema = DEPARTURE_CHOICE.output_schema.model_json_schema()
    assert sent["schema"] == grammar_safe(schema) != schema


def test_a_server_rejecting_every_format_gets_none_and_still_answers(
    tmp_path, request_for_ada
):
    with FakeLLMServer(
        demo_responder(),
        rejected_formats={"json_schema", "json_object_schema", "json_object"},
    ) as server:
        brain = LLMBrain(
            "openai/fake-model",
            api_base=server.api_base,
            api_key=KEY,
            rng=np.random.default_rng(0),
            ledger=Ledger(tmp_path / "ledger.jsonl"),
        )
        result = brain.decide(request_for_ada)
        count = server.request_count
    brain.close()
    assert result.outcome is Outcome.OK
    assert result.attempts == count == 4  # three rejected probes and the answer
    assert Ledger.read(tmp_path / "ledger.jsonl")[0]["response_mode"] == "none"


def test_an_explicit_mode_is_not_stepped_down(request_for_ada):
    with FakeLLMServer(demo_responder(), rejected_formats={"json_schema"}) as server:
        brain = LLMBrain(
            "openai/fake-model",
            api_base=server.api_base,
            api_key=KEY,
            structured_output="json_schema",
            rng=np.random.default_rng(0),
        )
        result = brain.decide(request_for_ada)
    brain.close()
    assert result.outcome is Outcome.FALLBACK
    assert "BadRequestError: HTTP 400" in result.reason
    assert "response_format" in result.reason


def test_llama_cpp_is_not_sent_length_bounds_its_grammar_cannot_hold():
    """A maxLength of 1,200 made llama.cpp fail to parse its grammar and crash (-11)."""
    schema = {
        "type": "object",
        "properties": {
            "memory": {"type": "string", "maxLength": 1200},
            "tag": {"type": "string", "maxLength": GRAMMAR_MAX_LENGTH},
            "items": {"type": "array", "maxItems": 500, "items": {"maxLength": 8}},
        },
        "$defs": {"Note": {"type": "string", "maxLength": 300}},
    }
    safe = grammar_safe(schema)
    assert "maxLength" not in safe["properties"]["memory"]
    assert safe["properties"]["tag"]["maxLength"] == GRAMMAR_MAX_LENGTH
    assert "maxItems" not in safe["properties"]["items"]
    assert safe["properties"]["items"]["items"]["maxLength"] == 8
    assert "maxLength" not in safe["$defs"]["Note"]
    assert (
        schema["properties"]["memory"]["maxLength"] == 1200
    )  # the kind's schema is untouched


def test_the_mode_found_is_remembered_for_the_next_process(tmp_path, batch, client):
    """A resumed run, a sweep's next run or a shard starts at the mode found before."""
    cache = tmp_path / "response_modes.json"

    def run(requests, **server_options):
        with FakeLLMServer(demo_responder(), **server_options) as server:
            brain = LLMBrain(
                "openai/fake-model",
                api_base=f"http://127.0.0.1:{port}/v1",
                api_key=KEY,
                client=client,
                rng=np.random.default_rng(0),
                response_mode_cache=cache,
            )
            with brain:
                results = brain.decide_all(requests)
            return brain, results, server.requests

    with FakeLLMServer() as probe:
        port = probe.port  # the same endpoint in every "process"
    llama_cpp_like = {
        "rejected_formats": {"json_schema"},
        "rejected_status": 500,
        "port": port,
    }
    first, _, sent = run(batch[:4], **llama_cpp_like)
    assert first.response_modes.rejected == ["json_schema"] and len(sent) == 5
    text = cache.read_text(encoding="utf-8")
    assert "json_object_schema" in text
    assert "127.0.0.1" not in text and KEY not in text  # a hash of the endpoint only
    again, results, sent = run(batch[4:8], **llama_cpp_like)
    assert again.response_modes.remembered == "json_object_schema"
    assert again.response_modes.rejected == [] and len(sent) == 4  # no probe
    assert all(r.outcome is Outcome.OK for r in results)
    # an endpoint that now rejects the remembered mode is stepped down from it again
    changed, _, sent = run(
        batch[8:10],
        rejected_formats={"json_object_schema"},
        rejected_status=400,
        port=port,
    )
    assert changed.response_modes.rejected == ["json_object_schema"]
    assert changed.response_modes.mode == "json_object"
    assert "json_object_schema" not in cache.read_text(encoding="utf-8")
