"""Conversations between travellers: turns, the proposal on the table, and what an agreement changes.

A :class:`Conversation` is opened by a ``Chat`` decision and continued by ``ChatTurn``
decisions, the partner and the initiator in turn, one decision per turn, at most
:data:`~.decisions.chat.MAX_CHAT_TURNS` turns. The model runs the turns of every conversation of
a minute as batches (all second turns together, then all third turns, ...). When one speaker
accepts the other's proposal, :func:`apply_agreement` changes both travellers' day: who has
the household car, who drops the children off or picks them up (settled before planning), and
joint activities (:class:`~.plans.Appointment`) that their plans must then contain. A car that
changes hands during the day frees the day's mode of a member who has not left home yet; the
model then lets both speakers reconsider, and their revisions are validated against the new
assignment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.clock import parse_hhmm
from mesa_llm_mobility.urban.decisions.chat import (
    MAX_CHAT_TURNS,
    ChatAgreement,
    ChatMedium,
    ChatOutput,
)
from mesa_llm_mobility.urban.plans import Appointment

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.agents import TravellerAgent
    from mesa_llm_mobility.urban.decisions.chat_turn import ChatTurnOutput


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
            initiator, out.partner, relation, out.topic, medium, morning, minute,
            proposal=proposal, proposer=initiator if proposal else None,
            importance=out.importance,
        )  # fmt: skip
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
