"""The local model's OpenAI-compatible server: one queue, Gemma's template, schema-constrained.

``python -m mesa_llm_mobility.cognition.local_decoding --model GEMMA.gguf --port 8765`` serves a
GGUF model on ``127.0.0.1`` through a decoder
(:class:`~mesa_llm_mobility.cognition.local_decoding.LocalDecoder`) and this module's
application:

* ``POST /v1/chat/completions``: the chat rendered in Gemma's template (:func:`render_gemma`);
  the answer decoded under the JSON schema of ``response_format`` (``json_schema``, or
  ``json_object`` with a ``schema`` as llama.cpp takes it; plain ``json_object`` is any JSON
  object); ``max_tokens``, ``temperature`` and ``seed`` honoured; ``finish_reason`` ``length``
  when cut off. Tools and streaming are refused with HTTP 400.
* ``GET /v1/models``: the model's alias; ``GET /mlm/stats``: requests answered and dropped.

Requests are answered one at a time, in order (a 2-core machine gains nothing from two at once).
A client that goes away (a timeout: the brain closes the connection) has its request dropped: a
waiting one is never decoded, one being decoded stops at its next token. A request with
``"mlm_echo_prompt": true`` gets the rendered prompt back in ``mlm_prompt`` (the tests check the
template with it). :class:`~mesa_llm_mobility.cognition.local_model.LocalModelServer` starts the
server as a child process.

Gemma has no system role: a system message opens the first user turn, as Google's template
does. A GGUF without a template of its own (the Gemma 3 270M package) is otherwise prompted in
llama-cpp-python's fallback ``llama-2`` format (``[INST]``), and its ``--chat_format gemma``
drops the system message, which carries the schema and the persona.

This module needs no model library (the decoder is given); the tests drive it with a stand-in.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import web

from mesa_llm_mobility.cognition.structured_output import schema_nodes

logger = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 1024
"""Answer tokens of a request that sets no ``max_tokens``."""

ANY_OBJECT = {"type": "object"}

GEMMA_STOP_PIECES = ("<end_of_turn>", "<eos>")
"""Pieces that end a Gemma answer (the turn's end, the end of text)."""


class PromptTooLongError(ValueError):
    """A prompt (with its answer's room) does not fit in the model's context."""


def render_gemma(messages: Sequence[Mapping[str, Any]]) -> str:
    """A chat in Gemma's template, ending where the model's answer starts.

    ``<bos><start_of_turn>user`` newline ``{system}`` blank line ``{user}<end_of_turn>``
    newline ``<start_of_turn>model`` newline: system messages open the first user turn (Gemma
    has no system role), ``assistant`` turns are the ``model``'s, ``tool`` results are told
    in a user turn. Contents are stripped, as Google's template does.

    Raises:
        ValueError: for a chat without a user message.
    """
    system = "\n\n".join(
        str(m.get("content") or "").strip() for m in messages if m["role"] == "system"
    )
    turns = [m for m in messages if m["role"] != "system"]
    if not any(m["role"] == "user" for m in turns):
        raise ValueError("a chat needs at least one user message")
    parts = ["<bos>"]
    for index, message in enumerate(turns):
        role = "model" if message["role"] == "assistant" else "user"
        content = str(message.get("content") or "").strip()
        if message["role"] == "tool":
            content = f"Tool result: {content}"
        if index == 0 and system:
            content = f"{system}\n\n{content}"
        parts.append(f"<start_of_turn>{role}\n{content}<end_of_turn>\n")
    parts.append("<start_of_turn>model\n")
    return "".join(parts)


def closed_objects(schema: Any) -> Any:
    """``schema`` with every object that allows no other keys said to allow none.

    JSON schema lets an object without ``additionalProperties`` take any other key, and
    llguidance follows it: a small model then writes ``"reason_1"``, ``"reason_2"``, ... to its
    token limit. llama.cpp's grammar closes such objects; so does this server.
    """
    closed = copy.deepcopy(schema)
    for node in schema_nodes(closed):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
    return closed


@dataclass(frozen=True)
class Generation:
    """One answer: its tokens, its text and why it ended (``stop``, ``length``, ``cancelled``).

    ``evaluated``: the prompt's tokens evaluated (those after the prefix already cached);
    ``prompt_s`` and ``answer_s``: the time of the prompt's evaluation and of the answer.
    """

    prompt_tokens: int
    tokens: list[int]
    text: str
    finish_reason: str
    evaluated: int = 0
    prompt_s: float = 0.0
    answer_s: float = 0.0


class Decoder(Protocol):
    """What the application needs of a model (see :class:`.local_decoding.LocalDecoder`)."""

    def tokenize(self, text: str) -> list[int]:
        """Tokens of a rendered prompt."""

    def grammar(self, schema: Mapping[str, Any]) -> str:
        """The decoding grammar of a JSON schema (``ValueError`` when it has none)."""

    def generate(
        self,
        prompt: list[int],
        *,
        grammar: str | None,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        cancelled: threading.Event | None,
    ) -> Generation:
        """Answer ``prompt``; stop at the next token once ``cancelled`` is set."""


class BadRequestError(ValueError):
    """A request this server cannot answer as sent (HTTP 400)."""


def answer_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request's ``response_format`` asks for, ``None`` for free text.

    Raises:
        BadRequestError: for a response format this server does not know.
    """
    response_format = body.get("response_format")
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) else ANY_OBJECT
    if kind == "json_object":
        schema = response_format.get("schema")
        return schema if isinstance(schema, dict) else ANY_OBJECT
    if kind == "text":
        return None
    raise BadRequestError(f"response_format type {kind!r} is not supported")


def _error(status: int, message: str) -> web.Response:
    payload = {"error": {"message": message, "type": "invalid_request_error"}}
    return web.json_response(payload, status=status)


class LocalModelApp:
    """The aiohttp application around one decoder and its queue.

    Args:
        decoder: The model.
        alias: The model name the server answers to.
    """

    def __init__(self, decoder: Decoder, alias: str) -> None:
        self.decoder = decoder
        self.alias = alias
        self._queue = asyncio.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode")
        self._ids = itertools.count(1)
        self.answered = 0
        """Requests answered."""
        self.cancelled = 0
        """Requests dropped because their client went away."""

    def application(self) -> web.Application:
        """The routes, with and without the ``/v1`` prefix."""
        app = web.Application(client_max_size=16 * 1024 * 1024)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/chat/completions", self.chat)
            app.router.add_get(f"{prefix}/models", self.models)
        app.router.add_get("/mlm/stats", self.stats)
        return app

    async def stats(self, request: web.Request) -> web.Response:
        """``GET /mlm/stats``: requests answered and dropped (their client went away)."""
        return web.json_response(
            {"answered": self.answered, "cancelled": self.cancelled}
        )

    async def models(self, request: web.Request) -> web.Response:
        """``GET /v1/models``."""
        entry = {"id": self.alias, "object": "model", "owned_by": "local"}
        return web.json_response({"object": "list", "data": [entry]})

    async def chat(self, request: web.Request) -> web.Response:
        """``POST /v1/chat/completions``: queued, decoded, answered (or dropped)."""
        try:
            body = json.loads(await request.read())
            if not isinstance(body, dict):
                raise BadRequestError("the request body must be a JSON object")
            if body.get("stream"):
                raise BadRequestError("streaming is not supported by this server")
            if body.get("tools"):
                raise BadRequestError("tools are not supported by this server")
            prompt_text = render_gemma(body.get("messages") or [])
            schema = answer_schema(body)
            grammar = None if schema is None else self.decoder.grammar(schema)
            options = {
                "max_tokens": int(body.get("max_tokens") or DEFAULT_MAX_TOKENS),
                "temperature": float(body.get("temperature") or 0.0),
                "seed": body.get("seed"),
            }
        except (ValueError, TypeError, KeyError) as error:
            return _error(400, str(error))
        prompt = self.decoder.tokenize(prompt_text)
        cancelled = threading.Event()
        try:
            async with self._queue:
                if request.transport is None or request.transport.is_closing():
                    raise asyncio.CancelledError  # the client went away while queued
                work = asyncio.get_running_loop().run_in_executor(
                    self._executor,
                    lambda: self.decoder.generate(
                        prompt, grammar=grammar, cancelled=cancelled, **options
                    ),
                )
                try:
                    generation = await asyncio.shield(work)
                except asyncio.CancelledError:
                    cancelled.set()  # the client went away: stop at the next token
                    await asyncio.wait([work])
                    raise
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        except PromptTooLongError as error:
            return _error(400, f"context length exceeded: {error}")
        payload: dict[str, Any] = {
            "id": f"chatcmpl-local-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.alias,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": generation.text},
                    "finish_reason": generation.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": generation.prompt_tokens,
                "completion_tokens": len(generation.tokens),
                "total_tokens": generation.prompt_tokens + len(generation.tokens),
            },
        }
        if body.get("mlm_echo_prompt"):
            payload["mlm_prompt"] = prompt_text
        self.answered += 1
        return web.json_response(payload)


def serve(decoder: Decoder, alias: str, host: str, port: int) -> None:
    """Serve ``decoder`` until SIGTERM or SIGINT (handlers of clients that go away are cancelled)."""
    app = LocalModelApp(decoder, alias).application()
    web.run_app(
        app,
        host=host,
        port=port,
        print=None,
        access_log=None,
        handler_cancellation=True,
    )
