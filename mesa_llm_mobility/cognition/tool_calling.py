"""Native tool calling: the tools a decision may call, and one tool step of the brain's loop.

A model that lets a decision look things up first attaches a :class:`Toolbox` to its
:class:`~mesa_llm_mobility.cognition.kinds.DecisionRequest` (``tools=``): the tools in the OpenAI
function-calling format, the function that answers a call, and the bound on calls per decision.
Where the brain calls tools natively (:func:`native_tool_calling`), it sends ``tools=`` with every
round of the decision; an answer with ``tool_calls`` is executed here (:func:`tool_step`), each
call answered by a ``tool`` message (an error message for an unknown tool, arguments that are not
a JSON object, or a bad argument), and the conversation goes on until the model gives its final
answer. Once the bound is spent the brain sends ``tool_choice="none"``; calls beyond it are
refused with an error message and never executed.

Each executed call is a :class:`ToolUse`, carried by the decision's result and kept in the
ledger inside the round that asked for it (``tool_calls`` and ``tool_results``), so a replayed
decision gives the same uses without a call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mesa_llm_mobility.cognition.offline import import_litellm

logger = logging.getLogger(__name__)

TOOL_CALLING_CHOICES: tuple[str, ...] = ("auto", "native", "structured")
"""``auto``: native where litellm knows the model calls functions; else as named."""

NO_TOOLS_LEFT = "no tool calls left in this decision: answer with the JSON object now"


@dataclass(frozen=True, eq=False)
class Toolbox:
    """The tools a decision request may call natively.

    Attributes:
        specs: The tools in the OpenAI function-calling format (``{"type": "function",
            "function": {"name", "description", "parameters"}}``).
        execute: ``(name, arguments) -> answer``: answers one call in a line; raises
            ``ValueError`` with a message for the model on a bad argument.
        max_calls: Calls the model may make in one decision (refused beyond).
    """

    specs: tuple[Mapping[str, Any], ...]
    execute: Callable[[str, dict[str, Any]], str]
    max_calls: int = 3
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        if self.max_calls < 1:
            raise ValueError(f"Toolbox.max_calls must be >= 1, got {self.max_calls}")
        object.__setattr__(
            self, "names", tuple(spec["function"]["name"] for spec in self.specs)
        )


@dataclass(frozen=True)
class ToolUse:
    """One tool call a model made natively in a decision, with its answer.

    Attributes:
        tool: The tool named.
        arguments: The arguments given (``{}`` when they were not a JSON object).
        answer: The answer (or the error) sent back in the ``tool`` message.
        ok: Whether the tool answered (``False``: unknown tool or bad arguments).
    """

    tool: str
    arguments: dict[str, Any]
    answer: str
    ok: bool = True


def native_tool_calling(model: str, choice: str) -> bool:
    """Whether a brain for ``model`` calls tools natively under ``choice``.

    ``"auto"`` asks ``litellm.supports_function_calling`` (a self-hosted ``openai/<name>``
    model is unknown to it, hence structured: servers such as vLLM call tools only when
    started for it); ``"native"`` and ``"structured"`` decide alone.

    Raises:
        ValueError: for an unknown choice.
    """
    if choice not in TOOL_CALLING_CHOICES:
        raise ValueError(
            f"LLMBrain.tool_calling must be one of {', '.join(TOOL_CALLING_CHOICES)}, "
            f"got {choice!r}"
        )
    if choice != "auto":
        return choice == "native"
    try:
        return bool(import_litellm().supports_function_calling(model=model))
    except Exception:  # litellm raises its own "not mapped" error types
        return False


def rejects_tools(error: BaseException | None) -> bool:
    """Whether a failed call means the endpoint does not take ``tools`` (HTTP 400/422 naming them).

    vLLM started without ``--enable-auto-tool-choice`` answers 400 ``"auto" tool choice
    requires --enable-auto-tool-choice``; other servers say ``tools are not supported``.
    """
    status = getattr(error, "status_code", None)
    return status in (400, 422) and "tool" in str(error).lower()


def tool_params(toolbox: Toolbox, calls_left: int) -> dict[str, Any]:
    """The request parameters offering ``toolbox`` (``tool_choice="none"`` once spent)."""
    return {
        "tools": [dict(spec) for spec in toolbox.specs],
        "tool_choice": "auto" if calls_left > 0 else "none",
    }


def read_tool_calls(raw: Iterable[Any] | None) -> tuple[dict[str, str], ...]:
    """The tool calls of an assistant message as ``{"id", "name", "arguments"}`` (texts).

    Reads both the JSON of an OpenAI-compatible answer and litellm's message objects; a call
    without an id gets ``call_<n>`` (some servers send none).
    """
    if not isinstance(raw, list | tuple):
        return ()
    calls = []
    for number, call in enumerate(raw):
        function = _field(call, "function") or {}
        arguments = _field(function, "arguments")
        calls.append(
            {
                "id": str(_field(call, "id") or f"call_{number}"),
                "name": str(_field(function, "name") or ""),
                "arguments": arguments
                if isinstance(arguments, str)
                else json.dumps(arguments if arguments is not None else {}),
            }
        )
    return tuple(calls)


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


@dataclass(frozen=True)
class ToolStep:
    """One answer's tool calls, answered.

    Attributes:
        messages: The assistant message with its calls, then one ``tool`` message per call.
        results: Per call ``{"id", "answer", "ok", "executed"}`` (recorded in the round).
        uses: The calls executed (within the bound), in order.
    """

    messages: list[dict[str, Any]]
    results: list[dict[str, Any]]
    uses: list[ToolUse]


def tool_step(
    toolbox: Toolbox,
    content: str,
    calls: Sequence[Mapping[str, str]],
    calls_left: int,
) -> ToolStep:
    """Answer the tool calls of one assistant answer, at most ``calls_left`` of them.

    Every call counts against the bound, a malformed one too (a model cannot loop on bad
    calls); those beyond it are refused with :data:`NO_TOOLS_LEFT` and not executed.
    """
    assistant = {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
            for call in calls
        ],
    }
    messages: list[dict[str, Any]] = [assistant]
    results: list[dict[str, Any]] = []
    uses: list[ToolUse] = []
    for call in calls:
        if len(uses) >= calls_left:
            answer = f"error: {NO_TOOLS_LEFT} (at most {toolbox.max_calls} calls)"
            ok, executed = False, False
        else:
            use = execute_call(toolbox, call["name"], call["arguments"])
            uses.append(use)
            answer, ok, executed = use.answer, use.ok, True
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": answer})
        results.append(
            {"id": call["id"], "answer": answer, "ok": ok, "executed": executed}
        )
    return ToolStep(messages, results, uses)


def execute_call(toolbox: Toolbox, name: str, arguments_text: str) -> ToolUse:
    """Execute one call; an unknown tool or bad arguments give an error answer, not an exception."""
    try:
        arguments = json.loads(arguments_text) if arguments_text.strip() else {}
    except ValueError as error:
        return ToolUse(
            name, {}, f"error: arguments are not valid JSON ({error})", False
        )
    if not isinstance(arguments, dict):
        return ToolUse(name, {}, "error: arguments must be a JSON object", False)
    if name not in toolbox.names:
        return ToolUse(
            name,
            arguments,
            f"error: unknown tool {name!r}; use one of {', '.join(toolbox.names)}",
            False,
        )
    try:
        return ToolUse(name, arguments, str(toolbox.execute(name, arguments)))
    except ValueError as error:
        return ToolUse(name, arguments, f"error: {error}", False)


def is_tool_step(round_: Mapping[str, Any]) -> bool:
    """Whether a recorded round was a tool step (calls answered), not an answer to check."""
    return bool(round_.get("tool_calls")) and not round_.get("errors")


def uses_of_rounds(rounds: Iterable[Mapping[str, Any]]) -> list[ToolUse]:
    """The tool uses recorded in a decision's rounds (for a replayed decision)."""
    uses = []
    for round_ in rounds:
        calls = {call["id"]: call for call in round_.get("tool_calls") or ()}
        for result in round_.get("tool_results") or ():
            if not result.get("executed"):
                continue
            call = calls.get(result["id"], {})
            try:
                arguments = json.loads(call.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            uses.append(
                ToolUse(
                    call.get("name", ""),
                    arguments if isinstance(arguments, dict) else {},
                    result["answer"],
                    bool(result["ok"]),
                )
            )
    return uses
