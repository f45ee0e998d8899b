"""The LLM brain: any litellm model answers decision requests, validated, repaired or replaced.

For a batch of requests the brain renders each prompt, answers what it can from the replay index,
and sends the rest concurrently through ``litellm.acompletion`` under one semaphore. Each answer
is parsed (tolerant JSON), validated by the kind's schema and domain validator, and on failure the
model is re-prompted with the exact errors (at most ``max_repairs`` times). A request that still has
no valid answer, or whose transport failed for good, is answered by the kind's rule policy and
recorded as a ``fallback`` with its reason. Fallbacks are applied in request order after the
batch, so the rule policies draw from the model's RNG deterministically whatever order the HTTP
answers arrived in. A request made with ``on_invalid="reject"`` gets no repair round and no
fallback: its first invalid answer (or failed call) is recorded as ``rejected`` with the reason.

A request's own ``sampling`` parameters are merged over the brain's; ``reasoning_effort`` is sent
only to models that support it (``litellm.supports_reasoning``, or ``supports_reasoning=True``).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mesa_llm_mobility.cognition.background_loop import run_in_background
from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import (
    DecisionRequest,
    DecisionResult,
    Message,
    Outcome,
    RoundErrors,
    RulePolicyError,
)
from mesa_llm_mobility.cognition.ledger import (
    Ledger,
    ReplayIndex,
    decision_record,
    messages_hash,
    request_key,
)
from mesa_llm_mobility.cognition.offline import import_litellm
from mesa_llm_mobility.cognition.redaction import (
    install_log_redaction,
    redact,
    register_secret,
)
from mesa_llm_mobility.cognition.transport import (
    RetryPolicy,
    TransportError,
    complete,
    register_model_price,
)

logger = logging.getLogger(__name__)

REPAIR_INSTRUCTION = (
    "Your previous answer could not be accepted:\n{errors}\n"
    "Reply again with only the corrected JSON object, fixing every error listed."
)


@dataclass
class _Exchange:
    """What happened between the brain and the model for one request."""

    output: Any = None
    outcome: Outcome = Outcome.FALLBACK
    reason: str | None = None
    errors: list[str] = field(default_factory=list)  # the last round's, for the reason
    round_errors: list[RoundErrors] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    replayed: bool = False
    carried_attempts: int = 0


class LLMBrain(Brain):
    """Answers decision requests with an LLM through litellm.

    Args:
        model: Any litellm model string (``"openai/gpt-4o-mini"``, ``"anthropic/claude-..."``,
            ``"ollama/llama3.1"``, ``"hosted_vllm/..."``, or ``"openai/<name>"`` with ``api_base``
            for any OpenAI-compatible server).
        api_base: Base URL of the server, when not the provider default.
        api_key: API key; never recorded: every error text, reason and ledger record is
            redacted (:mod:`~mesa_llm_mobility.cognition.redaction`). ``None`` lets litellm
            read the provider's variable.
        temperature: Sampling temperature (recorded).
        max_tokens: Completion token limit (recorded), or ``None``.
        json_mode: Ask for ``response_format={"type": "json_object"}`` where the provider supports
            it (litellm drops it where not).
        max_concurrency: Calls in flight at once, across the whole batch.
        timeout_s: Timeout of one HTTP call (``$MLM_TIMEOUT_S`` through :func:`make_brain`).
        max_attempts: Transport attempts per call, first included (``$MLM_MAX_ATTEMPTS``).
        max_total_s: Time budget of one call's attempts and backoffs (``$MLM_MAX_TOTAL_S``);
            a call's timeout is capped by what is left of it.
        max_repairs: Re-prompts with the validation errors before falling back to rules.
        rng: Generator for rule-policy fallbacks (pass the model's ``rng``).
        ledger: Where every decision is recorded (in memory when ``None``).
        replay: A :class:`ReplayIndex` or a ledger path whose identical requests are answered
            without a call.
        extra_params: Further sampling parameters passed to litellm and recorded (e.g. ``seed``).
        cost_per_token: ``(input, output)`` USD per token for a model litellm's bundled cost
            map does not know (a self-hosted or fine-tuned model); such models are registered
            with this price, zero by default, so costs are recorded and litellm's cost lookup
            does not search its whole map on every call.
        supports_reasoning: Whether to send a request's ``reasoning_effort``; ``None`` asks
            ``litellm.supports_reasoning`` (litellm would otherwise forward it even to models
            that reject it).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_mode: bool = True,
        max_concurrency: int = 16,
        timeout_s: float = 60.0,
        max_attempts: int = 4,
        max_total_s: float = 120.0,
        max_repairs: int = 2,
        rng: np.random.Generator | int | None = None,
        ledger: Ledger | None = None,
        replay: ReplayIndex | str | Path | None = None,
        extra_params: Mapping[str, Any] | None = None,
        cost_per_token: tuple[float, float] | None = None,
        supports_reasoning: bool | None = None,
    ) -> None:
        super().__init__(rng=rng, ledger=ledger if ledger is not None else Ledger())
        if not model or not isinstance(model, str):
            raise ValueError(
                "LLMBrain.model must be a litellm model string such as 'openai/gpt-4o-mini'"
            )
        if max_concurrency < 1:
            raise ValueError(
                f"LLMBrain.max_concurrency must be >= 1, got {max_concurrency}"
            )
        if max_repairs < 0:
            raise ValueError(f"LLMBrain.max_repairs must be >= 0, got {max_repairs}")
        self.name = self.model = model
        self.max_concurrency = max_concurrency
        self.max_repairs = max_repairs
        self.policy = RetryPolicy(
            max_attempts=max_attempts, max_total_s=max_total_s, timeout_s=timeout_s
        )
        self.params: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            self.params["max_tokens"] = max_tokens
        if json_mode:
            self.params["response_format"] = {"type": "json_object"}
        self.params.update(extra_params or {})
        self._connection: dict[str, Any] = {"drop_params": True}
        if api_base:
            self._connection["api_base"] = api_base
        if api_key:
            self._connection["api_key"] = api_key
        # the key may come back inside a provider's error text: every text we keep is redacted
        register_secret(api_key)
        install_log_redaction()
        register_model_price(model, cost_per_token)
        self.supports_reasoning = (
            model_supports_reasoning(model)
            if supports_reasoning is None
            else bool(supports_reasoning)
        )
        self.replay = (
            ReplayIndex.from_ledger(replay)
            if isinstance(replay, str | Path)
            else replay
        )
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._jitter = random.Random()

    def __repr__(self) -> str:
        base = self._connection.get("api_base")
        return f"LLMBrain(model={self.model!r}, api_base={base!r}, max_concurrency={self.max_concurrency})"

    def decide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer a batch from synchronous code (a Mesa ``step()``, a script, a Jupyter cell).

        Raises:
            RulePolicyError: when a fallback's rule policy fails (after recording the batch).
        """
        if not requests:
            return []
        return run_in_background(self.adecide_all(requests, tags=tags))

    async def adecide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer a batch from async code; see :meth:`decide_all`."""
        prepared = [self._prepare(request) for request in requests]
        exchanges: list[_Exchange | None] = [
            self._replayed(request, key) for request, _, _, key in prepared
        ]
        pending = [
            index for index, exchange in enumerate(exchanges) if exchange is None
        ]
        semaphore = self._semaphore()
        answered = await asyncio.gather(
            *(
                self._converse(
                    prepared[index][0],
                    prepared[index][1],
                    semaphore,
                    self.request_params(prepared[index][0]),
                )
                for index in pending
            )
        )
        for index, exchange in zip(pending, answered, strict=True):
            exchanges[index] = exchange

        results: list[DecisionResult] = []
        records: list[dict[str, Any]] = []
        failure: RulePolicyError | None = None
        for (request, messages, digest, key), exchange in zip(
            prepared, exchanges, strict=True
        ):
            assert exchange is not None
            if exchange.output is None and exchange.outcome is not Outcome.REJECTED:
                try:
                    exchange.output = request.kind.apply_rule_policy(request, self.rng)
                except RulePolicyError as error:
                    exchange.outcome, exchange.reason = (
                        Outcome.ERROR,
                        redact(f"{exchange.reason}; {error}"),
                    )
                    failure = failure or error
            records.append(self._record(request, messages, digest, key, exchange, tags))
            if exchange.output is not None or exchange.outcome is Outcome.REJECTED:
                results.append(
                    DecisionResult(
                        request=request,
                        output=exchange.output,
                        outcome=exchange.outcome,
                        reason=exchange.reason,
                        round_errors=tuple(exchange.round_errors),
                        attempts=exchange.attempts,
                        replayed=exchange.replayed,
                        latency_s=exchange.latency_s,
                    )
                )
        self.ledger.append_many(records)
        if failure is not None:
            raise failure
        return results

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._semaphores:
            self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return self._semaphores[loop]

    def request_params(self, request: DecisionRequest) -> dict[str, Any]:
        """The sampling parameters sent for ``request``: the brain's, then the request's own.

        A ``reasoning_effort`` is left out for a model without reasoning support.
        """
        params = dict(self.params)
        for name, value in (request.sampling or {}).items():
            if name == "reasoning_effort" and not self.supports_reasoning:
                continue
            params[name] = value
        return params

    def _prepare(
        self, request: DecisionRequest
    ) -> tuple[DecisionRequest, list[Message], str, str]:
        messages = request.kind.messages(request.context)
        digest = messages_hash(messages)
        params = self.request_params(request)
        if request.on_invalid != "repair":  # default requests keep their old keys
            params["on_invalid"] = request.on_invalid
        key = request_key(
            request.kind.name, request.agent_id, self.model, params, digest
        )
        return request, messages, digest, key

    def _replayed(self, request: DecisionRequest, key: str) -> _Exchange | None:
        if self.replay is None:
            return None
        entry = self.replay.take_entry(key)
        if entry is None:
            return None
        record, carried_attempts = entry
        exchange = _Exchange(
            outcome=Outcome(record["outcome"]),
            reason=record.get("reason"),
            rounds=list(record.get("rounds") or ()),
            replayed=True,
            carried_attempts=carried_attempts,
        )
        exchange.round_errors = _recheck(request, exchange.rounds)
        if exchange.outcome in (Outcome.FALLBACK, Outcome.REJECTED):
            # a fallback's rule policy answers again, drawing from the RNG as the original did
            return exchange
        try:
            exchange.output = request.kind.output_schema.model_validate(
                record["result"]
            )
        except Exception as error:
            logger.warning(
                "recorded %s answer for agent %r no longer parses (%s); asking the model",
                request.kind.name,
                request.agent_id,
                error,
            )
            return None
        return exchange

    async def _converse(
        self,
        request: DecisionRequest,
        messages: list[Message],
        semaphore: asyncio.Semaphore,
        params: Mapping[str, Any],
    ) -> _Exchange:
        exchange = _Exchange()
        conversation = list(messages)
        rejecting = request.on_invalid == "reject"
        rounds = 1 if rejecting else self.max_repairs + 1
        for round_index in range(rounds):
            try:
                completion = await complete(
                    model=self.model,
                    messages=conversation,
                    params=params,
                    connection=self._connection,
                    policy=self.policy,
                    semaphore=semaphore,
                    jitter=self._jitter,
                )
            except TransportError as error:
                exchange.attempts += error.attempts
                exchange.errors = [redact(str(error))]
                exchange.round_errors.append(
                    RoundErrors("transport", tuple(exchange.errors))
                )
                exchange.rounds.append(
                    {"raw": None, "errors": exchange.errors, "attempts": error.attempts}
                )
                exchange.reason = redact(f"transport failed: {error}")
                if rejecting:
                    exchange.outcome = Outcome.REJECTED
                    exchange.reason = redact(f"no answer: transport failed: {error}")
                return exchange
            exchange.attempts += completion.attempts
            exchange.latency_s += completion.latency_s
            exchange.prompt_tokens += completion.prompt_tokens
            exchange.completion_tokens += completion.completion_tokens
            exchange.cost_usd += completion.cost_usd
            checked = request.kind.check(request.context, completion.content)
            output, errors = checked.output, checked.errors
            if checked.failure is not None:
                exchange.round_errors.append(checked.failure)
            exchange.rounds.append(
                {
                    "raw": completion.content,
                    "errors": errors,
                    "attempts": completion.attempts,
                }
            )
            exchange.errors = errors
            if output is not None:
                exchange.output = output
                exchange.outcome = Outcome.OK if round_index == 0 else Outcome.REPAIRED
                return exchange
            conversation = [
                *conversation,
                {"role": "assistant", "content": completion.content},
                {
                    "role": "user",
                    "content": REPAIR_INSTRUCTION.format(
                        errors="\n".join(f"- {e}" for e in errors)
                    ),
                },
            ]
        if rejecting:
            exchange.outcome = Outcome.REJECTED
            exchange.reason = "; ".join(exchange.errors[:3])
            return exchange
        exchange.reason = (
            f"no valid answer after {self.max_repairs} repair(s): "
            + "; ".join(exchange.errors[:3])
        )
        return exchange

    def _record(
        self,
        request: DecisionRequest,
        messages: list[Message],
        digest: str,
        key: str,
        exchange: _Exchange,
        tags: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        return decision_record(
            kind=request.kind.name,
            agent_id=request.agent_id,
            model=self.model,
            params=self.request_params(request),
            messages=messages,
            digest=digest,
            key=key,
            rounds=exchange.rounds,
            result=exchange.output.model_dump(mode="json")
            if exchange.output is not None
            else None,
            outcome=exchange.outcome,
            reason=exchange.reason,
            attempts=exchange.attempts,
            latency_s=exchange.latency_s,
            prompt_tokens=exchange.prompt_tokens,
            completion_tokens=exchange.completion_tokens,
            cost_usd=exchange.cost_usd,
            replayed=exchange.replayed,
            carried_attempts=exchange.carried_attempts,
            tags=tags,
        )


def model_supports_reasoning(model: str) -> bool:
    """Whether litellm knows ``model`` to accept ``reasoning_effort`` (unknown models: no)."""
    try:
        return bool(import_litellm().supports_reasoning(model=model))
    except Exception:  # litellm raises its own "not mapped" error types
        return False


def _recheck(
    request: DecisionRequest, rounds: Sequence[Mapping[str, Any]]
) -> list[RoundErrors]:
    """The errors of recorded rounds, found again by checking their texts as the live run did."""
    found = []
    for round_ in rounds:
        raw = round_.get("raw")
        if raw is None:
            found.append(RoundErrors("transport", tuple(round_.get("errors") or ())))
            continue
        failure = request.kind.check(request.context, raw).failure
        if failure is not None:
            found.append(failure)
    return found
