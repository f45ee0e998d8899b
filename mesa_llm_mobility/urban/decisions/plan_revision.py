"""The ``PlanRevision`` decision: keep, re-time, re-route or re-plan the rest of the day.

Asked at the end of an activity, during one (reconsiderations) and at nodes while driving.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.decisions.learning import (
    learnt_link_waits,
    link_costs,
    queue_lesson_text,
)
from mesa_llm_mobility.urban.decisions.persona import (
    SCHOOL,
    PersonaFacts,
    prompt_section,
    prompt_sections,
    system_message,
)
from mesa_llm_mobility.urban.plans import (
    MIN_REFLECT_MINUTES,
    Activity,
    Concept,
    PlanFacts,
    check_appointments,
    check_duties,
    check_plan,
    check_vehicle,
    compact_schema,
    missing_appointments,
    pending_runs,
    with_appointments,
)
from mesa_llm_mobility.urban.routing import (
    PathError,
    Router,
    validate_path,
)

REROUTE_THRESHOLD_MINUTES = 5.0
"""A driver at a node switches path when the alternative is expected this much faster."""
POSTPONE_WAIT_MINUTES = 10.0
"""Queues on the next trip's path that make a trip without a target wait or be dropped."""
POSTPONE_MINUTES = 20
"""How long a traveller waits for queues to clear."""
POSTPONE_LATEST = 21 * 60
"""Nobody waits for queues to clear past this minute of the day."""


Situation = Literal["at_node", "at_stop", "during_activity", "end_of_activity"]


@dataclass(frozen=True)
class RouteOption:
    """A further path offered at a revision: its link names and expected minutes now."""

    links: tuple[str, ...]
    minutes: float


@dataclass
class RevisionContext:
    """What a traveller knows at a revision opportunity.

    Attributes:
        persona: The profile.
        situation: ``"at_node"`` (en route, about to reach ``place``), ``"at_stop"`` (queued
            for a train at ``place`` whose trains are full: the trip's path stays),
            ``"during_activity"`` or ``"end_of_activity"`` (about to leave for the next
            activity).
        place: Where the traveller is (facility, or the node being reached).
        facts: Validation facts; ``start_place`` is where the future activities start, ``now``
            the current minute of the day, ``day_mode`` today's mode.
        future: Activities not yet started, in order.
        current: The activity under way: the one at ``place`` (staying; ``None`` before the
            day's first trip) or the one travelled to (``at_node``).
        destination: Current trip's destination (``at_node``), else ``None``.
        remaining_path: Links still planned for the current trip (``at_node``); staying: for
            the next trip (its explicit path, else the fastest now), when known.
        remaining_minutes: Expected minutes along them (free time plus current waits; transit
            waits for trains by the timetable).
        alternative_path: Fastest path from ``place`` on current conditions (staying: another
            path for the next trip).
        alternative_minutes: Its expected minutes.
        other_paths: Further paths to the same destination (:class:`RouteOption`).
        target_arrival: When the traveller wants to arrive at the next place with a target
            (minute of the day, e.g. the work start), or ``None``.
        target_place: That place.
        congestion: Current congestion, one line per place.
        events: Announcements.
        memories: Recalled memories (text).
        social: Family members' and friends' current states.
        day: Day number (1 = first simulated day).
        trigger: Why the traveller reconsiders en route (``at_node``), e.g. ``"crowded stop:
            ..."``; empty elsewhere.
        trip_id: The trip under way (``at_node``), else ``""``.
        lookups: Answers of the tools the traveller called before deciding.
    """

    persona: PersonaFacts
    situation: Situation
    place: str
    facts: PlanFacts
    future: list[Activity] = field(default_factory=list)
    current: Activity | None = None
    destination: str | None = None
    remaining_path: list[str] = field(default_factory=list)
    remaining_minutes: float = 0.0
    alternative_path: list[str] = field(default_factory=list)
    alternative_minutes: float = 0.0
    other_paths: list[RouteOption] = field(default_factory=list)
    target_arrival: int | None = None
    target_place: str | None = None
    congestion: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    social: list[str] = field(default_factory=list)
    day: int = 1
    trigger: str = ""
    trip_id: str = ""
    lookups: list[str] = field(default_factory=list)


class PlanRevisionOutput(BaseModel):
    """A revision: keep the plan, take a new path, change the next departure, or replace."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    action: Literal["keep", "new_path", "new_departure_time", "replace_activities"]
    new_path: list[str] | None = Field(
        default=None,
        description="links to the destination: from the node when driving, else for the next trip",
    )
    new_departure_time: str | None = Field(
        default=None, description='"HH:MM" for the next activity'
    )
    activities: list[Activity] | None = Field(
        default=None, description="replace_activities: the new rest of the day"
    )
    reason: str = ""
    concept: Concept | None = None


def _new_path_ends(ctx: RevisionContext) -> tuple[str, str | None]:
    """Where a ``new_path`` starts and ends: the node ahead en route, else the next trip."""
    if ctx.situation in ("at_node", "at_stop"):
        return ctx.place, ctx.destination
    return ctx.facts.start_place, ctx.future[0].facility if ctx.future else None


def render_revision_prompt(ctx: RevisionContext) -> list[Message]:
    """Ask whether to keep or revise the plan now."""
    facts, persona = ctx.facts, ctx.persona
    following = ctx.future[0] if ctx.future else None
    until = (
        f"until {following.departure_time}"
        if following is not None and following.departure_time
        else f"then straight on to {following.facility}"
        if following is not None
        else "for the rest of the day"
    )
    doing = (
        (ctx.current.description or f"at the {ctx.current.facility}")
        if ctx.current is not None
        else f"at {ctx.place}"
    )
    origin, target = _new_path_ends(ctx)
    mode = facts.day_mode or (following.mode if following is not None else "drive")
    if ctx.situation == "at_stop":
        where = (
            f"You are waiting at the metro stop {ctx.place} on your way to {ctx.destination} "
            f"({ctx.trigger}). You stay on this trip; you may change what follows. "
            f"Then: {doing}, {until}."
        )
        leave = facts.now
    elif ctx.situation == "at_node":
        going = {"drive": "driving", "walk": "walking"}.get(
            mode, "travelling by transit"
        )
        where = (
            f"You are {going} to {ctx.destination} and reaching {ctx.place}"
            + (f" ({ctx.trigger})" if ctx.trigger else "")
            + f". Then: {doing}, {until}."
        )
        leave = facts.now
    else:
        state = (
            "about to leave for your next activity"
            if ctx.situation == "end_of_activity"
            else "staying"
        )
        where = f"You are at {ctx.place}, {state}. Now: {doing}, {until}."
        leave = max(facts.now, (following.departure_minute or 0) if following else 0)
    paths = []
    if ctx.remaining_path:
        paths.append(
            f"planned [{', '.join(ctx.remaining_path)}] ~{ctx.remaining_minutes:.0f} min now"
        )
    if ctx.alternative_path and ctx.alternative_path != ctx.remaining_path:
        label = "fastest now" if ctx.situation == "at_node" else "alternative"
        paths.append(
            f"{label} [{', '.join(ctx.alternative_path)}] ~{ctx.alternative_minutes:.0f} min"
        )
    paths += [
        f"other [{', '.join(o.links)}] ~{o.minutes:.0f} min" for o in ctx.other_paths
    ]
    goal = ""
    if ctx.target_arrival is not None:
        goal = f"Target: at {ctx.target_place or target} by {format_hhmm(ctx.target_arrival)}"
        if ctx.remaining_path and (ctx.target_place or target) == target:
            expected = leave + ctx.remaining_minutes
            late = expected - ctx.target_arrival
            goal += f"; expected ~{format_hhmm(expected)}" + (
                f", {late:.0f} min late" if late >= 1 else ""
            )
        goal += "."
    runs = [duty.describe() for duty in pending_runs(facts)]
    runs += [a.describe() for a in facts.appointments if a.minute >= facts.now]
    future = [
        f"{a.facility} leave {a.departure_time or 'on arrival'} by {a.mode} ({a.description})"
        for a in ctx.future
    ]
    user = "\n".join(
        part
        for part in [
            f"It is {format_hhmm(facts.now)}. {where}",
            f"Profile: {persona.profile_text()}.",
            goal,
            prompt_section(f"Paths by {mode} {origin} -> {target}", paths)
            if paths and target
            else "",
            prompt_section("Rest of today's plan", future),
            f"Still to do: {'; '.join(runs)}." if runs else "",
            prompt_section("Traffic now", ctx.congestion[:12], "no congestion"),
            *prompt_sections(
                ("Announcements", ctx.events),
                ("Family and friends now", ctx.social),
                ("Memories", ctx.memories[:6]),
                ("Looked up", ctx.lookups),
            ),
            (
                "Choose action: keep; "
                + (
                    ""
                    if ctx.situation == "at_stop"
                    else f"new_path (links from {origin} to {target or 'the next activity'}, "
                    "e.g. one of the paths above); "
                )
                + "new_departure_time (HH:MM for the next activity); "
                f"replace_activities (the new rest of the day, same mode {facts.day_mode or ''}, ending "
                f"at home {persona.home}{', keeping the school runs' if runs else ''}). Give a short "
                "reason; optionally a concept to remember."
            ),
        ]
        if part
    )
    return [system_message(persona.name), {"role": "user", "content": user}]


def validate_revision(ctx: RevisionContext, out: PlanRevisionOutput) -> list[str]:
    """Check that the chosen action fits the situation and its plan is valid."""
    errors: list[str] = []
    if out.action == "new_path" and ctx.situation == "at_stop":
        errors.append(
            "path: you are queued for the train at this stop, so this trip's path stays; "
            "keep, or change the next departure time or the activities after it"
        )
    elif out.action == "new_path":
        # at a node: the rest of the current trip; elsewhere: the trip to the next activity
        origin, target = _new_path_ends(ctx)
        if target is None:
            errors.append("path: no trip left to give a new path to")
        elif not out.new_path:
            errors.append(
                f"path: new_path needs the list of links from {origin} to {target}"
            )
        elif ctx.facts.index is not None:
            try:
                validate_path(
                    ctx.facts.index,
                    origin,
                    target,
                    out.new_path,
                    ctx.facts.day_mode or "drive",
                )
            except PathError as error:
                errors.append(f"path: new_path from {origin} to {target}: {error}")
    elif out.action == "new_departure_time":
        if not ctx.future:
            errors.append("time: no activity left to change the departure time of")
        elif out.new_departure_time is None:
            errors.append("time: new_departure_time needs an HH:MM time")
        else:
            try:
                minute = parse_hhmm(out.new_departure_time)
            except ValueError as error:
                errors.append(f"time: {error}")
            else:
                if minute < ctx.facts.now:
                    errors.append(
                        f"time: {out.new_departure_time} is in the past (now {format_hhmm(ctx.facts.now)})"
                    )
                later = [
                    a.departure_minute
                    for a in ctx.future[1:]
                    if a.departure_minute is not None
                ]
                if later and minute > later[0]:
                    errors.append(
                        f"time: {out.new_departure_time} is after the following departure {format_hhmm(later[0])}"
                    )
    elif out.action == "replace_activities":
        if not out.activities:
            errors.append("home: replace_activities needs activities ending at home")
        else:
            errors.extend(str(i) for i in check_plan(out.activities, ctx.facts))
    if out.action != "replace_activities" and ctx.situation != "at_node":
        # what an agreement changed and the rest of the day lacks (a joint activity, a
        # pick-up taken over, a car handed over): only a replacement can fix it. At a node
        # (en route) only the trip's path is decided: the rest of the day is revised at the
        # next activity's end, as the rule policy does
        errors.extend(
            f"{issue}; use replace_activities"
            for check in (check_appointments, check_duties, check_vehicle)
            for issue in check(ctx.future, ctx.facts)
        )
    return errors


def _mode_without_car(ctx: RevisionContext) -> str:
    """Transit when every remaining trip has a transit path, else walk."""
    facts, place = ctx.facts, ctx.facts.start_place
    if facts.index is None:
        return "transit"
    router = Router(facts.index)
    for activity in ctx.future:
        if activity.facility != place:
            try:
                router.path(place, activity.facility, "transit")
            except PathError:
                return "walk"
        place = activity.facility
    return "transit"


def _after_agreement(ctx: RevisionContext) -> list[Activity] | None:
    """The rest of the day changed as an agreement requires, or ``None`` if nothing changes.

    - The car handed over (a drive with no vehicle assigned): transit (walk where no transit).
    - A pick-up taken over: a school visit right after leaving work (else before the next
      trip).
    - A pick-up handed over (a parent with no school run ahead): its school visits dropped,
      the next trip leaving when the school visit would have.
    """
    facts, persona = ctx.facts, ctx.persona
    rest = list(ctx.future)
    if check_vehicle(rest, facts):
        mode = _mode_without_car(ctx)
        rest = [a.model_copy(update={"mode": mode, "path": "shortest"}) for a in rest]
    runs = pending_runs(facts)
    pick_up = next((d for d in runs if d.kind == "pick_up"), None)
    if pick_up is not None and check_duties(rest, facts):
        work = [k for k, a in enumerate(rest) if a.facility == pick_up.work]
        at = work[-1] + 1 if work else 0
        if at < len(rest):
            leave = rest[at].departure_time
            rest[at] = rest[at].model_copy(update={"departure_time": None})
            rest.insert(
                at,
                Activity(
                    facility=pick_up.school,
                    departure_time=leave,
                    reflect_every=MIN_REFLECT_MINUTES,
                    mode=facts.day_mode or rest[at].mode,
                    description="Pick the children up from school (agreed in a chat)",
                ),
            )
    elif persona.children and not runs and persona.work_facility != SCHOOL:
        kept: list[Activity] = []
        leave: str | None = None  # the next trip leaves when the school run would have
        for activity in rest:
            if activity.facility == SCHOOL:
                leave = leave or activity.departure_time
                continue
            if leave is not None and activity.departure_minute is None:
                activity = activity.model_copy(update={"departure_time": leave})
            leave = None
            kept.append(activity)
        rest = kept
    if rest == ctx.future or not rest or check_plan(rest, facts):
        return None
    return rest


def _free_minutes(ctx: RevisionContext, links: Sequence[str]) -> float | None:
    """Free-flow minutes of the next trip's ``links`` (``None`` when they do not resolve)."""
    origin, target = _new_path_ends(ctx)
    if ctx.facts.index is None or target is None:
        return None
    mode = ctx.facts.day_mode or "drive"
    try:
        path = validate_path(ctx.facts.index, origin, target, list(links), mode)
    except PathError:
        return None
    return sum(link.free_time for link in path)


def _remembered_queues(ctx: RevisionContext) -> float:
    """Queues the traveller remembers on the next trip's path within 20 minutes of now."""
    index = ctx.facts.index
    origin, target = _new_path_ends(ctx)
    if index is None or target is None:
        return 0.0
    try:
        path = validate_path(index, origin, target, ctx.remaining_path, "drive")
    except PathError:
        return 0.0
    waits = learnt_link_waits(index, ctx.day, reflections=ctx.memories)
    costs = link_costs(waits, ctx.facts.now, window=POSTPONE_MINUTES)
    return sum(costs.get(link.index, 0.0) for link in path)


THREAT_WORDS = ("close", "fire", "evacuat")
"""Words of an announcement that make a named place one to leave."""


def _threatened(ctx: RevisionContext, place: str) -> bool:
    """Whether an announcement names ``place`` with a threat (closing, fire, evacuation)."""
    return any(
        place in event and any(word in event.lower() for word in THREAT_WORDS)
        for event in ctx.events
    )


def _announced_on(ctx: RevisionContext, links: Sequence[str]) -> bool:
    """Whether an announcement of road works names one of ``links``."""
    return any(
        "road works" in event.lower() and any(name in event for name in links)
        for event in ctx.events
    )


def _skip_leisure(ctx: RevisionContext) -> list[Activity] | None:
    """The rest of the day without the next (leisure) activity: straight home after a wait."""
    if len(ctx.future) != 2 or ctx.future[1].facility != ctx.persona.home:
        return None
    leisure = ctx.future[0]
    if leisure.facility in (ctx.persona.home, ctx.persona.work_facility, SCHOOL):
        return None
    home = ctx.future[1].model_copy(
        update={
            "departure_time": format_hhmm(
                min(ctx.facts.now + POSTPONE_MINUTES, 23 * 60 + 59)
            ),
            "path": "shortest",
            "description": f"Skip the {leisure.facility}: the roads are jammed; go home later",
        }
    )
    return None if check_plan([home], ctx.facts) else [home]


def revision_rule_policy(
    ctx: RevisionContext, rng: np.random.Generator
) -> PlanRevisionOutput:
    """Reroute, re-time or drop an activity when the situation warrants; else keep.

    - During an activity at a place an announcement threatens (closing, fire): go home early.
    - At a node: take the fastest path when the planned one is expected more than
      :data:`REROUTE_THRESHOLD_MINUTES` slower, and write the queues met as a lesson
      (:func:`~mesa_llm_mobility.urban.decisions.learning.queue_lesson_text`) that tomorrow's
      plan routes around.
    - Leaving for the next activity: take the other path when the planned one crosses announced
      road works or is that much slower now; for a drive without a target arrival whose path
      carries at least :data:`POSTPONE_WAIT_MINUTES` of queues, now or remembered within
      :data:`POSTPONE_MINUTES` of now (queue lessons), until
      :data:`POSTPONE_LATEST`), drop a leisure activity (go
      home :data:`POSTPONE_MINUTES` later; also when an announcement threatens it) or leave
      :data:`POSTPONE_MINUTES` later.

    Before all that, a joint activity agreed in a chat and missing from the rest of the day is
    inserted (:func:`~.plans.with_appointments`), and the rest of the day follows a car or a
    pick-up that changed hands in a chat (:func:`_after_agreement`).
    """
    if ctx.situation != "at_node" and missing_appointments(ctx.future, ctx.facts):
        return PlanRevisionOutput(
            action="replace_activities",
            activities=with_appointments(ctx.future, ctx.facts),
            reason="keep the joint activity agreed in a chat",
        )
    if ctx.situation != "at_node" and (rest := _after_agreement(ctx)) is not None:
        return PlanRevisionOutput(
            action="replace_activities",
            activities=rest,
            reason="follow the car and school runs agreed in a chat",
        )
    if ctx.situation == "at_node":
        lesson = _queue_lesson(ctx)
        if (
            ctx.alternative_path
            and ctx.alternative_path != ctx.remaining_path
            and ctx.remaining_minutes - ctx.alternative_minutes
            > REROUTE_THRESHOLD_MINUTES
        ):
            return PlanRevisionOutput(
                action="new_path",
                new_path=list(ctx.alternative_path),
                reason=f"planned path ~{ctx.remaining_minutes:.0f} min, alternative ~{ctx.alternative_minutes:.0f} min",
                concept=lesson,
            )
        return PlanRevisionOutput(
            action="keep", reason="queues ahead, no faster path", concept=lesson
        )
    if (
        ctx.situation == "during_activity"
        and ctx.future
        and _threatened(ctx, ctx.place)
    ):
        home = ctx.future[-1]
        rest = [
            home.model_copy(
                update={
                    "departure_time": format_hhmm(
                        min(ctx.facts.now + 15, 23 * 60 + 59)
                    ),
                    "description": f"Leave the {ctx.place} early: {ctx.events[-1][:60]}",
                }
            )
        ]
        if home.facility == ctx.persona.home and not check_plan(rest, ctx.facts):
            return PlanRevisionOutput(
                action="replace_activities",
                activities=rest,
                reason=f"an announcement threatens the {ctx.place}: go home early",
            )
    if ctx.situation != "end_of_activity" or not ctx.future or not ctx.remaining_path:
        return PlanRevisionOutput(action="keep", reason="plan still fine")
    has_other = (
        bool(ctx.alternative_path) and ctx.alternative_path != ctx.remaining_path
    )
    if (
        has_other
        and _announced_on(ctx, ctx.remaining_path)
        and not _announced_on(ctx, ctx.alternative_path)
    ):
        return PlanRevisionOutput(
            action="new_path",
            new_path=list(ctx.alternative_path),
            reason="announced road works on the planned path",
        )
    if (
        has_other
        and ctx.remaining_minutes - ctx.alternative_minutes > REROUTE_THRESHOLD_MINUTES
    ):
        return PlanRevisionOutput(
            action="new_path",
            new_path=list(ctx.alternative_path),
            reason=f"planned path ~{ctx.remaining_minutes:.0f} min now, other ~{ctx.alternative_minutes:.0f} min",
        )
    threatened = _threatened(ctx, ctx.future[0].facility)
    free = _free_minutes(ctx, ctx.remaining_path)
    queues = (
        None
        if free is None
        else max(ctx.remaining_minutes - free, _remembered_queues(ctx))
    )
    if (
        ctx.target_arrival is not None
        or (ctx.facts.day_mode or "drive") != "drive"  # road queues only
        or ctx.facts.now + POSTPONE_MINUTES > POSTPONE_LATEST
        or queues is None
        or (queues < POSTPONE_WAIT_MINUTES and not threatened)
    ):
        return PlanRevisionOutput(action="keep", reason="plan still fine")
    rest = _skip_leisure(ctx) if queues >= POSTPONE_WAIT_MINUTES or threatened else None
    if rest is not None:
        return PlanRevisionOutput(
            action="replace_activities",
            activities=rest,
            reason=f"~{queues:.0f} min of queues to the {ctx.future[0].facility}: skip it",
        )
    if queues < POSTPONE_WAIT_MINUTES:
        return PlanRevisionOutput(action="keep", reason="plan still fine")
    later = min(ctx.facts.now + POSTPONE_MINUTES, 23 * 60 + 59)
    out = PlanRevisionOutput(
        action="new_departure_time",
        new_departure_time=format_hhmm(later),
        reason=f"~{queues:.0f} min of queues now: wait for them to clear",
    )
    if validate_revision(ctx, out):
        return PlanRevisionOutput(action="keep", reason="queues, but no time to wait")
    return out


def _queue_lesson(ctx: RevisionContext) -> Concept | None:
    """The queues a driver meets ahead of a node, as a lesson to remember."""
    if not ctx.remaining_path or ctx.destination is None or ctx.facts.index is None:
        return None
    try:
        ahead = validate_path(
            ctx.facts.index, ctx.place, ctx.destination, ctx.remaining_path, "drive"
        )
    except PathError:
        return None
    wait = ctx.remaining_minutes - sum(link.free_time for link in ahead)
    if wait < 1:
        return None
    return Concept(
        content=queue_lesson_text(
            ctx.day, ctx.facts.now, ctx.place, wait, ctx.remaining_path, ctx.destination
        ),
        importance=min(1.0, 0.3 + wait / 30),
        keywords=["queues", "route", ctx.destination, *ctx.remaining_path],
    )


PLAN_REVISION: DecisionKind[RevisionContext, PlanRevisionOutput] = DecisionKind(
    name="PlanRevision",
    context_type=RevisionContext,
    output_schema=PlanRevisionOutput,
    render_prompt=render_revision_prompt,
    rule_policy=revision_rule_policy,
    validate=validate_revision,
)
