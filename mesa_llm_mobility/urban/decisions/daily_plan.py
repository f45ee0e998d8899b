"""The ``DailyPlan`` decision: the day's activities planned at 00:01.

Context, prompt, validator and rule policy. The rule policy is the classical day-to-day
learning baseline of :mod:`.learning`, and it learns only through what the traveller wrote and
reads back: travel-time beliefs from its long-term reflection, yesterday's commute from its trip
memories, queue lessons from its reflections, road works from announcements and tips from
today's chats. On day 1 a commuter believes free-flow times and leaves about 30-40 minutes
before an 8:00 start, meets the congestion everybody leaving then creates, and adjusts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm
from mesa_llm_mobility.urban.decisions.learning import (
    MIN_SPREAD_MINUTES,
    adjusted_departure,
    best_departure,
    best_departure_by_time,
    early_band,
    habitual_departure,
    learnt_link_waits,
    learnt_path,
    link_costs,
    parse_beliefs,
    travel_time_by_departure,
    update_beliefs,
    worth_switching,
)
from mesa_llm_mobility.urban.decisions.persona import (
    SCHOOL,
    PersonaFacts,
    TripExperience,
    expected_travel_minutes,
    prompt_section,
    prompt_sections,
    system_message,
    trip_memory_text,
)
from mesa_llm_mobility.urban.plans import (
    Activity,
    DailyPlan,
    PlanFacts,
    check_plan,
    with_appointments,
)
from mesa_llm_mobility.urban.routing import (
    DirectedLink,
    NetworkIndex,
)
from mesa_llm_mobility.urban.traffic import transit_journey

LEISURE_PROBABILITY = 0.35
"""Chance that a worker's rule plan adds a leisure activity after work."""
FACILITY_STAYS: dict[str, int] = {
    "Gym": 60,
    "Supermarket": 30,
    "Coffee shop": 30,
    "Cinema": 120,
    "Museum": 90,
    "Amusement park": 120,
    "Food court": 45,
    "Hospital": 60,
}
LIFESTYLE_PLACES: dict[str, str] = {
    "gym": "Gym",
    "fitness": "Gym",
    "exercise": "Gym",
    "yoga": "Gym",
    "sport": "Gym",
    "coffee": "Coffee shop",
    "cafe": "Coffee shop",
    "shop": "Supermarket",
    "grocer": "Supermarket",
    "cook": "Supermarket",
    "movie": "Cinema",
    "film": "Cinema",
    "cinema": "Cinema",
    "museum": "Museum",
    "art": "Museum",
    "history": "Museum",
    "amusement": "Amusement park",
    "dining": "Food court",
    "food": "Food court",
}
DEFAULT_LEISURE = ("Supermarket", "Coffee shop", "Gym")


@dataclass
class PlanningContext:
    """What a traveller knows when planning a day.

    Attributes:
        persona: The profile.
        day: Day number (1 = first simulated day).
        date: ISO date.
        weekday: Weekday name.
        workday: Whether the traveller works today.
        facts: Validation facts (home, vehicle assignment, facilities, network, school runs).
        travel_times: Free-flow minutes by (origin facility, destination facility, mode).
        routes: Free-flow shortest paths by (origin facility, destination facility, mode); the
            prompt offers their link names and times the transit ones by the timetable.
        experiences: Experienced trips recalled from memory.
        school_duty: ``"drop_off"``, ``"pick_up"``, ``"both"`` or ``None``.
        school: The school facility.
        memories: Other recalled memories (text).
        long_term_reflection: Yesterday's long-term reflection.
        chats: Today's chat summaries.
        events: Broadcast announcements and the events near the traveller.
        lookups: Answers of the tools the traveller called before planning.
        offered_facilities: The facilities the prompt names (empty: every one of ``facts``;
            a large city's are a choice, :meth:`~.contexts.WorldView.facilities_to_offer`).
    """

    persona: PersonaFacts
    day: int
    date: str
    weekday: str
    workday: bool
    facts: PlanFacts
    travel_times: Mapping[tuple[str, str, str], float]
    routes: Mapping[tuple[str, str, str], Sequence[DirectedLink]] = field(
        default_factory=dict, repr=False
    )
    experiences: list[TripExperience] = field(default_factory=list)
    school_duty: str | None = None
    school: str = SCHOOL
    memories: list[str] = field(default_factory=list)
    long_term_reflection: str = ""
    chats: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    offered_facilities: tuple[str, ...] = ()


def can_drive(facts: PlanFacts) -> bool:
    """Whether the traveller may drive today: a licence and a household vehicle assigned."""
    return facts.licensed and facts.vehicle_available and facts.vehicles > 0


def _remembered(ctx: PlanningContext, key: tuple[str, str, str], shown: float) -> str:
    """``", remembered 61"`` when remembered trips took clearly longer than ``shown``."""
    if not any((e.origin, e.destination, e.mode) == key for e in ctx.experiences):
        return ""
    expected = expected_travel_minutes(ctx.experiences, ctx.travel_times, *key)
    return f", remembered {expected:.0f}" if expected >= shown + 2 else ""


def _transit_times(
    index: NetworkIndex,
    links: Sequence[DirectedLink],
    day_start: int,
    arrive_by: int | None,
    leave_at: int | None,
    earliest: int,
) -> str:
    """Door-to-door transit times with the waits for trains by the timetable.

    With a target arrival: the latest departure that makes it. Leaving at a given time: that
    trip. Otherwise: the range over one cycle of departures from ``earliest``.
    """
    lines = index.scenario.metro_lines
    headways = sorted({lines[link.line].headway for link in links if link.line})
    every = f"trains every {'/'.join(f'{h:g}' for h in headways)} min"
    if arrive_by is not None:
        target = day_start + arrive_by
        for depart in range(target, max(day_start, target - 240) - 1, -1):
            arrival, wait = transit_journey(index, links, depart)
            if arrival <= target + 1e-9:
                return (
                    f"transit: leave {format_hhmm(depart)}, arrive {format_hhmm(arrival)} "
                    f"({arrival - depart:.0f} min incl. {wait:.0f} waiting; {every})"
                )
    if leave_at is not None:
        depart = day_start + leave_at
        arrival, wait = transit_journey(index, links, depart)
        return (
            f"transit {arrival - depart:.0f} min leaving {format_hhmm(depart)} "
            f"(incl. {wait:.0f} waiting; {every})"
        )
    cycle = [
        transit_journey(index, links, day_start + earliest + m)
        for m in range(int(max(headways, default=1)))
    ]
    times = [a - (day_start + earliest + m) for m, (a, _) in enumerate(cycle)]
    waits = [w for _, w in cycle]
    return (
        f"transit {min(times):.0f}-{max(times):.0f} min "
        f"(incl. {min(waits):.0f}-{max(waits):.0f} waiting; {every})"
    )


def _leisure_options(ctx: PlanningContext) -> list[str]:
    text = ctx.persona.lifestyle.lower()
    options = sorted(
        {place for word, place in LIFESTYLE_PLACES.items() if word in text}
    )
    return [p for p in options if p in ctx.facts.facilities] or [
        p for p in DEFAULT_LEISURE if p in ctx.facts.facilities
    ]


def _day_legs(ctx: PlanningContext) -> list[tuple[str, str, int | None, int | None]]:
    """The day's likely trips: ``(origin, destination, arrive_by, leave_at)``.

    Workers: to work by the work start (through the school for a drop-off) and back at the
    work end (through the school for a pick-up); others: to the places their lifestyle
    suggests.
    """
    persona, facts = ctx.persona, ctx.facts
    home = facts.start_place
    work = persona.work_facility if ctx.workday else None
    if work is None:
        return [(home, place, None, None) for place in _leisure_options(ctx)[:3]]
    runs = {duty.kind: duty.school for duty in facts.duties}
    legs: list[tuple[str, str, int | None, int | None]] = []
    if "drop_off" in runs:
        legs += [(home, runs["drop_off"], None, None)]
        legs += [(runs["drop_off"], work, persona.work_start, None)]
    else:
        legs.append((home, work, persona.work_start, None))
    if "pick_up" in runs:
        legs += [(work, runs["pick_up"], None, persona.work_end)]
        legs += [(runs["pick_up"], persona.home, None, None)]
    else:
        legs.append((work, persona.home, None, persona.work_end))
    return [leg for leg in legs if leg[0] != leg[1]]


def _leg_line(
    ctx: PlanningContext,
    origin: str,
    destination: str,
    arrive_by: int | None,
    leave_at: int | None,
) -> str | None:
    """One trip with its time by every mode the traveller can use, and the path's links."""
    facts = ctx.facts
    head = f"{origin} -> {destination}"
    if arrive_by is not None:
        head += f", arrive by {format_hhmm(arrive_by)}"
    if leave_at is not None:
        head += f", leave {format_hhmm(leave_at)}"
    modes = ("drive", "transit", "walk") if can_drive(facts) else ("transit", "walk")
    options: list[str] = []
    drive_links: list[str] | None = None
    for mode in modes:
        key = (origin, destination, mode)
        if key not in ctx.travel_times:
            continue
        route = ctx.routes.get(key)
        shown = ctx.travel_times[key]
        if mode == "transit" and route and facts.index is not None:
            text = _transit_times(
                facts.index,
                route,
                (ctx.day - 1) * MINUTES_PER_DAY,
                arrive_by,
                leave_at,
                max(facts.now, 6 * 60),
            )
        else:
            text = f"{mode} {shown:.0f} min"
        text += _remembered(ctx, key, shown)
        if route:
            names = [link.name for link in route]
            if mode == "walk" and names == drive_links:
                text += " [as drive]"
            else:
                text += f" [{', '.join(names)}]"
            if mode == "drive":
                drive_links = names
        options.append(text)
    return f"{head}: {'; '.join(options)}" if options else None


def render_plan_prompt(ctx: PlanningContext) -> list[Message]:
    """Ask for today's plan, long-term reflection and concepts to remember."""
    persona, facts = ctx.persona, ctx.facts
    vehicle = (
        "a household vehicle is yours today"
        if can_drive(facts)
        else "you cannot drive today"
        + (
            f" (the car is used by {', '.join(facts.household_drivers)})"
            if facts.household_drivers
            else ""
        )
    )
    duty = (
        "school runs (below)"
        if facts.duties
        else {
            "drop_off": "you drop the children at school in the morning",
            "pick_up": "you pick the children up from school after work",
            "both": "you drop the children at school and pick them up",
        }.get(ctx.school_duty or "", "")
    )
    legs = [line for leg in _day_legs(ctx) if (line := _leg_line(ctx, *leg))]
    trips = [trip_memory_text(e) for e in ctx.experiences[-6:]]
    runs = (
        " Required school runs: " + "; ".join(d.describe() for d in facts.duties) + "."
        if facts.duties
        else ""
    )
    if facts.appointments:
        runs += (
            " Agreed in chats: "
            + "; ".join(a.describe() for a in facts.appointments)
            + "."
        )
    user = "\n".join(
        [
            f"Today is {ctx.weekday} {ctx.date} (day {ctx.day}); it is {format_hhmm(facts.now)} and you are at {facts.start_place}.",
            f"Profile: {persona.profile_text()}.",
            "Today: "
            + "; ".join(
                part
                for part in ("a workday" if ctx.workday else "no work", vehicle, duty)
                if part
            )
            + ".",
            prompt_section(
                "Travel times (free flow; transit waits by the timetable; [path links])",
                legs,
            ),
            f"Long-term reflection: {ctx.long_term_reflection or 'none yet'}",
            prompt_section("Recent trips you remember", trips),
            *prompt_sections(
                ("Other memories", ctx.memories[:6]),
                ("Chats today", ctx.chats),
                ("Announcements", ctx.events),
                ("Looked up", ctx.lookups),
            ),
            f"Facilities: {', '.join(ctx.offered_facilities or sorted(facts.facilities))}.",
            (
                "Plan today as an ordered list of activities (where you go next). departure_time is when "
                "you leave for it (null: right after reaching the previous one). One mode (drive, transit "
                'or walk) for every activity. path is "shortest" or a list of link names (e.g. one above). '
                "reflect_every: minutes between reconsiderations (>= 30; work 150). Lunch only 11:00-14:00. "
                "Also give a new long_term_reflection (2 sentences) and 0-3 concepts to remember with "
                "importance 0-1."
            ),
            (
                f"The LAST activity must return home to {persona.home}. Departure times must increase and "
                f"not be before {format_hhmm(facts.now)}.{runs}"
            ),
        ]
    )
    return [system_message(persona.name), {"role": "user", "content": user}]


def validate_daily_plan(ctx: PlanningContext, plan: DailyPlan) -> list[str]:
    """Rule-based remedies (see :func:`~mesa_llm_mobility.urban.plans.check_plan`)."""
    return [str(issue) for issue in check_plan(plan.activities, ctx.facts)]


def _habitual_mode(ctx: PlanningContext, destination: str) -> str | None:
    """The mode of the latest remembered trip from here to ``destination`` (the habit)."""
    home = ctx.facts.start_place
    same = [
        e for e in ctx.experiences if (e.origin, e.destination) == (home, destination)
    ]
    return max(same, key=lambda e: (e.day, e.departure)).mode if same else None


def _belief(
    ctx: PlanningContext, origin: str, destination: str, mode: str, prior_spread: float
) -> tuple[float, float]:
    """Believed minutes and spread of a trip.

    The long-term reflection's belief; without one (a new trip, or a reflection written by an
    LLM), the recalled trips smoothed from free flow; without those, free flow (transit plus 5
    minutes of expected waiting) and ``prior_spread``.
    """
    key = (origin, destination, mode)
    belief = parse_beliefs(ctx.long_term_reflection).get(key)
    if belief is None:
        belief = update_beliefs(
            {}, [e for e in ctx.experiences if (e.origin, e.destination, e.mode) == key]
        ).get(key)
    if belief is not None:
        return belief.minutes, belief.spread
    free = ctx.travel_times.get((origin, destination, mode), 0.0)
    return free + (5.0 if mode == "transit" else 0.0), prior_spread


def choose_mode(
    ctx: PlanningContext, destination: str, rng: np.random.Generator
) -> str:
    """Mode by licence, vehicle assignment, stated preference and learnt costs, with inertia.

    Without a car: walk short trips (at most 25 min), else transit. With one and no habit yet
    (no remembered trip to ``destination``): transit when the stated preference names the
    metro without driving; walk short trips (at most 20 min) when it mentions walking; else
    drive. With a habit: transit when the preference names the metro and a remembered drive
    there was delayed 10 minutes or more; else the traveller compares believed costs (minutes plus a reliability
    buffer of one standard deviation, liked modes 10 % cheaper) and leaves the habitual mode
    only when another saves more than the indifference band (:func:`worth_switching`).
    """
    facts, home = ctx.facts, ctx.facts.start_place
    transit_ok = (home, destination, "transit") in ctx.travel_times
    walk_time = ctx.travel_times.get((home, destination, "walk"), float("inf"))
    if not can_drive(facts):
        if walk_time <= 25 or not transit_ok:
            return "walk"
        return "transit"
    prefs = ctx.persona.preferences.lower()
    likes_transit = any(w in prefs for w in ("metro", "transit", "public transport"))
    likes_driving = any(w in prefs for w in ("driv", "car"))
    likes_walking = "walk" in prefs
    habit = _habitual_mode(ctx, destination)
    if habit is None:
        if likes_walking and walk_time <= 20:
            return "walk"
        if transit_ok and likes_transit and not likes_driving:
            return "transit"
        return "drive"
    bad_traffic = any(
        e.mode == "drive" and e.destination == destination and e.delay >= 10
        for e in ctx.experiences
    )
    if transit_ok and likes_transit and bad_traffic:
        return "transit"  # "takes the metro when traffic is bad"
    liked = {"drive": likes_driving, "transit": likes_transit, "walk": likes_walking}
    costs: dict[str, float] = {}
    for mode in ("drive", "transit", "walk"):
        if (mode == "transit" and not transit_ok) or (
            mode == "walk" and walk_time > 25
        ):
            continue
        minutes, spread = _belief(ctx, home, destination, mode, MIN_SPREAD_MINUTES)
        cost = minutes + spread * math.sqrt(math.pi / 2.0)
        costs[mode] = 0.9 * cost if liked[mode] else cost
    if habit not in costs:
        return min(costs, key=costs.__getitem__)
    best = min(costs, key=costs.__getitem__)
    return best if worth_switching(costs[habit], costs[best]) else habit


def _leisure_place(ctx: PlanningContext, rng: np.random.Generator) -> str:
    options = _leisure_options(ctx)
    return (
        str(options[int(rng.integers(len(options)))]) if options else ctx.persona.home
    )


def commute_departure(
    ctx: PlanningContext,
    legs: Sequence[tuple[str, str | None]],
    mode: str,
    target: int,
    start: int,
    prior_spread: float,
) -> int:
    """When to leave for work: by habit at first, then learnt with inertia.

    The believed door-to-door time is the sum of the legs' beliefs (:func:`parse_beliefs`, else
    free flow) plus 5 minutes at each intermediate stop, with the legs' spreads added in
    quadrature. The optimum minimises the expected scheduling cost against ``target``
    (:func:`best_departure`, Small 1982); the remembered last commute by ``mode`` is then
    adjusted toward it (:func:`adjusted_departure`). Without a remembered commute by ``mode``
    (the first day, or a new mode) the traveller leaves by habit: the target minus a round
    allowance for the believed time (:func:`~.learning.habitual_departure`). Its early
    indifference band is its own (:func:`~.learning.early_band`).
    """
    minutes, variance = 5.0 * (len(legs) - 1), 0.0
    for origin, destination in legs:
        mean, spread = _belief(ctx, origin, str(destination), mode, prior_spread)
        minutes += mean
        variance += spread**2
    work = legs[-1][1]
    last = max(
        (
            e
            for e in ctx.experiences
            if e.destination == work and e.target == start and e.mode == mode
        ),
        key=lambda e: (e.day, e.departure),
        default=None,
    )
    if last is None:
        return habitual_departure(target, minutes)
    best = best_departure(target, minutes, math.sqrt(variance))
    first = [
        e
        for e in ctx.experiences
        if e.day == last.day and e.origin == legs[0][0] and e.destination == legs[0][1]
    ]
    previous = min(e.departure for e in first) if first else last.departure
    if len(legs) == 1:
        knots = travel_time_by_departure(
            [
                (e.departure, e.travel_time)
                for e in ctx.experiences
                if (e.origin, e.destination, e.mode) == (legs[0][0], work, mode)
            ]
        )
        if knots:
            best = best_departure_by_time(target, knots, math.sqrt(variance))
    return adjusted_departure(
        previous,
        last.departure + last.travel_time,
        start,
        best,
        early_band(ctx.persona.name),
    )


def _planned_path(
    ctx: PlanningContext, origin: str, destination: str, mode: str, leave: int
) -> Literal["shortest"] | list[str]:
    """A drive path around what the traveller learnt (queue lessons, works, tips), if worth it."""
    index = ctx.facts.index
    if mode != "drive" or index is None:
        return "shortest"
    waits = learnt_link_waits(
        index,
        ctx.day,
        reflections=ctx.memories,
        announcements=ctx.events,
        chats=ctx.chats,
        routes=ctx.routes,
    )
    path = learnt_path(index, origin, destination, link_costs(waits, leave))
    return "shortest" if path is None else [link.name for link in path]


def plan_rule_policy(ctx: PlanningContext, rng: np.random.Generator) -> DailyPlan:
    """Classical day plan: commute timed from remembered travel times, duties, leisure.

    The commute follows the day-to-day learning model of :mod:`.learning`: the departure is
    yesterday's while it arrived inside the indifference band, else the one minimising the
    expected scheduling cost with the believed travel time (those who prefer to leave early aim
    10 minutes before the work start); drivers route around what they learnt (queue lessons,
    announced road works, chat tips) when it is worth switching.
    Joint activities agreed in chats are inserted (:func:`~.plans.with_appointments`).
    """
    persona, facts = ctx.persona, ctx.facts
    home = facts.start_place
    activities: list[Activity] = []
    earliest = max(facts.now, 5 * 60)
    work = persona.work_facility if ctx.workday else None
    school = ctx.school if ctx.school in facts.facilities else None
    if work is None:
        place = _leisure_place(ctx, rng)
        mode = choose_mode(ctx, place, rng)
        leave = 9 * 60 + 30 + int(rng.integers(0, 91))
        if place != home:
            activities.append(
                Activity(
                    facility=place,
                    departure_time=format_hhmm(leave),
                    reflect_every=60,
                    mode=mode,
                    description=f"Spend the morning at the {place}",
                )
            )
            leave += FACILITY_STAYS.get(place, 60) + 30
        if rng.random() < 0.5 and "Food court" in facts.facilities:
            lunch = max(leave, 11 * 60 + 30)
            activities.append(
                Activity(
                    facility="Food court",
                    departure_time=format_hhmm(lunch),
                    reflect_every=30,
                    mode=mode,
                    description="Have lunch at the Food court",
                )
            )
            leave = lunch + 75
        activities.append(
            Activity(
                facility=persona.home,
                departure_time=format_hhmm(leave),
                reflect_every=60,
                mode=mode,
                description="Return home",
            )
        )
        return DailyPlan(
            activities=with_appointments(activities, facts),
            long_term_reflection="",
            concepts=[],
        )

    mode = choose_mode(ctx, work, rng)
    prior_spread = float(rng.integers(3, 9))  # a first-day guess of the variability
    start = persona.work_start if persona.work_start is not None else 8 * 60
    end = persona.work_end if persona.work_end is not None else 17 * 60
    if end <= start:  # a night shift: the day plan ends it before midnight
        end = min(start + 8 * 60, 23 * 60)
    target = start - (10 if "early" in persona.preferences.lower() else 0)
    drop_off = (
        school is not None
        and school != work
        and ctx.school_duty in ("drop_off", "both")
    )
    legs = [(home, school), (school, work)] if drop_off else [(home, work)]
    leave = commute_departure(ctx, legs, mode, target, start, prior_spread)
    first = legs[0][1]
    activities.append(
        Activity(
            facility=first,
            departure_time=format_hhmm(max(earliest, leave)),
            reflect_every=30 if drop_off else 150,
            mode=mode,
            path=_planned_path(ctx, home, first, mode, leave),
            description="Drop the children off at school"
            if drop_off
            else f"Work at the {work}",
        )
    )
    if drop_off:
        activities.append(
            Activity(
                facility=work,
                departure_time=None,
                reflect_every=150,
                mode=mode,
                description=f"Work at the {work}",
            )
        )
    after = max(end, earliest + 60)
    if school is not None and school != work and ctx.school_duty in ("pick_up", "both"):
        activities.append(
            Activity(
                facility=school,
                departure_time=format_hhmm(after),
                reflect_every=30,
                mode=mode,
                description="Pick the children up from school",
            )
        )
        activities.append(
            Activity(
                facility=persona.home,
                departure_time=None,
                reflect_every=60,
                mode=mode,
                description="Bring the children home",
            )
        )
    elif rng.random() < LEISURE_PROBABILITY:
        place = _leisure_place(ctx, rng)
        stay = FACILITY_STAYS.get(place, 60)
        activities.append(
            Activity(
                facility=place,
                departure_time=format_hhmm(after),
                reflect_every=60,
                mode=mode,
                description=f"Go to the {place} after work",
            )
        )
        back = min(after + stay + 30, 23 * 60)
        activities.append(
            Activity(
                facility=persona.home,
                departure_time=format_hhmm(back),
                reflect_every=60,
                mode=mode,
                description="Return home",
            )
        )
    else:
        activities.append(
            Activity(
                facility=persona.home,
                departure_time=format_hhmm(after),
                reflect_every=60,
                mode=mode,
                description="Return home after work",
            )
        )
    return DailyPlan(
        activities=with_appointments(activities, facts),
        long_term_reflection="",
        concepts=[],
    )


DAILY_PLAN: DecisionKind[PlanningContext, DailyPlan] = DecisionKind(
    name="DailyPlan",
    context_type=PlanningContext,
    output_schema=DailyPlan,
    render_prompt=render_plan_prompt,
    rule_policy=plan_rule_policy,
    validate=validate_daily_plan,
)
