"""Conversations between travellers: turns, the proposal on the table, and what an agreement changes.

A :class:`Conversation` is opened by a ``Chat`` decision and continued by ``ChatTurn``
decisions, the partner and the initiator in turn, one decision per turn, at most
:data:`~.decisions.chat.MAX_CHAT_TURNS` turns. Each minute the model opens the chats
:func:`chat_openings` draws and :func:`hold_conversations` runs the turns of all of them as
batches (all second turns together, then all third turns, ...). When one speaker
accepts the other's proposal, :func:`apply_agreement` changes both travellers' day: who has
the household car, who drops the children off or picks them up (settled before planning), and
joint activities (:class:`~.plans.Appointment`) that their plans must then contain. A car that
changes hands during the day frees the day's mode of a member who has not left home yet; the
model then lets both speakers reconsider, and their revisions are validated against the new
assignment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, parse_hhmm
from mesa_llm_mobility.urban.decisions.chat import (
    MAX_CHAT_TURNS,
    ChatAgreement,
    ChatContext,
    ChatMedium,
    ChatOutput,
)
from mesa_llm_mobility.urban.decisions.household import LATE_HANDOVER_MINUTES
from mesa_llm_mobility.urban.itinerary import CHAT_MINUTE
from mesa_llm_mobility.urban.plans import Appointment

if TYPE_CHECKING:
    from mesa_llm_mobility.cognition import DecisionRequest
    from mesa_llm_mobility.urban.agents import TravellerAgent
    from mesa_llm_mobility.urban.contexts import WorldView
    from mesa_llm_mobility.urban.decisions.chat_turn import ChatTurnOutput
    from mesa_llm_mobility.urban.model import UrbanMobilityModel


@dataclass(frozen=True)
class ChatLine:
    """One turn of a conversation as it is shown and recorded."""

    speaker: str
    message: str
    proposal: ChatAgreement | None = None
    accept: bool = False
    outcome: str = "ok"


@dataclass
class Conversation:
    """One conversation between two travellers.

    Attributes:
        initiator: Who opened it.
        partner: Who was called (or met).
        relation: ``"family"`` or ``"friend"``.
        topic: The topic.
        medium: ``"in person"`` or ``"by phone"``.
        morning: Whether it happened before planning (cars and school runs can change).
        minute: Absolute minute it happened.
        lines: The turns, in order.
        proposal: The proposal on the table, and ``proposer`` who made it.
        agreed: The proposal accepted, if any.
        summary: What both remember.
        importance: Its importance.
        over: Whether no turn is left.
    """

    initiator: str
    partner: str
    relation: str
    topic: str
    medium: ChatMedium
    morning: bool
    minute: int
    lines: list[ChatLine] = field(default_factory=list)
    proposal: ChatAgreement | None = None
    proposer: str | None = None
    agreed: ChatAgreement | None = None
    summary: str = ""
    importance: float = 0.4
    over: bool = False

    @classmethod
    def opened(
        cls,
        initiator: str,
        out: ChatOutput,
        relation: str,
        *,
        medium: ChatMedium,
        morning: bool,
        minute: int,
        outcome: str = "ok",
    ) -> Conversation:
        """The conversation an opening turn starts."""
        proposal = (
            None if out.proposal is None or out.proposal.is_empty() else out.proposal
        )
        conversation = cls(
            initiator,
            out.partner,
            relation,
            out.topic,
            medium,
            morning,
            minute,
            proposal=proposal,
            proposer=initiator if proposal else None,
            importance=out.importance,
        )
        conversation.lines.append(
            ChatLine(initiator, out.message, proposal, outcome=outcome)
        )
        return conversation

    @property
    def speaker(self) -> str:
        """Who speaks next."""
        return self.partner if len(self.lines) % 2 == 1 else self.initiator

    @property
    def listener(self) -> str:
        """Who speaks after the next speaker."""
        return self.initiator if self.speaker == self.partner else self.partner

    def transcript(self) -> list[str]:
        """``"Name: message"`` lines, proposals and acceptances included."""
        lines = []
        for line in self.lines:
            text = f"{line.speaker}: {line.message}"
            if line.accept:
                text += " [accepts]"
            if line.proposal is not None:
                text += f" [proposes: {line.proposal.describe()}]"
            lines.append(text)
        return lines

    def answer(self, out: ChatTurnOutput, outcome: str = "ok") -> None:
        """Add the next speaker's turn; the conversation is over on an acceptance, an end or the last turn."""
        speaker = self.speaker
        proposal = (
            None if out.proposal is None or out.proposal.is_empty() else out.proposal
        )
        accepted = out.accept and self.proposal is not None and self.proposer != speaker
        self.lines.append(ChatLine(speaker, out.message, proposal, accepted, outcome))
        self.summary, self.importance = out.summary, out.importance
        if accepted:
            self.agreed = self.proposal
        elif proposal is not None:
            self.proposal, self.proposer = proposal, speaker
        self.over = accepted or out.end or len(self.lines) >= MAX_CHAT_TURNS

    def describe_outcome(self) -> str:
        """``"agreed: ..."``, ``"no agreement"`` or ``"talk"`` (no proposal was made)."""
        if self.agreed is not None:
            return f"agreed: {self.agreed.describe()}"
        return "no agreement" if self.proposer is not None else "talk"


def _duties(duty: str | None) -> set[str]:
    return {"both": {"drop_off", "pick_up"}}.get(duty or "", {duty} if duty else set())


def _duty(runs: set[str]) -> str | None:
    if runs == {"drop_off", "pick_up"}:
        return "both"
    return next(iter(runs), None)


def apply_agreement(
    agreement: ChatAgreement,
    speakers: tuple[TravellerAgent, TravellerAgent],
    household: Iterable[TravellerAgent],
) -> None:
    """Change both speakers' day as agreed (and the car holders of their household).

    Args:
        agreement: The accepted proposal (validated: names are the speakers').
        speakers: The two speakers.
        household: Every member of the speakers' household (for the car; ignored otherwise).
    """
    first, second = speakers
    by_name = {first.name: first, second.name: second}
    if agreement.car is not None:
        members = list(household)
        vehicles = max((m.persona.vehicles for m in members), default=0)
        holders = [m.name for m in members if m.today.vehicle_available]
        if agreement.car not in holders:
            holders.append(agreement.car)
            other = next(n for n in by_name if n != agreement.car)
            while len(holders) > vehicles:
                holders.remove(other if other in holders else holders[0])
        for member in members:
            left_home = any(
                r.day == member.today.day
                and not r.cancelled
                and not math.isnan(r.departure)
                for r in member.trips
            )
            if (
                member.today.vehicle_available != (member.name in holders)
                and not left_home
            ):
                member.today.mode = None  # today's mode can still change
            member.today.vehicle_available = member.name in holders
            member.today.household_drivers = tuple(
                n for n in holders if n != member.name
            )
    for run in ("drop_off", "pick_up"):
        who = getattr(agreement, run)
        if who is None:
            continue
        for agent in speakers:
            runs = _duties(agent.today.school_duty)
            if agent.name == who:
                runs.add(run)
            else:
                runs.discard(run)
            agent.today.school_duty = _duty(runs)
    if agreement.meet_at is not None and agreement.meet_time is not None:
        at = parse_hhmm(agreement.meet_time)
        for agent, other in ((first, second), (second, first)):
            agent.today.appointments.append(
                Appointment(agreement.meet_at, at, other.name)
            )


def chat_openings(
    model: UrbanMobilityModel,
    t: int,
    staying: Sequence[tuple[TravellerAgent, str]],
) -> list[DecisionRequest[Any, Any]]:
    """The chats opened at minute ``t``: in the morning, and during activities.

    At :data:`~.itinerary.CHAT_MINUTE` a traveller with contacts opens one with probability
    ``model.chat_probability`` (family at home in person, friends by phone). During an
    activity (a ``"during_activity"`` revision opportunity) it calls, with probability
    ``model.daytime_chat_probability``, one of its contacts who is staying at an activity with
    trips ahead (in person when at the same place), at most one daytime chat a day; a parent
    holding a pick-up still ahead who arrived at work
    :data:`~.decisions.household.LATE_HANDOVER_MINUTES` or more late always calls such a
    family member (its day runs late).

    Args:
        model: The model (its travellers, view, generator and chat probabilities).
        t: The absolute minute.
        staying: This minute's revision opportunities of staying travellers.

    Returns:
        The ``Chat`` requests, in the order the generator drew them.
    """
    view, travellers, now = model.view, model.travellers, t % MINUTES_PER_DAY
    requests: list[DecisionRequest[Any, Any]] = []
    if now == CHAT_MINUTE and model.chat_probability > 0:
        for agent in travellers.values():
            contacts = agent.contacts(view)
            if contacts and model.rng.random() < model.chat_probability:
                requests.append(agent.chat_request(view, t, contacts))
    if model.daytime_chat_probability <= 0:
        return requests
    for agent, situation in staying:
        if situation != "during_activity" or agent.today.daytime_chats:
            continue
        contacts = {
            name: relation
            for name, relation in agent.contacts(view).items()
            if travellers[name].state == "staying" and travellers[name].pending_trips()
        }
        family = {n: r for n, r in contacts.items() if r == "family"}
        if family and runs_late_with_pick_up(view, agent, t):
            contacts = family  # a reason to call home: always, once a day
        elif not contacts or model.rng.random() >= model.daytime_chat_probability:
            continue
        agent.today.daytime_chats += 1
        together = {n for n in contacts if travellers[n].place == agent.place}
        medium = "in person" if together else "by phone"
        if together:
            contacts = {n: contacts[n] for n in sorted(together)}
        requests.append(
            agent.chat_request(view, t, contacts, medium=medium, morning=False)
        )
    return requests


def runs_late_with_pick_up(view: WorldView, agent: TravellerAgent, t: int) -> bool:
    """Whether ``agent`` holds a pick-up still ahead and was late for work (it calls home)."""
    if agent.today.school_duty not in ("pick_up", "both"):
        return False
    facts = agent.speaker_facts(view, t)
    return "pick_up" in facts.open_runs and facts.late >= LATE_HANDOVER_MINUTES


def hold_conversations(
    model: UrbanMobilityModel,
    openings: list[DecisionRequest[ChatContext, ChatOutput]],
    t: int,
    time: dict[str, int],
) -> set[str]:
    """Run the conversations ``openings`` start, turn by turn in batches, and apply agreements.

    Every decision is recorded on ``model`` at ``time`` and every conversation joins
    ``model.conversations``.

    Args:
        model: The model (its brain, travellers and view).
        openings: The minute's ``Chat`` requests (:func:`chat_openings`).
        t: The absolute minute.
        time: The decisions' ``day`` and ``minute`` tags.

    Returns:
        The travellers whose plans a daytime agreement changed (they reconsider now).
    """
    if not openings:
        return set()
    travellers = model.travellers
    conversations: list[Conversation] = []
    for result in model.decide(openings, **time):
        chat = result.output
        context = result.request.context
        together = (
            travellers[chat.partner].place == travellers[str(result.agent_id)].place
        )
        conversation = Conversation.opened(
            str(result.agent_id),
            chat,
            context.contacts[chat.partner],
            medium="in person" if together else "by phone",
            morning=context.morning,
            minute=t,
            outcome=str(result.outcome),
        )
        conversations.append(conversation)
        model.record_decision(result, time, action=f"{chat.partner}: {chat.topic}")
    talking = list(conversations)
    while talking:
        requests = [
            travellers[c.speaker].chat_turn_request(model.view, t, c) for c in talking
        ]
        for conversation, result in zip(
            talking, model.decide(requests, **time), strict=True
        ):
            conversation.answer(result.output, str(result.outcome))
            model.record_decision(result, time, action=_turn_action(conversation))
        talking = [c for c in talking if not c.over]
    changed: set[str] = set()
    for conversation in conversations:
        first = travellers[conversation.initiator]
        second = travellers[conversation.partner]
        if conversation.agreed is not None:
            household = [
                a
                for a in travellers.values()
                if (a.persona.household or a.name)
                == (first.persona.household or first.name)
            ]
            apply_agreement(conversation.agreed, (first, second), household)
            if not conversation.morning:
                changed |= {first.name, second.name}
        first.remember_conversation(second, conversation, t)
        model.conversations.append(conversation)
    return changed


def _turn_action(conversation: Conversation) -> str:
    """The action column of a conversation's latest turn."""
    line = conversation.lines[-1]
    if line.accept:
        return "accept"
    if line.proposal is not None:
        return "propose"
    return "end" if conversation.over else "reply"
