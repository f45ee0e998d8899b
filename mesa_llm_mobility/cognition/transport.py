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


DEFAULT_MAX_TOTAL_S = 120.0
"""The least default time budget of one call's attempts and backoffs."""


def call_budget_s(timeout_s: float, max_total_s: float | None) -> float:
    """The time budget of one call's attempts and backoffs.

    Args:
        timeout_s: The timeout of one attempt.
        max_total_s: The budget asked for, or ``None``: :data:`DEFAULT_MAX_TOTAL_S`, or twice
            the timeout when that is more (a long timeout is never cut short by the default).

    Raises:
        ValueError: for a budget below the timeout, which would cut every attempt short.
    """
    if max_total_s is None:
        return max(DEFAULT_MAX_TOTAL_S, 2 * timeout_s)
    if max_total_s < timeout_s:
        raise ValueError(
            f"the LLM call budget --max-total / MLM_MAX_TOTAL_S ({max_total_s:g} s) is below "
            f"the timeout of one call --timeout / MLM_TIMEOUT_S ({timeout_s:g} s), which it "
            f"would cut short: raise --max-total to at least {timeout_s:g} s (left out, it is "
            f"{DEFAULT_MAX_TOTAL_S:g} s or twice the timeout) or lower --timeout"
        )
    return max_total_s


class TransportError(RuntimeError):
    """A completion failed for good (non-retryable error, or retries exhausted).

    Its message is redacted; the underlying provider error (``__cause__``) is not, so it is
    never shown or stored.

    Attributes:
        attempts: HTTP calls started for the completion.
        answered: Of those, the calls the server answered (an HTTP status came back).
        status_code: The HTTP status of the last error, when the server answered.
        latency_s: Wall time from the first attempt to giving up.
        format_rejected: The endpoint rejected the response format sent (while probing it).
    """

    def __init__(
        self,
        message: str,
        attempts: int,
        *,
        answered: int = 0,
        status_code: int | None = None,
        latency_s: float = 0.0,
        format_rejected: bool = False,
    ) -> None:
        super().__init__(redact(message))
        self.attempts = attempts
        self.answered = answered
        self.status_code = status_code
        self.latency_s = latency_s
        self.format_rejected = format_rejected


@dataclass(frozen=True)
class Answer:
    """What one HTTP call answered: the assistant text, the tokens and their price.

    ``tool_calls``: the calls of a native tool-calling answer (``{"id", "name", "arguments"}``,
    see :func:`~mesa_llm_mobility.cognition.tool_calling.read_tool_calls`). ``finish_reason``:
    why the model stopped (``"length"``: cut off at the token limit), when the server says.
    """

    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    tool_calls: tuple[dict[str, str], ...] = ()
    finish_reason: str | None = None


ChatCall = Callable[[Sequence[Message], Mapping[str, Any], float], Awaitable[Answer]]
"""``(messages, params, timeout_s) -> Answer``: one chat-completion call, no retries."""


@dataclass(frozen=True)
class Completion:
    """What one successful completion returned.

    ``attempts`` are the HTTP calls started for it, ``answered`` those the server answered
    (the last one, and failed attempts that got an HTTP status back).
    """

    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    attempts: int
    latency_s: float
    tool_calls: tuple[dict[str, str], ...] = ()
    answered: int = 0
    finish_reason: str | None = None


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
    abandoned: Callable[[], str | None] | None = None,
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
        abandoned: Says why no (further) attempt should be made, e.g. the endpoint was found
            unusable meanwhile (checked before each attempt, once a slot is free); ``None``
            to go on.

    Raises:
        TransportError: when the call fails for good, with the last error, the attempts
            started, those the server answered, and the time spent.
    """
    started = time.monotonic()
    deadline = started + policy.max_total_s
    last_error: BaseException | None = None
    attempt = answered = 0

    def failure(message: str, **flags: Any) -> TransportError:
        status = getattr(last_error, "status_code", None)
        return TransportError(
            message,
            attempt,
            answered=answered,
            status_code=status if isinstance(status, int) else None,
            latency_s=time.monotonic() - started,
            **flags,
        )

    while attempt < policy.max_attempts:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        timeout = min(policy.timeout_s, remaining)
        async with semaphore:
            reason = abandoned() if abandoned is not None else None
            if reason is not None:
                raise failure(f"not sent: {reason}") from last_error
            attempt += 1
            try:
                # the client's own timeout closes the request; this one only backs it up
                async with asyncio.timeout(timeout + 1.0):
                    answer = await call(messages, params, timeout)
            except Exception as error:
                last_error = error
                answered += reached_server(error)
            else:
                return Completion(
                    content=answer.content,
                    prompt_tokens=answer.prompt_tokens,
                    completion_tokens=answer.completion_tokens,
                    cost_usd=answer.cost_usd,
                    attempts=attempt,
                    latency_s=time.monotonic() - started,
                    tool_calls=answer.tool_calls,
                    answered=answered + 1,
                    finish_reason=answer.finish_reason,
                )
        error = last_error
        if format_rejected is not None and format_rejected(error):
            raise failure(_describe(error), format_rejected=True) from error
        if not is_retryable(error):
            raise failure(_describe(error)) from error
        wait = max(policy.backoff_s(attempt, jitter), retry_after_s(error))
        if attempt >= policy.max_attempts or time.monotonic() + wait >= deadline:
            break
        await asyncio.sleep(wait)
    reason = _describe(last_error) if last_error else "no time left for an attempt"
    raise failure(
        f"gave up after {attempt} attempt(s) in {time.monotonic() - started:.1f} s: {reason}"
    ) from last_error


def reached_server(error: BaseException) -> bool:
    """Whether a failed attempt was answered by the server (an HTTP status came back).

    Timeouts and connection failures count as unanswered: such a request may or may not
    have reached the server, so the calls a server received lie between the calls answered
    and the calls started.
    """
    if isinstance(
        error,
        asyncio.TimeoutError | TimeoutError | ConnectionError | aiohttp.ClientError,
    ):
        return False
    litellm = import_litellm()
    if isinstance(error, litellm.Timeout | litellm.APIConnectionError):
        return False
    if hasattr(error, "litellm_response_headers"):
        # litellm turns a lost connection into a 500 of its own making, without headers
        return error.litellm_response_headers is not None
    return isinstance(getattr(error, "status_code", None), int)


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
        finish_reason=getattr(choice, "finish_reason", None),
    )


def _cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """The price of the tokens by litellm's public ``cost_per_token``; 0 when it has none."""
    return price_tokens(model, prompt_tokens, completion_tokens) or 0.0


def price_tokens(
    model: str, prompt_tokens: int, completion_tokens: int
) -> float | None:
    """USD for the tokens by litellm's cost map (``cost_per_token``), ``None`` without a price."""
    try:
        prompt_cost, completion_cost = import_litellm().cost_per_token(
            model=model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )
    except Exception:  # litellm raises its own "not mapped" error types
        return None
    return float(prompt_cost + completion_cost)
