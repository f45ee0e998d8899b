"""The LLM brain: any litellm model answers decision requests, validated, repaired or replaced.

For a batch of requests the brain renders each prompt, answers what it can from the replay index,
and sends the rest concurrently under one semaphore: straight to the server for OpenAI-compatible
endpoints (:mod:`~mesa_llm_mobility.cognition.openai_compatible`), else through
``litellm.acompletion``, asking for the kind's JSON schema as structured output where the
endpoint takes it (:mod:`~mesa_llm_mobility.cognition.structured_output`). Each answer
is parsed (tolerant JSON), validated by the kind's schema and domain validator, and on failure the
model is re-prompted with the exact errors (at most ``max_repairs`` times). A request that still has
no valid answer, or whose transport failed for good, is answered by the kind's rule policy and
recorded as a ``fallback`` with its reason. Fallbacks are applied in request order after the
batch, so the rule policies draw from the model's RNG deterministically whatever order the HTTP
answers arrived in. A request made with ``on_invalid="reject"`` gets no repair round and no
fallback: its first invalid answer (or failed call) is recorded as ``rejected`` with the reason.

A request's own ``sampling`` parameters are merged over the brain's; ``reasoning_effort`` is sent
only to models that support it (``litellm.supports_reasoning``, or ``supports_reasoning=True``).

A request with ``tools`` (a :class:`~mesa_llm_mobility.cognition.tool_calling.Toolbox`) is sent
with ``tools=`` where the brain calls tools natively (``tool_calling``): an answer with
``tool_calls`` is executed, answered with ``tool`` messages and the conversation goes on, at most
``max_calls`` calls per decision, before the final structured answer (tool steps are no repair
rounds). An endpoint that refuses ``tools`` turns native tool calling off for the brain's life.

An endpoint that cannot answer (a refused key, an unknown model, no server) stops the brain with
:class:`~mesa_llm_mobility.cognition.endpoint_health.EndpointUnavailableError` instead of a run
of fallbacks (see :mod:`~mesa_llm_mobility.cognition.endpoint_health`). Repair rounds are sampled
at a raised temperature (see :mod:`~mesa_llm_mobility.cognition.repairs`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mesa_llm_mobility.cognition.background_loop import (
    background_loop,
    run_in_background,
)
from mesa_llm_mobility.cognition.brain import Brain, PendingDecisions
from mesa_llm_mobility.cognition.deduplication import (
    AnswerMemo,
    group_identical,
    shared_key,
)
from mesa_llm_mobility.cognition.endpoint_health import (
    DEFAULT_MAX_TRANSPORT_FAILURES,
    EndpointHealth,
)
from mesa_llm_mobility.cognition.exchange import (
    Exchange,
    answered_messages,
    check_round,
    exchange_record,
    exchange_result,
    record_transport_failure,
    replayed_exchange,
)
from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    DecisionResult,
    Message,
    Outcome,
    RulePolicyError,
)
from mesa_llm_mobility.cognition.ledger import (
    Ledger,
    ReplayIndex,
    messages_hash,
    request_key,
)
from mesa_llm_mobility.cognition.offline import import_litellm
from mesa_llm_mobility.cognition.openai_compatible import (
    DirectClient,
    is_openai_compatible,
    uses_direct_client,
)
from mesa_llm_mobility.cognition.redaction import (
    install_log_redaction,
    redact,
    register_secret,
)
from mesa_llm_mobility.cognition.repairs import (
    repair_instruction,
    repair_params,
    repair_temperature,
)
from mesa_llm_mobility.cognition.response_mode_cache import ResponseModeCache
from mesa_llm_mobility.cognition.structured_output import (
    ResponseModeNegotiator,
    mode_chain,
    rejects_format,
    response_params,
)
from mesa_llm_mobility.cognition.tool_calling import (
    Toolbox,
    native_tool_calling,
    rejects_tools,
    tool_params,
    tool_step,
)
from mesa_llm_mobility.cognition.transport import (
    ChatCall,
    Completion,
    RetryPolicy,
    TransportError,
    call_budget_s,
    complete,
    litellm_call,
    register_model_price,
)

logger = logging.getLogger(__name__)

_Prepared = tuple[DecisionRequest, list[Message], str, str]
"""A request with its rendered messages, their hash and its replay key."""


class LLMBrain(Brain):
    """Answers decision requests with an LLM, through litellm or straight to the server.

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
        json_mode: Ask for JSON (structured output or JSON mode) at all; ``False`` sends no
            response format (the schema stays in the prompt).
        structured_output: ``"auto"`` asks for the kind's JSON schema in the best form the
            provider family takes, stepping down to JSON mode where the endpoint rejects it
            (see :mod:`~mesa_llm_mobility.cognition.structured_output`); or one mode alone:
            ``"json_schema"``, ``"json_object_schema"``, ``"ollama_format"``,
            ``"json_object"``, ``"none"``.
        client: ``"auto"`` sends ``openai/...`` and ``hosted_vllm/...`` models with an
            ``api_base`` straight to the server (a pooled aiohttp client, a fraction of
            litellm's CPU per call) and every other model through litellm; ``"direct"`` or
            ``"litellm"`` force one.
        max_concurrency: Calls in flight at once, across the whole batch.
        timeout_s: Timeout of one HTTP call (``$MLM_TIMEOUT_S`` through :func:`make_brain`).
        max_attempts: Transport attempts per call, first included (``$MLM_MAX_ATTEMPTS``).
        max_total_s: Time budget of one call's attempts and backoffs (``$MLM_MAX_TOTAL_S``);
            a call's timeout is capped by what is left of it. ``None``: 120 s, or twice
            ``timeout_s`` when that is more; a budget below ``timeout_s`` is refused.
        max_repairs: Re-prompts with the validation errors before falling back to rules.
        max_transport_failures: Decisions in a row whose calls all failed (with no answer
            between) after which the endpoint is given up: the brain raises
            :class:`~mesa_llm_mobility.cognition.endpoint_health.EndpointUnavailableError`,
            as it does at once after an HTTP 401, 403 or 404.
        allow_fallback_only: Never give the endpoint up: the rule policies answer what the
            model does not (the behaviour before fail-fast; warned about once).
        response_mode_cache: A JSON file remembering the response mode each endpoint took
            (:mod:`~mesa_llm_mobility.cognition.response_mode_cache`), so another process
            (a resumed run, a sweep's runs, a shard) does not probe it again; ``None``: none.
        rng: Generator for rule-policy fallbacks (pass the model's ``rng``).
        ledger: Where every decision is recorded (in memory when ``None``).
        replay: A :class:`ReplayIndex` or a ledger path whose identical requests are answered
            without a call.
        extra_params: Further sampling parameters passed to litellm and recorded (e.g. ``seed``).
        supports_reasoning: Whether to send a request's ``reasoning_effort``; ``None`` asks
            ``litellm.supports_reasoning`` (litellm would otherwise forward it even to models
            that reject it).
        deduplicate: Answer identical requests (same kind, messages and context, any agent)
            once per run, recorded as ``deduplicated`` (see
            :mod:`~mesa_llm_mobility.cognition.deduplication`).
        cost_per_token: ``(input, output)`` USD per token for a model litellm's bundled cost
            map does not know (a self-hosted or fine-tuned model); such models are registered
            with this price, zero by default, so costs are recorded and litellm's cost lookup
            does not search its whole map on every call.
        tool_calling: ``"auto"`` offers requests' tools natively (``tools=``) where
            ``litellm.supports_function_calling`` knows the model to take them; ``"native"``
            always; ``"structured"`` never (models then ask look-ups as decisions of their own).
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
        structured_output: str = "auto",
        client: str = "auto",
        max_concurrency: int = 16,
        timeout_s: float = 60.0,
        max_attempts: int = 4,
        max_total_s: float | None = None,
        max_repairs: int = 2,
        max_transport_failures: int = DEFAULT_MAX_TRANSPORT_FAILURES,
        allow_fallback_only: bool = False,
        response_mode_cache: str | Path | None = None,
        rng: np.random.Generator | int | None = None,
        ledger: Ledger | None = None,
        replay: ReplayIndex | str | Path | None = None,
        extra_params: Mapping[str, Any] | None = None,
        cost_per_token: tuple[float, float] | None = None,
        supports_reasoning: bool | None = None,
        deduplicate: bool = True,
        tool_calling: str = "auto",
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
            max_attempts=max_attempts,
            max_total_s=call_budget_s(timeout_s, max_total_s),
            timeout_s=timeout_s,
        )
        self.health = EndpointHealth(
            model,
            api_base,
            max_failures=max_transport_failures,
            allow_fallback_only=allow_fallback_only,
        )
        self.params: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            self.params["max_tokens"] = max_tokens
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
        self.native_tools = native_tool_calling(model, tool_calling)
        self.direct = uses_direct_client(model, api_base, client)
        self._client: DirectClient | None = (
            DirectClient(model, api_base or "", api_key) if self.direct else None
        )
        self._call: ChatCall = self._client or litellm_call(model, self._connection)
        self.response_modes = ResponseModeNegotiator(
            mode_chain(
                model,
                openai_compatible=is_openai_compatible(model, api_base),
                structured_output=structured_output if json_mode else "none",
            ),
            cache=None
            if response_mode_cache is None
            else ResponseModeCache(response_mode_cache),
            endpoint=(model, api_base),
        )
        self.memo: AnswerMemo | None = AnswerMemo() if deduplicate else None
        self._response_params: dict[tuple[DecisionKind, str], dict[str, Any]] = {}
        self.replay = (
            ReplayIndex.from_ledger(replay)
            if isinstance(replay, str | Path)
            else replay
        )
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self._jitter = random.Random()

    def __repr__(self) -> str:
        base = self._connection.get("api_base")
        client = "direct" if self.direct else "litellm"
        return f"LLMBrain(model={self.model!r}, api_base={base!r}, client={client!r}, max_concurrency={self.max_concurrency})"

    def close(self) -> None:
        """Close the ledger and the direct client's connection pool."""
        if self._client is not None:
            self._client.close()
        super().close()

    def decide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer a batch from synchronous code (a Mesa ``step()``, a script, a Jupyter cell).

        The calls run on the shared brain loop; the fallbacks, results and ledger records are
        made on the caller's thread (the loop meanwhile serves the calls of other batches).

        Raises:
            RulePolicyError: when a fallback's rule policy fails (after recording the batch).
            EndpointUnavailableError: when the endpoint was given up (see
                :mod:`~mesa_llm_mobility.cognition.endpoint_health`); the batch is not
                recorded.
        """
        if not requests:
            return []
        self.health.raise_if_given_up()
        prepared, exchanges = self._prepare_batch(requests)
        run_in_background(self._answer_pending(prepared, exchanges))
        return self._finish(prepared, exchanges, tags)

    async def adecide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer a batch from async code; see :meth:`decide_all`."""
        self.health.raise_if_given_up()
        prepared, exchanges = self._prepare_batch(requests)
        await self._answer_pending(prepared, exchanges)
        return self._finish(prepared, exchanges, tags)

    def submit(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> PendingDecisions:
        """Send a batch's calls now and take the answers later (see :meth:`Brain.submit`).

        The calls run on the shared brain loop while the caller goes on; the fallbacks (which
        draw from the model's generator) and the ledger records happen in
        :meth:`PendingDecisions.result`, on the caller's thread, in request order.

        Raises:
            EndpointUnavailableError: when the endpoint was given up before (the batch's
                :meth:`PendingDecisions.result` raises it when it is given up meanwhile).
        """
        self.health.raise_if_given_up()
        prepared, exchanges = self._prepare_batch(requests)
        future = asyncio.run_coroutine_threadsafe(
            self._answer_pending(prepared, exchanges), background_loop()
        )

        def finish() -> list[DecisionResult]:
            future.result()
            return self._finish(prepared, exchanges, tags)

        return PendingDecisions(finish, done=future.done)

    def _prepare_batch(
        self, requests: Sequence[DecisionRequest]
    ) -> tuple[list[_Prepared], list[Exchange | None]]:
        prepared = [self._prepare(request) for request in requests]
        exchanges: list[Exchange | None] = [
            self._replayed(request, key) for request, _, _, key in prepared
        ]
        return prepared, exchanges

    async def _answer_pending(
        self, prepared: list[_Prepared], exchanges: list[Exchange | None]
    ) -> None:
        """Converse about every request the replay did not answer, concurrently (in place).

        Identical requests are sent once (see :meth:`_leaders`).
        """
        pending, followers = self._leaders(prepared, exchanges)
        semaphore = self._semaphore()
        try:
            answered = await asyncio.gather(
                *(
                    self._converse(prepared[index][0], prepared[index][1], semaphore)
                    for index in pending
                )
            )
        finally:
            if self._client is not None:
                await self._client.release_loop()
        # a batch the endpoint failed is not recorded: a resumed run asks it again
        self.health.raise_if_given_up()
        for index, exchange in zip(pending, answered, strict=True):
            exchanges[index] = exchange
            request, _, digest, _ = prepared[index]
            if (
                self.memo is not None
                and exchange.output is not None
                and request.tools is None
            ):
                key = shared_key(
                    request, self.model, self.request_params(request), digest
                )
                self.memo.put(key, request.context, exchange)
        for index, leader in followers.items():
            exchange = exchanges[leader]
            assert exchange is not None
            exchanges[index] = exchange.shared()

    def _leaders(
        self, prepared: list[_Prepared], exchanges: list[Exchange | None]
    ) -> tuple[list[int], dict[int, int]]:
        """The requests to send, and follower -> leader for those identical to another.

        Answers remembered from earlier batches are filled in (in place) without a call.
        """
        pending = [
            index for index, exchange in enumerate(exchanges) if exchange is None
        ]
        if self.memo is None:
            return pending, {}
        keys = []
        for index in pending:
            request, _, digest, _ = prepared[index]
            if request.tools is not None:  # tools answer from the world of their minute
                keys.append((index, f"tools:{index}", None))
                continue
            key = shared_key(request, self.model, self.request_params(request), digest)
            remembered = self.memo.get(key, request.context)
            if remembered is not None:
                exchanges[index] = remembered.shared()
            else:
                keys.append((index, key, request.context))
        return group_identical(keys)

    def _finish(
        self,
        prepared: list[_Prepared],
        exchanges: list[Exchange | None],
        tags: Mapping[str, Any] | None,
    ) -> list[DecisionResult]:
        """Fallbacks in request order, results and ledger records of an answered batch."""
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
            records.append(
                exchange_record(
                    request,
                    (messages, digest, key),
                    exchange,
                    model=self.model,
                    params=self._recorded_params(request),
                    tags=tags,
                )
            )
            if exchange.output is not None or exchange.outcome is Outcome.REJECTED:
                results.append(exchange_result(request, exchange))
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

    def _prepare(self, request: DecisionRequest) -> _Prepared:
        messages = request.kind.messages(request.context)
        digest = messages_hash(messages)
        params = self.request_params(request)
        if request.on_invalid != "repair":  # default requests keep their old keys
            params["on_invalid"] = request.on_invalid
        tools = self._tools_for(request)
        if tools is not None:  # requests without tools offered keep their old keys too
            params["tools"] = list(tools.names)
        key = request_key(
            request.kind.name, request.agent_id, self.model, params, digest
        )
        return request, messages, digest, key

    def _replayed(self, request: DecisionRequest, key: str) -> Exchange | None:
        if self.replay is None:
            return None
        entry = self.replay.take_entry(key)
        if entry is None:
            return None
        return replayed_exchange(
            request, entry.record, (entry.carried_attempts, entry.carried_answered)
        )

    def _tools_for(self, request: DecisionRequest) -> Toolbox | None:
        """The request's tools when this brain offers them natively, else ``None``."""
        return request.tools if self.native_tools else None

    async def _converse(
        self,
        request: DecisionRequest,
        messages: list[Message],
        semaphore: asyncio.Semaphore,
    ) -> Exchange:
        exchange = Exchange()
        conversation: list[dict[str, Any]] = list(messages)
        rejecting = request.on_invalid == "reject"
        rounds = 1 if rejecting else self.max_repairs + 1
        tools = self._tools_for(request)
        calls_left = tools.max_calls if tools is not None else 0
        round_index = 0
        while round_index < rounds:
            offered = tool_params(tools, calls_left) if tools is not None else None
            try:
                completion, exchange.response_mode = await self._complete(
                    request, conversation, semaphore, offered, round_index
                )
            except TransportError as error:
                exchange.attempts += error.attempts
                exchange.answered += error.answered
                exchange.latency_s += error.latency_s
                if offered is not None and rejects_tools(error.__cause__):
                    self._stop_native_tools(error)
                    tools = None
                    continue  # the same round again, without tools
                self.health.failed(error)
                record_transport_failure(exchange, error, rejecting)
                return exchange
            self.health.answered()
            exchange.attempts += completion.attempts
            exchange.answered += completion.answered
            exchange.latency_s += completion.latency_s
            exchange.prompt_tokens += completion.prompt_tokens
            exchange.completion_tokens += completion.completion_tokens
            exchange.cost_usd += completion.cost_usd
            recorded: dict[str, Any] = {
                "raw": completion.content,
                "errors": [],
                "attempts": completion.attempts,
            }
            if round_index > 0:
                temperature = self.request_params(request).get("temperature") or 0.0
                recorded["temperature"] = repair_temperature(temperature, round_index)
            calls = completion.tool_calls if tools is not None else ()
            if calls and calls_left > 0:  # a tool step: execute, answer, go on
                step = tool_step(tools, completion.content, calls, calls_left)
                calls_left -= len(step.uses)
                exchange.tool_calls.extend(step.uses)
                recorded |= {"tool_calls": list(calls), "tool_results": step.results}
                exchange.rounds.append(recorded)
                conversation = [*conversation, *step.messages]
                continue
            truncated = completion.finish_reason == "length"
            if truncated:
                recorded["truncated_at"] = self.params.get("max_tokens") or True
            checked = check_round(
                request,
                completion.content,
                calls,
                truncated_at=recorded.get("truncated_at"),
            )
            if checked.failure is not None:
                exchange.round_errors.append(checked.failure)
            exchange.rounds.append(recorded)
            exchange.errors = recorded["errors"] = checked.errors
            if checked.output is not None:
                exchange.output = checked.output
                exchange.outcome = Outcome.OK if round_index == 0 else Outcome.REPAIRED
                return exchange
            conversation = [
                *conversation,
                *answered_messages(tools, completion, calls, recorded),
                {
                    "role": "user",
                    "content": repair_instruction(
                        checked.errors,
                        completion.content,
                        [r["raw"] for r in exchange.rounds[:-1] if r["raw"]],
                    ),
                },
            ]
            round_index += 1
        if rejecting:
            exchange.outcome = Outcome.REJECTED
            exchange.reason = "; ".join(exchange.errors[:3])
            return exchange
        exchange.reason = (
            f"no valid answer after {self.max_repairs} repair(s): "
            + "; ".join(exchange.errors[:3])
        )
        return exchange

    def _stop_native_tools(self, error: TransportError) -> None:
        """The endpoint refused ``tools``: ask look-ups the structured way from now on."""
        if self.native_tools:
            logger.warning(
                "%s does not take tools (%s); tool calling is structured from now on",
                self.model,
                error,
            )
        self.native_tools = False

    async def _complete(
        self,
        request: DecisionRequest,
        conversation: list[dict[str, Any]],
        semaphore: asyncio.Semaphore,
        offered: dict[str, Any] | None = None,
        round_index: int = 0,
    ) -> tuple[Completion, str]:
        """One round's completion in the best response mode the endpoint accepts.

        ``offered``: the tool parameters of a native tool-calling round; a refusal of the tools
        is then not taken for a refusal of the response format. ``round_index``: repair rounds
        (> 0) are sampled at a raised temperature.
        """
        if self.response_modes.confirmed:  # the common case, without the probing layers
            mode = self.response_modes.mode
            params = self._params_for(request, mode, round_index)
            completion = await complete(
                call=self._call,
                messages=conversation,
                params=params if offered is None else params | offered,
                policy=self.policy,
                semaphore=semaphore,
                jitter=self._jitter,
                abandoned=self.health.why_not_send,
            )
            return completion, mode

        def format_rejected(error: BaseException) -> bool:
            return rejects_format(error) and (
                offered is None or not rejects_tools(error)
            )

        async def attempt(mode: str) -> Completion:
            params = self._params_for(request, mode, round_index)
            return await complete(
                call=self._call,
                messages=conversation,
                params=params if offered is None else params | offered,
                policy=self.policy,
                semaphore=semaphore,
                jitter=self._jitter,
                format_rejected=None
                if self.response_modes.confirmed
                else format_rejected,
                abandoned=self.health.why_not_send,
            )

        completion, mode, rejected = await self.response_modes.send(attempt)
        if rejected.attempts:
            completion = dataclasses.replace(
                completion,
                attempts=completion.attempts + rejected.attempts,
                answered=completion.answered + rejected.answered,
            )
        return completion, mode

    def _params_for(
        self, request: DecisionRequest, mode: str, round_index: int = 0
    ) -> Mapping[str, Any]:
        """The request's sampling parameters plus its response format in ``mode``.

        Cached per kind and mode for requests without sampling parameters or a schema of
        their own (:attr:`DecisionKind.request_schema`); a repair round's temperature is
        raised (:func:`~mesa_llm_mobility.cognition.repairs.repair_params`).
        """
        kind = request.kind
        if request.sampling or kind.request_schema is not None:
            schema = kind.schema_for(request.context)
            params = self.request_params(request) | response_params(mode, kind, schema)
            return repair_params(params, round_index)
        key = (kind, mode)
        cached = self._response_params.get(key)
        if cached is None:
            cached = self.params | response_params(mode, kind)
            self._response_params[key] = cached
        return repair_params(cached, round_index)

    def _recorded_params(self, request: DecisionRequest) -> dict[str, Any]:
        """The sampling parameters a request's ledger record holds (its tools' names too)."""
        params = self.request_params(request)
        tools = self._tools_for(request)
        if tools is not None:
            params["tools"] = list(tools.names)
        return params


def model_supports_reasoning(model: str) -> bool:
    """Whether litellm knows ``model`` to accept ``reasoning_effort`` (unknown models: no)."""
    try:
        return bool(import_litellm().supports_reasoning(model=model))
    except Exception:  # litellm raises its own "not mapped" error types
        return False
