"""Household agreements of the rule baseline: who takes the car, who does the school runs.

The engine assigns each household's car to the licensed worker with the longest drive to work
and the school runs to its working parents in alphabetical order (the fallback,
:func:`assign_household_day`, at each day's start). Under the rule
brain, two members of a household who talk re-agree that assignment with a documented rule, the
opener proposing it and the partner accepting what the same rule gives from its side:

- **car** (morning, one car for two licensed workers): the member whose commute the car shortens
  most against the best other mode (free-flow minutes, transit with its static waits) takes it,
  when that saves at least :data:`CAR_SAVING_MARGIN` more minutes than for the current holder;
- **drop-off** (morning, two working parents): the parent whose work starts later (more slack
  in the morning); **pick-up**: the parent whose work ends earlier; ties keep the assignment;
- **pick-up during the day**: a parent holding a pick-up still ahead who arrived at work at least
  :data:`LATE_HANDOVER_MINUTES` late (its day runs late) hands it to the other working parent, if
  that one still has trips ahead.

Households sharing travel duties this way is the household-interaction model of activity-based
travel demand (e.g. Gliebe and Koppelman 2002; Scott and Kanaroglou 2002: allocation of the
household car and of maintenance tasks such as serving children by the members' schedules and
modal alternatives), here in its simplest deterministic form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.agents import TravellerAgent
    from mesa_llm_mobility.urban.decisions.chat import ChatAgreement, SpeakerFacts

CAR_SAVING_MARGIN = 5.0
"""Minutes the car must save the other member beyond the holder before it changes hands."""
LATE_HANDOVER_MINUTES = 3
"""Minutes late for work that make a parent hand its pick-up over during the day (it makes up
the time at work, so a pick-up timed at its work end would keep the children waiting)."""
AGREEMENT_FIELDS = ("car", "drop_off", "pick_up")


def assign_household_day(
    members: Sequence[TravellerAgent],
    travel_times: Mapping[tuple[str, str, str], float],
) -> None:
    """Give a household's members their day's cars and school runs (the engine's fallback).

    The household's cars go to its licensed members, workers first, longest free-flow drive
    to work first, then by name; a single working parent does both school runs, two or more
    split them in alphabetical order (drop-off, pick-up). Sets ``vehicle_available``,
    ``household_drivers`` and ``school_duty`` of each member's ``today``.

    Args:
        members: The household's travellers, their ``today`` already begun.
        travel_times: Free-flow minutes by (origin, destination, mode).
    """
    drivers = sorted(
        (a for a in members if a.persona.licensed),
        key=lambda a: (
            not a.today.workday,
            -travel_times.get(
                (a.persona.home, a.persona.work_facility or a.persona.home, "drive"),
                0.0,
            ),
            a.name,
        ),
    )
    vehicles = max((a.persona.vehicles for a in members), default=0)
    with_car = [a.name for a in drivers[:vehicles]]
    for agent in members:
        agent.today.vehicle_available = agent.name in with_car
        agent.today.household_drivers = tuple(n for n in with_car if n != agent.name)
    parents = sorted(
        (a for a in members if a.persona.children and a.today.workday),
        key=lambda a: a.name,
    )
    if len(parents) == 1:
        parents[0].today.school_duty = "both"
    elif len(parents) >= 2:
        parents[0].today.school_duty = "drop_off"
        parents[1].today.school_duty = "pick_up"


def _runs(speaker: SpeakerFacts) -> set[str]:
    duty = speaker.school_duty or ""
    return {"drop_off", "pick_up"} if duty == "both" else {duty} - {""}


def _holder(pair: tuple[SpeakerFacts, SpeakerFacts], run: str) -> SpeakerFacts | None:
    return next((s for s in pair if run in _runs(s)), None)


def _morning_agreement(
    pair: tuple[SpeakerFacts, SpeakerFacts], vehicles: int
) -> dict[str, str]:
    fields: dict[str, str] = {}
    drivers = [s for s in pair if s.licensed and s.works]
    if vehicles == 1 and len(drivers) == 2 and sum(s.has_car for s in pair) == 1:
        holder = next(s for s in pair if s.has_car)
        other = next(s for s in pair if not s.has_car)
        if other.car_saving >= holder.car_saving + CAR_SAVING_MARGIN:
            fields["car"] = other.name
    parents = [s for s in pair if s.parent and s.works]
    if len(parents) == 2 and all(
        s.work_start is not None and s.work_end is not None for s in parents
    ):
        first, second = parents
        later_start = (
            first
            if first.work_start > second.work_start  # type: ignore[operator]
            else second
            if second.work_start > first.work_start  # type: ignore[operator]
            else None
        )
        earlier_end = (
            first
            if first.work_end < second.work_end  # type: ignore[operator]
            else second
            if second.work_end < first.work_end  # type: ignore[operator]
            else None
        )
        for run, chosen in (("drop_off", later_start), ("pick_up", earlier_end)):
            holder = _holder(pair, run)
            if chosen is not None and holder is not None and holder is not chosen:
                fields[run] = chosen.name
    return fields


def _daytime_agreement(pair: tuple[SpeakerFacts, SpeakerFacts]) -> dict[str, str]:
    holder = next((s for s in pair if "pick_up" in s.open_runs), None)
    if holder is None or holder.late < LATE_HANDOVER_MINUTES:
        return {}
    other = next(s for s in pair if s is not holder)
    if not (other.parent and other.works) or other.day_over:
        return {}
    return {"pick_up": other.name}


def household_agreement(
    me: str,
    partner: str,
    speakers: Mapping[str, SpeakerFacts],
    *,
    vehicles: int,
    morning: bool,
) -> dict[str, str]:
    """What the rule agrees between ``me`` and ``partner`` of one household (empty: nothing).

    Only what would change today's assignment is proposed (see the module's rules).

    Args:
        me: The speaker.
        partner: The other speaker.
        speakers: Both speakers' day.
        vehicles: Vehicles of the household.
        morning: Before planning (car and both runs) or during the day (the pick-up).

    Returns:
        The :class:`~.chat.ChatAgreement` fields (``car``, ``drop_off``, ``pick_up``: names);
        empty when the rule changes nothing.
    """
    first, second = speakers.get(me), speakers.get(partner)
    if first is None or second is None or first.household != second.household:
        return {}
    pair = (first, second)
    return _morning_agreement(pair, vehicles) if morning else _daytime_agreement(pair)


def rule_accepts(proposal: ChatAgreement, rule: Mapping[str, str]) -> bool:
    """Whether ``proposal`` asks only what the rule gives (household fields, the rule's names)."""
    if proposal.meet_at is not None or proposal.meet_time is not None:
        return False
    asked = {f: getattr(proposal, f) for f in AGREEMENT_FIELDS if getattr(proposal, f)}
    return bool(asked) and all(rule.get(f) == who for f, who in asked.items())
