"""The ``ChatTurn`` decision: one answer in a conversation, from the speaker's own point of view.

After the opening (:mod:`.chat`), the partner and the initiator answer in turn: each sees its
own profile, memories, recent trips and plan, the conversation so far and the proposal on the
table, and may accept it, make a counter-proposal, or end the conversation. Every turn writes
the summary so far; the last one is what both remember. The rule policy accepts what the
household rule of :mod:`.household` gives from the speaker's own side, counters with it, or
declines and ends (the engine's assignment stands).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import format_hhmm
from mesa_llm_mobility.urban.decisions.chat import (
    ChatAgreement,
    ChatMedium,
    SpeakerFacts,
    agreement_help,
    validate_agreement,
)
from mesa_llm_mobility.urban.decisions.household import (
    household_agreement,
    rule_accepts,
)
from mesa_llm_mobility.urban.decisions.persona import (
    PersonaFacts,
    TripExperience,
    prompt_section,
    prompt_sections,
    system_message,
    trip_memory_text,
)
from mesa_llm_mobility.urban.plans import compact_schema


@dataclass
class ChatTurnContext:
    """What a speaker knows when answering in a conversation.

    Attributes:
        persona: The speaker's profile.
        partner: The other speaker.
        relation: ``"family"`` or ``"friend"``.
        topic: The conversation's topic.
        day: Day number.
        now: Minute of the day.
        turn: This turn's number (the opening was turn 0).
        max_turns: Turns of the conversation at most.
        transcript: The conversation so far, ``"Name: message"`` lines.
        proposal: The proposal on the table, made by ``partner``, or ``None``.
        speakers: Both speakers' day (:class:`SpeakerFacts`), by name.
        vehicles: Vehicles of the speaker's household.
        facilities: Valid facility names.
        medium: ``"in person"`` or ``"by phone"``.
        morning: Whether cars and school runs can still change.
        experiences: The speaker's recalled trips.
        memories: The speaker's recalled memories about the partner and the topic.
    """

    persona: PersonaFacts
    partner: str
    relation: str
    topic: str
    day: int
    now: int
    turn: int
    max_turns: int
    transcript: list[str]
    proposal: ChatAgreement | None = None
    speakers: dict[str, SpeakerFacts] = field(default_factory=dict)
    vehicles: int = 0
    facilities: frozenset[str] = field(default_factory=frozenset)
    medium: ChatMedium = "by phone"
    morning: bool = True
    experiences: list[TripExperience] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)

    @property
    def last_turn(self) -> bool:
        """Whether this turn closes the conversation whatever is answered."""
        return self.turn >= self.max_turns - 1


class ChatTurnOutput(BaseModel):
    """One answer: the message, whether the proposal on the table is accepted, a counter-proposal."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    message: str = Field(min_length=1, max_length=500)
    accept: bool = Field(default=False, description="accept the proposal on the table")
    proposal: ChatAgreement | None = Field(
        default=None, description="a counter-proposal instead of accepting"
    )
    end: bool = Field(default=False, description="end the conversation")
    summary: str = Field(
        min_length=1, max_length=500, description="one sentence both will remember"
    )
    importance: float = Field(ge=0.0, le=1.0)


def render_chat_turn_prompt(ctx: ChatTurnContext) -> list[Message]:
    """Ask the speaker for its answer in the conversation."""
    me = ctx.persona.name
    table = (
        f"{ctx.partner} proposes: {ctx.proposal.describe()}. Accept it (accept true) or "
        "make a counter-proposal."
        if ctx.proposal is not None
        else "No proposal on the table."
    )
    closing = (
        "This is the last turn: close the conversation."
        if ctx.last_turn
        else f"Turn {ctx.turn + 1} of at most {ctx.max_turns}."
    )
    days = [s.describe() for s in ctx.speakers.values()]
    user = "\n".join(
        [
            (
                f"Day {ctx.day}, {format_hhmm(ctx.now)}. You are talking {ctx.medium} with "
                f"{ctx.partner} ({ctx.relation}) about {ctx.topic}. {closing}"
            ),
            f"Profile: {ctx.persona.profile_text()}.",
            prompt_section("Conversation so far", ctx.transcript),
            table,
            *prompt_sections(
                ("Today of each of you", days),
                (
                    "Your recent trips",
                    [trip_memory_text(e) for e in ctx.experiences[-4:]],
                ),
                ("Your memories", ctx.memories[:4]),
            ),
            (
                f"Answer as {me}, in your own words, from your own plans and needs. "
                + agreement_help(ctx.morning)
                + " Set end true when nothing is left to say; write the summary of the "
                "whole conversation (one sentence) and its importance 0-1."
            ),
        ]
    )
    return [system_message(me), {"role": "user", "content": user}]


def validate_chat_turn(ctx: ChatTurnContext, out: ChatTurnOutput) -> list[str]:
    """An acceptance needs a proposal on the table; a counter-proposal must be possible."""
    errors: list[str] = []
    if out.accept and ctx.proposal is None:
        errors.append("agreement: there is no proposal on the table to accept")
    if out.accept and out.proposal is not None:
        errors.append(
            "agreement: either accept the proposal or make a counter-proposal, not both"
        )
    errors += validate_agreement(
        out.proposal,
        ctx.persona.name,
        ctx.partner,
        ctx.speakers,
        vehicles=ctx.vehicles,
        facilities=ctx.facilities,
        now=ctx.now,
        morning=ctx.morning,
    )
    return errors


def chat_turn_rule_policy(
    ctx: ChatTurnContext, rng: np.random.Generator
) -> ChatTurnOutput:
    """Accept what the household rule gives, counter with it, or thank and end.

    The speaker works out :func:`~.household.household_agreement` from its own side: a proposal
    asking only that is accepted; another proposal is answered with the rule's agreement (while
    turns are left), or declined (the assignment stands). Without a proposal: thanks and ends.
    """
    me = ctx.persona.name
    if ctx.proposal is not None:
        rule = household_agreement(
            me, ctx.partner, ctx.speakers, vehicles=ctx.vehicles, morning=ctx.morning
        )
        if rule_accepts(ctx.proposal, rule):
            return ChatTurnOutput(
                message=f"Yes {ctx.partner}, agreed: {ctx.proposal.describe()}.",
                accept=True,
                summary=f"{ctx.partner} and {me} agreed: {ctx.proposal.describe()}",
                importance=0.6,
            )
        counter = ChatAgreement(**rule) if rule else None
        if counter is not None and counter != ctx.proposal and not ctx.last_turn:
            return ChatTurnOutput(
                message=f"Better this way, {ctx.partner}: {counter.describe()}.",
                proposal=counter,
                summary=f"{me} proposed to {ctx.partner}: {counter.describe()}",
                importance=0.5,
            )
        return ChatTurnOutput(
            message=f"Sorry {ctx.partner}, let us keep today as it is.",
            end=True,
            summary=f"{ctx.partner} and {me} kept today's arrangement",
            importance=0.4,
        )
    # the opening's news: "Name: Hi X, about topic: news." -> "news."
    news = ctx.transcript[0].rsplit(": ", 1)[-1] if ctx.transcript else ""
    return ChatTurnOutput(
        message=f"Thanks {ctx.partner}, good to know.",
        end=True,
        summary=f"{ctx.partner} and {ctx.persona.name} talked about {ctx.topic}: {news}",
        importance=0.4,
    )


CHAT_TURN: DecisionKind[ChatTurnContext, ChatTurnOutput] = DecisionKind(
    name="ChatTurn",
    context_type=ChatTurnContext,
    output_schema=ChatTurnOutput,
    render_prompt=render_chat_turn_prompt,
    rule_policy=chat_turn_rule_policy,
    validate=validate_chat_turn,
)
