"""One chat completion with bounded retries on transient failures, through either client.

A completion is sent by a :data:`ChatCall`: :func:`litellm_call` for any provider litellm knows,
or the direct pooled client of :mod:`~mesa_llm_mobility.cognition.openai_compatible` for
OpenAI-compatible servers. Both raise errors carrying an HTTP ``status_code`` and headers, so one
retry loop (:func:`complete`) serves both. Retries cover rate limits (429), server errors (5xx), timeouts and connection errors; they are
bounded both in attempts and in total time, with exponential backoff and full jitter. A
``Retry-After`` header (seconds) is honoured as the least wait, within the time budget. Other
errors (authentication, bad request, unknown model) are not retried: they would fail again.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from mesa_llm_mobility.cognition.kinds import Message
from mesa_llm_mobility.cognition.offline import import_litellm
from mesa_llm_mobility.cognition.redaction import redact
from mesa_llm_mobility.cognition.tool_calling import read_tool_calls

_RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds for transport retries.

    Attributes:
        max_attempts: Calls per completion, first included (>= 1).
        max_total_s: Wall-time budget for all attempts and waits of one completion.
        timeout_s: Timeout of one call (capped by what remains of ``max_total_s``).
        backoff_base_s: First backoff; doubles each retry, capped at ``backoff_max_s``.
        backoff_max_s: Largest backoff before jitter.
    """

    max_attempts: int = 4
    max_total_s: float = 120.0
    timeout_s: float = 60.0
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(
                f"RetryPolicy.max_attempts must be >= 1, got {self.max_attempts}"
            )
        for name in ("max_total_s", "timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(
                    f"RetryPolicy.{name} must be > 0, got {getattr(self, name)}"
                )
        if self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise ValueError("RetryPolicy backoff times must be >= 0")

    def backoff_s(self, retry: int, jitter: random.Random) -> float:
        """Full-jitter exponential backoff before retry number ``retry`` (1-based)."""
        return jitter.uniform(
            0.0, min(self.backoff_max_s, self.backoff_base_s * 2 ** (retry - 1))
        )


class TransportError(RuntimeError):
    """A completion failed for good (non-retryable error, or retries exhausted).

    Its message is redacted; the underlying provider error (``__cause__``) is not, so it is
    never shown or stored.
    """

    def __init__(
        self, message: str, attempts: int, *, format_rejected: bool = False
    ) -> None:
        super().__init__(redact(message))
        self.attempts = attempts
        self.format_rejected = format_rejected


@dataclass(frozen=True)
class Answer:
    """What one HTTP call answered: the assistant text, the tokens and their price.

    ``tool_calls``: the calls of a native tool-calling answer (``{"id", "name", "arguments"}``,
    see :func:`~mesa_llm_mobility.cognition.tool_calling.read_tool_calls`).
    """

    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    tool_calls: tuple[dict[str, str], ...] = ()


ChatCall = Callable[[Sequence[Message], Mapping[str, Any], float], Awaitable[Answer]]
"""``(messages, params, timeout_s) -> Answer``: one chat-completion call, no retries."""


@dataclass(frozen=True)
class Completion:
    """What one successful completion returned."""

    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    attempts: int
    latency_s: float
    tool_calls: tuple[dict[str, str], ...] = ()


def register_model_price(
    model: str, cost_per_token: tuple[float, float] | None
) -> None:
    """Tell litellm the price of ``model`` when it is not in its bundled cost map.

    A known model keeps litellm's price unless ``cost_per_token`` is given. An unknown one
    (``openai/<self-hosted>``, ``hosted_vllm/...``) is registered at ``cost_per_token`` or zero:
    without an entry, litellm searches its whole map for the name several times per call.
    """
    litellm = import_litellm()
    if cost_per_token is None:
        try:
            litellm.get_model_info(model)
        except Exception:  # litellm raises its own "not mapped" error types
            cost_per_token = (0.0, 0.0)
        else:
            return
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    entry = {
        "input_cost_per_token": float(cost_per_token[0]),
        "output_cost_per_token": float(cost_per_token[1]),
        "cache_creation_input_token_cost": 0.0,
        "cache_read_input_token_cost": 0.0,
        "litellm_provider": provider,
        "mode": "chat",
    }
    litellm.register_model({model: entry})


def is_retryable(error: BaseException) -> bool:
    """Whether a failed call is worth retrying (429, 5xx, timeouts, connection errors)."""
    if isinstance(
        error,
        asyncio.TimeoutError
        | TimeoutError
        | ConnectionError
        | aiohttp.ClientConnectionError
        | aiohttp.ClientPayloadError,
    ):
        return True
    litellm = import_litellm()
    if isinstance(error, litellm.Timeout | litellm.APIConnectionError):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in _RETRYABLE_STATUS or status >= 500)


def litellm_call(model: str, connection: Mapping[str, Any]) -> ChatCall:
    """A :data:`ChatCall` through ``litellm.acompletion`` (every provider litellm knows).

    Args:
        model: litellm model string.
        connection: ``api_base`` / ``api_key`` and provider options (never recorded).
    """
    litellm = import_litellm()

    async def call(
        messages: Sequence[Message], params: Mapping[str, Any], timeout: float
    ) -> Answer:
        response = await litellm.acompletion(
            model=model,
            messages=list(messages),
            timeout=timeout,
            max_retries=0,
            num_retries=0,
            **params,
            **connection,
        )
        return _answer(response, model)

    return call


async def complete(
    *,
    call: ChatCall,
    messages: Sequence[Message],
    params: Mapping[str, Any],
    policy: RetryPolicy,
    semaphore: asyncio.Semaphore,
    jitter: random.Random,
    format_rejected: Callable[[BaseException], bool] | None = None,
) -> Completion:
    """Send one completion through ``call`` with retries; each attempt holds one concurrency slot.

    Args:
        call: The client that sends one attempt (:func:`litellm_call` or the direct client).
        messages: Chat messages.
        params: Sampling parameters and the response format of this call.
        policy: Retry bounds.
        semaphore: The brain's concurrency limit.
        jitter: Source of backoff jitter (separate from the model's RNG).
        format_rejected: Tells an error that rejects the response format sent (while it is
            being probed); such an error is not retried and is raised with
            ``format_rejected`` set.

    Raises:
        TransportError: when the call fails for good, with the last error and attempt count.
    """
    started = time.monotonic()
    deadline = started + policy.max_total_s
    last_error: BaseException | None = None
    attempt = 0
    while attempt < policy.max_attempts:
        attempt += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        timeout = min(policy.timeout_s, remaining)
        try:
            async with semaphore:
                answer = await asyncio.wait_for(
                    call(messages, params, timeout), timeout=timeout + 1.0
                )
        except Exception as error:
            last_error = error
            if format_rejected is not None and format_rejected(error):
                raise TransportError(
                    _describe(error), attempt, format_rejected=True
                ) from error
            if not is_retryable(error):
                raise TransportError(_describe(error), attempt) from error
            wait = max(policy.backoff_s(attempt, jitter), retry_after_s(error))
            if attempt >= policy.max_attempts or time.monotonic() + wait >= deadline:
                break
            await asyncio.sleep(wait)
            continue
        return Completion(
            content=answer.content,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            cost_usd=answer.cost_usd,
            attempts=attempt,
            latency_s=time.monotonic() - started,
            tool_calls=answer.tool_calls,
        )
    reason = _describe(last_error) if last_error else "no time left for an attempt"
    raise TransportError(
        f"gave up after {attempt} attempt(s) in {time.monotonic() - started:.1f} s: {reason}",
        attempt,
    ) from last_error


def retry_after_s(error: BaseException) -> float:
    """Seconds the provider asked to wait before a retry (its ``Retry-After`` header), else 0.

    Only the delta-seconds form is read; an HTTP date or a malformed value counts as 0.
    """
    headers = (
        getattr(error, "litellm_response_headers", None)
        or getattr(error, "headers", None)
        or getattr(getattr(error, "response", None), "headers", None)
    )
    if headers is None:
        return 0.0
    try:
        value = float(headers.get("retry-after", 0) or 0)
    except (TypeError, ValueError, AttributeError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def _describe(error: BaseException) -> str:
    """The first line of an error, redacted (providers echo keys in their messages)."""
    text = redact(str(error)).strip()
    text = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {text[:300]}" if text else type(error).__name__


def _answer(response: Any, model: str) -> Answer:
    choice = response.choices[0]
    content = getattr(choice.message, "content", None) or ""
    usage = getattr(response, "usage", None)
    prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    return Answer(
        content=content,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=_cost_usd(model, prompt_tokens, completion_tokens),
        tool_calls=read_tool_calls(getattr(choice.message, "tool_calls", None)),
    )


def _cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """The price of the tokens by litellm's public ``cost_per_token``; 0 when it has none."""
    try:
        prompt_cost, completion_cost = import_litellm().cost_per_token(
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
    except Exception:  # litellm raises its own "not mapped" error types
        return 0.0
    return float(prompt_cost + completion_cost)
