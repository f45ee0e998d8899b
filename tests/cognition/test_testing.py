"""Tests for the scripted OpenAI-compatible server in mesa_llm_mobility.cognition.testing."""

from __future__ import annotations

import asyncio
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import mesa_llm_mobility.cognition.testing as testing_module
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content

# litellm must not fetch its model-cost map from the internet when it is imported (lazily, below).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO_ROOT = Path(testing_module.__file__).resolve().parents[2]

# Never route 127.0.0.1 through a proxy configured in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _http(
    method: str,
    url: str,
    body: Any = None,
    *,
    raw: bytes | None = None,
    timeout: float = 10.0,
) -> tuple[int, dict[str, str], bytes]:
    data = (
        raw
        if raw is not None
        else (None if body is None else json.dumps(body).encode())
    )
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read()


def _chat(
    server: FakeLLMServer, content: str = "hi", **extra: Any
) -> tuple[int, dict[str, str], Any]:
    body = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": content}],
        **extra,
    }
    status, headers, payload = _http(
        "POST", server.api_base + "/chat/completions", body
    )
    return status, headers, json.loads(payload)


def _content(payload: dict[str, Any]) -> str:
    return payload["choices"][0]["message"]["content"]


def _wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)


# ---------------------------------------------------------------------- basics


def test_script_is_served_in_order_then_the_responder() -> None:
    seen: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> str:
        seen.append(body)
        return json_content({"echo": body["messages"][0]["content"]})

    with FakeLLMServer(responder, script=["first", json_content({"n": 2})]) as server:
        replies = [_content(_chat(server, f"q{i}")[2]) for i in range(4)]
        assert server.script_remaining == 0
        assert [body["messages"][0]["content"] for body in server.requests] == [
            "q0",
            "q1",
            "q2",
            "q3",
        ]

    assert replies == ["first", '{"n": 2}', '{"echo": "q2"}', '{"echo": "q3"}']
    assert [body["messages"][0]["content"] for body in seen] == ["q2", "q3"]


def test_default_responder_answers_empty_object() -> None:
    with FakeLLMServer() as server:
        status, _, payload = _chat(server)
    assert status == 200
    assert _content(payload) == "{}"


def test_completion_has_openai_shape_and_estimated_usage() -> None:
    prompt = "x" * 13
    content = "abcde"
    with FakeLLMServer(lambda body: content) as server:
        status, headers, payload = _chat(server, prompt)

    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert payload["id"].startswith("chatcmpl-")
    assert payload["object"] == "chat.completion"
    assert isinstance(payload["created"], int)
    assert payload["model"] == "fake-model"
    choice = payload["choices"][0]
    assert choice["message"] == {"role": "assistant", "content": content}
    assert choice["finish_reason"] == "stop"
    assert payload["usage"] == {
        "prompt_tokens": math.ceil(13 / 4),
        "completion_tokens": math.ceil(5 / 4),
        "total_tokens": math.ceil(13 / 4) + math.ceil(5 / 4),
    }


def test_paths_without_v1_prefix_are_served() -> None:
    with FakeLLMServer(script=["plain"]) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        status, _, payload = _http("POST", server.url + "/chat/completions", body)
        models_status, _, models = _http("GET", server.url + "/models")
    assert status == 200
    assert _content(json.loads(payload)) == "plain"
    assert models_status == 200
    assert [m["id"] for m in json.loads(models)["data"]] == ["fake-model"]


def test_models_endpoint_lists_configured_ids() -> None:
    with FakeLLMServer(model_ids=("alpha", "beta")) as server:
        status, _, payload = _http("GET", server.api_base + "/models")
    listing = json.loads(payload)
    assert status == 200
    assert listing["object"] == "list"
    assert [(m["id"], m["object"]) for m in listing["data"]] == [
        ("alpha", "model"),
        ("beta", "model"),
    ]


def test_url_and_api_base() -> None:
    server = FakeLLMServer()
    with pytest.raises(RuntimeError):
        _ = server.url
    with server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.port > 0
        assert server.api_base == server.url + "/v1"
    assert not server.running


# ---------------------------------------------------------------------- faults


def test_malformed_json_fault_is_200_with_broken_content() -> None:
    with FakeLLMServer(script=[Fault.malformed_json()]) as server:
        status, _, payload = _chat(server)
    assert status == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(_content(payload))


def test_schema_violation_fault_is_200_with_wrong_object() -> None:
    with FakeLLMServer(script=[Fault.schema_violation()]) as server:
        status, _, payload = _chat(server)
    assert status == 200
    assert json.loads(_content(payload)) == {"unexpected_field": True}


@pytest.mark.parametrize(
    ("status", "error_type", "retry_after"),
    [
        (429, "rate_limit_error", "0"),
        (500, "server_error", None),
        (503, "server_error", None),
    ],
)
def test_http_fault_has_openai_error_body(
    status: int, error_type: str, retry_after: str | None
) -> None:
    with FakeLLMServer(script=[Fault.http(status, message="boom")]) as server:
        got_status, headers, payload = _chat(server)
        followup_status, _, _ = _chat(server)
    assert got_status == status
    assert payload["error"]["message"] == "boom"
    assert payload["error"]["type"] == error_type
    assert "code" in payload["error"]
    lowered = {key.lower(): value for key, value in headers.items()}
    assert lowered.get("retry-after") == retry_after
    assert followup_status == 200


def test_fault_constructors_validate_and_are_frozen() -> None:
    with pytest.raises(ValueError):
        Fault.http(200)
    fault = Fault.hang(5)
    assert (fault.kind, fault.seconds) == ("hang", 5)
    with pytest.raises(AttributeError):
        fault.seconds = 1  # type: ignore[misc]


def test_streaming_is_rejected_without_consuming_script() -> None:
    with FakeLLMServer(script=["scripted"]) as server:
        status, _, payload = _chat(server, stream=True)
        _, _, next_payload = _chat(server)
    assert status == 400
    assert payload["error"]["type"] == "invalid_request_error"
    assert _content(next_payload) == "scripted"


def test_invalid_request_body_is_400() -> None:
    with FakeLLMServer() as server:
        status, _, payload = _http(
            "POST", server.api_base + "/chat/completions", raw=b"{not json"
        )
    assert status == 400
    assert "error" in json.loads(payload)


def test_responder_exception_becomes_500() -> None:
    def responder(body: dict[str, Any]) -> str:
        raise KeyError("missing")

    with FakeLLMServer(responder) as server:
        status, _, payload = _chat(server)
    assert status == 500
    assert "KeyError" in payload["error"]["message"]


# ---------------------------------------------------------------------- concurrency


def test_latency_lets_concurrent_requests_overlap() -> None:
    with (
        FakeLLMServer(latency_s=0.3) as server,
        ThreadPoolExecutor(max_workers=8) as pool,
    ):
        statuses = list(pool.map(lambda i: _chat(server, f"q{i}")[0], range(8)))
        assert statuses == [200] * 8
        assert server.request_count == 8
        assert server.max_in_flight > 1
        assert server.in_flight == 0


def test_latency_callable_receives_the_body() -> None:
    seen: list[str] = []

    def latency(body: dict[str, Any]) -> float:
        seen.append(body["messages"][0]["content"])
        return 0.0

    with FakeLLMServer(latency_s=latency) as server:
        _chat(server, "ping")
    assert seen == ["ping"]


def test_request_count_and_reset_stats() -> None:
    with FakeLLMServer() as server:
        for _ in range(3):
            _chat(server)
        _http("GET", server.api_base + "/models")  # not a chat request
        assert server.request_count == 3
        assert len(server.requests) == 3
        assert server.max_in_flight == 1

        server.reset_stats()
        assert (server.request_count, server.max_in_flight, server.requests) == (
            0,
            0,
            [],
        )

        _chat(server)
        assert server.request_count == 1
        assert len(server.requests) == 1


def test_hang_is_cancelled_cleanly_on_stop() -> None:
    server = FakeLLMServer(script=[Fault.hang()]).start()
    server_thread = server._thread  # white-box: the thread must be gone after stop()
    assert server_thread is not None
    outcome: list[BaseException | int] = []

    def client() -> None:
        try:
            outcome.append(_chat(server)[0])
        except BaseException as error:
            outcome.append(error)

    client_thread = threading.Thread(target=client, daemon=True)
    client_thread.start()
    _wait_until(lambda: server.in_flight == 1)

    server.stop()

    assert not server_thread.is_alive()
    assert not server.running
    client_thread.join(5)
    assert not client_thread.is_alive()
    assert len(outcome) == 1
    assert not isinstance(outcome[0], int)  # the hung request never got an answer
    server.stop()  # idempotent


def test_hang_handler_is_cancelled_when_client_gives_up() -> None:
    with FakeLLMServer(script=[Fault.hang()]) as server:
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            _http(
                "POST",
                server.api_base + "/chat/completions",
                {"model": "m", "messages": []},
                timeout=0.2,
            )
        _wait_until(lambda: server.in_flight == 0)
        assert _chat(server)[0] == 200


def test_server_can_be_restarted() -> None:
    server = FakeLLMServer()
    with server:
        assert _chat(server)[0] == 200
    with server:
        assert _chat(server)[0] == 200
        assert server.request_count == 2


# ---------------------------------------------------------------------- through litellm


def _litellm() -> Any:
    import litellm  # noqa: PLC0415 - imported lazily, after LITELLM_LOCAL_MODEL_COST_MAP is set

    litellm.suppress_debug_info = True
    return litellm


async def _acomplete(litellm: Any, server: FakeLLMServer, **extra: Any) -> Any:
    return await litellm.acompletion(
        model="openai/fake-model",
        messages=[{"role": "user", "content": "Choose a or b."}],
        api_base=server.api_base,
        api_key="sk-test",
        max_retries=0,
        **extra,
    )


def test_litellm_acompletion_round_trip() -> None:
    litellm = _litellm()
    with FakeLLMServer(lambda body: json_content({"choice": "a"})) as server:
        response = asyncio.run(_acomplete(litellm, server))
        assert server.request_count == 1
        assert server.requests[0]["model"] == "fake-model"
    assert json.loads(response.choices[0].message.content) == {"choice": "a"}
    assert (
        response.usage.total_tokens
        == response.usage.prompt_tokens + response.usage.completion_tokens
    )


def test_litellm_error_mapping_without_internal_retries() -> None:
    """Pins the exception classes the retry logic relies on, and that max_retries=0 means one call."""
    litellm = _litellm()
    script = [Fault.http(429), Fault.http(500), Fault.malformed_json(), Fault.hang()]

    async def scenario(server: FakeLLMServer) -> list[Any]:
        outcomes: list[Any] = []
        for extra in ({}, {}, {}, {"timeout": 0.3}):
            try:
                outcomes.append(await _acomplete(litellm, server, **extra))
            except Exception as error:
                outcomes.append(error)
        return outcomes

    with FakeLLMServer(script=script) as server:
        rate_limited, server_error, malformed, timed_out = asyncio.run(scenario(server))
        assert server.request_count == 4  # no hidden retries

    assert isinstance(rate_limited, litellm.RateLimitError)
    assert rate_limited.status_code == 429
    assert isinstance(server_error, litellm.InternalServerError)
    assert server_error.status_code == 500
    assert (
        malformed.choices[0].message.content == '{"oops": '
    )  # passed through, not raised
    assert isinstance(timed_out, litellm.Timeout)


# ---------------------------------------------------------------------- subprocess mode


def _read_line(stream: Any, timeout: float) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    if not ready:
        raise AssertionError("server process printed nothing in time")
    return stream.readline()


def test_subprocess_mode_serves_and_stops_on_sigterm() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])
    )
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    command = [
        sys.executable,
        "-m",
        "mesa_llm_mobility.cognition.testing",
        "--port",
        "0",
        "--latency",
        "0.01",
        "--content",
        '{"choice": "a"}',
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        line = _read_line(process.stdout, timeout=30)
        assert line.startswith("listening http://127.0.0.1:"), line
        api_base = line.split()[1]
        assert api_base.endswith("/v1")

        body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
        status, _, payload = _http("POST", api_base + "/chat/completions", body)
        assert status == 200
        assert json.loads(_content(json.loads(payload))) == {"choice": "a"}
        assert _http("GET", api_base + "/models")[0] == 200

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
        process.stdout.close()
        process.stderr.close()


def test_the_command_line_server_answers_with_a_named_responder():
    respond = testing_module._responder(
        "mesa_llm_mobility.cognition.demo:demo_responder"
    )
    assert callable(respond)
    for spec in (
        "no_such_module:respond",
        "mesa_llm_mobility.cognition.demo:nothing",
        "x",
    ):
        with pytest.raises(ValueError, match="not a module:function that exists"):
            testing_module._responder(spec)
