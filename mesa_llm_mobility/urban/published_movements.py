"""Reading a GATSim simulation's movements into trips, positions, link states and activities.

The GATSim prototype (Liu et al., https://github.com/qiliuchn/gatsim, Apache-2.0) stores a run as
``gatsim/storage/<run>/meta.json`` (start date, minutes per step, persona names, the last step)
and ``movements/<k>.json``, one file per minute: every persona's *mobility event* (``status``
``staying`` / ``waiting`` / ``driving`` / ``walking`` / ``riding``, ``place`` a facility, node or
link, ``next_node`` on a link, ``start_time`` when the state began, a description) and the queues.
File ``k`` is saved after the prototype has simulated minute ``k - 1`` (its ``meta.curr_time`` is
minute ``k``); a state's ``start_time`` is the minute it began, so times here come from
``start_time`` and are exact even where a file is missing.

:func:`read_run_meta` and :func:`read_movements` check every file (one-line
:class:`PublishedDataError` naming the file, the persona and the problem: unparsable JSON, a
file whose clock is not its minute, an unknown status or place, a missing persona) and merge each
persona's consecutive identical events into :class:`Segment` s. From the segments:

- :func:`trips_from_segments`: one row per trip (leaving a facility to reaching one), in the
  columns of the urban model's trips table; :func:`link_traversals` the time each trip reached
  the tail and the head of every link it took.
- :func:`positions_from_segments`: one row per change of state (our positions table, with the
  prototype's own status kept).
- :func:`link_states_from_movements`: per minute and directed link, queue, vehicles or riders on
  it, entries and exits and the wait indicator (our link states table), rows with any traffic only.
- :func:`activities_from_segments`: one row per stay at a facility.

Missing minutes are listed (:attr:`Movements.missing`) and never interpolated.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.urban import traffic_records
from mesa_llm_mobility.urban import trips as trip_records
from mesa_llm_mobility.urban.congestion import link_wait_indicator
from mesa_llm_mobility.urban.routing import DirectedLink, NetworkIndex
from mesa_llm_mobility.user_files import UserFileError, read_text

KNOWN_STATUSES = ("staying", "waiting", "driving", "walking", "riding")
"""The statuses of the prototype's mobility events."""
MOVING = {"driving": "drive", "walking": "walk", "riding": "ride"}
"""Moving statuses and the way a link is taken."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_MINUTE_FILE = re.compile(r"^(\d+)\.json$")


class PublishedDataError(UserFileError):
    """A GATSim storage file cannot be used; the message starts with its path."""


@dataclass(frozen=True)
class RunMeta:
    """A GATSim run's ``meta.json``.

    Attributes:
        folder: The run's storage folder.
        name: ``simulation_name``.
        start: ``start_date``.
        step: The last step; movement files run from 0 to ``step``.
        personas: ``persona_names`` in file order.
    """

    folder: Path
    name: str
    start: dt.datetime
    step: int
    personas: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Segment:
    """One persona's unchanged state over consecutive movement files.

    Attributes:
        start: Minute the state began (its ``start_time``, minutes after the run's start).
        status: The prototype's status.
        place: Facility, node or link.
        next_node: The node a traveller on a link heads for, else ``None``.
        description: The event's description.
        last_file: The last movement file it was seen in.
    """

    start: int
    status: str
    place: str
    next_node: str | None
    description: str
    last_file: int


@dataclass
class Movements:
    """Every persona's segments and the files read.

    Attributes:
        meta: The run's meta data.
        segments: Segments by persona, in time order.
        missing: Minutes (file numbers) without a movement file.
        files: Movement files read.
    """

    meta: RunMeta
    segments: dict[str, list[Segment]]
    missing: list[int] = field(default_factory=list)
    files: int = 0


def load_json(path: Path) -> Any:
    """A JSON file of the prototype's storage (:class:`PublishedDataError` naming it if not)."""
    text = read_text(path, "file", PublishedDataError)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise PublishedDataError(
            f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        ) from None


def parse_time(text: Any, where: str) -> dt.datetime:
    """A ``"YYYY-MM-DD HH:MM:SS"`` time of the prototype's files.

    Raises:
        PublishedDataError: ``"<where>: ..."`` for anything else.
    """
    if not isinstance(text, str):
        raise PublishedDataError(
            f"{where}: expected a time 'YYYY-MM-DD HH:MM:SS', got {text!r}"
        )
    try:
        return dt.datetime.strptime(text, TIME_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        raise PublishedDataError(
            f"{where}: {text!r} is not a time 'YYYY-MM-DD HH:MM:SS'"
        ) from None


def minutes_since(start: dt.datetime, when: dt.datetime) -> int:
    """Whole minutes from ``start`` to ``when``."""
    return int((when - start).total_seconds() // 60)


def read_run_meta(folder: str | Path) -> RunMeta:
    """Read and check ``<folder>/meta.json`` of a GATSim run.

    Raises:
        PublishedDataError: If the folder has no ``meta.json`` and ``movements/`` (not a GATSim
            run), or a field is missing or malformed.
    """
    folder = Path(folder)
    path = folder / "meta.json"
    if not path.is_file() or not (folder / "movements").is_dir():
        raise PublishedDataError(
            f"{folder}: not a GATSim run (expected meta.json and a movements folder)"
        )
    data = load_json(path)
    if not isinstance(data, dict):
        raise PublishedDataError(f"{path}: expected a JSON object")
    for key in ("simulation_name", "start_date", "step", "persona_names"):
        if key not in data:
            raise PublishedDataError(f"{path}: missing field {key!r}")
    if data.get("minutes_per_step", 1) != 1:
        raise PublishedDataError(
            f"{path}: minutes_per_step is {data['minutes_per_step']!r}; only 1 is supported"
        )
    step, names = data["step"], data["persona_names"]
    if not isinstance(step, int) or step < 0:
        raise PublishedDataError(
            f"{path}: field 'step' must be an integer >= 0, got {step!r}"
        )
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) for n in names)
    ):
        raise PublishedDataError(
            f"{path}: field 'persona_names' must be a list of names"
        )
    return RunMeta(
        folder,
        str(data["simulation_name"]),
        parse_time(data["start_date"], f"{path}: field 'start_date'"),
        step,
        tuple(names),
    )


def _event_fields(
    path: Path, name: str, event: Any, places: Collection[str]
) -> tuple[str, str, str | None, str, str]:
    where = f"{path}: persona {name!r}"
    if not isinstance(event, dict):
        raise PublishedDataError(f"{where}: expected a mobility event object")
    for key in ("status", "place", "start_time"):
        if key not in event:
            raise PublishedDataError(f"{where}: missing field {key!r}")
    status, place = event["status"], event["place"]
    if status not in KNOWN_STATUSES:
        raise PublishedDataError(
            f"{where}: unknown status {status!r} (known: {', '.join(KNOWN_STATUSES)})"
        )
    if place not in places:
        raise PublishedDataError(f"{where}: unknown place {place!r}")
    next_node = event.get("next_node")
    if next_node is not None and next_node not in places:
        raise PublishedDataError(f"{where}: unknown next_node {next_node!r}")
    return (
        status,
        place,
        next_node,
        event["start_time"],
        str(event.get("description", "")),
    )


def movement_minutes(folder: Path) -> dict[int, Path]:
    """The movement files of a run by minute (files not named ``<minute>.json`` are ignored)."""
    found = {}
    for path in (folder / "movements").iterdir():
        match = _MINUTE_FILE.match(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def read_movements(
    meta: RunMeta,
    places: Collection[str],
    *,
    allow_missing: bool = False,
) -> Movements:
    """Read every movement file of a run into segments.

    Args:
        meta: The run's meta data (:func:`read_run_meta`).
        places: Every facility, node and link name of the town.
        allow_missing: Read a run with missing minutes (listed in :attr:`Movements.missing`);
            by default they are an error.

    Returns:
        The segments of every persona.

    Raises:
        PublishedDataError: Naming the file (and persona) of the first problem, or the missing
            minutes.
    """
    files = movement_minutes(meta.folder)
    missing = [k for k in range(meta.step + 1) if k not in files]
    if missing and not allow_missing:
        raise PublishedDataError(
            f"{meta.folder / 'movements'}: {len(missing)} of {meta.step + 1} minutes missing "
            f"({describe_minutes(missing)}); pass allow_missing to read the rest"
        )
    place_set = set(places)
    segments: dict[str, list[Segment]] = {name: [] for name in meta.personas}
    starts: dict[str, dt.datetime] = {}
    for minute in range(meta.step + 1):
        path = files.get(minute)
        if path is None:
            continue
        data = load_json(path)
        if not isinstance(data, dict) or not isinstance(
            data.get("mobility_events"), dict
        ):
            raise PublishedDataError(
                f"{path}: expected an object with 'mobility_events'"
            )
        clock = parse_time(
            (data.get("meta") or {}).get("curr_time"), f"{path}: field 'meta.curr_time'"
        )
        if minutes_since(meta.start, clock) != minute:
            raise PublishedDataError(
                f"{path}: meta.curr_time {clock:%Y-%m-%d %H:%M} is not minute {minute} of a run "
                f"starting {meta.start:%Y-%m-%d %H:%M}"
            )
        events = data["mobility_events"]
        for name in meta.personas:
            if name not in events:
                raise PublishedDataError(f"{path}: persona {name!r} missing")
            status, place, next_node, start_text, description = _event_fields(
                path, name, events[name], place_set
            )
            start = minutes_since(
                meta.start,
                starts.get(start_text)
                or starts.setdefault(
                    start_text,
                    parse_time(
                        start_text, f"{path}: persona {name!r}: field 'start_time'"
                    ),
                ),
            )
            if start > minute:
                raise PublishedDataError(
                    f"{path}: persona {name!r}: start_time {start_text} is after the file's "
                    "minute"
                )
            own = segments[name]
            last = own[-1] if own else None
            if last is not None and (
                last.start,
                last.status,
                last.place,
                last.next_node,
            ) == (
                start,
                status,
                place,
                next_node,
            ):
                own[-1] = Segment(
                    start, status, place, next_node, last.description, minute
                )
                continue
            if last is not None and start < last.start:
                raise PublishedDataError(
                    f"{path}: persona {name!r}: start_time {start_text} is before the previous "
                    f"state's (minute {last.start})"
                )
            own.append(Segment(start, status, place, next_node, description, minute))
    return Movements(meta, segments, missing, len(files))


def describe_minutes(minutes: Sequence[int]) -> str:
    """``"431-433, 900"``: minutes as ranges."""
    parts: list[str] = []
    run: list[int] = []
    for minute in sorted(minutes):
        if run and minute == run[-1] + 1:
            run.append(minute)
            continue
        if run:
            parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [minute]
    if run:
        parts.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(parts)


# ----------------------------------------------------------------------------- trips
@dataclass
class _Trip:
    agent: str
    origin: str
    departure: int
    links: list[tuple[str, str | None, str]] = field(default_factory=list)
    """``(link, next_node, how)``: how ``drive`` / ``walk`` / ``ride``, ``wait`` until moving."""
    times: list[list[float]] = field(default_factory=list)
    """Per link: ``[reached its tail, entered it, reached its head]`` (NaN while unknown)."""
    destination: str | None = None
    arrival: float = math.nan
    admitted: float = math.nan


@dataclass
class TripWalk:
    """The trips of one persona and what did not make a trip."""

    trips: list[_Trip] = field(default_factory=list)
    teleports: list[tuple[int, str, str]] = field(default_factory=list)
    """``(minute, from, to)``: moves between facilities without a trip on the network."""


def _on_link(segment: Segment) -> bool:
    return segment.status in MOVING or (
        segment.status == "waiting" and segment.next_node is not None
    )


def _track_link(trip: _Trip, segment: Segment, reached_tail: float) -> None:
    how = MOVING.get(segment.status, "wait")
    key = (segment.place, segment.next_node)
    if trip.links and trip.links[-1][:2] == key and math.isnan(trip.times[-1][2]):
        name, head, was = trip.links[-1]
        if was == "wait" and how != "wait":
            trip.links[-1] = (name, head, how)
            trip.times[-1][1] = segment.start
        return
    trip.links.append((segment.place, segment.next_node, how))
    entered = math.nan if how == "wait" else segment.start
    trip.times.append([reached_tail, entered, math.nan])


def _end_last_link(trip: _Trip, minute: float) -> None:
    if trip.times and math.isnan(trip.times[-1][2]):
        trip.times[-1][2] = minute


def walk_trips(
    segments: Sequence[Segment], agent: str, facilities: Collection[str]
) -> TripWalk:
    """The trips in one persona's segments.

    A trip starts with the first state off a facility after one at a facility (its departure is
    that state's start) and ends at the next facility (arrival: reaching it; admitted: starting to
    stay there, after a queue at the door if any). A trip still on the network at the end of the
    data has no arrival.
    """
    walk = TripWalk()
    current: _Trip | None = None
    at_door: _Trip | None = None
    previous: Segment | None = None
    reached_tail = math.nan
    for segment in segments:
        at_facility = segment.place in facilities
        if at_door is not None:
            if (
                at_facility
                and segment.place == at_door.destination
                and segment.status == "staying"
            ):
                at_door.admitted = segment.start
                walk.trips.append(at_door)
                at_door, previous = None, segment
                continue
            walk.trips.append(at_door)
            at_door = None
        if current is None and previous is not None and previous.place in facilities:
            if not at_facility:
                current = _Trip(agent, previous.place, segment.start)
                reached_tail = segment.start
            elif segment.place != previous.place:
                walk.teleports.append((segment.start, previous.place, segment.place))
        if current is not None:
            if at_facility:
                _end_last_link(current, segment.start)
                current.destination, current.arrival = segment.place, segment.start
                if segment.status == "staying":
                    current.admitted = segment.start
                    walk.trips.append(current)
                else:
                    at_door = current
                current = None
            elif _on_link(segment):
                _track_link(current, segment, reached_tail)
            else:  # at a node: the link taken ends here
                _end_last_link(current, segment.start)
                reached_tail = segment.start
        previous = segment
    for trip in (at_door, current):
        if trip is not None:
            walk.trips.append(trip)
    return walk


# ----------------------------------------------------------------------------- tables
MINUTES_PER_DAY = 24 * 60


def _mode(trip: _Trip) -> str:
    ways = {how for _, _, how in trip.links}
    if "drive" in ways:
        return "drive"
    if "ride" in ways:
        return "transit"
    if "walk" in ways:
        return "walk"
    return "none"


def uncongested_minutes(
    trip_links: Sequence[tuple[str, str | None, str]], index: NetworkIndex
) -> float:
    """The prototype's own travel time of a path without queues or waits for trains.

    The prototype spends one minute at every node it reaches (the step after a link ends) and
    one entering the destination facility, so a path of ``n`` links takes its link times
    (walking: ``walking_factor`` times the road time) plus ``n + 1`` minutes.
    """
    factor = index.scenario.walking_factor
    total = 0.0
    for name, head, how in trip_links:
        link = _link_index(index, name, head)
        if link is None:
            return math.nan
        total += link.free_time * (factor if how == "walk" else 1.0)
    return total + len(trip_links) + 1


def _link_index(
    index: NetworkIndex, name: str, head: str | None
) -> DirectedLink | None:
    for link in index.by_name.get(name, []):
        if link.head == head:
            return link
    return None


TRIP_COLUMNS = (*trip_records.TRIP_COLUMNS, "late", "day", "spans_gap")
"""Columns of :func:`trips_frame` (the urban model's trips table plus ``spans_gap``)."""
TRAVERSAL_COLUMNS = (
    "trip_id",
    "agent",
    "link",
    "direction",
    "how",
    "tail",
    "entered",
    "head",
)
"""Columns of :func:`link_traversals`."""


def trips_frame(
    walks: Mapping[str, TripWalk],
    index: NetworkIndex,
    targets: Mapping[str, tuple[str, int, int]],
    missing: Collection[int] = (),
) -> pd.DataFrame:
    """One row per trip, in the urban model's trips columns.

    ``planned_departure`` equals ``departure``: the prototype leaves exactly at the departure
    time of the activity in its plan. ``planned_arrival`` is the work start on the commute, the
    day's first trip to the persona's work facility that leaves before the work end
    (``targets``: persona -> ``(work facility, start, end)`` in minutes of the day); ``late``
    counts from admission at the door, as the urban model does. ``free_flow_time`` is the
    prototype's own uncongested time (:func:`uncongested_minutes`). ``spans_gap`` marks trips
    under way across a missing movement file.

    Args:
        walks: Each persona's trips (:func:`walk_trips`).
        index: The town's network index.
        targets: Work facility and hours by persona.
        missing: Missing minutes (file numbers).

    Returns:
        The trips, ordered by persona (file order) and departure.
    """
    rows = []
    gaps = sorted(missing)
    for agent, walk in walks.items():
        counts: dict[int, int] = {}
        commuted: set[int] = set()
        for trip in walk.trips:
            day = trip.departure // MINUTES_PER_DAY + 1
            k = counts.get(day, 0)
            counts[day] = k + 1
            target = math.nan
            work = targets.get(agent)
            if work is not None and trip.destination == work[0] and day not in commuted:
                clock = trip.departure - (day - 1) * MINUTES_PER_DAY
                if clock < work[2]:
                    target = (day - 1) * MINUTES_PER_DAY + work[1]
                    commuted.add(day)
            end = trip.arrival if not math.isnan(trip.arrival) else math.inf
            state = (
                "staying"
                if not math.isnan(trip.admitted)
                else "facility_queue"
                if not math.isnan(trip.arrival)
                else "en_route"
            )
            free = uncongested_minutes(trip.links, index)
            travel = trip.arrival - trip.departure
            rows.append(
                (
                    f"{agent}|d{day}|{k}",
                    agent,
                    trip.origin,
                    trip.destination,
                    _mode(trip),
                    tuple(name for name, _, _ in trip.links),
                    float(trip.departure),
                    float(trip.departure),
                    target,
                    trip.arrival,
                    trip.admitted,
                    travel,
                    free,
                    travel - free,
                    state,
                    max(0.0, trip.admitted - target),
                    day,
                    any(trip.departure <= m - 1 < end for m in gaps),
                )
            )
    frame = pd.DataFrame(rows, columns=list(TRIP_COLUMNS))
    return frame


def link_traversals(walks: Mapping[str, TripWalk], index: NetworkIndex) -> pd.DataFrame:
    """Every link every trip took: when it reached the link's tail, entered it, reached its head.

    ``how`` is ``drive``, ``walk`` or ``ride`` (``wait`` for a traveller still queued when the
    data ends); ``direction`` is the urban model's (0: the link's ``from -> to`` or the line's
    order).
    """
    rows = []
    for agent, walk in walks.items():
        counts: dict[int, int] = {}
        for trip in walk.trips:
            day = trip.departure // MINUTES_PER_DAY + 1
            k = counts.get(day, 0)
            counts[day] = k + 1
            for (name, head, how), (tail, entered, reached) in zip(
                trip.links, trip.times, strict=True
            ):
                link = _link_index(index, name, head)
                rows.append(
                    (
                        f"{agent}|d{day}|{k}",
                        agent,
                        name,
                        -1 if link is None else link.direction,
                        how,
                        tail,
                        entered,
                        reached,
                    )
                )
    return pd.DataFrame(rows, columns=list(TRAVERSAL_COLUMNS))


def shown_state(segment: Segment, facilities: Collection[str]) -> str:
    """The urban model's state for a prototype status (``waiting`` depends on the place)."""
    if segment.status == "waiting":
        if segment.place in facilities:
            return "waiting_at_door"
        return "waiting_at_node"
    return segment.status


def _tail(index: NetworkIndex, segment: Segment) -> str:
    link = _link_index(index, segment.place, segment.next_node)
    return segment.place if link is None else link.tail


POSITION_COLUMNS = (
    "time",
    "agent",
    "state",
    "place",
    "status",
    "gatsim_place",
    "next_node",
    "day",
)
"""Columns of :func:`positions_frame`."""


def positions_frame(
    segments: Mapping[str, Sequence[Segment]], index: NetworkIndex
) -> pd.DataFrame:
    """One row per change of a persona's state (the urban model's positions table).

    ``state`` is the urban model's (``staying``, ``waiting_at_door``, ``waiting_at_node``,
    ``driving``, ``walking``, ``riding``) and ``place`` its place: a traveller queued for a link
    is at the link's tail node, as in the urban model. The prototype's own ``status``, place
    (``gatsim_place``) and ``next_node`` are kept.
    """
    facilities = set(index.scenario.facilities)
    rows = []
    for agent, own in segments.items():
        for segment in own:
            queued = segment.status == "waiting" and segment.next_node is not None
            place = _tail(index, segment) if queued else segment.place
            rows.append(
                (
                    segment.start,
                    agent,
                    shown_state(segment, facilities),
                    place,
                    segment.status,
                    segment.place,
                    segment.next_node,
                    segment.start // MINUTES_PER_DAY + 1,
                )
            )
    frame = pd.DataFrame(rows, columns=list(POSITION_COLUMNS))
    return frame.sort_values(["time", "agent"], kind="stable").reset_index(drop=True)


LINK_STATE_COLUMNS = tuple(traffic_records.LINK_STATE_COLUMNS)
"""Columns of :func:`link_states_frame` (the urban model's link states table)."""


def link_states_frame(
    segments: Mapping[str, Sequence[Segment]],
    traversals: pd.DataFrame,
    index: NetworkIndex,
    last_minute: int,
) -> pd.DataFrame:
    """Per minute and directed link with any traffic: the urban model's link states.

    A state that began at minute ``s`` and was last seen in file ``f`` counts at the minutes
    ``s .. f - 1`` (file ``k`` holds the state after minute ``k - 1``). ``queue``: waiting to
    enter a road link or to board at the stop; ``traversing``: drivers or riders on it (walkers
    do not take road capacity); ``entered`` / ``exited``: traversals starting and ending that
    minute; ``wait_indicator``: the urban model's wait indicator from the queue
    (:func:`~mesa_llm_mobility.urban.congestion.link_wait_indicator`). Minutes and links without
    traffic have no row (:func:`dense_link_states` adds them).
    """
    counts: dict[tuple[int, int], list[int]] = {}
    for own in segments.values():
        for segment in own:
            if segment.next_node is None or segment.status == "walking":
                continue
            link = _link_index(index, segment.place, segment.next_node)
            if link is None:
                continue
            column = 0 if segment.status == "waiting" else 1
            for minute in range(segment.start, min(segment.last_file, last_minute + 1)):
                counts.setdefault((minute, link.index), [0, 0, 0, 0])[column] += 1
    moving = traversals[traversals["how"].isin(["drive", "ride"])]
    for column, field_name in ((2, "entered"), (3, "head")):
        for row in moving.itertuples(index=False):
            minute = getattr(row, field_name)
            link = index.by_name_tail.get((row.link, _tail_of(index, row)))
            if link is None or math.isnan(minute):
                continue
            counts.setdefault((int(minute), link.index), [0, 0, 0, 0])[column] += 1
    rows = []
    for (minute, position), (queue, traversing, entered, exited) in sorted(
        counts.items()
    ):
        link = index.links[position]
        rows.append(
            (
                float(minute),
                link.name,
                link.direction,
                link.kind,
                queue,
                traversing,
                entered,
                exited,
                _wait(index, link, queue),
            )
        )
    return pd.DataFrame(rows, columns=list(LINK_STATE_COLUMNS))


def _tail_of(index: NetworkIndex, row: Any) -> str:
    for link in index.by_name.get(row.link, []):
        if link.direction == row.direction:
            return link.tail
    return ""


def _wait(index: NetworkIndex, link: DirectedLink, queue: int) -> float:
    if link.kind == "metro" and link.line is not None:
        line = index.scenario.metro_lines[link.line]
        return link_wait_indicator(queue, line.train_capacity, line.headway)
    road = index.scenario.road_links[link.name]
    return link_wait_indicator(queue, road.capacity, road.free_time)


def dense_link_states(
    sparse: pd.DataFrame, index: NetworkIndex, minutes: Iterable[float]
) -> pd.DataFrame:
    """Every directed link at every given minute (zeros where :func:`link_states_frame` had none)."""
    grid = pd.MultiIndex.from_product(
        [sorted(set(minutes)), range(len(index.links))], names=["time", "position"]
    ).to_frame(index=False)
    grid["link"] = [index.links[p].name for p in grid["position"]]
    grid["direction"] = [index.links[p].direction for p in grid["position"]]
    grid["kind"] = [index.links[p].kind for p in grid["position"]]
    merged = grid.merge(sparse, on=["time", "link", "direction", "kind"], how="left")
    for column in ("queue", "traversing", "entered", "exited"):
        merged[column] = merged[column].fillna(0).astype(int)
    merged["wait_indicator"] = merged["wait_indicator"].fillna(0.0)
    return merged[list(LINK_STATE_COLUMNS)]


ACTIVITY_COLUMNS = (
    "agent_id",
    "day",
    "facility",
    "arrived",
    "admitted",
    "left",
    "minutes",
)
"""Columns of :func:`activities_frame`."""


def activities_frame(
    segments: Mapping[str, Sequence[Segment]],
    walks: Mapping[str, TripWalk],
    facilities: Collection[str],
) -> pd.DataFrame:
    """One row per stay at a facility: arrived (at the door), admitted, left (NaN: still there).

    The first stay of each persona starts where its first state is, at that state's start.
    """
    rows = []
    for agent, own in segments.items():
        trips = walks[agent].trips
        if not own or own[0].place not in facilities:
            continue
        place, arrived, admitted = (
            own[0].place,
            float(own[0].start),
            float(own[0].start),
        )
        for trip in trips:
            rows.append(_stay(agent, place, arrived, admitted, float(trip.departure)))
            if trip.destination is None:
                place = None
                break
            place, arrived, admitted = trip.destination, trip.arrival, trip.admitted
        if place is not None:
            rows.append(_stay(agent, place, arrived, admitted, math.nan))
    return pd.DataFrame(rows, columns=list(ACTIVITY_COLUMNS))


def _stay(
    agent: str, place: str, arrived: float, admitted: float, left: float
) -> tuple:
    return (
        agent,
        int(arrived // MINUTES_PER_DAY + 1),
        place,
        arrived,
        admitted,
        left,
        left - arrived,
    )
