"""Day-to-day learning of rule travellers: the transport literature's classical baseline.

The rule brain's travellers learn as the day-to-day dynamic models of transport research do,
and everything they learn passes through what they write and read back:

- **Travel-time beliefs** by exponential smoothing of experienced travel times (Horowitz 1984,
  "The stability of stochastic equilibrium in a two-link transportation network"; Cascetta and
  Cantarella 1991): ``T[k+1] = (1 - w) * T[k] + w * t[k]`` with ``T[1]`` the free-flow time, and
  the spread (smoothed absolute deviation) ``S[k+1] = (1 - w) * S[k] + w * |t[k] - T[k]|``
  (:func:`smooth_belief`). The daily reflection writes the beliefs into the long-term
  reflection (:func:`belief_text`) and the next day's plan reads them back
  (:func:`parse_beliefs`).
- **Departure time** trades expected schedule delay against travel time (Vickrey 1969; Small
  1982, "The scheduling of consumer activities: work trips"): cost
  ``alpha * T + beta * SDE + gamma * SDL + theta * [late]`` (:func:`schedule_cost`), with
  Small's estimates per minute (:data:`SMALL_1982`), its expectation under a normal travel time
  (:func:`expected_schedule_cost`, Noland and Small 1995), minimised over departures
  (:func:`best_departure`).
- **Habit before experience**: on the first day (or the first commute by a new mode) the
  traveller leaves by habit, not by the optimum: the work start minus the believed (free-flow)
  time and a small personal margin, on the clock's five minutes (:func:`habitual_departure`).
  Everybody thus starts where free-flow travel times suggest, as the LLM agents of GATSim did on
  their first Monday, and learns from the congestion this makes.
- **Inertia**: a boundedly rational traveller keeps yesterday's departure while its schedule
  delay stays inside an indifference band (Mahmassani and Chang 1986,
  :func:`within_indifference_band`), and switches route or mode only when the alternative is
  expected to be better by more than a relative band (Mahmassani and Jayakrishnan 1991,
  :func:`worth_switching`).
- **Route lessons** written at en-route revisions (:func:`queue_lesson_text`, stored as
  reflections), **road-work announcements** and **chat tips** (a recalled trip shared by family
  or friends) become expected extra minutes on links (:func:`learnt_link_waits`) that the next
  plan routes around.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mesa_llm_mobility.urban.clock import format_hhmm, parse_hhmm
from mesa_llm_mobility.urban.decisions.persona import TripExperience, parse_trip_memory
from mesa_llm_mobility.urban.routing import (
    DirectedLink,
    NetworkIndex,
    PathError,
    Router,
    validate_path,
)

SMOOTHING_WEIGHT = 0.5
"""``w``: weight of the latest experience in the smoothed belief (Horowitz 1984)."""
MIN_SPREAD_MINUTES = 2.0
"""Travel-time spread never believed below this (minutes)."""


@dataclass(frozen=True)
class ScheduleCoefficients:
    """Per-minute disutilities of the scheduling model (Small 1982).

    Attributes:
        travel: ``alpha``, per minute of travel.
        early: ``beta``, per minute of arriving early (schedule delay early, SDE).
        late: ``gamma``, per minute of arriving late (schedule delay late, SDL).
        late_penalty: ``theta``, once for arriving late at all.
    """

    travel: float
    early: float
    late: float
    late_penalty: float


SMALL_1982 = ScheduleCoefficients(
    travel=0.106, early=0.065, late=0.254, late_penalty=0.58
)
"""Small's (1982) estimates: a minute early costs 0.61 and a minute late 2.4 travel minutes."""

EARLY_BAND_MINUTES = 10.0
"""Arriving up to this much early is "on time enough" (indifference band, early side)."""
LATE_BAND_MINUTES = 0.0
"""Lateness tolerated (indifference band, late side): none, the band is asymmetric."""
SWITCH_BAND = 0.15
"""Relative indifference band for switching route or mode."""
SWITCH_BAND_MINUTES = 2.0
"""Absolute floor of that band (minutes)."""
ANNOUNCED_WORKS_MINUTES = 10.0
"""Extra minutes expected on a link an announcement says has road works (capacity halved)."""
LESSON_WINDOW_MINUTES = 90
"""Queue lessons and tips count for trips within this many minutes of their time of day."""


# ----------------------------------------------------------------------------- beliefs
@dataclass(frozen=True)
class TravelBelief:
    """What a traveller believes a trip takes: smoothed mean and spread (minutes)."""

    origin: str
    destination: str
    mode: str
    minutes: float
    spread: float


def smooth_belief(
    minutes: float, spread: float, experienced: float, weight: float = SMOOTHING_WEIGHT
) -> tuple[float, float]:
    """One day-to-day update by exponential smoothing (Horowitz 1984).

    ``T' = (1 - w) T + w t`` and ``S' = (1 - w) S + w |t - T|``.

    Args:
        minutes: The belief ``T``.
        spread: The believed spread ``S``.
        experienced: The experienced travel time ``t``.
        weight: ``w`` in (0, 1].

    Returns:
        ``(T', S')``.
    """
    if not 0.0 < weight <= 1.0:
        raise ValueError(f"smoothing weight must be in (0, 1], got {weight}")
    new_minutes = (1.0 - weight) * minutes + weight * experienced
    new_spread = (1.0 - weight) * spread + weight * abs(experienced - minutes)
    return new_minutes, max(MIN_SPREAD_MINUTES, new_spread)


_BELIEF_TEXT = re.compile(
    r"Expect (?P<origin>[^;>]+?) -> (?P<destination>[^;>]+?) by (?P<mode>drive|transit|walk): "
    r"(?P<minutes>\d+(?:\.\d+)?) min \+- (?P<spread>\d+(?:\.\d+)?)\."
)


def belief_text(belief: TravelBelief) -> str:
    """The sentence of the long-term reflection holding a belief (:func:`parse_beliefs`)."""
    return (
        f"Expect {belief.origin} -> {belief.destination} by {belief.mode}: "
        f"{belief.minutes:.1f} min +- {belief.spread:.1f}."
    )


def parse_beliefs(text: str) -> dict[tuple[str, str, str], TravelBelief]:
    """The beliefs a long-term reflection holds, by ``(origin, destination, mode)``."""
    found: dict[tuple[str, str, str], TravelBelief] = {}
    for match in _BELIEF_TEXT.finditer(text or ""):
        belief = TravelBelief(
            match["origin"].strip(),
            match["destination"].strip(),
            match["mode"],
            float(match["minutes"]),
            float(match["spread"]),
        )
        found[(belief.origin, belief.destination, belief.mode)] = belief
    return found


def update_beliefs(
    beliefs: Mapping[tuple[str, str, str], TravelBelief],
    trips: Iterable[TripExperience],
    prior_spread: float = MIN_SPREAD_MINUTES,
) -> dict[tuple[str, str, str], TravelBelief]:
    """Smooth the beliefs with a day's experienced trips, in the order they happened.

    A trip without a belief starts from its free-flow time (experienced minus delay) and
    ``prior_spread``.
    """
    updated = dict(beliefs)
    for trip in sorted(trips, key=lambda e: (e.day, e.departure)):
        key = (trip.origin, trip.destination, trip.mode)
        old = updated.get(key) or TravelBelief(
            *key, float(trip.travel_time - trip.delay), prior_spread
        )
        minutes, spread = smooth_belief(old.minutes, old.spread, trip.travel_time)
        updated[key] = TravelBelief(*key, minutes, spread)
    return updated


# ----------------------------------------------------------------------------- departure time
def schedule_cost(
    departure: float,
    travel: float,
    target: float,
    coefficients: ScheduleCoefficients = SMALL_1982,
) -> float:
    """The scheduling cost of one trip: ``alpha T + beta SDE + gamma SDL + theta [late]``.

    Args:
        departure: Departure minute.
        travel: Travel time (minutes).
        target: Desired arrival minute (e.g. the work start).
        coefficients: ``alpha, beta, gamma, theta`` (Small 1982 by default).
    """
    arrival = departure + travel
    early, late = max(0.0, target - arrival), max(0.0, arrival - target)
    c = coefficients
    return (
        c.travel * travel
        + c.early * early
        + c.late * late
        + (c.late_penalty if late > 0 else 0.0)
    )


def _normal_cdf(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _normal_pdf(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)


def expected_schedule_cost(
    slack: float,
    mean: float,
    spread: float,
    coefficients: ScheduleCoefficients = SMALL_1982,
) -> float:
    """Expected scheduling cost leaving ``slack`` minutes before the target, ``T ~ N(mean, sd)``.

    With ``z = (mean - slack) / sd``: ``E[SDL] = (mean - slack) Phi(z) + sd phi(z)``,
    ``E[SDE] = E[SDL] - (mean - slack)``, ``P(late) = Phi(z)`` (Noland and Small 1995). ``spread``
    is the smoothed absolute deviation, so ``sd = spread * sqrt(pi / 2)``.
    """
    c = coefficients
    sd = max(spread, 1e-9) * math.sqrt(math.pi / 2.0)
    gap = mean - slack
    z = gap / sd
    late = gap * _normal_cdf(z) + sd * _normal_pdf(z)
    early = late - gap
    return (
        c.travel * mean
        + c.early * early
        + c.late * late
        + c.late_penalty * _normal_cdf(z)
    )


def best_departure(
    target: float,
    mean: float,
    spread: float,
    coefficients: ScheduleCoefficients = SMALL_1982,
) -> int:
    """The departure minute minimising :func:`expected_schedule_cost` (whole minutes)."""
    sd = max(spread, 1e-9) * math.sqrt(math.pi / 2.0)
    slacks = range(max(0, math.floor(mean - sd)), math.ceil(mean + 5 * sd + 30) + 1)
    slack = min(
        slacks, key=lambda s: expected_schedule_cost(s, mean, spread, coefficients)
    )
    return round(target - slack)


def travel_time_by_departure(
    points: Sequence[tuple[float, float]],
) -> tuple[tuple[float, float], ...]:
    """What a commuter learnt of how its trip's time depends on when it leaves.

    ``points`` are its experienced ``(departure minute of the day, travel minutes)``; several at
    one minute are averaged (the later ones weigh as much as the earlier). Between experienced
    departures the belief is linear; before the first and after the last it is flat
    (:func:`expected_minutes`): no experience says that leaving still earlier or later is
    faster or slower.

    Returns:
        The sorted ``(departure, minutes)`` knots.
    """
    by_minute: dict[float, list[float]] = {}
    for departure, minutes in points:
        by_minute.setdefault(float(departure), []).append(float(minutes))
    return tuple((d, sum(v) / len(v)) for d, v in sorted(by_minute.items()))


def expected_minutes(knots: Sequence[tuple[float, float]], departure: float) -> float:
    """The believed travel time leaving at ``departure`` (:func:`travel_time_by_departure`)."""
    if not knots:
        raise ValueError("no experienced departures")
    if departure <= knots[0][0]:
        return knots[0][1]
    for (d0, t0), (d1, t1) in itertools.pairwise(knots):
        if departure <= d1:
            return t0 + (t1 - t0) * (departure - d0) / (d1 - d0)
    return knots[-1][1]


def best_departure_by_time(
    target: float,
    knots: Sequence[tuple[float, float]],
    spread: float,
    extra: float = 0.0,
    coefficients: ScheduleCoefficients = SMALL_1982,
) -> int:
    """The departure minimising the expected scheduling cost when the time depends on it.

    Every whole minute from three hours before ``target`` to ``target`` is tried with the
    believed time there (:func:`expected_minutes`) plus ``extra`` (e.g. the legs before this
    one) and the believed spread (:func:`expected_schedule_cost`).
    """
    start = math.floor(target - 180)
    return min(
        range(start, math.ceil(target) + 1),
        key=lambda d: (
            expected_schedule_cost(
                target - d, expected_minutes(knots, d) + extra, spread, coefficients
            ),
            -d,
        ),
    )


def within_indifference_band(
    arrival: float,
    target: float,
    early_band: float = EARLY_BAND_MINUTES,
    late_band: float = LATE_BAND_MINUTES,
) -> bool:
    """Whether an arrival is inside the traveller's indifference band (Mahmassani and Chang 1986).

    Inside, the boundedly rational commuter keeps yesterday's departure time.
    """
    return -late_band <= target - arrival <= early_band


HABIT_EXTRA_MINUTES = 0
"""What a commuter adds to the free-flow time before rounding its habitual allowance."""
HABIT_ROUNDING = 10
"""Habitual allowances are whole multiples of this many minutes ("forty minutes to work")."""


def habitual_departure(
    target: float,
    minutes: float,
    extra: float = HABIT_EXTRA_MINUTES,
    rounding: int = HABIT_ROUNDING,
) -> int:
    """The departure of habit: the target minus a round allowance for the trip.

    The allowance is the believed (before any experience: free-flow) time plus ``extra``,
    rounded up to ``rounding`` minutes: a 30- or 34-minute drive becomes "forty minutes", so
    commuters to 8:00 leave at 7:20, as the paper's LLM agents did on their first Monday
    ("around 7:20, allowing approximately 40 minutes").

    Args:
        target: The desired arrival minute.
        minutes: The believed travel time.
        extra: Minutes added before rounding.
        rounding: The allowance's unit.
    """
    if rounding < 1:
        raise ValueError(f"rounding must be >= 1 minute, got {rounding}")
    allowance = math.floor((minutes + extra) / rounding + 0.5) * rounding
    return round(target - allowance)


EARLY_BANDS = (5.0, 10.0, 15.0, 20.0, 25.0)
"""Personal indifference bands on the early side (minutes), one per traveller (:func:`early_band`)."""


def early_band(name: str) -> float:
    """A traveller's tolerance of arriving early: a personal trait, the same every day.

    Mahmassani and Chang (1986) found the indifference band to differ across commuters; here
    each traveller's is one of :data:`EARLY_BANDS`, chosen by its name (a stable hash), so it
    does not change from day to day or run to run.
    """
    return EARLY_BANDS[zlib.crc32(name.encode("utf-8")) % len(EARLY_BANDS)]


EARLY_ADJUSTMENT = 0.25
"""Share of the way toward the optimum an early commuter moves its departure (caution)."""


def adjusted_departure(
    previous: float,
    arrival: float,
    target: float,
    optimum: float,
    early_band: float = EARLY_BAND_MINUTES,
) -> int:
    """Tomorrow's departure from yesterday's, with inertia (Mahmassani and Chang 1986).

    Inside the indifference band the traveller keeps ``previous``. Late beyond it, it leaves at
    least its lateness earlier (and no later than ``optimum``); early beyond it, it moves only
    :data:`EARLY_ADJUSTMENT` of the way toward a later ``optimum`` (a lost minute at work costs
    less than a late one). The band is asymmetric, as Mahmassani and Chang observed: commuters
    tolerate arriving early far more than arriving late.

    Args:
        previous: Yesterday's departure minute.
        arrival: Yesterday's arrival minute.
        target: The desired arrival minute.
        optimum: Today's cost-minimising departure (:func:`best_departure`).
        early_band: The traveller's indifference band on the early side (:func:`early_band`).
    """
    if within_indifference_band(arrival, target, early_band):
        return round(previous)
    if arrival > target:
        return round(min(optimum, previous - (arrival - target)))
    return round(previous + EARLY_ADJUSTMENT * max(0.0, optimum - previous))


def worth_switching(
    current: float,
    alternative: float,
    band: float = SWITCH_BAND,
    minimum: float = SWITCH_BAND_MINUTES,
) -> bool:
    """Switch only when the alternative saves more than ``max(minimum, band * current)``."""
    return current - alternative > max(minimum, band * current)


# ----------------------------------------------------------------------------- route lessons
_LINK_NAME = re.compile(r"\b(?:St|Ave|Metro)_\d+(?:_link_\d+)?\b")
_QUEUE_LESSON = re.compile(
    r"^Day (?P<day>\d+), (?P<time>\d\d:\d\d) at (?P<node>\S+): queues of ~(?P<wait>\d+) min on "
    r"\[(?P<links>[^\]]*)\] toward (?P<destination>.+)\.$"
)
_WINDOW = re.compile(r"from (?P<start>\d\d:\d\d) to (?P<end>\d\d:\d\d)")


def queue_lesson_text(
    day: int, now: int, node: str, wait: float, links: Sequence[str], destination: str
) -> str:
    """The reflection a driver writes on meeting queues ahead of ``node``."""
    return (
        f"Day {day}, {format_hhmm(now)} at {node}: queues of ~{wait:.0f} min on "
        f"[{', '.join(links)}] toward {destination}."
    )


@dataclass(frozen=True)
class LinkWait:
    """Expected extra minutes on one directed link around a minute of the day."""

    link: int
    minutes: float
    around: int | None = None
    """Minute of the day it applies around (``None``: all day)."""


def _lesson_waits(index: NetworkIndex, text: str, today: int) -> list[LinkWait] | None:
    match = _QUEUE_LESSON.match(text)
    if match is None:
        return None
    names = [n.strip() for n in match["links"].split(",") if n.strip()]
    try:
        links = validate_path(
            index, match["node"], match["destination"], names, "drive"
        )
    except PathError:
        return []
    if not links:
        return []
    age = max(0, today - int(match["day"]))
    share = float(match["wait"]) / len(links) * (1.0 - SMOOTHING_WEIGHT) ** age
    around = parse_hhmm(match["time"])
    return [LinkWait(link.index, share, around) for link in links]


def _announced_waits(index: NetworkIndex, text: str) -> list[LinkWait]:
    if "road works" not in text.lower() and "closed" not in text.lower():
        return []
    window = _WINDOW.search(text)
    around = (
        None
        if window is None
        else (parse_hhmm(window["start"]) + parse_hhmm(window["end"])) // 2
    )
    return [
        LinkWait(link.index, ANNOUNCED_WORKS_MINUTES, around)
        for name in _LINK_NAME.findall(text)
        for link in index.by_name.get(name, [])
        if link.kind == "road"
    ]


def _tip_waits(index: NetworkIndex, text: str, routes: RouteTable) -> list[LinkWait]:
    trip = next(
        (
            parse_trip_memory(part.strip() + ".")
            for part in re.split(r"[:.]\s+(?=Day \d+: trip)", text)[1:]
        ),
        None,
    )
    if trip is None or trip.mode != "drive" or trip.delay <= 0:
        return []
    path = routes.get((trip.origin, trip.destination, "drive"))
    if not path:
        return []
    share = trip.delay / len(path)
    return [LinkWait(link.index, share, trip.departure) for link in path]


RouteTable = Mapping[tuple[str, str, str], Sequence[DirectedLink]]


def learnt_link_waits(
    index: NetworkIndex,
    today: int,
    reflections: Iterable[str] = (),
    announcements: Iterable[str] = (),
    chats: Iterable[str] = (),
    routes: RouteTable | None = None,
) -> list[LinkWait]:
    """Expected extra minutes on links from what the traveller recalls, reads and hears.

    Queue lessons (:func:`queue_lesson_text`) spread their wait over the links they name,
    discounted by ``(1 - w)`` per day of age; a road-works announcement adds
    :data:`ANNOUNCED_WORKS_MINUTES` on the links it names; a chat that shares a delayed drive
    spreads its delay over the free-flow path of that trip (``routes``).
    """
    waits: list[LinkWait] = []
    for text in reflections:
        waits.extend(_lesson_waits(index, text, today) or [])
    for text in announcements:
        waits.extend(_announced_waits(index, text))
    if routes is not None:
        for text in chats:
            waits.extend(_tip_waits(index, text, routes))
    return waits


def link_costs(
    waits: Iterable[LinkWait], around: int, window: int = LESSON_WINDOW_MINUTES
) -> dict[int, float]:
    """Extra minutes by link index for a trip within ``window`` minutes of ``around``."""
    costs: dict[int, float] = {}
    for wait in waits:
        if wait.around is not None and abs(wait.around - around) > window:
            continue
        costs[wait.link] = costs.get(wait.link, 0.0) + wait.minutes
    return costs


def learnt_path(
    index: NetworkIndex,
    origin: str,
    destination: str,
    costs: Mapping[int, float],
) -> list[DirectedLink] | None:
    """A drive path around the learnt waits, if worth switching from the free-flow shortest.

    Returns:
        The new path, or ``None`` to keep the habitual (free-flow shortest) one.
    """
    if not costs:
        return None
    router = Router(index)
    try:
        habitual = router.path(origin, destination, "drive")
        router.set_extra_costs(costs)
        found = router.path(origin, destination, "drive")
    except PathError:
        return None

    def expected(path: Sequence[DirectedLink]) -> float:
        return sum(link.free_time + costs.get(link.index, 0.0) for link in path)

    if [link.index for link in found] == [link.index for link in habitual]:
        return None
    return found if worth_switching(expected(habitual), expected(found)) else None
