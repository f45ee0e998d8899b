"""The direct OpenAI-compatible client: when it is chosen, what it sends, how it fails."""

import argparse
import asyncio

import numpy as np
import pytest

from mesa_llm_mobility.cognition.arguments import add_brain_arguments, brain_options
from mesa_llm_mobility.cognition.demo import demo_responder
from mesa_llm_mobility.cognition.kinds import Outcome
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.openai_compatible import (
    DirectClient,
    InternalServerError,
    RateLimitError,
    http_error,
    uses_direct_client,
)
from mesa_llm_mobility.cognition.settings import make_brain
from mesa_llm_mobility.cognition.testing import FakeLLMServer
from mesa_llm_mobility.cognition.transport import is_retryable, retry_after_s


def test_auto_takes_the_direct_client_for_self_hosted_openai_servers():
    base = "http://127.0.0.1:8000/v1"
    assert uses_direct_client("openai/local", base, "auto")
    assert uses_direct_client("hosted_vllm/qwen", base, "auto")
    assert not uses_direct_client("openai/gpt-4o-mini", None, "auto")  # OpenAI itself
    assert not uses_direct_client("ollama/llama3.1", base, "auto")
    assert not uses_direct_client("openai/local", base, "litellm")
    assert uses_direct_client("openai/local", base, "direct")


@pytest.mark.parametrize(
    ("model", "base", "client", "message"),
    [
        ("openai/local", None, "direct", "needs an 'openai/<model>'"),
        ("anthropic/claude", "http://x/v1", "direct", "needs an 'openai/<model>'"),
        ("openai/local", "http://x/v1", "fast", "client must be one of"),
    ],
)
def test_impossible_choices_are_named(model, base, client, message):
    with pytest.raises(ValueError, match=message):
        uses_direct_client(model, base, client)


def test_errors_are_named_and_classified_like_litellms():
    limited = http_error(429, "slow down", {"retry-after": "2"})
    assert isinstance(limited, RateLimitError)
    assert is_retryable(limited) and retry_after_s(limited) == 2.0
    assert isinstance(http_error(503, "busy", {}), InternalServerError)
    assert is_retryable(http_error(503, "busy", {}))
    assert not is_retryable(http_error(401, "bad key", {}))
    assert not is_retryable(http_error(400, "bad", {}))
    assert str(http_error(404, "no model", {})) == "HTTP 404: no model"


def test_the_body_is_the_openai_request_and_the_key_comes_from_the_environment(
    monkeypatch,
):
    monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sk-from-environment-123")
    with FakeLLMServer(lambda body: '{"ok": 1}') as server:
        client = DirectClient("hosted_vllm/org/model-7b", server.api_base, None)
        answer = asyncio.run(
            _call_and_release(client, [{"role": "user", "content": "hi"}])
        )
        body = server.requests[0]
    assert answer.content == '{"ok": 1}'
    assert answer.prompt_tokens == 1 and answer.completion_tokens == 3
    assert body == {
        "model": "org/model-7b",  # the provider prefix is litellm's, not the server's
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.5,
    }
    assert client._headers["Authorization"] == "Bearer sk-from-environment-123"


async def _call_and_release(client, messages):
    try:
        return await client(messages, {"temperature": 0.5}, 5.0)
    finally:
        await client.release_loop()


def test_a_200_that_is_no_completion_is_a_retryable_server_error(request_for_ada):
    """A proxy answering 200 with an HTML page: retried, then the model's answer is used."""
    calls = {"n": 0}

    def responder(body):
        calls["n"] += 1
        return demo_responder()(body)

    with FakeLLMServer(responder) as server:
        brain = LLMBrain(
            "openai/fake-model",
            api_base=server.api_base,
            api_key="sk-x",
            rng=np.random.default_rng(0),
        )
        client = brain._client
        assert client is not None
        original = client._answer
        broken = {"left": 1}

        def answer_once_broken(text, headers):
            if broken["left"]:
                broken["left"] -= 1
                return original("<html>gateway</html>", headers)
            return original(text, headers)

        client._answer = answer_once_broken
        brain.policy = type(brain.policy)(backoff_base_s=0.01, backoff_max_s=0.02)
        result = brain.decide(request_for_ada)
    brain.close()
    assert result.outcome is Outcome.OK
    assert result.attempts == 2 == calls["n"]


def test_the_client_is_a_brain_setting_flag_and_variable(monkeypatch):
    base = "http://127.0.0.1:9/v1"
    assert make_brain("llm:openai/m", api_base=base).direct
    monkeypatch.setenv("MLM_CLIENT", "litellm")
    assert not make_brain("llm:openai/m", api_base=base).direct
    parser = argparse.ArgumentParser()
    add_brain_arguments(parser)
    args = parser.parse_args(
        ["--client", "direct", "--structured-output", "json_object"]
    )
    assert brain_options(args) == {
        "client": "direct",
        "structured_output": "json_object",
    }
    brain = make_brain("llm:openai/m", api_base=base, **brain_options(args))
    assert brain.direct and brain.response_modes.chain == ("json_object",)
