"""Native tool calling through the LLM brain, against the local server over both clients."""

from __future__ import annotations

import argparse
import json
import time

import pytest
from pydantic import BaseModel

from mesa_llm_mobility.cognition import (
    DecisionKind,
    DecisionRequest,
    LLMBrain,
    make_brain,
)
from mesa_llm_mobility.cognition.arguments import add_brain_arguments, brain_options
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    ToolCalls,
    _estimate_tokens,
    _prompt_chars,
    json_content,
    offers_tools,
    provider_faults,
    tool_results,
    with_faults,
)
from mesa_llm_mobility.cognition.tool_calling import (
    NO_TOOLS_LEFT,
    Toolbox,
    ToolUse,
    native_tool_calling,
    read_tool_calls,
)

KEY = "sk-tool-suite-3c9e1f"
CLIENTS = ["direct", "litellm"]


class Minutes(BaseModel):
    """The answer: minutes, read from the tool's answer."""

    minutes: int


def _prompt(context: dict) -> list[dict]:
    return [
        {"role": "system", "content": "You plan trips."},
        {"role": "user", "content": f"How long from {context['origin']}?"},
    ]


ASK = DecisionKind(
    "AskMinutes", dict, Minutes, _prompt, lambda context, rng: Minutes(minutes=-1)
)
TRAVEL_TIME = {
    "type": "function",
    "function": {
        "name": "travel_time",
        "description": "minutes from a place",
        "parameters": {
            "type": "object",
            "properties": {"origin": {"type": "string"}},
            "required": ["origin"],
        },
    },
}


class Tools:
    """One tool, ``travel_time(origin)``: 17 min from a known place; counts its calls."""

    def __init__(self, max_calls: int = 3) -> None:
        self.calls = 0
        self.box = Toolbox((TRAVEL_TIME,), self.execute, max_calls)

    def execute(self, name: str, arguments: dict) -> str:
        self.calls += 1
        origin = arguments.get("origin")
        if origin not in ("Home", "Office"):
            raise ValueError(f"origin: unknown place {origin!r}")
        return f"{origin}: 17 min"


def answer_from_tools(body: dict) -> str | ToolCalls:
    """Call travel_time once when offered, then answer with the minutes it gave."""
    if offers_tools(body) and not tool_results(body):
        return ToolCalls.of(("travel_time", {"origin": "Home"}))
    found = [r for r in tool_results(body) if "min" in r and "error" not in r]
    minutes = int(found[0].split(": ")[1].split()[0]) if found else 0
    return json_content({"minutes": minutes})


def _brain(server, client="direct", **options) -> LLMBrain:
    defaults = {"tool_calling": "native", "timeout_s": 1.0, "max_attempts": 3}
    return LLMBrain(
        "openai/fake-model",
        api_base=server.api_base,
        api_key=KEY,
        client=client,
        **(defaults | options),
    )


def _ask(tools: Tools | None, origin: str = "Home") -> DecisionRequest:
    return DecisionRequest(
        ASK, "ada", {"origin": origin}, tools=None if tools is None else tools.box
    )


@pytest.mark.parametrize("client", CLIENTS)
def test_a_tool_call_is_executed_answered_and_recorded(client, tmp_path):
    tools = Tools()
    with (
        FakeLLMServer(answer_from_tools) as server,
        _brain(server, client, ledger=Ledger(tmp_path / "l.jsonl")) as brain,
    ):
        result = brain.decide(_ask(tools))
        first, second = server.requests
    assert result.output == Minutes(minutes=17) and result.outcome == "ok"
    assert result.tool_calls == (
        ToolUse("travel_time", {"origin": "Home"}, "Home: 17 min"),
    )
    assert result.attempts == 2 and tools.calls == 1
    assert first["tools"] == [TRAVEL_TIME] and first["tool_choice"] == "auto"
    assert "response_format" in first  # the final answer stays structured
    call, answer = second["messages"][-2:]
    assert call["role"] == "assistant"
    assert call["tool_calls"][0]["function"]["name"] == "travel_time"
    assert answer == {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": "Home: 17 min",
    }
    (record,) = Ledger.read(tmp_path / "l.jsonl")
    assert record["params"]["tools"] == ["travel_time"]
    assert record["repairs"] == 0 and record["attempts"] == 2
    step, final = record["rounds"]
    assert step["tool_calls"][0]["name"] == "travel_time" and step["errors"] == []
    assert step["tool_results"] == [
        {"id": step["tool_calls"][0]["id"], "answer": "Home: 17 min", "ok": True,
         "executed": True}
    ]  # fmt: skip
    assert json.loads(final["raw"]) == {"minutes": 17}
    # both calls' tokens are counted, the second's with the tool's answer
    assert record["prompt_tokens"] == sum(
        _estimate_tokens(_prompt_chars(body)) for body in (first, second)
    )
    assert KEY not in (tmp_path / "l.jsonl").read_text()


@pytest.mark.parametrize("client", CLIENTS)
def test_malformed_tool_calls_get_error_answers_and_do_not_crash(client):
    script = [
        ToolCalls.of(
            ("fly", {"to": "Moon"}),
            ("travel_time", '{"origin": "Home"'),
            ("travel_time", "[1, 2]"),
            ("travel_time", {"origin": "Moon"}),
        )
    ]
    tools = Tools(max_calls=4)
    with (
        FakeLLMServer(answer_from_tools, script=script) as server,
        _brain(server, client) as brain,
    ):
        result = brain.decide(_ask(tools))
        answers = tool_results(server.requests[-1])
    assert answers[0] == "error: unknown tool 'fly'; use one of travel_time"
    assert answers[1].startswith("error: arguments are not valid JSON")
    assert answers[2] == "error: arguments must be a JSON object"
    assert answers[3] == "error: origin: unknown place 'Moon'"
    assert [use.ok for use in result.tool_calls] == [False] * 4
    assert tools.calls == 1  # only the well-formed call of a known tool ran
    assert result.outcome == "ok" and result.output == Minutes(minutes=0)


@pytest.mark.parametrize("client", CLIENTS)
def test_the_bound_per_decision_holds_against_a_model_that_keeps_calling(client):
    def always_call(body):
        return ToolCalls.of(("travel_time", {"origin": "Home"}), ("travel_time", {"origin": "Office"}))  # fmt: skip

    tools = Tools(max_calls=3)
    with (
        FakeLLMServer(always_call) as server,
        _brain(server, client, max_repairs=1) as brain,
    ):
        result = brain.decide(_ask(tools))
        choices = [body["tool_choice"] for body in server.requests]
        last = tool_results(server.requests[-1])
    assert tools.calls == 3 and len(result.tool_calls) == 3
    # two calls, then one (the second refused), then no more tools, twice (one repair)
    assert choices == ["auto", "auto", "none", "none"]
    assert last[-1].startswith(f"error: {NO_TOOLS_LEFT}")
    assert result.outcome == "fallback" and NO_TOOLS_LEFT in result.reason
    assert [r.errors[0] for r in result.round_errors] == [NO_TOOLS_LEFT] * 2
    assert result.attempts == 4
    assert brain.ledger.summary().loc["all", "repairs"] == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_a_server_without_tools_falls_back_to_structured(client):
    with (
        FakeLLMServer(answer_from_tools, rejects_tools=True) as server,
        _brain(server, client) as brain,
    ):
        assert brain.native_tools
        result = brain.decide(_ask(Tools()))
        second = brain.decide(_ask(Tools(), origin="Office"))
        sent = server.requests
    assert result.outcome == "ok" and result.tool_calls == ()
    assert result.attempts == 2  # the refused call, then the same round without tools
    assert not brain.native_tools and second.attempts == 1
    assert ["tools" in body for body in sent] == [True, False, False]
    # the refusal of tools is not taken for a refusal of the response format
    assert brain.response_modes.mode == "json_schema"


def test_which_brains_call_tools_natively(monkeypatch):
    assert native_tool_calling("openai/gpt-4o-mini", "auto")  # litellm's map knows it
    assert not native_tool_calling("openai/my-self-hosted-model", "auto")
    assert native_tool_calling("openai/my-self-hosted-model", "native")
    assert not native_tool_calling("openai/gpt-4o-mini", "structured")
    with pytest.raises(ValueError, match="tool_calling must be one of auto, native"):
        native_tool_calling("openai/gpt-4o-mini", "sometimes")
    brain = LLMBrain("openai/fake-model", api_base="http://127.0.0.1:9/v1")
    assert not brain.native_tools  # auto, and litellm does not know the model
    brain.close()


def test_tool_calls_are_read_from_both_answer_shapes():
    class Function:
        name = "travel_time"
        arguments = '{"origin": "Home"}'

    class Call:
        id = "c1"
        function = Function()

    expected = {"id": "c1", "name": "travel_time", "arguments": '{"origin": "Home"}'}
    assert read_tool_calls([Call()]) == (expected,)
    as_json = {"id": "c1", "function": {"name": "travel_time", "arguments": {"origin": "Home"}}}  # fmt: skip
    assert read_tool_calls([as_json]) == (expected,)
    assert read_tool_calls([{"function": {"name": "x"}}])[0]["id"] == "call_0"
    assert read_tool_calls(None) == read_tool_calls("not a list") == ()


def test_requests_without_tools_are_sent_as_before_and_identical_ones_with_tools_each_ask():
    with (
        FakeLLMServer(answer_from_tools) as server,
        _brain(server) as brain,
    ):
        plain = brain.decide(_ask(None))
        assert "tools" not in server.requests[0] and plain.tool_calls == ()
        tools = Tools()
        twins = brain.decide_all([_ask(tools), _ask(tools)])
    assert [len(r.tool_calls) for r in twins] == [1, 1] and tools.calls == 2
    assert server.request_count == 1 + 4  # tools answer from their minute: never shared


@pytest.mark.parametrize("client", CLIENTS)
def test_a_replayed_decision_gives_its_tool_calls_without_a_call(client, tmp_path):
    ledger = tmp_path / "l.jsonl"
    with (
        FakeLLMServer(answer_from_tools) as server,
        _brain(server, client, ledger=Ledger(ledger)) as brain,
    ):
        live = brain.decide(_ask(Tools()))
    tools = Tools()
    with (
        FakeLLMServer(answer_from_tools) as server,
        _brain(server, client, replay=ledger) as brain,
    ):
        replayed = brain.decide(_ask(tools))
        assert server.request_count == 0
    assert replayed.replayed and replayed.attempts == 0 and tools.calls == 0
    assert replayed.tool_calls == live.tool_calls and replayed.output == live.output
    assert replayed.round_errors == ()
    # a brain that does not call tools natively asks anew (another request key)
    with (
        FakeLLMServer(answer_from_tools) as server,
        _brain(server, client, replay=ledger, tool_calling="structured") as brain,
    ):
        assert not brain.decide(_ask(Tools())).replayed
        assert server.request_count == 1


@pytest.mark.parametrize("client", CLIENTS)
def test_tool_calling_under_provider_faults_slow_answers_and_an_idle_gap(
    client, tmp_path
):
    malformed = ToolCalls.of(("travel_time", "{oops"), ("nowhere", {}))
    faults = (*provider_faults(hang_s=3.0), malformed)
    responder = with_faults(answer_from_tools, faults, every=3)

    def slow(body):
        return (len(json.dumps(body["messages"])) % 5) * 0.04

    ledger = tmp_path / "l.jsonl"
    tools = Tools()
    with (
        FakeLLMServer(responder, latency_s=slow) as server,
        _brain(
            server, client, ledger=Ledger(ledger), max_total_s=8.0, max_repairs=1
        ) as brain,
    ):
        results = []
        for batch in range(3):
            requests = [_ask(tools, origin) for origin in ("Home", "Office") * 4]
            results += brain.decide_all(requests)
            if batch == 0:
                time.sleep(1.2)  # idle: pooled connections sit unused
        served = server.request_count
    assert {str(r.outcome) for r in results} <= {"ok", "repaired", "fallback"}
    assert all(r.reason for r in results if r.outcome == "fallback")
    assert all(len(r.tool_calls) <= tools.box.max_calls for r in results)
    assert sum(r.output == Minutes(minutes=17) for r in results) >= len(results) // 2
    assert tools.calls == sum(
        use.ok or use.answer.startswith("error: origin")
        for r in results
        for use in r.tool_calls
    )
    summary = Ledger.summarize_file(ledger).loc["all"]
    # a call a timeout gave up on may or may not have reached the server
    assert summary["http_answered"] <= served <= summary["http_calls"]
    assert KEY not in ledger.read_text()


def test_the_flag_and_the_variable_reach_the_brain(monkeypatch):
    parser = argparse.ArgumentParser(prog="mlm test")
    add_brain_arguments(parser)
    options = brain_options(parser.parse_args(["--tool-calling=native"]))
    assert options == {"tool_calling": "native"}
    with make_brain(
        "llm:openai/m", api_base="http://127.0.0.1:9/v1", **options
    ) as brain:
        assert brain.native_tools
    monkeypatch.setenv("MLM_TOOL_CALLING", "native")
    with make_brain("llm:openai/m", api_base="http://127.0.0.1:9/v1") as brain:
        assert brain.native_tools
    monkeypatch.setenv("MLM_TOOL_CALLING", "sometimes")
    with pytest.raises(ValueError, match="tool_calling must be one of"):
        make_brain("llm:openai/m")
