"""One request's exchange with the model: its rounds, outcome and cost, as result and record.

An :class:`Exchange` collects what happened between an
:class:`~mesa_llm_mobility.cognition.llm_brain.LLMBrain` and the model for one request (every
round's raw answer and errors, the attempts, the tokens); :func:`exchange_result` and
:func:`exchange_record` turn it into the caller's
:class:`~mesa_llm_mobility.cognition.kinds.DecisionResult` and the ledger's record, and
:func:`replayed_exchange` rebuilds one from a recorded answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mesa_llm_mobility.cognition.kinds import (
    CheckedAnswer,
    DecisionRequest,
    DecisionResult,
    Message,
    Outcome,
    RoundErrors,
)
from mesa_llm_mobility.cognition.ledger import decision_record
from mesa_llm_mobility.cognition.redaction import redact
from mesa_llm_mobility.cognition.repairs import truncation_error
from mesa_llm_mobility.cognition.tool_calling import (
    NO_TOOLS_LEFT,
    Toolbox,
    ToolUse,
    is_tool_step,
    tool_step,
    uses_of_rounds,
)
from mesa_llm_mobility.cognition.transport import Completion, TransportError

logger = logging.getLogger(__name__)


@dataclass
class Exchange:
    """What happened between the brain and the model for one request.

    ``attempts`` are the HTTP calls started, ``answered`` those the server answered.
    """

    output: Any = None
    outcome: Outcome = Outcome.FALLBACK
    reason: str | None = None
    errors: list[str] = field(default_factory=list)  # the last round's, for the reason
    round_errors: list[RoundErrors] = field(default_factory=list)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    answered: int = 0
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    replayed: bool = False
    carried_attempts: int = 0
    carried_answered: int = 0
    response_mode: str | None = None
    deduplicated: bool = False
    tool_calls: list[ToolUse] = field(default_factory=list)

    def shared(self) -> Exchange:
        """This exchange's answer given to an identical request: no call, same rounds."""
        return Exchange(
            output=None if self.output is None else self.output.model_copy(deep=True),
            outcome=self.outcome,
            reason=self.reason,
            errors=list(self.errors),
            round_errors=list(self.round_errors),
            rounds=[dict(round_) for round_ in self.rounds],
            response_mode=self.response_mode,
            deduplicated=True,
        )


def replayed_exchange(
    request: DecisionRequest, record: Mapping[str, Any], carried: tuple[int, int]
) -> Exchange | None:
    """The exchange of a recorded answer to ``request``, or ``None`` when it no longer parses.

    Args:
        request: The request answered again.
        record: Its ledger record.
        carried: ``(attempts, answered)`` the record carries into this run (see
            :meth:`~mesa_llm_mobility.cognition.ledger.ReplayIndex.take_entry`).
    """
    exchange = Exchange(
        outcome=Outcome(record["outcome"]),
        reason=record.get("reason"),
        rounds=list(record.get("rounds") or ()),
        replayed=True,
        carried_attempts=carried[0],
        carried_answered=carried[1],
        response_mode=record.get("response_mode"),
    )
    exchange.tool_calls = uses_of_rounds(exchange.rounds)
    exchange.round_errors = recheck(request, exchange.rounds)
    if exchange.outcome in (Outcome.FALLBACK, Outcome.REJECTED):
        # a fallback's rule policy answers again, drawing from the RNG as the original did
        return exchange
    try:
        exchange.output = request.kind.output_schema.model_validate(record["result"])
    except Exception as error:
        logger.warning(
            "recorded %s answer for agent %r no longer parses (%s); asking the model",
            request.kind.name,
            request.agent_id,
            error,
        )
        return None
    return exchange


def exchange_result(request: DecisionRequest, exchange: Exchange) -> DecisionResult:
    """The caller's result of an answered (or fallen back, or rejected) exchange."""
    return DecisionResult(
        request=request,
        output=exchange.output,
        outcome=exchange.outcome,
        reason=exchange.reason,
        round_errors=tuple(exchange.round_errors),
        attempts=exchange.attempts,
        replayed=exchange.replayed,
        latency_s=exchange.latency_s,
        tool_calls=tuple(exchange.tool_calls),
    )


def exchange_record(
    request: DecisionRequest,
    prepared: tuple[list[Message], str, str],
    exchange: Exchange,
    *,
    model: str,
    params: Mapping[str, Any],
    tags: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ledger record of ``exchange`` (see :func:`~.ledger.decision_record`).

    Args:
        request: The request.
        prepared: Its rendered messages, their hash and its replay key.
        exchange: What happened.
        model: The brain's model string.
        params: The sampling parameters recorded (the request's, tools included).
        tags: The caller's tags.
    """
    messages, digest, key = prepared
    return decision_record(
        kind=request.kind.name,
        agent_id=request.agent_id,
        model=model,
        params=params,
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
        answered=exchange.answered,
        latency_s=exchange.latency_s,
        prompt_tokens=exchange.prompt_tokens,
        completion_tokens=exchange.completion_tokens,
        cost_usd=exchange.cost_usd,
        replayed=exchange.replayed,
        carried_attempts=exchange.carried_attempts,
        carried_answered=exchange.carried_answered,
        response_mode=exchange.response_mode,
        deduplicated=exchange.deduplicated,
        tags=tags,
    )


def recheck(
    request: DecisionRequest, rounds: Sequence[Mapping[str, Any]]
) -> list[RoundErrors]:
    """The errors of recorded rounds, found again by checking their texts as the live run did."""
    found = []
    for round_ in rounds:
        raw = round_.get("raw")
        if raw is None:
            found.append(RoundErrors("transport", tuple(round_.get("errors") or ())))
            continue
        if is_tool_step(round_):
            continue
        failure = check_round(
            request,
            raw,
            round_.get("tool_calls") or (),
            truncated_at=round_.get("truncated_at"),
        ).failure
        if failure is not None:
            found.append(failure)
    return found


def check_round(
    request: DecisionRequest,
    raw: str,
    refused_calls: Sequence[Any],
    *,
    truncated_at: int | bool | None = None,
) -> CheckedAnswer:
    """Check an answer; when invalid, a cut-off and tool calls beyond the bound are named first.

    Args:
        request: The request answered.
        raw: The answer's text.
        refused_calls: Tool calls it made beyond the bound.
        truncated_at: The answer was cut off at the token limit (``finish_reason ==
            "length"``): the limit, or ``True`` when unknown. A cut-off answer that still
            holds a valid object is accepted.
    """
    checked = request.kind.check(request.context, raw)
    failure = checked.failure
    if failure is None or not (truncated_at or refused_calls):
        return checked
    first = [NO_TOOLS_LEFT] if refused_calls else []
    if truncated_at:
        limit = None if isinstance(truncated_at, bool) else truncated_at
        first.insert(0, truncation_error(limit))
    return CheckedAnswer(None, RoundErrors(failure.stage, (*first, *failure.errors)))


def answered_messages(
    tools: Toolbox | None,
    completion: Completion,
    calls: Sequence[Any],
    recorded: dict[str, Any],
) -> list[dict[str, Any]]:
    """The messages of an invalid answer in a repair conversation (refused calls too).

    Tool calls beyond the bound are each refused in their tool message, recorded in the
    round (``recorded``).
    """
    if not calls:
        return [{"role": "assistant", "content": completion.content}]
    assert tools is not None
    refused = tool_step(tools, completion.content, calls, 0)
    recorded |= {"tool_calls": list(calls), "tool_results": refused.results}
    return refused.messages


def record_transport_failure(
    exchange: Exchange, error: TransportError, rejecting: bool
) -> None:
    """Record a round whose call failed for good (the conversation ends there)."""
    exchange.errors = [redact(str(error))]
    exchange.round_errors.append(RoundErrors("transport", tuple(exchange.errors)))
    exchange.rounds.append(
        {"raw": None, "errors": exchange.errors, "attempts": error.attempts}
    )
    exchange.reason = redact(f"transport failed: {error}")
    if rejecting:
        exchange.outcome = Outcome.REJECTED
        exchange.reason = redact(f"no answer: transport failed: {error}")
