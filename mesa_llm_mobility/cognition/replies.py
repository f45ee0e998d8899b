"""Scripted replies of the local LLM server: answers, and the failures real providers show.

A :data:`Responder` maps a chat-completion request body to a :data:`Reply`: assistant content, or
a :class:`Fault` (malformed JSON, a schema violation, an HTTP error, a hang, a dropped
connection), or :class:`ToolCalls` (an answer calling tools, for native tool calling). :func:`with_faults` mixes faults into any responder, :func:`provider_faults` is one
of each failure for soak tests. :class:`~mesa_llm_mobility.cognition.testing.FakeLLMServer`
serves them.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

FaultKind = Literal[
    "malformed_json", "schema_violation", "cut_off", "http", "hang", "reset"
]


@dataclass(frozen=True, slots=True)
class Fault:
    """A scripted failure, served in place of a normal assistant reply.

    Build instances with the classmethod constructors rather than directly.

    Attributes:
        kind: Which failure to simulate.
        content: Assistant content sent for the 200-OK kinds (``malformed_json``,
            ``schema_violation``, ``cut_off``, and ``hang`` once its sleep is over).
        status: HTTP status code (only meaningful for ``http``).
        message: Error message placed in the OpenAI-style error body (``http`` only).
        seconds: How long a ``hang`` sleeps before answering.
        retry_after: Value of the ``retry-after`` response header, or ``None`` for no header
            (``http`` only).
    """

    kind: FaultKind
    content: str = ""
    status: int = 200
    message: str = ""
    seconds: float = 0.0
    retry_after: float | None = None

    @classmethod
    def malformed_json(cls, content: str = '{"oops": ') -> Fault:
        """A 200-OK completion whose assistant content is truncated, unparsable JSON.

        Args:
            content: The broken content to send.

        Returns:
            The fault.
        """
        return cls(kind="malformed_json", content=content)

    @classmethod
    def cut_off(cls, content: str = '{"activities": [{"facility": "Ho') -> Fault:
        """A 200-OK completion cut off at the token limit (``finish_reason: "length"``).

        Args:
            content: What the model wrote before the limit.

        Returns:
            The fault.
        """
        return cls(kind="cut_off", content=content)

    @classmethod
    def schema_violation(cls, content: str = '{"unexpected_field": true}') -> Fault:
        """A 200-OK completion whose content is a valid JSON object matching no real schema.

        Args:
            content: The well-formed but wrong content to send.

        Returns:
            The fault.
        """
        return cls(kind="schema_violation", content=content)

    @classmethod
    def http(
        cls,
        status: int,
        message: str = "Simulated provider error",
        *,
        retry_after: float | None = None,
    ) -> Fault:
        """An HTTP error response with an OpenAI-style body ``{"error": {...}}``.

        Args:
            status: HTTP status code, 400-599 (e.g. 429 or 500).
            message: Human-readable error message. ``{api_key}`` in it is replaced by the
                request's bearer token, as providers echo keys (OpenAI's 401 says
                "Incorrect API key provided: sk-..."): the redaction tests need that.
            retry_after: Seconds to announce in a ``retry-after`` header. For 429 it defaults to
                ``0`` (so clients that honour it retry immediately); otherwise no header is sent
                unless given.

        Returns:
            The fault.

        Raises:
            ValueError: If ``status`` is not an HTTP error status.
        """
        if not 400 <= status <= 599:
            raise ValueError(f"HTTP fault status must be in 400..599, got {status}")
        if retry_after is None and status == 429:
            retry_after = 0
        return cls(kind="http", status=status, message=message, retry_after=retry_after)

    @classmethod
    def rate_limited(
        cls, retry_after: float | None, message: str = "Rate limit reached"
    ) -> Fault:
        """A 429 answer with a ``retry-after`` header of ``retry_after`` seconds, or none.

        Args:
            retry_after: Seconds to announce, or ``None`` for a 429 without the header.
            message: Human-readable error message.

        Returns:
            The fault.
        """
        return cls(kind="http", status=429, message=message, retry_after=retry_after)

    @classmethod
    def reset(cls) -> Fault:
        """The connection is dropped without an answer (a proxy or server crash mid-request).

        Returns:
            The fault.
        """
        return cls(kind="reset")

    @classmethod
    def hang(cls, seconds: float = 3600.0, content: str = "{}") -> Fault:
        """A request that stalls, i.e. outlives any sensible client timeout.

        The handler sleeps ``seconds`` and then answers normally with ``content``. A hung handler
        is cancelled when the client disconnects or when the server stops.

        Args:
            seconds: How long to stall before answering.
            content: Assistant content sent if the client is still waiting afterwards.

        Returns:
            The fault.
        """
        return cls(kind="hang", seconds=seconds, content=content)


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """An assistant answer that calls tools (OpenAI ``tool_calls``, ``finish_reason="tool_calls"``).

    Attributes:
        calls: ``(tool name, arguments)`` per call; arguments as a mapping (sent as its JSON)
            or as raw text (to send malformed JSON).
        content: Assistant text sent along (usually none).
    """

    calls: tuple[tuple[str, Mapping[str, Any] | str], ...]
    content: str | None = None

    @classmethod
    def of(cls, *calls: tuple[str, Mapping[str, Any] | str]) -> ToolCalls:
        """The answer calling ``calls`` in order, e.g. ``ToolCalls.of(("travel_time", {...}))``."""
        return cls(tuple(calls))

    def message(self, first_id: int) -> dict[str, Any]:
        """The assistant message, call ids numbered from ``first_id``."""
        return {
            "role": "assistant",
            "content": self.content,
            "tool_calls": [
                {
                    "id": f"call_{first_id + number}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
                for number, (name, arguments) in enumerate(self.calls)
            ],
        }


Reply = str | Fault | ToolCalls
"""What the script and the responder produce: assistant content, a :class:`Fault`, or
:class:`ToolCalls`."""


def offers_tools(body: Mapping[str, Any]) -> bool:
    """Whether a request offers tools the model may call now (``tool_choice`` not ``"none"``)."""
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


def tool_results(body: Mapping[str, Any]) -> list[str]:
    """The contents of the ``tool`` messages of a request (answers to earlier calls)."""
    return [
        str(message.get("content"))
        for message in body.get("messages") or ()
        if isinstance(message, Mapping) and message.get("role") == "tool"
    ]


Responder = Callable[[dict[str, Any]], Reply]
"""Callable mapping a parsed chat-completion request body to a :data:`Reply`."""


def json_content(obj: Any) -> str:
    """Serialise ``obj`` as assistant message content (a JSON string).

    Args:
        obj: Any JSON-serialisable value.

    Returns:
        ``json.dumps(obj)``.
    """
    return json.dumps(obj)


def provider_faults(
    *, retry_after_s: float = 0.05, hang_s: float = 30.0
) -> tuple[Fault, ...]:
    """One of each failure real providers show, for :func:`with_faults` in soak tests.

    Truncated JSON, a schema violation, 429 with ``Retry-After`` and without, a 500 and a 400
    that echo the key (as OpenAI's 401 does), a hang of ``hang_s`` (meant to outlive the
    client's timeout) and a dropped connection. The 400 (a request refused, not retried) stands
    for the refusals a run survives; a 401, 403 or 404 stops an LLM run (see
    :mod:`~mesa_llm_mobility.cognition.endpoint_health`), so it is no fault to mix in.

    Args:
        retry_after_s: The ``Retry-After`` of the first 429.
        hang_s: How long the hung request stalls.

    Returns:
        The faults, in the order they are served.
    """
    return (
        Fault.malformed_json('{"activities": [{"facility": '),
        Fault.schema_violation(),
        Fault.rate_limited(retry_after_s),
        Fault.rate_limited(None),
        Fault.http(500, "upstream failed for credentials {api_key}"),
        Fault.hang(hang_s),
        Fault.reset(),
        Fault.http(400, "Invalid request: context length exceeded for key {api_key}"),
    )


def with_faults(responder: Responder, faults: Sequence[Reply], every: int) -> Responder:
    """Wrap a responder so that every ``every``-th request gets the next of ``faults`` instead.

    The faults are served in turn, cycling (request ``every`` gets ``faults[0]``, request
    ``2 * every`` gets ``faults[1]``, ...), the other requests are answered by ``responder``.
    A soak test mixes every kind of failure into a whole run this way (a fault may be any
    :data:`Reply`, e.g. a malformed :class:`ToolCalls`).

    Args:
        responder: The normal answers.
        faults: Failures to inject, in turn.
        every: Period of the injection (>= 1; 1 makes every request fail).

    Returns:
        The wrapped responder (thread-safe).

    Raises:
        ValueError: If ``every`` < 1 or ``faults`` is empty.
    """
    if every < 1 or not faults:
        raise ValueError("with_faults needs every >= 1 and at least one fault")
    counter = itertools.count(1)
    lock = threading.Lock()
    turns = itertools.cycle(faults)

    def respond(body: dict[str, Any]) -> Reply:
        with lock:
            n = next(counter)
            fault = next(turns) if n % every == 0 else None
        return fault if fault is not None else responder(body)

    return respond
