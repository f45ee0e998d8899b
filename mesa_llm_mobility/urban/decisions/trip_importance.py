"""The ``TripImportance`` decision: how much a trip just made matters, scored when it is remembered.

GATSim's agents give each memory an importance when they create it (section 3.4.1). An LLM
traveller here scores its trip memories on arrival: one decision per traveller and minute for the
trips it completed that minute (bounded: at most one call per trip, usually one per trip), and
the score replaces the formula's in the memory. The rule policy is that formula,
:func:`formula_importance` (the rule brain never asks: its memories keep the formula). With the
model's ``trip_importance="reflection"`` the LLM scores the day's trips once, at the daily
reflection, instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import format_hhmm
from mesa_llm_mobility.urban.decisions.persona import (
    PersonaFacts,
    TripExperience,
    prompt_section,
    system_message,
    trip_memory_text,
)
from mesa_llm_mobility.urban.plans import compact_schema


def formula_importance(trip: TripExperience) -> float:
    """``min(1, 0.5 + delay / 40 + late / 30)``: the importance a trip memory gets at arrival.

    A trip on time without delay is 0.5; 20 minutes of delay or 15 minutes late add 0.5.
    """
    return min(1.0, 0.5 + trip.delay / 40 + (trip.late or 0) / 30)


@dataclass
class TripImportanceContext:
    """The trips a traveller just completed, to score before remembering them.

    Attributes:
        persona: The profile.
        day: Day number.
        now: Minute of the day.
        trips: The trips completed this minute, in order.
        long_term_reflection: The current long-term reflection (what matters to it).
    """

    persona: PersonaFacts
    day: int
    now: int
    trips: list[TripExperience] = field(default_factory=list)
    long_term_reflection: str = ""


class TripImportanceOutput(BaseModel):
    """One importance in [0, 1] per trip, in order."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    importance: list[float] = Field(
        min_length=1, description="importance 0-1 of each trip above, in order"
    )


def render_trip_importance_prompt(ctx: TripImportanceContext) -> list[Message]:
    """Ask how much each trip just made matters for future travel."""
    user = "\n".join(
        [
            f"Day {ctx.day}, {format_hhmm(ctx.now)}. You have just arrived.",
            prompt_section(
                "Trips to remember",
                [f"{k}. {trip_memory_text(t)}" for k, t in enumerate(ctx.trips, 1)],
            ),
            f"Long-term reflection: {ctx.long_term_reflection or 'none yet'}",
            (
                "Rate how much each trip matters for your future travel, 0-1 (0: routine, "
                "forget soon; 1: a lesson to keep), one number per trip in order, as importance."
            ),
        ]
    )
    return [system_message(ctx.persona.name), {"role": "user", "content": user}]


def validate_trip_importance(
    ctx: TripImportanceContext, out: TripImportanceOutput
) -> list[str]:
    """One importance per trip, each in [0, 1]."""
    errors = []
    if len(out.importance) != len(ctx.trips):
        errors.append(
            f"importance: give one importance per trip ({len(ctx.trips)}), got "
            f"{len(out.importance)}"
        )
    errors += [
        f"importance[{k}]: {v} is not in [0, 1]"
        for k, v in enumerate(out.importance)
        if not 0.0 <= v <= 1.0
    ]
    return errors


def trip_importance_schema(
    ctx: TripImportanceContext, schema: dict[str, Any]
) -> dict[str, Any]:
    """The request's schema: exactly one importance per trip, each in [0, 1].

    Without the length a model under a grammar may count on to its token limit.
    """
    importance = schema["properties"]["importance"]
    importance["items"] = {"type": "number", "minimum": 0.0, "maximum": 1.0}
    if ctx.trips:
        importance["minItems"] = importance["maxItems"] = len(ctx.trips)
    return schema


def trip_importance_rule_policy(
    ctx: TripImportanceContext, rng: np.random.Generator
) -> TripImportanceOutput:
    """The formula of :func:`formula_importance` for each trip."""
    return TripImportanceOutput(importance=[formula_importance(t) for t in ctx.trips])


TRIP_IMPORTANCE: DecisionKind[TripImportanceContext, TripImportanceOutput] = (
    DecisionKind(
        name="TripImportance",
        context_type=TripImportanceContext,
        output_schema=TripImportanceOutput,
        render_prompt=render_trip_importance_prompt,
        rule_policy=trip_importance_rule_policy,
        validate=validate_trip_importance,
        request_schema=trip_importance_schema,
    )
)
