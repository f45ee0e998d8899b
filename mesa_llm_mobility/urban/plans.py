"""Daily activity plans of urban travellers and their rule-based validation (GATSim 3.4.1, 4.3.6).

A :class:`DailyPlan` is an ordered list of :class:`Activity` entries: each names the facility to
go to, when to leave for it (``"HH:MM"``, or ``None`` to leave as soon as the previous activity's
facility is reached), how often to reconsider the plan while there, the travel mode and the path.
The traveller starts the day where the previous plan ended (home).

:func:`check_plan` implements the paper's rule-based remedies for invalid LLM plans. Each
violation is a :class:`PlanIssue` whose message is specific enough to send back to the planner
for repair; :func:`validate_plan` returns the messages. The issue's ``rule`` names the remedy, so
a run can count violations by type.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.routing import NetworkIndex, PathError, validate_path

FACILITY_LIST_LIMIT = 40
"""Most facility names a prompt or a repair lists in full (the reference town has 13).

An imported city has hundreds or thousands (the bundled Helsinki extract 1,588, most of them
homes): listing them all made a day plan's prompt some 11,000 tokens, beyond many models'
context. Larger cities' prompts list a choice (:meth:`~.contexts.WorldView.facilities_to_offer`)
and their repairs the closest names (:func:`facility_choice`).
"""


def facility_choice(unknown: str, facilities: Collection[str]) -> str:
    """What a repair asks for after the unknown facility name ``unknown``.

    Every name (``"choose one of A, B, ..."``) when there are at most
    :data:`FACILITY_LIST_LIMIT`, else the few closest in spelling.
    """
    if len(facilities) <= FACILITY_LIST_LIMIT:
        return f"choose one of {', '.join(sorted(facilities))}"
    close = difflib.get_close_matches(unknown, sorted(facilities), n=5, cutoff=0.6)
    hint = f" (closest names: {', '.join(close)})" if close else ""
    return f"choose an existing facility{hint}"


WORK_REFLECT_MINUTES = 150
MIN_REFLECT_MINUTES = 30
MEAL_WINDOWS: dict[str, tuple[int, int]] = {
    "breakfast": (5 * 60, 10 * 60 + 30),
    "lunch": (11 * 60, 14 * 60),
    "dinner": (17 * 60, 21 * 60 + 30),
}
"""Plausible start of each meal, minutes of the day; a meal activity may leave 30 min early."""
MEAL_LEAD_MINUTES = 30


Mode = Literal["drive", "transit", "walk"]


def compact_schema(schema: dict[str, Any], model: type) -> None:
    """Shorten a model's JSON schema for prompts: no titles, the docstring's first line only.

    Use as ``model_config = ConfigDict(json_schema_extra=compact_schema)``: prompts carry the
    output schema, and the rest of the docstring (and the titles) repeat what fields and
    prompts say.
    """
    schema.pop("title", None)
    doc = (model.__doc__ or "").strip().splitlines()
    if doc:
        schema["description"] = doc[0]
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)


class Activity(BaseModel):
    """One activity of a day plan: where to go next, when to leave, how to travel.

    Attributes:
        facility: Facility to go to (a scenario facility name).
        departure_time: ``"HH:MM"`` to leave for it, or ``None`` to leave on arriving at the
            previous activity's facility (chaining, e.g. a school drop-off before work).
        reflect_every: Minutes between plan reconsiderations while there (at least 30; work
            activities are reconsidered at most every 150 minutes).
        mode: ``"drive"``, ``"transit"`` or ``"walk"`` (one mode for the whole day).
        path: ``"shortest"`` or an explicit list of link names from the previous facility.
        description: What the traveller does there, in a sentence.
    """

    model_config = ConfigDict(json_schema_extra=compact_schema)

    facility: str = Field(min_length=1)
    departure_time: str | None = Field(
        default=None,
        description='"HH:MM", or null to leave on arrival at the previous one',
    )
    reflect_every: int = Field(default=60, ge=MIN_REFLECT_MINUTES, le=MINUTES_PER_DAY)
    mode: Mode = "drive"
    path: Literal["shortest"] | list[str] = Field(
        default="shortest",
        description='"shortest" or link names from the previous facility',
    )
    description: str = ""

    @field_validator("departure_time")
    @classmethod
    def _clock(cls, value: str | None) -> str | None:
        if value is not None:
            parse_hhmm(value)
        return value

    @property
    def departure_minute(self) -> int | None:
        """The departure time in minutes of the day, or ``None``."""
        return None if self.departure_time is None else parse_hhmm(self.departure_time)


class Concept(BaseModel):
    """A concept to remember, with its importance in [0, 1]."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    content: str = Field(min_length=1, max_length=600)
    importance: float = Field(ge=0.0, le=1.0)
    keywords: list[str] = Field(default_factory=list)


class DailyPlan(BaseModel):
    """A day's plan with the planner's new long-term reflection and concepts to remember."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    activities: list[Activity] = Field(min_length=1)
    long_term_reflection: str = ""
    concepts: list[Concept] = Field(default_factory=list)


class PlanRule(StrEnum):
    """The rule-based remedies of GATSim, one per kind of plan error."""

    VEHICLE = "vehicle"
    MODE = "mode"
    TIME = "time"
    MEAL = "meal"
    FACILITY = "facility"
    PATH = "path"
    HOME = "home"
    DUTY = "duty"
    JOINT = "joint"


@dataclass(frozen=True)
class Appointment:
    """A joint activity agreed in a chat: where, when (minute of the day) and with whom."""

    facility: str
    minute: int
    partner: str

    def describe(self) -> str:
        """The appointment in a sentence, e.g. ``"meet Bob Wu at the Gym at 18:00"``."""
        return (
            f"meet {self.partner} at the {self.facility} at {format_hhmm(self.minute)}"
        )


@dataclass(frozen=True)
class FamilyDuty:
    """A school run assigned to a parent for the day (children do not travel on their own).

    Attributes:
        kind: ``"drop_off"`` (take the children to school before work) or ``"pick_up"`` (fetch
            them after work).
        school: The school facility.
        children: The children's names.
        work: The work facility the run is timed around, or ``None``.
        time: Minute of the day: the work start (drop-off) or the work end (pick-up).
    """

    kind: Literal["drop_off", "pick_up"]
    school: str
    children: tuple[str, ...] = ()
    work: str | None = None
    time: int | None = None

    def describe(self) -> str:
        """The duty in a sentence, e.g. ``"drop Cleo Wu off at School before work (08:00)"``."""
        who = " and ".join(self.children) or "the children"
        when = f" ({format_hhmm(self.time)})" if self.time is not None else ""
        if self.kind == "drop_off":
            return f"drop {who} off at {self.school} before work{when}"
        return f"pick {who} up from {self.school} after work{when}"


@dataclass(frozen=True)
class PlanIssue:
    """One violation: the rule it breaks and a message for the planner."""

    rule: PlanRule
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


@dataclass
class PlanFacts:
    """What plan validation needs to know about the traveller and the world.

    Attributes:
        home: Home facility (plans must end there).
        start_place: Facility the traveller will be at when the first activity starts.
        now: Current minute of the day; departure times must not be earlier.
        licensed: Whether the traveller may drive.
        vehicle_available: Whether a household vehicle is assigned to the traveller today.
        vehicles: Vehicles of the household.
        household_drivers: Other household members driving today.
        day_mode: The mode already used today (revisions must keep it), or ``None``.
        facilities: Valid facility names.
        index: Network index for path validation (``None`` skips explicit-path checks).
        duties: Today's school runs (:class:`FamilyDuty`) the plan must keep.
        visited: Facilities already headed for today, in order (trips departed); duties
            count them with the plan's activities, so a revision need not repeat a done run.
        appointments: Joint activities agreed in chats (:class:`Appointment`) the plan must
            keep while they are ahead.
    """

    home: str
    start_place: str
    now: int = 0
    licensed: bool = True
    vehicle_available: bool = True
    vehicles: int = 1
    household_drivers: tuple[str, ...] = ()
    day_mode: str | None = None
    facilities: frozenset[str] = field(default_factory=frozenset)
    index: NetworkIndex | None = None
    duties: tuple[FamilyDuty, ...] = ()
    visited: tuple[str, ...] = ()
    appointments: tuple[Appointment, ...] = ()


def _meal_of(activity: Activity) -> str | None:
    text = activity.description.lower()
    for meal in MEAL_WINDOWS:
        if meal in text:
            return meal
    return None


def check_plan(
    activities: Sequence[Activity], facts: PlanFacts, *, require_home: bool = True
) -> list[PlanIssue]:
    """Check activities against the rule-based remedies.

    Rules: valid facilities; household vehicle consistency (unlicensed people do not drive; no
    more household drivers than vehicles; a driver needs the vehicle assigned to them); one mode
    for the day; departure times increasing and not in the past; meals at plausible times; valid
    explicit paths; the last activity returns home; the day's school runs are kept
    (:func:`check_duties`).

    Args:
        activities: The activities in order.
        facts: The traveller and the world.
        require_home: Whether the last activity must be at home.

    Returns:
        The issues found, in plan order (empty when valid).
    """
    issues: list[PlanIssue] = []
    modes = {a.mode for a in activities}
    if len(modes) > 1:
        issues.append(
            PlanIssue(
                PlanRule.MODE,
                f"activities use several modes ({', '.join(sorted(modes))}); travel mode is "
                "fixed for the day: use one mode for every activity",
            )
        )
    if facts.day_mode is not None and modes and modes != {facts.day_mode}:
        issues.append(
            PlanIssue(
                PlanRule.MODE,
                f"you already travel by {facts.day_mode} today; keep {facts.day_mode} for the "
                "rest of the day",
            )
        )
    issues.extend(check_vehicle(activities, facts))
    previous_time = facts.now
    previous_label = f"the current time {format_hhmm(facts.now)}"
    place = facts.start_place
    for position, activity in enumerate(activities):
        where = f"activity {position} ({activity.facility})"
        if facts.facilities and activity.facility not in facts.facilities:
            issues.append(
                PlanIssue(
                    PlanRule.FACILITY,
                    f"{where}: unknown facility {activity.facility!r}; "
                    + facility_choice(activity.facility, facts.facilities),
                )
            )
            place = activity.facility
            continue
        minute = activity.departure_minute
        if minute is not None:
            if minute < previous_time:
                issues.append(
                    PlanIssue(
                        PlanRule.TIME,
                        f"{where}: departure {activity.departure_time} is earlier than "
                        f"{previous_label}; departure times must increase and not be in the past",
                    )
                )
            else:
                previous_time = minute
                previous_label = f"the previous departure {activity.departure_time}"
        meal = _meal_of(activity)
        if meal is not None:
            start, end = MEAL_WINDOWS[meal]
            if minute is None or not start - MEAL_LEAD_MINUTES <= minute <= end:
                issues.append(
                    PlanIssue(
                        PlanRule.MEAL,
                        f"{where}: {meal} must start between {format_hhmm(start)} and "
                        f"{format_hhmm(end)}; give a departure_time from "
                        f"{format_hhmm(start - MEAL_LEAD_MINUTES)} to {format_hhmm(end)}",
                    )
                )
        if (
            isinstance(activity.path, list)
            and facts.index is not None
            and activity.facility != place
        ):
            try:
                validate_path(
                    facts.index, place, activity.facility, activity.path, activity.mode
                )
            except PathError as error:
                issues.append(
                    PlanIssue(
                        PlanRule.PATH,
                        f'{where}: invalid path from {place}: {error}; or use "shortest"',
                    )
                )
        place = activity.facility
    if require_home and activities and activities[-1].facility != facts.home:
        issues.append(
            PlanIssue(
                PlanRule.HOME,
                f"the last activity must return home to {facts.home}; add it at the end",
            )
        )
    issues.extend(check_duties(activities, facts))
    issues.extend(check_appointments(activities, facts))
    return issues


def check_vehicle(activities: Sequence[Activity], facts: PlanFacts) -> list[PlanIssue]:
    """A driven day needs a licence, a household vehicle and that vehicle assigned today.

    Returns:
        At most one ``vehicle`` issue.
    """
    if not any(a.mode == "drive" for a in activities):
        return []
    if not facts.licensed:
        message = "you have no driving licence: use transit or walk instead of drive"
    elif facts.vehicles == 0:
        message = "your household has no vehicle: use transit or walk instead of drive"
    elif not facts.vehicle_available:
        users = ", ".join(facts.household_drivers) or "other household members"
        message = (
            f"your household's {facts.vehicles} vehicle(s) are used by {users} today: "
            "use transit or walk instead of drive"
        )
    else:
        return []
    return [PlanIssue(PlanRule.VEHICLE, message)]


def missing_appointments(
    activities: Sequence[Activity], facts: PlanFacts
) -> list[Appointment]:
    """The appointments still ahead that neither the activities nor the trip under way reach."""
    heading = facts.visited[-1:] if facts.visited else ()
    places = {*heading, *(a.facility for a in activities)}
    return [
        a
        for a in facts.appointments
        if a.minute >= facts.now and a.facility not in places
    ]


def check_appointments(
    activities: Sequence[Activity], facts: PlanFacts
) -> list[PlanIssue]:
    """Check that the day keeps the joint activities agreed in chats (:attr:`PlanFacts.appointments`).

    Returns:
        One ``joint`` issue per appointment ahead that no activity goes to.
    """
    return [
        PlanIssue(
            PlanRule.JOINT,
            f"you agreed to {a.describe()}, and the plan drops it: add a {a.facility} "
            f"activity leaving in time for {format_hhmm(a.minute)}",
        )
        for a in missing_appointments(activities, facts)
    ]


APPOINTMENT_LEAD_MINUTES = 30
"""The rule fallback leaves this long before an appointment."""
APPOINTMENT_STAY_MINUTES = 60
"""The rule fallback stays this long at an appointment."""


def with_appointments(
    activities: Sequence[Activity], facts: PlanFacts
) -> list[Activity]:
    """The activities with every missing appointment inserted (the rule fallback's way to keep them).

    Each appointment goes before the first activity leaving after it (never after the return
    home), leaving :data:`APPOINTMENT_LEAD_MINUTES` before it; later departures move after an
    :data:`APPOINTMENT_STAY_MINUTES` stay, and departure times stay increasing.
    """
    result = list(activities)
    for appointment in sorted(
        missing_appointments(result, facts), key=lambda a: a.minute
    ):
        mode = facts.day_mode or (result[0].mode if result else "walk")
        last = (
            len(result) - 1
            if result and result[-1].facility == facts.home
            else len(result)
        )
        position = next(
            (
                k
                for k, a in enumerate(result[:last])
                if a.departure_minute is not None
                and a.departure_minute > appointment.minute
            ),
            max(last, 0),
        )
        before = [
            a.departure_minute
            for a in result[:position]
            if a.departure_minute is not None
        ]
        leave = max(appointment.minute - APPOINTMENT_LEAD_MINUTES, facts.now, *before)
        result.insert(
            position,
            Activity(
                facility=appointment.facility,
                departure_time=format_hhmm(leave),
                reflect_every=MIN_REFLECT_MINUTES,
                mode=mode,
                description=f"Meet {appointment.partner} at the {appointment.facility}",
            ),
        )
        after = appointment.minute + APPOINTMENT_STAY_MINUTES
        if position + 1 < len(result):
            following = result[position + 1]
            if following.departure_minute is None or following.departure_minute < after:
                result[position + 1] = following.model_copy(
                    update={
                        "departure_time": format_hhmm(min(after, MINUTES_PER_DAY - 1))
                    }
                )
    if not result or result[-1].facility != facts.home:
        mode = facts.day_mode or (result[0].mode if result else "walk")
        result.append(
            Activity(facility=facts.home, mode=mode, description="Return home")
        )
    previous = facts.now
    for k, activity in enumerate(result):  # keep departures increasing
        minute = activity.departure_minute
        if minute is None:
            continue
        if minute < previous:
            result[k] = activity.model_copy(
                update={"departure_time": format_hhmm(previous)}
            )
        previous = max(previous, minute)
    return result


def check_duties(activities: Sequence[Activity], facts: PlanFacts) -> list[PlanIssue]:
    """Check that the day keeps its school runs (:attr:`PlanFacts.duties`).

    The day is the facilities already visited (:attr:`PlanFacts.visited`) followed by the
    activities. A drop-off needs a visit to the school before the first visit to work (any visit
    when the day has none); a pick-up needs a visit to the school after the last visit to work
    (and after the drop-off's visit, when the parent has both).

    Returns:
        One ``duty`` issue per run the day drops, naming the children, the school and the time.
    """
    if not facts.duties:
        return []
    day = [*facts.visited, *(a.facility for a in activities)]
    issues: list[PlanIssue] = []
    dropped_at = -1
    for duty in sorted(facts.duties, key=lambda d: d.kind != "drop_off"):
        work = [k for k, place in enumerate(day) if duty.work and place == duty.work]
        school = [k for k, place in enumerate(day) if place == duty.school]
        if duty.kind == "drop_off":
            found = [k for k in school if not work or k < work[0]]
            if found:
                dropped_at = found[0]
                continue
            where = (
                f"a {duty.school} activity before the {duty.work} one"
                if work
                else f"a {duty.school} activity in the morning"
            )
        else:
            found = [k for k in school if (not work or k > work[-1]) and k > dropped_at]
            if found:
                continue
            where = (
                f"a {duty.school} activity after the {duty.work} one, before returning home"
                if work
                else f"a {duty.school} activity in the afternoon, before returning home"
            )
        issues.append(
            PlanIssue(
                PlanRule.DUTY,
                f"you must {duty.describe()} today, and the plan drops it: add {where}",
            )
        )
    return issues


def pending_runs(facts: PlanFacts) -> list[FamilyDuty]:
    """The school runs the day has not yet headed for (:attr:`PlanFacts.visited`)."""
    missing = {issue.message for issue in check_duties([], facts)}
    return [d for d in facts.duties if any(d.describe() in m for m in missing)]


def validate_plan(plan: DailyPlan, facts: PlanFacts) -> list[str]:
    """Return the specific error messages of a plan (empty when valid); see :func:`check_plan`."""
    return [str(issue) for issue in check_plan(plan.activities, facts)]


def issue_rule(message: str) -> str | None:
    """Return the rule name a validation message starts with (``"vehicle: ..."``), if any."""
    head = message.split(":", 1)[0]
    return head if head in PlanRule.__members__.values() else None
