"""A scripted, local OpenAI-compatible HTTP server for tests, benchmarks and offline demos.

:class:`FakeLLMServer` speaks just enough of the OpenAI REST API for litellm (or any
OpenAI-compatible client) to talk to it over real HTTP on ``127.0.0.1``:

* ``POST /v1/chat/completions`` answers with an OpenAI ``chat.completion`` object whose
  assistant content comes from a script, then from a *responder* callable;
* ``GET /v1/models`` lists the configured model ids.

Both paths are also served without the ``/v1`` prefix. Streaming is not supported: a request
with ``"stream": true`` gets a 400 error.

Replies can be plain strings (the assistant message content), :class:`ToolCalls` (an answer
calling tools: ``tool_calls`` with ``finish_reason="tool_calls"``) or :class:`Fault` values that
simulate what goes wrong with real providers: malformed JSON content, schema-violating content,
HTTP errors (429 with ``retry-after: 0``, 500, ...) and hung requests. An optional latency is
awaited with :func:`asyncio.sleep`, so concurrent requests overlap exactly as they do against a
real provider, and :attr:`FakeLLMServer.max_in_flight` reports how many overlapped.

The server runs aiohttp on its own event loop in a daemon thread::

    from mesa_llm_mobility.cognition.testing import FakeLLMServer, json_content

    with FakeLLMServer(lambda body: json_content({"choice": "a"}), latency_s=0.05) as server:
        litellm.completion(model="openai/fake-model", api_base=server.api_base, api_key="sk-x", ...)

For benchmarks, run it as a separate process so that it does not compete for the client's GIL::

    python -m mesa_llm_mobility.cognition.testing --port 0 --latency 0.2 --content '{"choice": "a"}'

The process prints ``listening http://127.0.0.1:PORT/v1`` once ready and serves until SIGTERM or
SIGINT.

Importing this module has no side effects: nothing listens until :meth:`FakeLLMServer.start`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import itertools
import json
import logging
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from types import FrameType, TracebackType
from typing import Any, Self

from aiohttp import web

from mesa_llm_mobility.cognition.replies import (
    Fault,
    Reply,
    Responder,
    ToolCalls,
    json_content,
    offers_tools,
    provider_faults,
    tool_results,
    with_faults,
)

__all__ = [
    "FakeLLMServer",
    "Fault",
    "Reply",
    "Responder",
    "ToolCalls",
    "json_content",
    "main",
    "offers_tools",
    "provider_faults",
    "tool_results",
    "with_faults",
]

logger = logging.getLogger(__name__)

_JSON_HEADERS = {"Content-Type": "application/json"}
_STOP_TIMEOUT_S = 10.0
_START_TIMEOUT_S = 30.0


def _default_responder(body: dict[str, Any]) -> Reply:
    """Answer every request with an empty JSON object."""
    return "{}"


def _estimate_tokens(chars: int) -> int:
    """Rough token count: one token per four characters, rounded up."""
    return -(-chars // 4)


def _prompt_chars(body: dict[str, Any]) -> int:
    """Count the characters of all message contents (text parts only) in a request body."""
    total = 0
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    total += len(part["text"])
    return total


def _response_format_type(body: dict[str, Any]) -> str | None:
    """The response format a request asks for (``json_object_schema``: one with a schema)."""
    response_format = body.get("response_format")
    if not isinstance(response_format, dict):
        return None
    kind = response_format.get("type")
    if kind == "json_object" and "schema" in response_format:
        return "json_object_schema"
    return kind if isinstance(kind, str) else None


_ERROR_TYPES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("not_found_error", "model_not_found"),
    408: ("timeout_error", None),
    409: ("conflict_error", None),
    422: ("invalid_request_error", None),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def _error_response(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
) -> web.Response:
    """Build an OpenAI-style JSON error response."""
    default_type, default_code = _ERROR_TYPES.get(
        status,
        ("server_error", None) if status >= 500 else ("invalid_request_error", None),
    )
    payload = {
        "error": {
            "message": message,
            "type": error_type or default_type,
            "param": None,
            "code": code if code is not None else default_code,
        }
    }
    headers = dict(_JSON_HEADERS)
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    return web.Response(status=status, text=json.dumps(payload), headers=headers)


class FakeLLMServer:
    """A scripted OpenAI-compatible chat-completion server on a background thread.

    Replies are taken from ``script`` first (one per request, in arrival order), then from
    ``responder``. Use it as a context manager, or call :meth:`start` and :meth:`stop`.

    Counters are updated on the server thread under a lock and may be read from any thread.

    Args:
        responder: Maps the parsed request body to assistant content or a :class:`Fault`.
            Defaults to always answering ``"{}"``. If it raises, the request gets a 500 error.
            It runs on the server's event loop, so it should be quick and must not block.
        script: Replies served to the first requests, in order, before ``responder`` is used.
        latency_s: Seconds to wait (without blocking the loop) before each chat answer,
            including fault answers, or a callable computing it from the request body.
        model_ids: Model ids listed by ``GET /v1/models``; the first is echoed in completions
            when a request names no model.
        rejected_formats: Response formats the server refuses, as a server without that
            feature does: ``"json_schema"``, ``"json_object_schema"`` (``json_object`` with a
            ``schema``), ``"json_object"``. Such a request gets ``rejected_status`` with a
            message naming ``response_format`` (llama.cpp's server answers 500 to
            ``json_schema``); it counts as a request.
        rejected_status: The HTTP status of a refused response format.
        rejects_tools: Refuse requests that offer ``tools`` with a 400 naming them, as a
            server without tool calling does (vLLM started without
            ``--enable-auto-tool-choice``); it counts as a request.
        host: Interface to bind; keep the default loopback address for tests.
        port: TCP port, ``0`` to let the OS pick a free one (see :attr:`url`).

    Example:
        >>> with FakeLLMServer(script=["first"], latency_s=0.0) as server:  # doctest: +SKIP
        ...     print(server.api_base)
        http://127.0.0.1:54321/v1
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        script: Iterable[Reply] = (),
        latency_s: float | Callable[[dict[str, Any]], float] = 0.0,
        model_ids: Sequence[str] = ("fake-model",),
        rejected_formats: Iterable[str] = (),
        rejected_status: int = 400,
        rejects_tools: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if not model_ids:
            raise ValueError("model_ids must name at least one model")
        if not callable(latency_s) and latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        self._responder: Responder = responder or _default_responder
        self._script: deque[Reply] = deque(script)
        self._latency = latency_s
        self._model_ids = tuple(model_ids)
        self._rejected_formats = frozenset(rejected_formats)
        self._rejected_status = rejected_status
        self._rejects_tools = rejects_tools
        self._host = host
        self._port = port

        self._lock = threading.Lock()
        self._request_count = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._bound_port: int | None = None
        self._startup_error: BaseException | None = None
        self._handler_tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Self:
        """Bind the socket and start serving on a daemon thread.

        Returns when the server accepts connections.

        Returns:
            The server itself, for chaining.

        Raises:
            RuntimeError: If the server is already running.
            OSError: If the address cannot be bound.
        """
        if self._thread is not None:
            raise RuntimeError("FakeLLMServer is already running")
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._startup_error = None
        thread = threading.Thread(
            target=self._run, args=(loop, ready), name="FakeLLMServer", daemon=True
        )
        self._loop = loop
        self._thread = thread
        thread.start()
        if not ready.wait(_START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("FakeLLMServer did not start in time")
        if self._startup_error is not None:
            error = self._startup_error
            thread.join(_STOP_TIMEOUT_S)
            self._thread = None
            self._loop = None
            raise error
        logger.debug("FakeLLMServer listening on %s", self.url)
        return self

    def stop(self) -> None:
        """Stop serving, cancel pending (including hung) handlers and join the thread.

        Safe to call more than once, and on a server that never started.

        Raises:
            RuntimeError: If called from the server's own thread (e.g. from a responder).
        """
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError(
                "FakeLLMServer.stop() cannot be called from the server thread"
            )
        try:
            if not loop.is_closed():
                future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
                try:
                    future.result(_STOP_TIMEOUT_S)
                except Exception:
                    logger.warning(
                        "FakeLLMServer did not shut down cleanly", exc_info=True
                    )
                    future.cancel()
                loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # loop closed between the check and the call
            pass
        thread.join(_STOP_TIMEOUT_S)
        if thread.is_alive():
            logger.warning(
                "FakeLLMServer thread did not exit within %.0f s", _STOP_TIMEOUT_S
            )
        self._thread = None
        self._loop = None
        self._bound_port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ properties

    @property
    def running(self) -> bool:
        """Whether the server thread is serving."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def port(self) -> int:
        """The bound TCP port.

        Raises:
            RuntimeError: If the server is not running.
        """
        if self._bound_port is None:
            raise RuntimeError("FakeLLMServer is not running")
        return self._bound_port

    @property
    def url(self) -> str:
        """Base URL without the API prefix, e.g. ``http://127.0.0.1:54321``."""
        return f"http://{self._host}:{self.port}"

    @property
    def api_base(self) -> str:
        """OpenAI-style API base (``url + "/v1"``), suitable for litellm's ``api_base``."""
        return self.url + "/v1"

    @property
    def request_count(self) -> int:
        """Number of chat-completion requests received since start or :meth:`reset_stats`."""
        with self._lock:
            return self._request_count

    @property
    def max_in_flight(self) -> int:
        """Largest number of chat-completion requests handled at the same moment."""
        with self._lock:
            return self._max_in_flight

    @property
    def in_flight(self) -> int:
        """Number of chat-completion requests being handled right now."""
        with self._lock:
            return self._in_flight

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed bodies of the chat-completion requests received, in arrival order (a copy).

        Requests whose body is not a JSON object are counted but not recorded.
        """
        with self._lock:
            return list(self._requests)

    @property
    def script_remaining(self) -> int:
        """Number of scripted replies not yet served."""
        with self._lock:
            return len(self._script)

    def reset_stats(self) -> None:
        """Zero :attr:`request_count`, clear :attr:`requests` and restart :attr:`max_in_flight`.

        ``max_in_flight`` restarts from the number of requests currently in flight. The
        remaining script is left untouched.
        """
        with self._lock:
            self._request_count = 0
            self._max_in_flight = self._in_flight
            self._requests.clear()

    # ------------------------------------------------------------------ server thread

    def _run(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        """Thread body: start the app, serve until stopped, then tear the loop down."""
        asyncio.set_event_loop(loop)
        try:
            try:
                loop.run_until_complete(self._startup())
            except BaseException as exc:  # reported to start() in the caller's thread
                self._startup_error = exc
                return
            finally:
                ready.set()
            loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(
                        asyncio.gather(*pending, return_exceptions=True)
                    )
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    async def _startup(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/chat/completions", self._handle_chat)
            app.router.add_get(f"{prefix}/models", self._handle_models)
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            handler_cancellation=True,
            shutdown_timeout=0.5,
        )
        await runner.setup()
        self._runner = runner
        try:
            site = web.TCPSite(runner, self._host, self._port, backlog=1024)
            await site.start()
        except BaseException:
            await runner.cleanup()
            self._runner = None
            raise
        self._bound_port = int(runner.addresses[0][1])

    async def _shutdown(self) -> None:
        for task in list(self._handler_tasks):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ------------------------------------------------------------------ handlers

    async def _handle_models(self, request: web.Request) -> web.Response:
        payload = {
            "object": "list",
            "data": [
                {
                    "id": model_id,
                    "object": "model",
                    "created": 0,
                    "owned_by": "fake-llm-server",
                }
                for model_id in self._model_ids
            ],
        }
        return web.Response(text=json.dumps(payload), headers=_JSON_HEADERS)

    async def _handle_chat(self, request: web.Request) -> web.Response:
        task = asyncio.current_task()
        if task is not None:
            self._handler_tasks.add(task)
        with self._lock:
            self._request_count += 1
            self._in_flight += 1
            if self._in_flight > self._max_in_flight:
                self._max_in_flight = self._in_flight
        try:
            return await self._answer_chat(request)
        finally:
            with self._lock:
                self._in_flight -= 1
            if task is not None:
                self._handler_tasks.discard(task)

    async def _answer_chat(self, request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error_response(400, "Request body is not valid JSON")
        if not isinstance(body, dict):
            return _error_response(400, "Request body must be a JSON object")
        with self._lock:
            self._requests.append(body)
        if body.get("stream"):
            return _error_response(
                400,
                "Streaming is not supported by FakeLLMServer",
                code="stream_not_supported",
            )

        if self._rejects_tools and body.get("tools"):
            return _error_response(
                400, "tools are not supported by this server (no tool call parser)"
            )
        refused = _response_format_type(body)
        if refused in self._rejected_formats:
            return _error_response(
                self._rejected_status,
                f"response_format type {refused!r} is not supported by this server",
            )
        try:
            reply = self._next_reply(body)
            delay = self._latency(body) if callable(self._latency) else self._latency
        except Exception as exc:
            logger.exception("FakeLLMServer responder failed")
            return _error_response(500, f"Responder raised {type(exc).__name__}: {exc}")
        if delay > 0:
            await asyncio.sleep(delay)

        if isinstance(reply, Fault):
            if reply.kind == "http":
                token = request.headers.get("Authorization", "").removeprefix("Bearer ")
                return _error_response(
                    reply.status,
                    reply.message.replace("{api_key}", token),
                    retry_after=reply.retry_after,
                )
            if reply.kind == "reset":
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=500)  # never reaches the client
            if reply.kind == "hang":
                await asyncio.sleep(reply.seconds)
            finish = "length" if reply.kind == "cut_off" else "stop"
            return self._completion(body, reply.content, finish)
        return self._completion(body, reply)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        reply = self._responder(body)
        if not isinstance(reply, str | Fault | ToolCalls):
            raise TypeError(
                f"responder must return str, Fault or ToolCalls, got {type(reply).__name__}"
            )
        return reply

    def _completion(
        self, body: dict[str, Any], content: str | ToolCalls, finish: str = "stop"
    ) -> web.Response:
        prompt_tokens = _estimate_tokens(_prompt_chars(body))
        number = next(self._ids)
        if isinstance(content, ToolCalls):
            message = content.message(first_id=number * 100)
            finish_reason = "tool_calls"
            completion_tokens = _estimate_tokens(len(json.dumps(message)))
        else:
            message = {"role": "assistant", "content": content}
            finish_reason = finish
            completion_tokens = _estimate_tokens(len(content))
        model = body.get("model")
        payload = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) and model else self._model_ids[0],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return web.Response(text=json.dumps(payload), headers=_JSON_HEADERS)


# ---------------------------------------------------------------------- command line


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mesa_llm_mobility.cognition.testing",
        description="Serve a fixed chat-completion reply on a local OpenAI-compatible API.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=0, help="TCP port; 0 picks a free one (default)"
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="seconds to wait before each answer (default: 0)",
    )
    parser.add_argument(
        "--content",
        default="{}",
        help="assistant content of every reply (default: %(default)s)",
    )
    parser.add_argument(
        "--responder",
        default=None,
        metavar="MODULE:FUNCTION",
        help="answer with a responder instead of --content, e.g. "
        "mesa_llm_mobility.urban.scripted_llm:respond",
    )
    parser.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="ID",
        help="model id for /v1/models (repeatable; default: fake-model)",
    )
    parser.add_argument(
        "--log-level", default="WARNING", help="logging level (default: %(default)s)"
    )
    return parser.parse_args(argv)


def _responder(spec: str) -> Responder:
    """The responder named ``module:function``.

    Raises:
        ValueError: naming the spec when it is not of that form or names nothing callable.
    """
    module_name, _, name = spec.partition(":")
    try:
        responder = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError):
        responder = None
    if not callable(responder):
        raise ValueError(f"--responder {spec!r}: not a module:function that exists")
    return responder


def main(argv: Sequence[str] | None = None) -> int:
    """Run a fixed-content (or ``--responder``) server until SIGTERM or SIGINT.

    Prints ``listening <api_base>`` (flushed) on stdout once the server accepts connections.

    Args:
        argv: Command-line arguments, without the program name; defaults to ``sys.argv[1:]``.

    Returns:
        The process exit code.
    """
    args = _parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    content: str = args.content
    stop_requested = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    server = FakeLLMServer(
        _responder(args.responder) if args.responder else (lambda body: content),
        latency_s=args.latency,
        model_ids=tuple(args.models or ("fake-model",)),
        host=args.host,
        port=args.port,
    )
    with server:
        print(f"listening {server.api_base}", flush=True)
        stop_requested.wait()
    logger.info("FakeLLMServer stopped after %d requests", server.request_count)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
