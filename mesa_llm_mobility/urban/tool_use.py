"""When travellers of a minute use the tools (:mod:`.tools`), and how their calls are kept.

The model hands each minute's requests to :func:`look_up` before deciding them: travellers about
to plan their day or to reconsider en route (at a node or a stop) may call tools first, natively
within the decision or through a ``TravelQuery`` decision ahead of it (the two ways
:mod:`.tools` describes). Every call with its answer becomes a :class:`~.tools.ToolCallRecord`
of the model's ``tool_calls``: structured ones here, native ones from the answered decisions
(:func:`native_tool_calls`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from mesa_llm_mobility.urban.decisions import DAILY_PLAN, PLAN_REVISION
from mesa_llm_mobility.urban.itinerary import is_day_phase
from mesa_llm_mobility.urban.tools import ToolCallRecord, ToolError, TravelTools

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition import DecisionRequest
    from mesa_llm_mobility.cognition.kinds import DecisionResult
    from mesa_llm_mobility.urban.model import UrbanMobilityModel

__all__ = ["look_up", "native_tool_calls"]


def look_up(
    model: UrbanMobilityModel,
    requests: list[DecisionRequest[Any, Any]],
    t: int,
    time: dict[str, int],
) -> list[DecisionRequest[Any, Any]]:
    """Let travellers about to plan or to reconsider en route call tools first.

    Where the brain calls tools natively, those requests are returned with the tools
    (:meth:`~.tools.TravelTools.toolbox`): the model calls them within the decision (a
    decision sent ahead with a reaction time asks the structured way, since its tools would
    answer from a world that moves on meanwhile). Else one ``TravelQuery`` decision each (a
    batch, recorded on ``model`` at ``time``); its calls are answered by
    :class:`~.tools.TravelTools`, kept in ``model.tool_calls``, and the answers put into the
    decision's context (``lookups``), so the decision's prompt (and its ledger record) carries
    them.

    Args:
        model: The model (its brain, view, travellers, reaction time and tool calls).
        requests: The minute's requests.
        t: The absolute minute.
        time: The decisions' ``day`` and ``minute`` tags.

    Returns:
        The requests, those asking with native tools replaced.
    """
    asking = [
        r
        for r in requests
        if r.kind is DAILY_PLAN
        or (r.kind is PLAN_REVISION and r.context.situation in ("at_node", "at_stop"))
    ]
    if not asking:
        return requests
    if model.brain.native_tools and (
        model.reactions.reaction_minutes == 0 or is_day_phase(time["minute"])
    ):
        toolbox = TravelTools(model.view, t).toolbox()
        chosen = set(map(id, asking))
        return [
            dataclasses.replace(r, tools=toolbox) if id(r) in chosen else r
            for r in requests
        ]
    queries = [
        model.travellers[str(r.agent_id)].travel_query_request(model.view, t, r)
        for r in asking
    ]
    tools = TravelTools(model.view, t)
    for request, result in zip(asking, model.decide(queries, **time), strict=True):
        lines = []
        for call in result.output.queries:
            arguments = call.arguments()
            try:
                answer, ok = tools.call(call.tool, arguments), True
            except ToolError as error:
                answer, ok = f"{call.tool} failed: {error}", False
            lines.append(answer)
            model.tool_calls.append(
                ToolCallRecord(
                    str(result.agent_id), t, call.tool, arguments, answer, ok
                )
            )
        request.context.lookups = lines
        model.record_decision(result, time, action=f"{len(lines)} tool calls")
    return requests


def native_tool_calls(
    results: Sequence[DecisionResult[Any, Any]], minute: int
) -> Iterator[ToolCallRecord]:
    """The tools the results' models called natively, as records at the absolute ``minute``."""
    for result in results:
        for use in result.tool_calls:
            yield ToolCallRecord(
                str(result.agent_id),
                minute,
                use.tool,
                use.arguments,
                use.answer,
                use.ok,
                via="native",
            )
