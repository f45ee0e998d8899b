"""A direct, pooled async HTTP client for OpenAI-compatible chat-completion servers.

litellm answers every provider, but its ``acompletion`` spends about 4 ms of client CPU per call
(model-info lookups, cost and logging objects, a thread executor), which caps one core near 230
calls/s. For servers that speak the OpenAI REST API themselves (vLLM, llama.cpp, LM Studio,
Ollama's ``/v1``, any gateway), this module posts the same request body straight to
``{api_base}/chat/completions`` over one pooled aiohttp session per event loop.

It raises errors shaped like litellm's for the retry loop of
:func:`~mesa_llm_mobility.cognition.transport.complete`: a :class:`ProviderHTTPError` carries the
HTTP ``status_code`` and the response ``headers`` (``Retry-After``), connection failures stay
aiohttp's own (retryable), so retries, budgets, redaction and the ledger behave as on litellm.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import aiohttp

from mesa_llm_mobility.cognition.background_loop import (
    is_background_loop,
    run_in_background,
)
from mesa_llm_mobility.cognition.kinds import Message
from mesa_llm_mobility.cognition.offline import import_litellm
from mesa_llm_mobility.cognition.tool_calling import read_tool_calls
from mesa_llm_mobility.cognition.transport import Answer

ClientChoice = Literal["auto", "direct", "litellm"]
"""Which client an :class:`~mesa_llm_mobility.cognition.llm_brain.LLMBrain` sends through."""

CLIENT_CHOICES: tuple[str, ...] = ("auto", "direct", "litellm")

DIRECT_PROVIDERS = {"openai": "OPENAI_API_KEY", "hosted_vllm": "HOSTED_VLLM_API_KEY"}
"""litellm provider prefixes the direct client serves -> the variable litellm reads the key from."""


_ENCODED_PARAMS = 256
"""Parameter objects whose JSON a direct client keeps (one per kind and response mode)."""


class ProviderHTTPError(RuntimeError):
    """An HTTP error answer of the server (its status, headers and error message)."""

    def __init__(
        self, status_code: int, message: str, headers: Mapping[str, str]
    ) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.headers = headers


class BadRequestError(ProviderHTTPError):
    """HTTP 400 or 422: the request as sent is refused (not retried)."""


class AuthenticationError(ProviderHTTPError):
    """HTTP 401 or 403: the key is missing, wrong or not allowed (not retried)."""


class NotFoundError(ProviderHTTPError):
    """HTTP 404: no such model or path (not retried)."""


class RateLimitError(ProviderHTTPError):
    """HTTP 429: too many requests (retried, honouring ``Retry-After``)."""


class InternalServerError(ProviderHTTPError):
    """HTTP 5xx: the server failed (retried)."""


_ERRORS_BY_STATUS: dict[int, type[ProviderHTTPError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    422: BadRequestError,
    429: RateLimitError,
}


def http_error(
    status: int, message: str, headers: Mapping[str, str]
) -> ProviderHTTPError:
    """The error for an HTTP error answer, named like litellm's (``RateLimitError``, ...)."""
    kind = _ERRORS_BY_STATUS.get(
        status, InternalServerError if status >= 500 else ProviderHTTPError
    )
    return kind(status, message, headers)


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model string (``"openai"`` when it has none)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def uses_direct_client(model: str, api_base: str | None, client: str) -> bool:
    """Whether a brain for ``model`` at ``api_base`` sends through :class:`DirectClient`.

    ``"auto"`` takes it for ``openai/...`` and ``hosted_vllm/...`` models with an ``api_base``
    (a self-hosted or gateway server); ``"direct"`` forces it (an ``api_base`` is then
    required); ``"litellm"`` never takes it.

    Raises:
        ValueError: for an unknown choice, or ``"direct"`` without an ``api_base`` or for a
            provider that does not speak the OpenAI API.
    """
    if client not in CLIENT_CHOICES:
        raise ValueError(
            f"LLMBrain.client must be one of {', '.join(CLIENT_CHOICES)}, got {client!r}"
        )
    speaks_openai = is_openai_compatible(model, api_base)
    if client == "direct" and not speaks_openai:
        raise ValueError(
            "LLMBrain.client='direct' needs an 'openai/<model>' or 'hosted_vllm/<model>' "
            f"model and an api_base, got model {model!r} and api_base {api_base!r}"
        )
    return client == "direct" or (client == "auto" and speaks_openai)


def is_openai_compatible(model: str, api_base: str | None) -> bool:
    """Whether ``model`` at ``api_base`` is a server speaking the OpenAI REST API itself."""
    return bool(api_base) and "/" in model and provider_of(model) in DIRECT_PROVIDERS


class DirectClient:
    """Chat completions posted straight to an OpenAI-compatible server.

    Args:
        model: ``"openai/<name>"`` or ``"hosted_vllm/<name>"``; ``<name>`` is sent as the model.
        api_base: The server's base URL (``http://host:port/v1``).
        api_key: Bearer token; ``None`` reads the provider's variable as litellm would
            (``OPENAI_API_KEY``, ``HOSTED_VLLM_API_KEY``), else sends none.
    """

    def __init__(self, model: str, api_base: str, api_key: str | None) -> None:
        self.model = model
        self.url = api_base.rstrip("/") + "/chat/completions"
        self._model_name = model.split("/", 1)[1]
        key = api_key or os.environ.get(DIRECT_PROVIDERS[provider_of(model)])
        self._headers = {"Content-Type": "application/json"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._prices = _prices(model)
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._encoded: dict[int, tuple[Mapping[str, Any], str]] = {}

    def __repr__(self) -> str:
        return f"DirectClient(url={self.url!r})"

    async def __call__(
        self, messages: Sequence[Message], params: Mapping[str, Any], timeout: float
    ) -> Answer:
        """Send one chat completion (a :data:`~mesa_llm_mobility.cognition.transport.ChatCall`).

        Raises:
            ProviderHTTPError: for an HTTP error answer, or a 200 whose body is no completion.
            aiohttp.ClientError: for connection failures (retryable).
        """
        session = self._session()
        async with session.post(
            self.url,
            data=self._body(messages, params),
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            text = await response.text()
            if response.status >= 400:
                raise http_error(
                    response.status, _error_message(text), response.headers
                )
        return self._answer(text, response.headers)

    def _body(self, messages: Sequence[Message], params: Mapping[str, Any]) -> str:
        """The request body's JSON; the parameters' part (a response schema) encoded once.

        A brain passes the same parameters object for every request of a kind, so its JSON is
        kept by identity (the object held with it, so that its id is not reused).
        """
        held = self._encoded.get(id(params))
        if held is None or held[0] is not params:
            held = (params, json.dumps(dict(params))[1:-1])
            if len(self._encoded) >= _ENCODED_PARAMS:
                self._encoded.clear()
            self._encoded[id(params)] = held
        head = f'{{"model":{json.dumps(self._model_name)},"messages":{json.dumps(list(messages))}'
        return f"{head},{held[1]}}}" if held[1] else f"{head}}}"

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)
        if session is None or session.closed:
            # the brain's semaphore bounds the calls in flight; the pool must not bound them again
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            session = aiohttp.ClientSession(connector=connector)
            self._sessions[loop] = session
        return session

    async def release_loop(self) -> None:
        """Close the session of the running loop unless it is the shared brain loop.

        A batch awaited on the caller's own loop (``asyncio.run(brain.adecide_all(...))``)
        must not leave a session bound to a loop that is about to close.
        """
        loop = asyncio.get_running_loop()
        if is_background_loop(loop):
            return
        session = self._sessions.pop(loop, None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Close the pooled sessions (the shared loop's from any other thread)."""
        sessions, self._sessions = self._sessions, {}
        for loop, session in sessions.items():
            if session.closed or loop.is_closed():
                continue
            if is_background_loop(loop):
                run_in_background(session.close())

    def _answer(self, text: str, headers: Mapping[str, str]) -> Answer:
        try:
            payload = json.loads(text)
            choice = payload["choices"][0]
            message = choice["message"]
            content = message.get("content") or ""
            tool_calls = read_tool_calls(message.get("tool_calls"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise InternalServerError(
                502,
                f"the server's answer is not a chat completion: {text[:200]!r}",
                headers,
            ) from None
        usage = payload.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
        input_price, output_price = self._prices
        return Answer(
            content=content if isinstance(content, str) else json.dumps(content),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=prompt_tokens * input_price + completion_tokens * output_price,
            tool_calls=tool_calls,
            finish_reason=choice.get("finish_reason"),
        )


def _error_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's first 300 chars."""
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return text[:300]
    if isinstance(error, Mapping):
        return str(error.get("message") or error)[:300]
    return str(error or text)[:300]


def _prices(model: str) -> tuple[float, float]:
    """USD per (input, output) token from litellm's cost map, looked up once per client."""
    try:
        info = import_litellm().get_model_info(model)
    except Exception:  # litellm raises its own "not mapped" error types
        return 0.0, 0.0
    return (
        float(info.get("input_cost_per_token") or 0.0),
        float(info.get("output_cost_per_token") or 0.0),
    )
