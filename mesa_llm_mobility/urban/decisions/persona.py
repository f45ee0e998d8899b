"""Who a traveller is and what it remembers of its trips, as every urban decision kind sees it.

:class:`PersonaFacts` (the profile), :class:`TripExperience` and the trip memory text
(:func:`trip_memory_text` writes it, :func:`parse_trip_memory` reads it back), the expected
travel time learnt from recalled trips, a parent's school runs, and the prompt pieces every
kind shares (the system role and the sections of a user message).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mesa_llm_mobility.cognition.kinds import Message
from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.plans import (
    FamilyDuty,
)

SYSTEM_ROLE = (
    "You are {name}, a resident of a small town, planning and adjusting your daily travel. "
    "Times are HH:MM (24 h). Be realistic, consistent with your profile, and brief."
)
SCHOOL = "School"
"""The facility where parents drop their children off and pick them up."""


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


def prompt_section(title: str, lines: Sequence[str], empty: str = "none") -> str:
    """A titled list of lines for a user message (``empty`` stands in for no line)."""
    body = "\n".join(f"- {line}" for line in lines) if lines else f"- {empty}"
    return f"{title}:\n{body}"


def prompt_sections(*sections: tuple[str, Sequence[str]]) -> list[str]:
    """The non-empty sections only (empty ones would only say "none")."""
    return [prompt_section(title, lines) for title, lines in sections if lines]


def system_message(name: str) -> Message:
    """The system message of every urban prompt: the traveller's role."""
    return {"role": "system", "content": SYSTEM_ROLE.format(name=name)}
