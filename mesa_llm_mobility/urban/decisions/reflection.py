"""The ``DailyReflection`` decision: the day's lessons at 23:50, with their importance.

With the model's ``trip_importance="reflection"`` the LLM also scores the importance of each of
the day's trip memories here; by default an LLM traveller scores them on arrival
(:mod:`.trip_importance`, as GATSim's agents score a memory when they create it). The rule
reflection leaves the formula's scores (written at arrival).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import format_hhmm
from mesa_llm_mobility.urban.decisions.learning import (
    belief_text,
    parse_beliefs,
    update_beliefs,
)
from mesa_llm_mobility.urban.decisions.persona import (
    PersonaFacts,
    TripExperience,
    prompt_section,
    system_message,
    trip_memory_text,
)
from mesa_llm_mobility.urban.plans import (
    Concept,
    compact_schema,
)


@dataclass
class ReflectionContext:
    """What a traveller reflects on at the end of a day.

    Attributes:
        persona: The profile.
        day: Day number.
        trips: Today's experienced trips, with their lateness where there was a target.
        plan: Today's plan as lines.
        chats: Today's chat summaries.
        long_term_reflection: The current long-term reflection.
        score_trips: Whether to ask for ``trip_importance`` (not when the trips were scored on
            arrival, :mod:`.trip_importance`).
    """

    persona: PersonaFacts
    day: int
    trips: list[TripExperience] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    chats: list[str] = field(default_factory=list)
    long_term_reflection: str = ""
    score_trips: bool = True


class ReflectionOutput(BaseModel):
    """Daily reflections (concepts with importance) and an updated long-term reflection."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    reflections: list[Concept] = Field(min_length=1, max_length=4)
    long_term_reflection: str = Field(default="", max_length=800)
    trip_importance: list[float] = Field(
        default_factory=list,
        description="importance 0-1 of each of today's trips, in order (empty: keep)",
    )


def render_reflection_prompt(ctx: ReflectionContext) -> list[Message]:
    """Ask for today's reflections and the updated long-term reflection."""
    user = "\n".join(
        [
            f"Day {ctx.day} is over.",
            prompt_section("Your plan", ctx.plan),
            prompt_section(
                "Your trips",
                [f"{k}. {trip_memory_text(t)}" for k, t in enumerate(ctx.trips, 1)],
            ),
            prompt_section("Chats", ctx.chats),
            f"Long-term reflection so far: {ctx.long_term_reflection or 'none'}",
            (
                "Give 1-3 reflections (lessons about departure times, routes, modes, people) with "
                "importance 0-1 and keywords, based only on what happened, an updated long-term "
                "reflection (at most 3 sentences)"
                + (
                    ", and trip_importance: how much each trip above matters for your future "
                    "travel (0-1), one number per trip in order."
                    if ctx.score_trips
                    else "."
                )
            ),
        ]
    )
    return [system_message(ctx.persona.name), {"role": "user", "content": user}]


def reflection_rule_policy(
    ctx: ReflectionContext, rng: np.random.Generator
) -> ReflectionOutput:
    """One lesson per late trip (importance grows with lateness), else a calm day.

    The long-term reflection carries the traveller's smoothed travel-time beliefs
    (:func:`long_term_beliefs`), which tomorrow's rule plan reads back.
    """
    concepts = [
        Concept(
            content=(
                f"Leaving at {format_hhmm(t.departure)} by {t.mode} for {t.destination} made me "
                f"{t.late} min late; I should leave earlier."
            ),
            importance=min(1.0, 0.5 + (t.late or 0) / 60),
            keywords=["late", t.destination.lower(), t.mode],
        )
        for t in ctx.trips
        if t.late
    ][:3]
    if not concepts:
        concepts = [
            Concept(
                content=f"Day {ctx.day} went as planned.",
                importance=0.2,
                keywords=["routine"],
            )
        ]
    summary = f"Day {ctx.day}: {len(ctx.trips)} trips, {sum(1 for t in ctx.trips if t.late)} late."
    return ReflectionOutput(
        reflections=concepts, long_term_reflection=long_term_beliefs(ctx, summary)
    )


def long_term_beliefs(ctx: ReflectionContext, summary: str) -> str:
    """The long-term reflection of a rule traveller: smoothed travel-time beliefs, then the day.

    The beliefs of the previous long-term reflection are smoothed with today's trips
    (:func:`~mesa_llm_mobility.urban.decisions.learning.update_beliefs`); the trips just made
    come first and as many as fit in 800 characters are kept.
    """
    beliefs = update_beliefs(parse_beliefs(ctx.long_term_reflection), ctx.trips)
    recent = {(t.origin, t.destination, t.mode) for t in ctx.trips}
    ordered = sorted(beliefs.items(), key=lambda item: (item[0] not in recent, item[0]))
    text = summary
    for _, belief in ordered:
        sentence = belief_text(belief)
        if len(text) + 1 + len(sentence) > 800:
            break
        text = f"{text} {sentence}"
    return text


def validate_reflection(ctx: ReflectionContext, out: ReflectionOutput) -> list[str]:
    """Trip importances, when given, are one per trip and in [0, 1]."""
    scores = out.trip_importance
    if not scores or not ctx.score_trips:  # scored on arrival: extra scores are ignored
        return []
    errors = []
    if len(scores) != len(ctx.trips):
        errors.append(
            f"trip_importance: give one importance per trip ({len(ctx.trips)}), got {len(scores)}"
        )
    errors += [
        f"trip_importance[{k}]: {v} is not in [0, 1]"
        for k, v in enumerate(scores)
        if not 0.0 <= v <= 1.0
    ]
    return errors


def reflection_schema(ctx: ReflectionContext, schema: dict[str, Any]) -> dict[str, Any]:
    """The request's schema: at most one importance in [0, 1] per trip, none when not asked."""
    scores = schema["properties"]["trip_importance"]
    scores["items"] = {"type": "number", "minimum": 0.0, "maximum": 1.0}
    scores["maxItems"] = len(ctx.trips) if ctx.score_trips else 0
    return schema


DAILY_REFLECTION: DecisionKind[ReflectionContext, ReflectionOutput] = DecisionKind(
    name="DailyReflection",
    context_type=ReflectionContext,
    output_schema=ReflectionOutput,
    render_prompt=render_reflection_prompt,
    rule_policy=reflection_rule_policy,
    validate=validate_reflection,
    request_schema=reflection_schema,
)
