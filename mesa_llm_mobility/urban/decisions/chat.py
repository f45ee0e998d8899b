"""The ``Chat`` decision: a morning conversation with a family member or friend.

The summary becomes a memory of both speakers, with its importance (no separate scoring call).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
from mesa_llm_mobility.urban.plans import (
    compact_schema,
)

CHAT_TOPICS = (
    "morning traffic",
    "school drop-off and pick-up",
    "after-work plans",
    "weekend plans",
    "dinner",
    "sharing the car",
    "metro or drive",
    "work news",
)


@dataclass
class ChatContext:
    """What a traveller knows when opening a chat with family or a friend.

    Attributes:
        persona: The profile.
        day: Day number.
        now: Minute of the day.
        contacts: Name -> relation (``"family"`` or ``"friend"``).
        used_topics: Name -> topics already discussed with that person (never repeated).
        experiences: Recalled trips (to share).
        memories: Other recalled memories (text).
    """

    persona: PersonaFacts
    day: int
    now: int
    contacts: dict[str, str]
    used_topics: dict[str, list[str]] = field(default_factory=dict)
    experiences: list[TripExperience] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)


class ChatOutput(BaseModel):
    """One short exchange: the request, the partner's reply and its summary."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    partner: str
    topic: str = Field(min_length=1, max_length=80)
    request: str = Field(min_length=1, max_length=500)
    reply: str = Field(min_length=1, max_length=500)
    summary: str = Field(min_length=1, max_length=500)
    importance: float = Field(ge=0.0, le=1.0)


def render_chat_prompt(ctx: ChatContext) -> list[Message]:
    """Ask for one short chat with a family member or friend, on a new topic."""
    contacts = [
        f"{name} ({relation}; topics already discussed: {', '.join(ctx.used_topics.get(name, [])) or 'none'})"
        for name, relation in ctx.contacts.items()
    ]
    trips = [trip_memory_text(e) for e in ctx.experiences[-4:]]
    user = "\n".join(
        [
            f"Day {ctx.day}, {format_hhmm(ctx.now)}. Before planning today, you message one person.",
            prompt_section("People", contacts),
            prompt_section("Your recent trips", trips),
            prompt_section("Memories", ctx.memories[:4]),
            (
                "Write the request, their reply (in their voice) and a one-sentence summary both will "
                "remember, with its importance 0-1. Never repeat a topic already discussed with that person."
            ),
        ]
    )
    return [system_message(ctx.persona.name), {"role": "user", "content": user}]


def validate_chat(ctx: ChatContext, out: ChatOutput) -> list[str]:
    """The partner must be a contact and the topic new with them."""
    if out.partner not in ctx.contacts:
        return [
            f"partner {out.partner!r} is not among your contacts: {', '.join(ctx.contacts)}"
        ]
    used = {t.lower().strip() for t in ctx.used_topics.get(out.partner, [])}
    if out.topic.lower().strip() in used:
        return [
            f"topic {out.topic!r} was already discussed with {out.partner}; choose another topic"
        ]
    return []


def chat_rule_policy(ctx: ChatContext, rng: np.random.Generator) -> ChatOutput:
    """Pick a contact and a topic not yet discussed with them; share the worst recent trip.

    The trip is told as its memory text, so the partner's rule plan can read it as a tip
    (:func:`~mesa_llm_mobility.urban.decisions.learning.learnt_link_waits`).
    """
    options = [
        (name, [t for t in CHAT_TOPICS if t not in ctx.used_topics.get(name, [])])
        for name in ctx.contacts
    ]
    options = [(name, topics) for name, topics in options if topics] or [
        (next(iter(ctx.contacts)), [f"news of day {ctx.day}"])
    ]
    partner, topics = options[int(rng.integers(len(options)))]
    topic = topics[int(rng.integers(len(topics)))]
    worst = max(ctx.experiences, key=lambda e: e.delay, default=None)
    news = (
        trip_memory_text(worst).removesuffix(".")
        if worst is not None
        else "nothing special happened"
    )
    return ChatOutput(
        partner=partner,
        topic=topic,
        request=f"Hi {partner}, about {topic}: {news}.",
        reply=f"Thanks {ctx.persona.name}, good to know.",
        summary=f"{ctx.persona.name} and {partner} talked about {topic}: {news}.",
        importance=0.4 if worst is None else min(1.0, 0.4 + worst.delay / 60),
    )


CHAT: DecisionKind[ChatContext, ChatOutput] = DecisionKind(
    name="Chat",
    context_type=ChatContext,
    output_schema=ChatOutput,
    render_prompt=render_chat_prompt,
    rule_policy=chat_rule_policy,
    validate=validate_chat,
)
