"""Decision kinds of urban travellers: day plans, plan revisions, chats and daily reflections.

Each kind declares its context (what the traveller knows), output schema, prompt (next to it
here), domain validator and rule policy. The rule policies are the classical day-to-day learning
baseline, and they learn only through memory: expected travel times come from experienced trips
recalled from the traveller's memory (event nodes written by :func:`trip_memory_text`), so on
day 1 a commuter expects free-flow times and leaves about 30-40 minutes before an 8:00 start,
meets the congestion that everybody leaving then creates, remembers it, and leaves earlier the
next day.

Importance scoring is part of the kinds that create memories (plan concepts, chat summaries,
reflections carry their importance), so no separate call is made per memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.plans import (
    Activity,
    Concept,
    DailyPlan,
    FamilyDuty,
    PlanFacts,
    check_duties,
    check_plan,
    compact_schema,
)
from mesa_llm_mobility.urban.routing import (
    DirectedLink,
    NetworkIndex,
    PathError,
    validate_path,
)
from mesa_llm_mobility.urban.traffic import transit_journey

SYSTEM_ROLE = (
    "You are {name}, a resident of a small town, planning and adjusting your daily travel. "
    "Times are HH:MM (24 h). Be realistic, consistent with your profile, and brief."
)
REROUTE_THRESHOLD_MINUTES = 5.0
"""A driver at a node switches path when the alternative is expected this much faster."""
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
SCHOOL = "School"
"""The facility where parents drop their children off and pick them up."""
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


# ----------------------------------------------------------------------------- shared facts
@dataclass(frozen=True)
class PersonaFacts:
    """The traveller's profile as decision contexts show it.

    Attributes:
        name: Unique name (also the memory and chat key).
        age: Age in years.
        gender: Gender.
        occupation: Occupation.
        home: Home facility.
        work_facility: Work facility, or ``None`` for non-workers.
        work_start: Work start, minutes of the day (``None`` without work).
        work_end: Work end, minutes of the day.
        licensed: Holds a driving licence.
        household: Household id.
        vehicles: Vehicles of the household.
        family: Household members' names (travelling adults).
        children: Children's names (parents drop them at school and pick them up).
        friends: Friends' names.
        lifestyle: Free text.
        traits: Innate traits, free text.
        preferences: Preferences in transportation, free text.
        description: Other description.
    """

    name: str
    age: int = 35
    gender: str = ""
    occupation: str = ""
    home: str = ""
    work_facility: str | None = None
    work_start: int | None = None
    work_end: int | None = None
    licensed: bool = True
    household: str = ""
    vehicles: int = 1
    family: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    friends: tuple[str, ...] = ()
    lifestyle: str = ""
    traits: str = ""
    preferences: str = ""
    description: str = ""

    def profile_text(self) -> str:
        """A compact profile for prompts."""
        work = (
            f"works as {self.occupation or 'employee'} at {self.work_facility} "
            f"{format_hhmm(self.work_start or 0)}-{format_hhmm(self.work_end or 0)}"
            if self.work_facility
            else f"{self.occupation or 'not working'}"
        )
        parts = [
            f"{self.name}, {self.age}, {self.gender}".rstrip(", "),
            f"lives at {self.home}",
            work,
            "licensed driver" if self.licensed else "no driving licence",
            f"household vehicles: {self.vehicles}",
        ]
        if self.family:
            parts.append(f"family: {', '.join(self.family)}")
        if self.children:
            parts.append(f"children at school: {', '.join(self.children)}")
        if self.friends:
            parts.append(f"friends: {', '.join(self.friends)}")
        for label, text in (
            ("traits", self.traits),
            ("lifestyle", self.lifestyle),
            ("transport preferences", self.preferences),
            ("about", self.description),
        ):
            if text:
                parts.append(f"{label}: {text}")
        return "; ".join(part.rstrip(". ") for part in parts)


@dataclass(frozen=True)
class TripExperience:
    """An experienced trip, as recalled from memory (minutes of the day).

    ``late`` (minutes, 0 when on time) and ``target`` (the arrival aimed at, e.g. the work
    start) are ``None`` for trips without a target arrival.
    """

    origin: str
    destination: str
    mode: str
    departure: int
    travel_time: int
    delay: int
    late: int | None = None
    day: int = 1
    target: int | None = None


_TRIP_TEXT = re.compile(
    r"^Day (?P<day>\d+): trip from (?P<origin>.+?) to (?P<destination>.+?) by (?P<mode>drive|transit|walk): "
    r"left (?P<dep>\d\d:\d\d), took (?P<tt>\d+) min \((?P<delay>\d+) min delay\)"
    r"(?:; (?:(?P<late>\d+) min late|on time) for (?P<target>\d\d:\d\d))?"
)


def trip_memory_text(exp: TripExperience, target: int | None = None) -> str:
    """The content of a trip's event memory; :func:`parse_trip_memory` reads it back.

    With a target arrival (``target``, else ``exp.target``) the text ends with the lateness
    against it: ``"; 20 min late for 08:00"`` or ``"; on time for 08:00"``. Prompts render
    recalled trips with this function too, so the lateness reaches them.
    """
    target = exp.target if target is None else target
    text = (
        f"Day {exp.day}: trip from {exp.origin} to {exp.destination} by {exp.mode}: left "
        f"{format_hhmm(exp.departure)}, took {exp.travel_time} min ({exp.delay} min delay)"
    )
    if target is not None:
        punctuality = f"{exp.late} min late" if exp.late else "on time"
        text += f"; {punctuality} for {format_hhmm(target)}"
    return text + "."


def parse_trip_memory(content: str) -> TripExperience | None:
    """Read an experienced trip from a memory's content (``None`` if it is not one)."""
    match = _TRIP_TEXT.match(content)
    if match is None:
        return None
    late, target = match.group("late"), match.group("target")
    return TripExperience(
        origin=match.group("origin"),
        destination=match.group("destination"),
        mode=match.group("mode"),
        departure=parse_hhmm(match.group("dep")),
        travel_time=int(match.group("tt")),
        delay=int(match.group("delay")),
        late=int(late) if late is not None else (0 if target else None),
        day=int(match.group("day")),
        target=parse_hhmm(target) if target else None,
    )


def expected_travel_minutes(
    experiences: Sequence[TripExperience],
    travel_times: Mapping[tuple[str, str, str], float],
    origin: str,
    destination: str,
    mode: str,
) -> float:
    """Expected travel time: recency-weighted mean of experienced trips, else free flow.

    The most recent trip weighs twice as much as each older one. Never below free flow.
    """
    free = travel_times.get((origin, destination, mode), 0.0)
    same = sorted(
        (
            e
            for e in experiences
            if (e.origin, e.destination, e.mode) == (origin, destination, mode)
        ),
        key=lambda e: (e.day, e.departure),
    )
    if not same:
        return free
    weights = [1.0] * (len(same) - 1) + [2.0]
    mean = sum(w * e.travel_time for w, e in zip(weights, same, strict=True)) / sum(
        weights
    )
    return max(free, mean)


def school_runs(
    persona: PersonaFacts,
    duty: str | None,
    school: str,
    facilities: frozenset[str] | set[str],
) -> tuple[FamilyDuty, ...]:
    """Today's school runs of a parent, as plan validation checks them.

    ``duty`` is the household's assignment (``"drop_off"``, ``"pick_up"``, ``"both"`` or
    ``None``). No run is due without a work facility, when the school is not a facility, or
    when the parent works at the school (the children come along), exactly where
    :func:`plan_rule_policy` plans none.
    """
    work = persona.work_facility
    if duty not in ("drop_off", "pick_up", "both") or work is None:
        return ()
    if school not in facilities or school == work:
        return ()
    kinds = ("drop_off", "pick_up") if duty == "both" else (duty,)
    return tuple(
        FamilyDuty(
            kind,  # type: ignore[arg-type]
            school,
            persona.children,
            work,
            persona.work_start if kind == "drop_off" else persona.work_end,
        )
        for kind in kinds
    )


def _section(title: str, lines: Sequence[str], empty: str = "none") -> str:
    body = "\n".join(f"- {line}" for line in lines) if lines else f"- {empty}"
    return f"{title}:\n{body}"


def _sections(*sections: tuple[str, Sequence[str]]) -> list[str]:
    """The non-empty sections only (empty ones would only say "none")."""
    return [_section(title, lines) for title, lines in sections if lines]


def _system(name: str) -> Message:
    return {"role": "system", "content": SYSTEM_ROLE.format(name=name)}


# ----------------------------------------------------------------------------- DailyPlan
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
        events: Broadcast announcements.
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
                facts.index, route, (ctx.day - 1) * MINUTES_PER_DAY, arrive_by,
                leave_at, max(facts.now, 6 * 60),
            )  # fmt: skip
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
            _section(
                "Travel times (free flow; transit waits by the timetable; [path links])",
                legs,
            ),
            f"Long-term reflection: {ctx.long_term_reflection or 'none yet'}",
            _section("Recent trips you remember", trips),
            *_sections(
                ("Other memories", ctx.memories[:6]),
                ("Chats today", ctx.chats),
                ("Announcements", ctx.events),
            ),
            f"Facilities: {', '.join(sorted(facts.facilities))}.",
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
    return [_system(persona.name), {"role": "user", "content": user}]


def validate_daily_plan(ctx: PlanningContext, plan: DailyPlan) -> list[str]:
    """Rule-based remedies (see :func:`~mesa_llm_mobility.urban.plans.check_plan`)."""
    return [str(issue) for issue in check_plan(plan.activities, ctx.facts)]


def choose_mode(
    ctx: PlanningContext, destination: str, rng: np.random.Generator
) -> str:
    """Mode by licence, vehicle assignment, stated preference and experienced costs.

    Without a car: walk short trips (at most 25 min), else transit. With one: transit when the
    stated preference names the metro without driving, or names both and remembered driving
    delays to this destination reached 10 minutes ("takes the metro when traffic is bad"), or
    (half the time) when remembered driving took 30 % longer than transit is expected to; walk
    short trips (at most 20 min) when the preference mentions walking; else drive.
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
    if "walk" in prefs and walk_time <= 20:
        return "walk"
    if transit_ok and likes_transit and not likes_driving:
        return "transit"
    drive = expected_travel_minutes(
        ctx.experiences, ctx.travel_times, home, destination, "drive"
    )
    if transit_ok:
        bad_traffic = any(
            e.mode == "drive" and e.destination == destination and e.delay >= 10
            for e in ctx.experiences
        )
        if likes_transit and bad_traffic:
            return "transit"
        transit = (
            expected_travel_minutes(
                ctx.experiences, ctx.travel_times, home, destination, "transit"
            )
            + 5.0
        )  # the expected wait for a train
        if drive > 1.3 * transit and rng.random() < 0.5:
            return "transit"
    return "drive"


def _lateness_margin(ctx: PlanningContext, destination: str) -> float:
    late = [e.late or 0 for e in ctx.experiences if e.destination == destination]
    return 0.5 * max(late, default=0)


def _leisure_place(ctx: PlanningContext, rng: np.random.Generator) -> str:
    options = _leisure_options(ctx)
    return (
        str(options[int(rng.integers(len(options)))]) if options else ctx.persona.home
    )


def plan_rule_policy(ctx: PlanningContext, rng: np.random.Generator) -> DailyPlan:
    """Classical day plan: commute timed from remembered travel times, duties, leisure.

    Departure = desired arrival - expected travel time (remembered, else free flow) - a safety
    margin of 4-10 minutes (10 more for those who prefer to leave early) - half the worst
    remembered lateness for that destination.
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
                    facility=place, departure_time=format_hhmm(leave), reflect_every=60,
                    mode=mode, description=f"Spend the morning at the {place}",
                )
            )  # fmt: skip
            leave += FACILITY_STAYS.get(place, 60) + 30
        if rng.random() < 0.5 and "Food court" in facts.facilities:
            lunch = max(leave, 11 * 60 + 30)
            activities.append(
                Activity(
                    facility="Food court", departure_time=format_hhmm(lunch), reflect_every=30,
                    mode=mode, description="Have lunch at the Food court",
                )
            )  # fmt: skip
            leave = lunch + 75
        activities.append(
            Activity(
                facility=persona.home, departure_time=format_hhmm(leave), reflect_every=60,
                mode=mode, description="Return home",
            )
        )  # fmt: skip
        return DailyPlan(activities=activities, long_term_reflection="", concepts=[])

    mode = choose_mode(ctx, work, rng)
    margin = float(rng.integers(4, 11))
    if "early" in ctx.persona.preferences.lower():
        margin += 10.0  # "leaves early to avoid queues"
    start = persona.work_start if persona.work_start is not None else 8 * 60
    end = persona.work_end if persona.work_end is not None else 17 * 60
    if end <= start:  # a night shift: the day plan ends it before midnight
        end = min(start + 8 * 60, 23 * 60)
    if (
        school is not None
        and school != work
        and ctx.school_duty in ("drop_off", "both")
    ):
        travel = (
            expected_travel_minutes(
                ctx.experiences, ctx.travel_times, home, school, mode
            )
            + expected_travel_minutes(
                ctx.experiences, ctx.travel_times, school, work, mode
            )
            + 5
        )
        leave = start - travel - margin - _lateness_margin(ctx, work)
        activities.append(
            Activity(
                facility=school, departure_time=format_hhmm(max(earliest, leave)), reflect_every=30,
                mode=mode, description="Drop the children off at school",
            )
        )  # fmt: skip
        activities.append(
            Activity(
                facility=work, departure_time=None, reflect_every=150, mode=mode,
                description=f"Work at the {work}",
            )
        )  # fmt: skip
    else:
        travel = expected_travel_minutes(
            ctx.experiences, ctx.travel_times, home, work, mode
        )
        leave = start - travel - margin - _lateness_margin(ctx, work)
        activities.append(
            Activity(
                facility=work, departure_time=format_hhmm(max(earliest, leave)), reflect_every=150,
                mode=mode, description=f"Work at the {work}",
            )
        )  # fmt: skip
    after = max(end, earliest + 60)
    if school is not None and school != work and ctx.school_duty in ("pick_up", "both"):
        activities.append(
            Activity(
                facility=school, departure_time=format_hhmm(after), reflect_every=30, mode=mode,
                description="Pick the children up from school",
            )
        )  # fmt: skip
        activities.append(
            Activity(
                facility=persona.home, departure_time=None, reflect_every=60, mode=mode,
                description="Bring the children home",
            )
        )  # fmt: skip
    elif rng.random() < LEISURE_PROBABILITY:
        place = _leisure_place(ctx, rng)
        stay = FACILITY_STAYS.get(place, 60)
        activities.append(
            Activity(
                facility=place, departure_time=format_hhmm(after), reflect_every=60, mode=mode,
                description=f"Go to the {place} after work",
            )
        )  # fmt: skip
        back = min(after + stay + 30, 23 * 60)
        activities.append(
            Activity(
                facility=persona.home, departure_time=format_hhmm(back), reflect_every=60,
                mode=mode, description="Return home",
            )
        )  # fmt: skip
    else:
        activities.append(
            Activity(
                facility=persona.home, departure_time=format_hhmm(after), reflect_every=60,
                mode=mode, description="Return home after work",
            )
        )  # fmt: skip
    return DailyPlan(activities=activities, long_term_reflection="", concepts=[])


DAILY_PLAN: DecisionKind[PlanningContext, DailyPlan] = DecisionKind(
    name="DailyPlan",
    context_type=PlanningContext,
    output_schema=DailyPlan,
    render_prompt=render_plan_prompt,
    rule_policy=plan_rule_policy,
    validate=validate_daily_plan,
)


# ----------------------------------------------------------------------------- PlanRevision
Situation = Literal["at_node", "during_activity", "end_of_activity"]


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
        situation: ``"at_node"`` (driving, about to reach ``node``), ``"during_activity"`` or
            ``"end_of_activity"`` (about to leave for the next activity).
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
    """Where a ``new_path`` starts and ends: the node ahead when driving, else the next trip."""
    if ctx.situation == "at_node":
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
    if ctx.situation == "at_node":
        where = (
            f"You are driving to {ctx.destination} and reaching {ctx.place}. "
            f"Then: {doing}, {until}."
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
    runs = [duty.describe() for duty in _pending_runs(facts)]
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
            _section(f"Paths by {mode} {origin} -> {target}", paths)
            if paths and target
            else "",
            _section("Rest of today's plan", future),
            f"Still to do: {'; '.join(runs)}." if runs else "",
            _section("Traffic now", ctx.congestion[:12], "no congestion"),
            *_sections(
                ("Announcements", ctx.events),
                ("Family and friends now", ctx.social),
                ("Memories", ctx.memories[:6]),
            ),
            (
                f"Choose action: keep; new_path (links from {origin} to {target or 'the next activity'}, "
                "e.g. one of the paths above); new_departure_time (HH:MM for the next activity); "
                f"replace_activities (the new rest of the day, same mode {facts.day_mode or ''}, ending "
                f"at home {persona.home}{', keeping the school runs' if runs else ''}). Give a short "
                "reason; optionally a concept to remember."
            ),
        ]
        if part
    )
    return [_system(persona.name), {"role": "user", "content": user}]


def _pending_runs(facts: PlanFacts) -> list[FamilyDuty]:
    """The school runs the day has not yet headed for (:attr:`PlanFacts.visited`)."""
    missing = {issue.message for issue in check_duties([], facts)}
    return [d for d in facts.duties if any(d.describe() in m for m in missing)]


def validate_revision(ctx: RevisionContext, out: PlanRevisionOutput) -> list[str]:
    """Check that the chosen action fits the situation and its plan is valid."""
    errors: list[str] = []
    if out.action == "new_path":
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
    return errors


def revision_rule_policy(
    ctx: RevisionContext, rng: np.random.Generator
) -> PlanRevisionOutput:
    """En-route rerouting when the planned path is expected to be much slower; else keep."""
    if (
        ctx.situation == "at_node"
        and ctx.alternative_path
        and ctx.alternative_path != ctx.remaining_path
        and ctx.remaining_minutes - ctx.alternative_minutes > REROUTE_THRESHOLD_MINUTES
    ):
        return PlanRevisionOutput(
            action="new_path",
            new_path=list(ctx.alternative_path),
            reason=f"planned path ~{ctx.remaining_minutes:.0f} min, alternative ~{ctx.alternative_minutes:.0f} min",
        )
    return PlanRevisionOutput(action="keep", reason="plan still fine")


PLAN_REVISION: DecisionKind[RevisionContext, PlanRevisionOutput] = DecisionKind(
    name="PlanRevision",
    context_type=RevisionContext,
    output_schema=PlanRevisionOutput,
    render_prompt=render_revision_prompt,
    rule_policy=revision_rule_policy,
    validate=validate_revision,
)


# ----------------------------------------------------------------------------- Chat
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
            _section("People", contacts),
            _section("Your recent trips", trips),
            _section("Memories", ctx.memories[:4]),
            (
                "Write the request, their reply (in their voice) and a one-sentence summary both will "
                "remember, with its importance 0-1. Never repeat a topic already discussed with that person."
            ),
        ]
    )
    return [_system(ctx.persona.name), {"role": "user", "content": user}]


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
    """Pick a contact and a topic not yet discussed with them; share the worst recent trip."""
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
        f"my trip to {worst.destination} took {worst.travel_time} min ({worst.delay} min delay) "
        f"leaving at {format_hhmm(worst.departure)}"
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


# ----------------------------------------------------------------------------- DailyReflection
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
    """

    persona: PersonaFacts
    day: int
    trips: list[TripExperience] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    chats: list[str] = field(default_factory=list)
    long_term_reflection: str = ""


class ReflectionOutput(BaseModel):
    """Daily reflections (concepts with importance) and an updated long-term reflection."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    reflections: list[Concept] = Field(min_length=1, max_length=4)
    long_term_reflection: str = Field(default="", max_length=800)


def render_reflection_prompt(ctx: ReflectionContext) -> list[Message]:
    """Ask for today's reflections and the updated long-term reflection."""
    user = "\n".join(
        [
            f"Day {ctx.day} is over.",
            _section("Your plan", ctx.plan),
            _section("Your trips", [trip_memory_text(t) for t in ctx.trips]),
            _section("Chats", ctx.chats),
            f"Long-term reflection so far: {ctx.long_term_reflection or 'none'}",
            (
                "Give 1-3 reflections (lessons about departure times, routes, modes, people) with "
                "importance 0-1 and keywords, based only on what happened, and an updated long-term "
                "reflection (at most 3 sentences)."
            ),
        ]
    )
    return [_system(ctx.persona.name), {"role": "user", "content": user}]


def reflection_rule_policy(
    ctx: ReflectionContext, rng: np.random.Generator
) -> ReflectionOutput:
    """One lesson per late trip (importance grows with lateness), else a calm day."""
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
    long_term = f"{ctx.long_term_reflection} {summary}".strip()[-800:]
    return ReflectionOutput(reflections=concepts, long_term_reflection=long_term)


DAILY_REFLECTION: DecisionKind[ReflectionContext, ReflectionOutput] = DecisionKind(
    name="DailyReflection",
    context_type=ReflectionContext,
    output_schema=ReflectionOutput,
    render_prompt=render_reflection_prompt,
    rule_policy=reflection_rule_policy,
)

URBAN_KINDS: tuple[DecisionKind, ...] = (
    DAILY_PLAN,
    PLAN_REVISION,
    CHAT,
    DAILY_REFLECTION,
)
