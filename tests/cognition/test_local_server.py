"""The local model's server with a stand-in decoder: Gemma's template, schemas, one queue, drops.

The real model is tested in ``tests/test_local_model.py``; here a stand-in decoder (no model)
shows what the server does around it, through the real brain.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.request

import numpy as np
import pytest
from aiohttp import web

from mesa_llm_mobility.cognition.demo import DEPARTURE_CHOICE
from mesa_llm_mobility.cognition.kinds import Outcome
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.local_server import (
    ANY_OBJECT,
    Generation,
    LocalModelApp,
    answer_schema,
    closed_objects,
    render_gemma,
)

SYSTEM = {"role": "system", "content": "You are Ada. Answer in JSON. "}
USER = {"role": "user", "content": " When do you leave?"}


def test_the_system_message_opens_the_first_user_turn():
    assert render_gemma([SYSTEM, USER]) == (
        "<bos><start_of_turn>user\nYou are Ada. Answer in JSON.\n\nWhen do you leave?"
        "<end_of_turn>\n<start_of_turn>model\n"
    )


def test_a_repair_conversation_alternates_user_and_model_turns():
    prompt = render_gemma(
        [
            SYSTEM,
            USER,
            {"role": "assistant", "content": "{}"},
            {"role": "user", "content": "Fix it."},
        ]
    )
    assert prompt.count("<start_of_turn>user\n") == 2
    assert (
        "<start_of_turn>model\n{}<end_of_turn>\n<start_of_turn>user\nFix it." in prompt
    )
    assert prompt.endswith("<start_of_turn>model\n")
    assert "system" not in prompt and "[INST]" not in prompt
    with pytest.raises(ValueError, match="user message"):
        render_gemma([SYSTEM])


def test_schemas_come_from_both_response_formats_and_objects_are_closed():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    wrapped = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    assert answer_schema({"response_format": wrapped}) == schema
    as_llama_cpp = {"type": "json_object", "schema": schema}
    assert answer_schema({"response_format": as_llama_cpp}) == schema
    assert answer_schema({"response_format": {"type": "json_object"}}) == ANY_OBJECT
    assert answer_schema({}) is None
    with pytest.raises(ValueError, match="not supported"):
        answer_schema({"response_format": {"type": "grammar"}})
    nested = {
        "type": "object",
        "properties": {"b": schema},
        "additionalProperties": True,
    }
    closed = closed_objects(nested)
    assert closed["additionalProperties"] is True  # said explicitly: kept
    assert closed["properties"]["b"]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the original is untouched


class StandIn:
    """Decodes nothing: answers a fixed text, slowly, stopping when told."""

    def __init__(self, text='{"depart_minute": 420, "reason": "early"}', steps=1):
        self.text, self.steps = text, steps
        self.calls: list[dict] = []
        self.cancelled = 0

    def tokenize(self, text):
        return list(range(len(text) // 4))

    def grammar(self, schema):
        return json.dumps(schema)

    def generate(self, prompt, *, grammar, max_tokens, temperature, seed, cancelled):
        self.calls.append({"grammar": grammar, "max_tokens": max_tokens})
        for _ in range(self.steps):
            if cancelled.is_set():
                self.cancelled += 1
                return Generation(len(prompt), [], "", "cancelled")
            time.sleep(0.01)
        tokens = list(range(min(len(self.text) // 4, max_tokens)))
        finish = "length" if len(tokens) == max_tokens else "stop"
        text = self.text if finish == "stop" else self.text[: 4 * max_tokens]
        return Generation(len(prompt), tokens, text, finish)


class Running:
    """The application served on a free loopback port from a thread."""

    def __init__(self, decoder):
        self.app = LocalModelApp(decoder, "gemma3-270m")
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        async def start():
            self.runner = web.AppRunner(
                self.app.application(), handler_cancellation=True
            )
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.port = self.runner.addresses[0][1]
            started.set()

        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(start(), self.loop)
        assert started.wait(10)
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def stats(self):
        url = f"http://127.0.0.1:{self.port}/mlm/stats"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return json.loads(answer.read())

    def stop(self):
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def serving():
    servers = []

    def start(decoder):
        servers.append(Running(decoder))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def _brain(server, **options):
    return LLMBrain(
        "openai/gemma3-270m",
        api_base=server.api_base,
        api_key="local",
        rng=np.random.default_rng(0),
        **options,
    )


def test_json_schema_is_taken_at_once_and_decoded_under(serving, request_for_ada):
    decoder = StandIn()
    server = serving(decoder)
    with _brain(server) as brain:
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.OK and result.output.depart_minute == 420
    assert (
        brain.response_modes.mode == "json_schema"
        and brain.response_modes.rejected == []
    )
    sent = json.loads(decoder.calls[0]["grammar"])
    assert (
        sent == DEPARTURE_CHOICE.schema_for(request_for_ada.context) | sent
    )  # the kind's
    assert server.stats() == {"answered": 1, "cancelled": 0}


def test_an_answer_cut_off_by_max_tokens_is_repaired_as_such(serving, request_for_ada):
    server = serving(StandIn())
    with _brain(server, max_tokens=4, max_repairs=1) as brain:
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.FALLBACK
    assert "cut off at the token limit (4 tokens)" in result.round_errors[0].errors[0]


def test_requests_whose_client_went_away_are_dropped(serving, batch):
    decoder = StandIn(steps=300)  # 3 s a request, one at a time
    server = serving(decoder)
    # one mode alone: all three are sent at once (a mode being probed goes one at a time)
    with _brain(
        server,
        timeout_s=0.5,
        max_attempts=1,
        max_concurrency=3,
        structured_output="json_schema",
    ) as brain:
        results = brain.decide_all(batch[:3])  # all three time out
    assert all(r.outcome is Outcome.FALLBACK for r in results)
    deadline = time.monotonic() + 20
    while server.stats()["cancelled"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stats() == {"answered": 0, "cancelled": 3}
    # the one being decoded stopped at its next step; those queued were dropped before they
    # were decoded, or at their first step (when the server saw them go only then)
    assert decoder.cancelled == len(decoder.calls) >= 1
