"""Tools an LLM traveller may use before deciding: travel times, the metro timetable, congestion, occupancy.

GATSim's agents query the environment (routes and travel times) before planning. A traveller
about to plan its day or to reconsider en route may make at most :data:`MAX_TOOL_CALLS` calls of
the :data:`TOOL_NAMES` tools, answered by :class:`TravelTools` (read-only queries of the world at
that minute), in one of two ways:

* **native** (a brain that calls tools natively, ``tool_calling="native"`` or ``"auto"`` on a
  model litellm knows to call functions): the decision itself is sent with ``tools=``
  :data:`TOOL_SPECS` (:meth:`TravelTools.toolbox`); the model calls them, reads the answers in
  ``tool`` messages and then decides. The calls and answers are in the decision's ledger record.
* **structured** (every other brain): a ``TravelQuery`` decision first
  (:mod:`.decisions.travel_query`), whose calls the model answers; the answers go into the
  decision's prompt ("Looked up"). The query decision is in the ledger with its calls, the
  answers with the decision that reads them.

:attr:`UrbanMobilityModel.tool_calls` keeps every call of either way with its answer and ``via``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mesa_llm_mobility.cognition.tool_calling import Toolbox
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.metro import next_train
from mesa_llm_mobility.urban.routing import PathError

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.contexts import WorldView

MAX_TOOL_CALLS = 3
"""Tool calls a traveller may make before one decision."""
TIMETABLE_DEPARTURES = 3
"""Departures the timetable tool lists per line and direction."""
TOOL_NAMES = ("travel_time", "metro_timetable", "link_congestion", "facility_occupancy")

_PLACE = {"type": "string", "description": "facility name or node id"}
_TIME = {"type": "string", "description": "HH:MM (default: now)"}
TOOL_SPECS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "travel_time",
            "description": "Expected minutes between two places by a mode, leaving at a time, on current traffic",
            "parameters": {
                "type": "object",
                "properties": {
                    "origin": _PLACE,
                    "destination": _PLACE,
                    "mode": {"type": "string", "enum": ["drive", "transit", "walk"]},
                    "time": _TIME,
                },
                "required": ["origin", "destination", "mode"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "metro_timetable",
            "description": "Next metro departures from a stop, by line and direction",
            "parameters": {
                "type": "object",
                "properties": {"stop": _PLACE, "time": _TIME},
                "required": ["stop"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "link_congestion",
            "description": "Current queue wait on a road or metro link, both directions",
            "parameters": {
                "type": "object",
                "properties": {"link": {"type": "string"}},
                "required": ["link"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "facility_occupancy",
            "description": "Visitors, capacity and the queue at a facility's door now",
            "parameters": {
                "type": "object",
                "properties": {"facility": {"type": "string"}},
                "required": ["facility"],
            },
        },
    },
)
"""The tools in the OpenAI function-calling format (``tools=[...]``)."""


class ToolError(ValueError):
    """A tool call with a bad argument; the message names it (shown to the traveller)."""


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call: who asked, when, what, the answer (or the error), and how it was asked.

    ``via``: ``"structured"`` (a ``TravelQuery`` decision) or ``"native"`` (the model's own
    tool call in the decision).
    """

    agent: str
    minute: int
    tool: str
    arguments: dict[str, Any]
    answer: str
    ok: bool = True
    via: str = "structured"


@dataclass
class TravelTools:
    """The tools, answering from the world as it is at absolute minute ``t`` (queries only).

    Args:
        view: The travellers' world view.
        t: The current absolute minute.
    """

    view: WorldView
    t: int

    def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Answer one call in a line.

        Raises:
            ToolError: On an unknown tool or a bad argument, naming it.
        """
        method = {
            "travel_time": self.travel_time,
            "metro_timetable": self.metro_timetable,
            "link_congestion": self.link_congestion,
            "facility_occupancy": self.facility_occupancy,
        }.get(tool)
        if method is None:
            raise ToolError(
                f"unknown tool {tool!r}; use one of {', '.join(TOOL_NAMES)}"
            )
        for name, value in arguments.items():
            if value is not None and not isinstance(value, str):
                raise ToolError(
                    f"{tool}: {name} must be a string, got {type(value).__name__}"
                )
        try:
            return method(**{k: v for k, v in arguments.items() if v is not None})
        except TypeError as error:
            raise ToolError(f"{tool}: {error}") from error

    def toolbox(self) -> Toolbox:
        """The tools for a brain that calls them natively (:data:`TOOL_SPECS`, bounded)."""
        return Toolbox(TOOL_SPECS, self.call, MAX_TOOL_CALLS)

    def _minute(self, time: str | None) -> int:
        """The absolute minute of ``time`` today (``None``: now); never before now."""
        if time is None:
            return self.t
        try:
            minute = parse_hhmm(time)
        except ValueError as error:
            raise ToolError(f"time: {error}") from error
        day_start = self.t - self.t % MINUTES_PER_DAY
        return max(self.t, day_start + minute)

    def _node(self, place: str, field: str) -> str:
        try:
            return self.view.engine.index.node_of(place)
        except PathError as error:
            raise ToolError(f"{field}: {error}") from error

    def travel_time(
        self, origin: str, destination: str, mode: str, time: str | None = None
    ) -> str:
        """Expected minutes by ``mode`` on the fastest path now, leaving at ``time``."""
        if mode not in ("drive", "transit", "walk"):
            raise ToolError(f"mode: expected drive, transit or walk, got {mode!r}")
        self._node(origin, "origin")
        self._node(destination, "destination")
        depart = self._minute(time)
        engine = self.view.engine
        try:
            links = engine.router.path(origin, destination, mode)
        except PathError as error:
            raise ToolError(
                f"no {mode} path from {origin} to {destination}: {error}"
            ) from error
        minutes = self.view.minutes_now(links, mode, depart)
        free = engine.router.free_flow_time(links, mode)
        return (
            f"{origin} -> {destination} by {mode} leaving {format_hhmm(depart % MINUTES_PER_DAY)}: "
            f"~{minutes:.0f} min (free flow {free:.0f}) via {', '.join(link.name for link in links)}"
        )

    def metro_timetable(self, stop: str, time: str | None = None) -> str:
        """The next departures of each line and direction from ``stop``."""
        node = self._node(stop, "stop")
        after = self._minute(time)
        engine = self.view.engine
        lines = []
        for link in engine.index.out_links[node]:
            if link.kind != "metro":
                continue
            line = engine.scenario.metro_lines[link.line]
            departures, minute = [], float(after)
            for _ in range(TIMETABLE_DEPARTURES):
                leave = next_train(line, link.stop, minute)
                if math.isinf(leave):
                    break
                departures.append(format_hhmm(int(leave) % MINUTES_PER_DAY))
                minute = leave + 1e-6
            lines.append(
                f"{link.line} towards {link.head} ({link.name}): "
                + (", ".join(departures) or "no train")
                + f"; ~{engine.link_wait(link):.0f} min crowding wait"
            )
        if not lines:
            raise ToolError(f"stop: {stop!r} is not a metro stop")
        return (
            f"Metro from {stop} after {format_hhmm(after % MINUTES_PER_DAY)}: "
            + "; ".join(lines)
        )

    def link_congestion(self, link: str) -> str:
        """The current wait on each direction of ``link``."""
        engine = self.view.engine
        directions = engine.index.by_name.get(link)
        if not directions:
            raise ToolError(f"link: unknown link {link!r}")
        return f"{link}: " + "; ".join(
            f"{d.tail} -> {d.head} ~{engine.link_wait(d):.0f} min wait"
            for d in directions
        )

    def facility_occupancy(self, facility: str) -> str:
        """Visitors, capacity and door queue of ``facility`` now."""
        engine = self.view.engine
        if facility not in self.view.facilities:
            raise ToolError(f"facility: unknown facility {facility!r}")
        inside, capacity, queue = engine.facility_occupancy(facility)
        return (
            f"{facility}: {inside} inside of {capacity}, {queue} queueing at the door "
            f"(~{engine.facility_wait(facility):.0f} min wait)"
        )
