"""The ``TravelQuery`` decision: which facts to look up before a decision (structured tool use).

Asked of LLM travellers (when the model's ``tools`` setting is on) just before a day plan or an
en-route reconsideration: at most :data:`~mesa_llm_mobility.urban.tools.MAX_TOOL_CALLS` calls of
the tools of :mod:`mesa_llm_mobility.urban.tools`, or none. It is the provider-independent form
of tool calling: every model that answers JSON can use it. The rule policy looks nothing up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.decisions.persona import PersonaFacts, system_message
from mesa_llm_mobility.urban.plans import compact_schema
from mesa_llm_mobility.urban.tools import MAX_TOOL_CALLS, TOOL_NAMES


@dataclass
class TravelQueryContext:
    """What a traveller knows when choosing what to look up.

    Attributes:
        persona: The profile.
        now: Minute of the day.
        place: Where the traveller is.
        decision: The decision to come, in a sentence.
        facilities: Valid facility names.
        nodes: Valid node ids.
        links: Valid link names.
        stops: Metro stops (node ids) by line.
        offered_facilities: The facilities the prompt names (empty: every one; a large
            city's are a choice, :meth:`~.contexts.WorldView.facilities_to_offer`).
    """

    persona: PersonaFacts
    now: int
    place: str
    decision: str
    facilities: frozenset[str] = field(default_factory=frozenset)
    nodes: frozenset[str] = field(default_factory=frozenset)
    links: frozenset[str] = field(default_factory=frozenset)
    stops: dict[str, tuple[str, ...]] = field(default_factory=dict)
    offered_facilities: tuple[str, ...] = ()


class ToolCall(BaseModel):
    """One tool call; give the arguments its tool needs."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    tool: Literal[
        "travel_time", "metro_timetable", "link_congestion", "facility_occupancy"
    ]
    origin: str | None = None
    destination: str | None = None
    mode: Literal["drive", "transit", "walk"] | None = None
    time: str | None = Field(default=None, description='"HH:MM"')
    stop: str | None = None
    link: str | None = None
    facility: str | None = None

    def arguments(self) -> dict[str, str]:
        """The arguments its tool takes, as given."""
        names = {
            "travel_time": ("origin", "destination", "mode", "time"),
            "metro_timetable": ("stop", "time"),
            "link_congestion": ("link",),
            "facility_occupancy": ("facility",),
        }[self.tool]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


class TravelQueryOutput(BaseModel):
    """The tool calls to make before deciding (none is fine)."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    queries: list[ToolCall] = Field(default_factory=list, max_length=MAX_TOOL_CALLS)


REQUIRED = {
    "travel_time": ("origin", "destination", "mode"),
    "metro_timetable": ("stop",),
    "link_congestion": ("link",),
    "facility_occupancy": ("facility",),
}


def render_travel_query_prompt(ctx: TravelQueryContext) -> list[Message]:
    """Offer the tools before the decision."""
    stops = "; ".join(
        f"{line}: {', '.join(s)}" for line, s in sorted(ctx.stops.items())
    )
    user = "\n".join(
        [
            f"It is {format_hhmm(ctx.now)} and you are at {ctx.place}. Next you will {ctx.decision}.",
            f"Before that you may look up to {MAX_TOOL_CALLS} facts (or none):",
            "- travel_time(origin, destination, mode, time): minutes by drive, transit or walk on current traffic",
            "- metro_timetable(stop, time): next trains from a stop",
            "- link_congestion(link): current wait on a link",
            "- facility_occupancy(facility): visitors and queue at a facility",
            f"Places: facilities ({', '.join(ctx.offered_facilities or sorted(ctx.facilities))}) or node ids. Metro stops: {stops}.",
            "Answer with the queries list (empty when you need nothing).",
        ]
    )
    return [system_message(ctx.persona.name), {"role": "user", "content": user}]


def validate_travel_query(ctx: TravelQueryContext, out: TravelQueryOutput) -> list[str]:
    """Each call names its tool's required arguments with known places, links and times."""
    errors: list[str] = []
    places = ctx.facilities | ctx.nodes
    for k, call in enumerate(out.queries):
        where = f"queries[{k}] ({call.tool})"
        missing = [n for n in REQUIRED[call.tool] if getattr(call, n) is None]
        if missing:
            errors.append(f"{where}: missing {', '.join(missing)}")
            continue
        for name in ("origin", "destination", "stop"):
            value = getattr(call, name)
            if name in REQUIRED[call.tool] and value not in places:
                errors.append(
                    f"{where}: unknown {name} {value!r}; use a facility or node id"
                )
        if call.tool == "facility_occupancy" and call.facility not in ctx.facilities:
            errors.append(f"{where}: unknown facility {call.facility!r}")
        if call.tool == "link_congestion" and call.link not in ctx.links:
            errors.append(f"{where}: unknown link {call.link!r}")
        if call.time is not None:
            try:
                parse_hhmm(call.time)
            except ValueError as error:
                errors.append(f"{where}: time: {error}")
    return errors


def travel_query_rule_policy(
    ctx: TravelQueryContext, rng: np.random.Generator
) -> TravelQueryOutput:
    """The rule baseline looks nothing up."""
    return TravelQueryOutput()


TRAVEL_QUERY: DecisionKind[TravelQueryContext, TravelQueryOutput] = DecisionKind(
    name="TravelQuery",
    context_type=TravelQueryContext,
    output_schema=TravelQueryOutput,
    render_prompt=render_travel_query_prompt,
    rule_policy=travel_query_rule_policy,
    validate=validate_travel_query,
)

__all__ = [
    "REQUIRED",
    "TOOL_NAMES",
    "TRAVEL_QUERY",
    "ToolCall",
    "TravelQueryContext",
    "TravelQueryOutput",
    "render_travel_query_prompt",
    "travel_query_rule_policy",
    "validate_travel_query",
]
