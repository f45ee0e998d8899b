"""Structured outputs: the kind's JSON schema sent the way each provider family accepts it.

Providers that decode under a grammar make schema violations impossible: OpenAI and vLLM take
``response_format={"type": "json_schema", ...}``, llama.cpp's server takes
``{"type": "json_object", "schema": {...}}`` (and answers HTTP 500 to ``json_schema``), Ollama
takes ``format=<schema>``. A brain tries the best mode of its provider family first; when the
endpoint rejects it (HTTP 400/422, or a 5xx naming the format) it steps down the family's chain to
plain JSON mode, once per endpoint, and remembers the mode that worked
(:class:`ResponseModeNegotiator`; across processes in a
:class:`~mesa_llm_mobility.cognition.response_mode_cache.ResponseModeCache`). The mode of every
decision is recorded in the ledger (``response_mode``). A kind may send each request a schema of
its own, tightened by the request's context (``DecisionKind.request_schema``).

| mode | request parameters |
| --- | --- |
| ``json_schema`` | ``response_format={"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` |
| ``json_object_schema`` | ``response_format={"type": "json_object", "schema": <schema>}`` |
| ``ollama_format`` | ``format=<schema>`` |
| ``json_object`` | ``response_format={"type": "json_object"}`` |
| ``none`` | nothing (the schema stays in the prompt) |
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Literal, NamedTuple

from mesa_llm_mobility.cognition.kinds import DecisionKind
from mesa_llm_mobility.cognition.offline import import_litellm
from mesa_llm_mobility.cognition.response_mode_cache import ResponseModeCache
from mesa_llm_mobility.cognition.transport import TransportError

ResponseMode = Literal[
    "json_schema", "json_object_schema", "ollama_format", "json_object", "none"
]
RESPONSE_MODES: tuple[str, ...] = (
    "json_schema",
    "json_object_schema",
    "ollama_format",
    "json_object",
    "none",
)
STRUCTURED_OUTPUT_CHOICES: tuple[str, ...] = ("auto", *RESPONSE_MODES)

_FORMAT_WORDS = ("response_format", "json_schema", "schema", "format", "grammar")
_REJECTING_STATUS = frozenset({400, 422})


def mode_chain(
    model: str, *, openai_compatible: bool, structured_output: str = "auto"
) -> tuple[str, ...]:
    """The response modes a brain tries, best first, for its provider family.

    Args:
        model: The litellm model string.
        openai_compatible: Whether the endpoint is a self-hosted or gateway OpenAI-compatible
            server (``openai/...`` or ``hosted_vllm/...`` with an ``api_base``).
        structured_output: ``"auto"`` for the family's chain, or one mode to use alone.

    Raises:
        ValueError: for an unknown ``structured_output``.
    """
    if structured_output not in STRUCTURED_OUTPUT_CHOICES:
        raise ValueError(
            "LLMBrain.structured_output must be one of "
            f"{', '.join(STRUCTURED_OUTPUT_CHOICES)}, got {structured_output!r}"
        )
    if structured_output != "auto":
        return (structured_output,)
    if openai_compatible:  # vLLM, LM Studio and gateways take json_schema; llama.cpp the schema in json_object
        return ("json_schema", "json_object_schema", "json_object", "none")
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    if provider in {"ollama", "ollama_chat"}:
        return ("ollama_format", "json_object")
    try:
        supports_schema = bool(import_litellm().supports_response_schema(model=model))
    except Exception:  # litellm raises its own "not mapped" error types
        supports_schema = False
    return ("json_schema", "json_object") if supports_schema else ("json_object",)


def response_params(
    mode: str, kind: DecisionKind[Any, Any], schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The request parameters that ask for ``kind``'s output schema in ``mode``.

    Args:
        mode: One of :data:`RESPONSE_MODES`.
        kind: The decision kind.
        schema: The request's own schema (:meth:`DecisionKind.schema_for`); ``None``: the
            kind's.
    """
    schema = kind.json_schema() if schema is None else schema
    if mode == "json_schema":
        strict = strict_schema(schema)
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(kind.name),
                    "schema": strict if strict is not None else schema,
                    "strict": strict is not None,
                },
            }
        }
    if mode == "json_object_schema":
        return {
            "response_format": {"type": "json_object", "schema": grammar_safe(schema)}
        }
    if mode == "ollama_format":
        return {"format": schema}
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    if mode == "none":
        return {}
    raise ValueError(f"unknown response mode {mode!r}")


GRAMMAR_MAX_LENGTH = 64
"""Longest ``maxLength`` / ``maxItems`` a grammar-constrained server is given (see below)."""


def grammar_safe(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the large length bounds a grammar cannot hold.

    llama.cpp turns a schema into a grammar with one optional rule per allowed character, so a
    string of ``maxLength`` 1,200 (the evacuation memory role) makes a grammar it fails to
    parse, after which the server crashes. Bounds above :data:`GRAMMAR_MAX_LENGTH` are left
    out of what the server is sent; the kind's own validation still enforces them (an answer
    too long is repaired or falls back like any invalid one).
    """
    safe = copy.deepcopy(schema)
    for node in schema_nodes(safe):
        for bound in ("maxLength", "maxItems"):
            if isinstance(node.get(bound), int) and node[bound] > GRAMMAR_MAX_LENGTH:
                del node[bound]
    return safe


def schema_name(name: str) -> str:
    """A kind's name as OpenAI's ``json_schema.name`` allows it (``[A-Za-z0-9_-]``, <= 64)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"


def schema_nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every object (mapping) inside a JSON schema, the root first; change them freely."""
    nodes = [schema]
    while nodes:
        node = nodes.pop()
        if isinstance(node, list):
            nodes.extend(node)
        elif isinstance(node, dict):
            yield node
            nodes.extend(node.values())


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema in OpenAI's strict form, or ``None`` when it has no strict form.

    Strict mode needs every object closed (``additionalProperties: false``) and every property
    required; a schema with optional fields (defaults) keeps its meaning only unstrict.
    """
    strict = copy.deepcopy(schema)
    for node in schema_nodes(strict):
        if node.get("type") == "object" and "properties" in node:
            if set(node.get("required", ())) != set(node["properties"]):
                return None
            if node.get("additionalProperties") not in (None, False):
                return None
            node["additionalProperties"] = False
    return strict


def rejects_format(error: BaseException) -> bool:
    """Whether a failed call means the endpoint does not take the response format sent.

    HTTP 400 and 422 reject the request as sent; a 5xx counts only when it names the format
    (llama.cpp's server answers 500 to ``json_schema``), since a 5xx is otherwise transient.
    """
    status = getattr(error, "status_code", None)
    message = str(error)
    if status in _REJECTING_STATUS:
        return True
    text = message.lower()
    return (
        isinstance(status, int)
        and status >= 500
        and any(word in text for word in _FORMAT_WORDS)
    )


class RejectedCalls(NamedTuple):
    """The HTTP calls a completion spent on response modes the endpoint rejected."""

    attempts: int = 0
    answered: int = 0


class ResponseModeNegotiator:
    """Finds, once per endpoint, the best response mode it accepts, and remembers it.

    Until a mode is confirmed by an answer, one request at a time probes (the others wait), so
    a batch of 64 does not send 64 rejected probes. A rejection steps down the chain. With a
    ``cache``, probing starts at the mode the endpoint accepted in an earlier process (still
    probed: a rejection steps down as ever), and a confirmed mode is written to it.

    Args:
        chain: Modes to try, best first (:func:`mode_chain`).
        cache: Where the modes of endpoints are remembered across processes, or ``None``.
        endpoint: ``(model, api_base)``, the cache's key.
    """

    def __init__(
        self,
        chain: tuple[str, ...],
        *,
        cache: ResponseModeCache | None = None,
        endpoint: tuple[str, str | None] = ("", None),
    ) -> None:
        if not chain:
            raise ValueError("ResponseModeNegotiator needs at least one mode")
        self.chain = chain
        self._index = 0
        self.confirmed = len(chain) == 1
        self.rejected: list[str] = []
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._cache = cache
        self._cache_key = ResponseModeCache.key(*endpoint, chain)
        remembered = (
            None if cache is None or self.confirmed else cache.get(self._cache_key)
        )
        if remembered in chain:
            self._index = chain.index(remembered)
        self.remembered = remembered if remembered in chain else None
        """The mode an earlier process found (probing starts there), or ``None``."""

    @property
    def mode(self) -> str:
        """The mode in use (the confirmed one, or the next to probe)."""
        return self.chain[self._index]

    async def send[T](
        self, attempt: Callable[[str], Awaitable[T]]
    ) -> tuple[T, str, RejectedCalls]:
        """Run ``attempt(mode)`` in the best accepted mode.

        Returns:
            ``(result, mode, rejected)``: the HTTP calls spent on rejected modes.

        ``attempt`` raises a :class:`TransportError` with ``format_rejected`` set when the
        endpoint rejected the mode (see :func:`rejects_format`).

        Raises:
            TransportError: from ``attempt``; a rejection only for the chain's last mode.
        """
        spent = RejectedCalls()
        while not self.confirmed:
            async with self._lock():
                if self.confirmed:
                    break
                mode = self.mode
                try:
                    result = await attempt(mode)
                except TransportError as error:
                    if not error.format_rejected or self._index == len(self.chain) - 1:
                        error.attempts += spent.attempts
                        error.answered += spent.answered
                        raise
                    spent = RejectedCalls(
                        spent.attempts + error.attempts,
                        spent.answered + error.answered,
                    )
                    self.rejected.append(mode)
                    self._index += 1
                    continue
                self.confirmed = True
                if self._cache is not None and mode != self.remembered:
                    self._cache.put(self._cache_key, mode)
                return result, mode, spent
        mode = self.mode
        return await attempt(mode), mode, spent

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop not in self._locks:
            self._locks[loop] = asyncio.Lock()
        return self._locks[loop]
