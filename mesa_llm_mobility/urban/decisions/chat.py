"""The ``Chat`` decision: the opening turn of a conversation with a family member or friend.

A chat is a conversation (GATSim 3.4.3): the initiator opens it here with a topic, a message
and optionally a proposal (:class:`ChatAgreement`: who takes the household car, who drops the
children off or picks them up, a joint activity); the partner and the initiator then answer
in turn from their own persona, memory and plan (:mod:`.chat_turn`), at most
:data:`MAX_CHAT_TURNS` turns in all. An accepted proposal changes both travellers' day: in the
morning, who takes the car and who does the school runs; during the day (by phone or in
person), who picks the children up, or who takes a car that is still at home, each checked
against what the day has already done (:func:`validate_agreement`). The rule policy proposes
the household agreement of :mod:`.household` when it would change something (else it shares
its worst trip), so rule runs show agreements too; the engine's assignment stays the fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.decisions.household import household_agreement
from mesa_llm_mobility.urban.decisions.persona import (
    PersonaFacts,
    TripExperience,
    prompt_section,
    prompt_sections,
    system_message,
    trip_memory_text,
)
from mesa_llm_mobility.urban.plans import compact_schema, facility_choice

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
MAX_CHAT_TURNS = 4
"""Turns of a conversation at most, the opening one included (two per speaker)."""
MEET_LEAD_MINUTES = 30
"""A joint activity must start at least this long after the chat."""
LATEST_MEETING = 22 * 60
"""A joint activity must start by 22:00."""

ChatMedium = Literal["in person", "by phone"]


@dataclass(frozen=True)
class SpeakerFacts:
    """What a conversation can change about one speaker's day (both speakers know it).

    Attributes:
        name: The speaker.
        household: Household id (cars and school runs are agreed within one).
        licensed: Holds a driving licence.
        has_car: A household vehicle is assigned to them today.
        parent: Has children at school.
        works: Works today at a facility other than the school (school runs are timed
            around work).
        school_duty: Today's school runs (``"drop_off"``, ``"pick_up"``, ``"both"``, ``None``).
        plan: Today's plan as lines (empty before planning).
        work_start: Work start, minute of the day (``None`` without work today).
        work_end: Work end, minute of the day.
        car_saving: Minutes the car saves on the commute to work against the best other
            mode (free flow, transit with its static waits); 0 without a commute.
        late: Minutes the speaker arrived late for work today (0 when on time or not yet).
        departed: Whether the speaker has left home today.
        drove: Whether the speaker has driven today (the car is then not at home).
        open_runs: The school runs (``"drop_off"``, ``"pick_up"``) the speaker must still head
            for today.
        day_over: Whether the speaker has no trip left today.
    """

    name: str
    household: str = ""
    licensed: bool = False
    has_car: bool = False
    parent: bool = False
    works: bool = False
    school_duty: str | None = None
    plan: tuple[str, ...] = ()
    work_start: int | None = None
    work_end: int | None = None
    car_saving: float = 0.0
    late: int = 0
    departed: bool = False
    drove: bool = False
    open_runs: tuple[str, ...] = ()
    day_over: bool = False

    def describe(self) -> str:
        """The speaker's day as a line of a prompt."""
        parts = [
            "licensed" if self.licensed else "no licence",
            "has the car today" if self.has_car else "no car today",
            {
                "drop_off": "drops the children off",
                "pick_up": "picks the children up",
                "both": "drops the children off and picks them up",
            }.get(self.school_duty or "", ""),
        ]
        if self.works and self.work_start is not None and self.work_end is not None:
            parts.append(
                f"works {format_hhmm(self.work_start)}-{format_hhmm(self.work_end)}"
            )
        if self.car_saving >= 1:
            parts.append(f"the car saves {self.car_saving:.0f} min on the commute")
        if self.late:
            parts.append(f"was {self.late} min late for work today")
        if self.drove:
            parts.append("drove today")
        if self.plan:
            parts.append("plan: " + " | ".join(self.plan))
        return f"{self.name}: " + "; ".join(p for p in parts if p)


class ChatAgreement(BaseModel):
    """A proposal that changes both speakers' day once the other accepts it."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    car: str | None = Field(
        default=None, description="who drives the household car today (a name)"
    )
    drop_off: str | None = Field(
        default=None, description="who takes the children to school (a name)"
    )
    pick_up: str | None = Field(
        default=None, description="who fetches the children from school (a name)"
    )
    meet_at: str | None = Field(
        default=None, description="facility of a joint activity of both speakers"
    )
    meet_time: str | None = Field(default=None, description='"HH:MM" of that activity')

    @field_validator("meet_time")
    @classmethod
    def _clock(cls, value: str | None) -> str | None:
        if value is not None:
            parse_hhmm(value)
        return value

    def is_empty(self) -> bool:
        """Whether the proposal changes nothing."""
        return not any(
            (self.car, self.drop_off, self.pick_up, self.meet_at, self.meet_time)
        )

    def describe(self) -> str:
        """The proposal in words."""
        parts = []
        if self.car:
            parts.append(f"{self.car} takes the car")
        if self.drop_off:
            parts.append(f"{self.drop_off} drops the children off")
        if self.pick_up:
            parts.append(f"{self.pick_up} picks the children up")
        if self.meet_at:
            parts.append(f"meet at the {self.meet_at} at {self.meet_time}")
        return ", ".join(parts) or "nothing"


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
        speakers: The day of the traveller and of each contact (:class:`SpeakerFacts`).
        vehicles: Vehicles of the traveller's household.
        facilities: Valid facility names (for a joint activity).
        medium: ``"in person"`` or ``"by phone"``.
        morning: Whether the day is still unplanned (cars and school runs can change only
            then).
    """

    persona: PersonaFacts
    day: int
    now: int
    contacts: dict[str, str]
    used_topics: dict[str, list[str]] = field(default_factory=dict)
    experiences: list[TripExperience] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    speakers: dict[str, SpeakerFacts] = field(default_factory=dict)
    vehicles: int = 0
    facilities: frozenset[str] = field(default_factory=frozenset)
    medium: ChatMedium = "by phone"
    morning: bool = True


class ChatOutput(BaseModel):
    """The opening turn: to whom, on which new topic, the message and an optional proposal."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    partner: str
    topic: str = Field(min_length=1, max_length=80)
    message: str = Field(min_length=1, max_length=500)
    proposal: ChatAgreement | None = None
    importance: float = Field(ge=0.0, le=1.0)


def agreement_help(morning: bool) -> str:
    """What a proposal may change, for prompts."""
    household = (
        "Within your household you may propose who takes the car and who drops off or picks "
        "up the children (names). "
        if morning
        else "Within your household you may propose who picks up the children (a name), "
        "for instance when one of you runs late, or who takes a car still at home. "
    )
    return (
        household
        + "With anyone you may propose a joint activity (meet_at a facility, meet_time HH:MM)."
    )


def render_chat_prompt(ctx: ChatContext) -> list[Message]:
    """Ask for the opening message of a chat with a family member or friend, on a new topic."""
    contacts = [
        f"{name} ({relation}; topics already discussed: {', '.join(ctx.used_topics.get(name, [])) or 'none'})"
        for name, relation in ctx.contacts.items()
    ]
    days = [s.describe() for s in ctx.speakers.values()]
    trips = [trip_memory_text(e) for e in ctx.experiences[-4:]]
    when = (
        "Before planning today you talk with one person (in person at home, else by phone)."
        if ctx.morning
        else f"During the day you talk {ctx.medium} with one person."
    )
    user = "\n".join(
        [
            f"Day {ctx.day}, {format_hhmm(ctx.now)}. {when}",
            prompt_section("People", contacts),
            *prompt_sections(
                ("Today of each of you", days),
                ("Your recent trips", trips),
                ("Memories", ctx.memories[:4]),
            ),
            (
                "Open the conversation: choose the partner and a topic never discussed with them, "
                "write your message, and give its importance 0-1. "
                + agreement_help(ctx.morning)
                + " They answer in their own words."
            ),
        ]
    )
    return [system_message(ctx.persona.name), {"role": "user", "content": user}]


def validate_agreement(
    proposal: ChatAgreement | None,
    proposer: str,
    partner: str,
    speakers: Mapping[str, SpeakerFacts],
    *,
    vehicles: int,
    facilities: frozenset[str],
    now: int,
    morning: bool,
) -> list[str]:
    """Specific errors of a proposal between ``proposer`` and ``partner`` (empty when valid)."""
    if proposal is None or proposal.is_empty():
        return []
    errors: list[str] = []
    pair = (proposer, partner)
    me, other = speakers.get(proposer), speakers.get(partner)
    same_household = (
        me is not None and other is not None and me.household == other.household
    )
    for field_name in ("car", "drop_off", "pick_up"):
        who = getattr(proposal, field_name)
        if who is None:
            continue
        label = field_name.replace("_", "-")
        if not morning and field_name == "drop_off":
            errors.append(
                "agreement: the drop-off is settled by now; only the pick-up, a car still "
                "at home or a joint activity can be agreed during the day"
            )
        elif not same_household:
            errors.append(
                f"agreement: the {label} is agreed within a household, and {partner} is not in yours"
            )
        elif who not in pair:
            errors.append(
                f"agreement: {field_name} must name {proposer} or {partner}, not {who!r}"
            )
        elif field_name == "car":
            if not speakers[who].licensed:
                errors.append(
                    f"agreement: {who} has no driving licence to take the car"
                )
            elif vehicles < 1:
                errors.append("agreement: your household has no car to share")
            elif not morning:
                errors += _daytime_car_errors(who, (me, other))
        elif not speakers[who].parent or not speakers[who].works:
            errors.append(
                f"agreement: {who} cannot do the {label}: school runs are done by a working parent"
            )
        elif not morning:
            errors += _daytime_pick_up_errors(who, (me, other))
    if (proposal.meet_at is None) != (proposal.meet_time is None):
        errors.append("agreement: a joint activity needs both meet_at and meet_time")
    elif proposal.meet_at is not None and proposal.meet_time is not None:
        if facilities and proposal.meet_at not in facilities:
            errors.append(
                f"agreement: unknown facility {proposal.meet_at!r} to meet at; "
                + facility_choice(proposal.meet_at, facilities)
            )
        minute = parse_hhmm(proposal.meet_time)
        if not now + MEET_LEAD_MINUTES <= minute <= LATEST_MEETING:
            errors.append(
                f"agreement: meet_time {proposal.meet_time} must be between "
                f"{format_hhmm(now + MEET_LEAD_MINUTES)} and {format_hhmm(LATEST_MEETING)}"
            )
    return errors


def _daytime_car_errors(
    who: str, pair: tuple[SpeakerFacts | None, SpeakerFacts | None]
) -> list[str]:
    """A car changes hands during the day only while it is at home and ``who`` still is."""
    speakers = [s for s in pair if s is not None]
    driver = next((s.name for s in speakers if s.drove), None)
    taker = next(s for s in speakers if s.name == who)
    if driver is not None:
        return [
            (
                f"agreement: {driver} has driven the car away today; it can change hands "
                "only while it is at home"
            )
        ]
    if taker.departed:
        return [
            f"agreement: {who} has already left home today and cannot take the car now"
        ]
    return []


def _daytime_pick_up_errors(
    who: str, pair: tuple[SpeakerFacts | None, SpeakerFacts | None]
) -> list[str]:
    """A pick-up changes hands during the day only while it is still to do and ``who`` is out."""
    speakers = [s for s in pair if s is not None]
    holder = next((s for s in speakers if "pick_up" in s.open_runs), None)
    taker = next(s for s in speakers if s.name == who)
    if holder is None:
        return [
            (
                "agreement: the children's pick-up is not ahead for either of you today "
                "(done, under way or not assigned)"
            )
        ]
    if holder.name != who and taker.day_over:
        return [f"agreement: {who} has no trip left today to pick the children up"]
    return []


def validate_chat(ctx: ChatContext, out: ChatOutput) -> list[str]:
    """The partner must be a contact, the topic new with them, the proposal possible."""
    if out.partner not in ctx.contacts:
        return [
            f"partner {out.partner!r} is not among your contacts: {', '.join(ctx.contacts)}"
        ]
    used = {t.lower().strip() for t in ctx.used_topics.get(out.partner, [])}
    if out.topic.lower().strip() in used:
        return [
            f"topic {out.topic!r} was already discussed with {out.partner}; choose another topic"
        ]
    return validate_agreement(
        out.proposal,
        ctx.persona.name,
        out.partner,
        ctx.speakers,
        vehicles=ctx.vehicles,
        facilities=ctx.facilities,
        now=ctx.now,
        morning=ctx.morning,
    )


def agreement_topic(agreement: ChatAgreement, day: int, morning: bool) -> str:
    """The topic of a household agreement on ``day`` (a new one each day)."""
    subject = (
        "today's pick-up"
        if not morning
        else "sharing the car"
        if agreement.car and not (agreement.drop_off or agreement.pick_up)
        else "the car and the school runs"
        if agreement.car
        else "school drop-off and pick-up"
    )
    return f"{subject}, day {day}"


def _household_opening(ctx: ChatContext) -> ChatOutput | None:
    """The opening of the first family contact the household rule agrees a change with."""
    for partner, relation in ctx.contacts.items():
        if relation != "family":
            continue
        fields = household_agreement(
            ctx.persona.name,
            partner,
            ctx.speakers,
            vehicles=ctx.vehicles,
            morning=ctx.morning,
        )
        if not fields:
            continue
        proposal = ChatAgreement(**fields)
        topic = agreement_topic(proposal, ctx.day, ctx.morning)
        if topic in ctx.used_topics.get(partner, []):
            continue  # settled today already (and never handed back the same day)
        me = ctx.speakers[ctx.persona.name]
        why = (
            f" I am {me.late} min late and my day runs late."
            if not ctx.morning and me.late
            else ""
        )
        return ChatOutput(
            partner=partner,
            topic=topic,
            message=f"Hi {partner}, shall we do this: {proposal.describe()}?{why}",
            proposal=proposal,
            importance=0.6,
        )
    return None


def chat_rule_policy(ctx: ChatContext, rng: np.random.Generator) -> ChatOutput:
    """Propose the household agreement when it changes something; else share the worst trip.

    With a family contact for whom :func:`~.household.household_agreement` changes today's car
    or school runs, the traveller proposes it (a new topic each day). Otherwise it picks a
    contact and a topic not yet discussed with them and tells its worst recent trip, as its
    memory text, so the partner's rule plan can read it as a tip
    (:func:`~mesa_llm_mobility.urban.decisions.learning.learnt_link_waits`).
    """
    opening = _household_opening(ctx)
    if opening is not None:
        return opening
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
        message=f"Hi {partner}, about {topic}: {news}.",
        importance=0.4 if worst is None else min(1.0, 0.4 + worst.delay / 60),
    )


def chat_schema(ctx: ChatContext, schema: dict[str, Any]) -> dict[str, Any]:
    """The request's schema: the partner is one of the traveller's contacts."""
    if ctx.contacts:
        schema["properties"]["partner"]["enum"] = list(ctx.contacts)
    return schema


CHAT: DecisionKind[ChatContext, ChatOutput] = DecisionKind(
    name="Chat",
    context_type=ChatContext,
    output_schema=ChatOutput,
    render_prompt=render_chat_prompt,
    rule_policy=chat_rule_policy,
    validate=validate_chat,
    request_schema=chat_schema,
)
