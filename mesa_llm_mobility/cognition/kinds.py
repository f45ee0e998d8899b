"""Decision kinds, requests and results: the typed contract between agents and brains.

A model declares each kind of decision once (:class:`DecisionKind`): what the agent knows (the
context type), what a valid answer looks like (a pydantic output schema plus a domain validator),
how to ask an LLM (the prompt renderer) and how the classical rule-based model answers (the rule
policy). Agents then state :class:`DecisionRequest` objects; any brain answers them with
:class:`DecisionResult` objects. The core never needs to know what a kind is about.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ValidationError

from mesa_llm_mobility.cognition.json_extract import JSONExtractionError, extract_json

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition.tool_calling import Toolbox, ToolUse

Message = dict[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``."""


class Outcome(StrEnum):
    """How a decision was reached.

    ``ok``: the first answer was valid. ``repaired``: valid after re-prompting with the errors.
    ``fallback``: no valid answer (or a transport failure), so the rule policy answered.
    ``error``: not even the rule policy could answer; the error is raised to the caller.
    ``rejected``: the request asked for rejection instead of repair (``on_invalid="reject"``)
    and the answer was invalid or never came: no output; the model keeps its previous state and
    tells the agent why on its next turn.
    """

    OK = "ok"
    REPAIRED = "repaired"
    FALLBACK = "fallback"
    ERROR = "error"
    REJECTED = "rejected"


class RulePolicyError(RuntimeError):
    """A rule policy raised or returned something that is not the kind's output schema."""

    def __init__(
        self, kind: str, agent_id: Hashable, cause: BaseException | str
    ) -> None:
        self.kind = kind
        self.agent_id = agent_id
        detail = (
            f"{type(cause).__name__}: {cause}"
            if isinstance(cause, BaseException)
            else cause
        )
        super().__init__(
            f"rule policy of decision kind {kind!r} failed for agent {agent_id!r}: {detail}"
        )


ErrorStage = Literal["transport", "json", "schema", "domain"]
"""Where an answer failed: the call itself, JSON extraction, the schema, or the domain validator."""


@dataclass(frozen=True)
class RoundErrors:
    """What was wrong with one answer (one round of a decision).

    Attributes:
        stage: Where it failed (see :data:`ErrorStage`).
        errors: The specific messages, as shown to the model in the repair prompt.
    """

    stage: ErrorStage
    errors: tuple[str, ...]


@dataclass(frozen=True)
class CheckedAnswer[OutputT: BaseModel]:
    """An answer text checked against a kind: the output when valid, else what failed."""

    output: OutputT | None
    failure: RoundErrors | None = None

    @property
    def errors(self) -> list[str]:
        """The failure's messages (empty when valid)."""
        return list(self.failure.errors) if self.failure is not None else []


def no_domain_errors(context: Any, output: Any) -> list[str]:
    """Default domain validator: every schema-valid answer is accepted."""
    return []


@dataclass(frozen=True, eq=False)
class DecisionKind[ContextT, OutputT: BaseModel]:
    """One kind of decision, declared once by a model.

    Attributes:
        name: Unique, explanatory name (``"DailyPlan"``, ``"EvacuationMove"``).
        context_type: Type of the facts the agent knows when deciding.
        output_schema: Pydantic model every answer must parse into.
        render_prompt: ``context -> messages`` (system and user) asking for this decision.
        rule_policy: ``(context, rng) -> output``: the classical rule-based answer, deterministic
            given the generator.
        validate: ``(context, output) -> errors``: domain checks beyond the schema, returning
            specific, actionable error strings (empty when valid).
        schema_in_prompt: Append the output JSON schema to the system message, so any model knows
            the exact shape to answer in.
        request_schema: ``(context, schema) -> schema``: the output schema of one request,
            tightened by what its context knows (an array's length, the ids offered as an
            enum), given a copy of the kind's schema to change. It is what a provider that
            decodes under a schema is sent (see
            :mod:`~mesa_llm_mobility.cognition.structured_output`); the prompt keeps the kind's
            schema (one text for every request, which a provider's prefix cache reuses), and
            the validator must still check what it tightens (not every provider decodes
            under a schema). ``None``: every request is sent the kind's schema.
    """

    name: str
    context_type: type[ContextT]
    output_schema: type[OutputT]
    render_prompt: Callable[[ContextT], Sequence[Message]]
    rule_policy: Callable[[ContextT, np.random.Generator], OutputT]
    validate: Callable[[ContextT, OutputT], list[str]] = no_domain_errors
    schema_in_prompt: bool = True
    request_schema: Callable[[ContextT, dict[str, Any]], dict[str, Any]] | None = None
    _schema_text: str = field(init=False, repr=False, default="")
    _schema: dict[str, Any] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("DecisionKind.name must not be empty")
        if not (
            isinstance(self.output_schema, type)
            and issubclass(self.output_schema, BaseModel)
        ):
            raise TypeError(
                f"DecisionKind {self.name!r}: output_schema must be a pydantic BaseModel subclass"
            )
        schema = self.output_schema.model_json_schema()
        object.__setattr__(self, "_schema", schema)
        text = json.dumps(schema, separators=(",", ":"), sort_keys=True)
        object.__setattr__(self, "_schema_text", text)

    def json_schema(self) -> dict[str, Any]:
        """The output schema as JSON schema (a copy, to change freely)."""
        return copy.deepcopy(self._schema)

    def schema_for(self, context: ContextT) -> dict[str, Any]:
        """The output schema of one request (see ``request_schema``), as JSON schema."""
        schema = self.json_schema()
        if self.request_schema is None:
            return schema
        return self.request_schema(context, schema)

    def messages(self, context: ContextT) -> list[Message]:
        """Render the prompt for ``context``, with the schema instruction when enabled.

        The instruction (the longest part every prompt of the kind shares) opens the system
        message, so a provider's prefix cache (vLLM's, OpenAI's, Anthropic's) reuses it across
        agents; what differs per agent follows it.
        """
        messages = [dict(message) for message in self.render_prompt(context)]
        if not self.schema_in_prompt:
            return messages
        instruction = f"Answer with a single JSON object conforming to this JSON schema, and nothing else:\n{self._schema_text}"
        if messages and messages[0].get("role") == "system":
            messages[0]["content"] = f"{instruction}\n\n{messages[0]['content']}"
        else:
            messages.insert(0, {"role": "system", "content": instruction})
        return messages

    def check(self, context: ContextT, text: str) -> CheckedAnswer[OutputT]:
        """Check an LLM answer: tolerant JSON extraction, schema, then domain validation.

        Deterministic in ``(context, text)``, so a replayed answer is checked exactly as the
        live one was.

        Returns:
            The output when valid, else the stage that failed and its specific messages.
        """
        try:
            data = extract_json(text)
        except JSONExtractionError as exc:
            return CheckedAnswer(None, RoundErrors("json", (str(exc),)))
        try:
            output = self.output_schema.model_validate(data)
        except ValidationError as exc:
            errors = tuple(_format_validation_error(error) for error in exc.errors())
            return CheckedAnswer(None, RoundErrors("schema", errors))
        return self.check_output(context, output)

    def check_output(
        self, context: ContextT, output: OutputT
    ) -> CheckedAnswer[OutputT]:
        """Run the domain validator on a schema-valid output.

        Returns:
            The output when valid, else a ``domain`` failure with the validator's messages.
        """
        errors = tuple(str(error) for error in self.validate(context, output))
        if errors:
            return CheckedAnswer(None, RoundErrors("domain", errors))
        return CheckedAnswer(output)

    def parse(self, context: ContextT, text: str) -> tuple[OutputT | None, list[str]]:
        """:meth:`check` as a pair.

        Returns:
            ``(output, [])`` when valid, else ``(None, errors)`` with specific error strings.
        """
        checked = self.check(context, text)
        return checked.output, checked.errors

    def apply_rule_policy(
        self, request: DecisionRequest[ContextT, OutputT], rng: np.random.Generator
    ) -> OutputT:
        """Answer ``request`` with the rule policy, validated like any other answer.

        The policy draws from ``request.rng`` when the request carries one, else from ``rng``.

        Raises:
            RulePolicyError: naming the kind and the agent, when the policy raises, returns
                something other than the output schema, or returns an answer its own kind's
                domain validator rejects (a bug of the policy), with the validator's errors.
        """
        try:
            output = self.rule_policy(
                request.context, rng if request.rng is None else request.rng
            )
        except Exception as exc:
            raise RulePolicyError(self.name, request.agent_id, exc) from exc
        if not isinstance(output, self.output_schema):
            raise RulePolicyError(
                self.name,
                request.agent_id,
                f"returned {type(output).__name__}, expected {self.output_schema.__name__}",
            )
        checked = self.check_output(request.context, output)
        if checked.failure is not None:
            raise RulePolicyError(
                self.name,
                request.agent_id,
                "its answer fails the kind's validator: " + "; ".join(checked.errors),
            )
        return output


def _format_validation_error(error: Any) -> str:
    location = ".".join(str(part) for part in error.get("loc", ())) or "(root)"
    return f"field {location}: {error.get('msg', 'invalid')}"


OnInvalid = Literal["repair", "reject"]
"""What an LLM brain does with an invalid answer: re-prompt then fall back to the rule policy
(``repair``), or reject it at once with outcome ``rejected`` and no output (``reject``)."""


@dataclass(frozen=True, eq=False)
class DecisionRequest[ContextT, OutputT: BaseModel]:
    """An agent's request for a decision of one kind, with the facts it knows.

    Attributes:
        kind: The decision kind.
        agent_id: The deciding agent.
        context: What it knows.
        sampling: Sampling parameters for this request only (e.g. ``reasoning_effort``),
            merged over the brain's own; an LLM brain records them and keys replay on them.
            The rule brain ignores them.
        on_invalid: See :data:`OnInvalid`; the rule brain's answers are always valid.
        tools: Tools the model may call before answering, where the brain calls tools
            natively (:attr:`Brain.native_tools`); other brains ignore them.
        rng: The generator this request's rule policy draws from (the rule brain's answer or
            an LLM brain's fallback); ``None``: the brain's own. A model gives each agent its
            own stream so that an agent's draws do not depend on who else is in the batch.
    """

    kind: DecisionKind[ContextT, OutputT]
    agent_id: Hashable
    context: ContextT
    sampling: Mapping[str, Any] | None = None
    on_invalid: OnInvalid = "repair"
    tools: Toolbox | None = None
    rng: np.random.Generator | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.context, self.kind.context_type):
            raise TypeError(
                f"decision kind {self.kind.name!r} for agent {self.agent_id!r}: context must be "
                f"{self.kind.context_type.__name__}, got {type(self.context).__name__}"
            )
        if self.on_invalid not in ("repair", "reject"):
            raise ValueError(
                f"decision kind {self.kind.name!r} for agent {self.agent_id!r}: on_invalid "
                f"must be 'repair' or 'reject', got {self.on_invalid!r}"
            )


@dataclass(frozen=True, eq=False)
class DecisionResult[ContextT, OutputT: BaseModel]:
    """A brain's answer to one request.

    Attributes:
        request: The request answered.
        output: The validated answer (from the LLM, a replayed ledger entry, or the rule
            policy); ``None`` only for a ``rejected`` outcome.
        outcome: How it was reached (see :class:`Outcome`).
        reason: Why the rule policy answered, for ``fallback``, or why the answer was
            rejected, for ``rejected``; ``None`` otherwise.
        round_errors: What was wrong with each rejected answer, in order (a valid first answer
            has none). A replayed answer carries the same, re-checked from the recorded texts.
        attempts: Transport attempts (HTTP calls) spent; 0 for rule and replayed answers.
        replayed: Answered from a ledger without calling the model.
        latency_s: Wall time spent on model calls for this request.
        tool_calls: The tools the model called natively before answering, in order (a
            replayed answer carries the recorded ones).
    """

    request: DecisionRequest[ContextT, OutputT]
    output: OutputT | None
    outcome: Outcome
    reason: str | None = None
    round_errors: tuple[RoundErrors, ...] = ()
    attempts: int = 0
    replayed: bool = False
    latency_s: float = 0.0
    tool_calls: tuple[ToolUse, ...] = ()

    @property
    def transport_failed(self) -> bool:
        """Whether the model never answered the last round (its call failed for good).

        The reason is then the infrastructure's (a refused connection, a timeout), not
        something the model said: it must not be fed back to the model or into an agent's
        memory as feedback on its answer.
        """
        return bool(self.round_errors) and self.round_errors[-1].stage == "transport"

    @property
    def errors(self) -> tuple[str, ...]:
        """Every error message of every round, in order."""
        return tuple(error for round_ in self.round_errors for error in round_.errors)

    @property
    def domain_errors(self) -> tuple[str, ...]:
        """The domain validator's messages over every round (what a model reports as issues)."""
        return tuple(
            error
            for round_ in self.round_errors
            if round_.stage == "domain"
            for error in round_.errors
        )

    def is_kind(self, kind: DecisionKind[Any, Any]) -> bool:
        """Whether this answers a request of ``kind`` (by identity, not by name)."""
        return self.request.kind is kind

    @property
    def agent_id(self) -> Hashable:
        """The deciding agent's id."""
        return self.request.agent_id

    @property
    def kind(self) -> str:
        """The decision kind's name."""
        return self.request.kind.name


def dispatch(
    results: Iterable[DecisionResult[Any, Any]],
    handlers: Mapping[
        DecisionKind[Any, Any], Callable[[DecisionResult[Any, Any]], Any]
    ],
) -> list[Any]:
    """Hand each result to the handler of its kind, in order; a commit loop without strings.

    Args:
        results: A brain's answers.
        handlers: ``{kind: handler}``; every result's kind must have one.

    Returns:
        The handlers' return values, in result order.

    Raises:
        KeyError: naming the kind when a result has no handler.
    """
    returned = []
    for result in results:
        handler = handlers.get(result.request.kind)
        if handler is None:
            raise KeyError(f"no handler for decision kind {result.kind!r}")
        returned.append(handler(result))
    return returned
