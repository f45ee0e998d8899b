"""The urban model's parameters, declared once (:class:`UrbanParameters`).

The same object is :class:`~.model.UrbanMobilityModel`'s input (keyword arguments are
accepted too), a run's ``config.json``, the keys of ``mlm sweep urban --param``, the flags of
``mlm urban run`` and what ``mlm urban fork`` may change.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from mesa_llm_mobility.experiment.parameters import Parameters, parameter

TRIP_IMPORTANCE_MODES = ("creation", "reflection")
"""When LLM travellers score their trip memories: on arrival, or at the daily reflection."""

TOOL_CALLING_MODES = ("auto", "native", "structured")
"""How an LLM traveller calls tools (see :mod:`mesa_llm_mobility.cognition.tool_calling`)."""


@dataclass(frozen=True, kw_only=True)
class UrbanParameters(Parameters):
    """Parameters of an urban run (GATSim's daily travel on a multimodal network).

    Attributes:
        days: Days to simulate.
        scenario: Bundled scenario name or JSON file (or a loaded ``Scenario``).
        population: Bundled population name or JSON file (or a loaded population).
        n_agents: Subsample or replicate households to this many travellers.
        events: Whether the scenario's events happen (or a list of ``Event``).
        embedding: Memory embedding: ``auto``, ``minilm`` or ``hash``.
        start_date: Date of day 1.
        reaction_minutes: Simulated minutes between asking a revision and applying it.
        tools: Whether LLM travellers may call tools before planning and en route.
        trip_importance: When LLM travellers score their trip memories.
        tool_calling: How an LLM traveller calls tools (none: the brain option, else auto).
        chat_probability: Chance that a traveller with contacts opens a morning chat.
        daytime_chat_probability: Chance of a daytime chat with a contact at an activity.
        collect_every: Minutes between data collections.
    """

    model_name: ClassVar[str] = "urban"
    command: ClassVar[str] = "urban"
    model_class: ClassVar[str] = "mesa_llm_mobility.urban.model.UrbanMobilityModel"

    days: int = parameter(1, "days to simulate", unit="day", ge=1, forkable=True)
    scenario: str | Path = parameter(
        "nguyen_dupuis", "bundled scenario name or JSON file", loaded=True
    )
    population: str | Path = parameter(
        "population_70",
        "bundled population name or JSON file, or 'synthetic' (the rule sampler; on an "
        "imported city the default is synthesised on its homes and workplaces)",
        loaded=True,
    )
    n_agents: int | None = parameter(
        None,
        "scale the population to N travellers (none: as the population file)",
        flag="agents",
        ge=1,
    )
    events: bool = parameter(
        True, "whether the scenario's events happen", forkable=True, loaded=True
    )
    embedding: Literal["auto", "minilm", "hash"] = parameter(
        "auto",
        "memory embedding: 'auto' (MiniLM when installed, else hash; the run's metadata "
        "says which), 'minilm' or 'hash'",
    )
    start_date: str = parameter(
        "2025-03-10", "date of day 1 (ISO, a Monday in the paper)"
    )
    reaction_minutes: int = parameter(
        0,
        "apply revisions this many simulated minutes after they are asked while the "
        "traffic moves on (asynchronous LLM decisions; 0: Algorithm 1's synchronous minute)",
        unit="min",
        ge=0,
    )
    tools: bool = parameter(
        False,
        "LLM travellers may look up travel times, the metro timetable, congestion and "
        "occupancy before planning and en route (one extra decision each)",
    )
    trip_importance: Literal["creation", "reflection"] = parameter(
        "creation",
        "when LLM travellers score their trip memories: on arrival (as in the paper) or at "
        "the daily reflection",
    )
    tool_calling: Literal["auto", "native", "structured"] | None = parameter(
        None,
        "how an LLM traveller calls tools (none: the brain's --tool-calling, else "
        "$MLM_TOOL_CALLING, else auto); a run keeps the one it started with",
        command_line=False,
    )
    chat_probability: float = parameter(
        0.15, "chance that a traveller with contacts opens a morning chat", ge=0, le=1
    )
    daytime_chat_probability: float = parameter(
        0.05,
        "chance that a traveller reconsidering during an activity calls a contact",
        ge=0,
        le=1,
    )
    collect_every: int = parameter(
        15, "minutes between data collections", unit="min", ge=1
    )

    def check(self) -> None:
        """The start date is an ISO date."""
        super().check()
        try:
            dt.date.fromisoformat(self.start_date)
        except ValueError:
            raise ValueError(
                f"start_date must be an ISO date (YYYY-MM-DD), got {self.start_date!r}"
            ) from None
