"""The metro service: timetables of the metro lines, and the trains that carry riders in the engine.

Trains of a line leave the first stop of each direction every ``headway`` minutes from
``service_start`` while before ``service_end``, and reach each later stop ``travel_time + dwell``
later (:func:`train_departure`); both directions run the same timetable. :func:`metro_timetable`,
:func:`next_train` and :func:`transit_journey` answer timetable questions without running the
engine; :class:`MetroService` is the part of the
:class:`~mesa_llm_mobility.urban.traffic.TrafficEngine` that queues riders at stops, boards them
onto the trains that leave in each step (up to the train's free capacity) and lets them off at
their stop.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence

import pandas as pd

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.congestion import link_wait_indicator
from mesa_llm_mobility.urban.routing import DirectedLink, NetworkIndex, direction_stops
from mesa_llm_mobility.urban.scenario import MetroLine
from mesa_llm_mobility.urban.trips import TravelState, Trip

_EPS = 1e-9

METRO_LOAD_COLUMNS = [
    "line",
    "direction",
    "train",
    "link",
    "departure",
    "boarded",
    "alighted",
    "load",
]
"""Columns of :meth:`MetroService.loads_frame`."""


class MetroService:
    """Stop queues, trains and riders of a scenario's metro lines, stepped by the engine.

    A train is keyed ``(line, direction, day, n)``. In each step ``(t - dt, t]`` the engine calls
    :meth:`alight` (trains arriving at a stop let off the riders bound for it) and, after
    travellers have reached their next link, :meth:`board` (trains leaving a stop take riders
    queued there in FIFO order, up to the train's free capacity).

    Args:
        index: The network index (its metro links).
        dt: The engine's step length in minutes.
    """

    def __init__(self, index: NetworkIndex, dt: float) -> None:
        lines = index.scenario.metro_lines
        self.lines = lines
        self.dt = dt
        self.links = [link for link in index.links if link.kind == "metro"]
        """The metro links, in network order."""
        self.capacity: dict[int, int] = {
            link.index: lines[link.line].train_capacity for link in self.links
        }
        """Current train capacity by metro link index (capacity events change it)."""
        self.stop_queues: dict[tuple[str, int, int], deque[Trip]] = {}
        self.trains: dict[tuple, list[Trip]] = {}
        self._alighted: dict[tuple, int] = {}
        self._load_rows: list[tuple] = []
        self._directions = {
            (line.name, d): (direction_stops(line, d), line)
            for line in lines.values()
            for d in (0, 1)
        }
        self._links_by_stop = {
            (link.line, link.direction, link.stop): link for link in self.links
        }

    def queue_length(self, link: DirectedLink) -> int:
        """Riders waiting at the stop where ``link`` starts, for its line and direction."""
        return len(self.stop_queues.get((link.line, link.direction, link.stop), ()))

    def link_wait(self, link: DirectedLink) -> float:
        """Current wait indicator (minutes) of a metro link (see :mod:`.congestion`)."""
        headway = self.lines[link.line].headway
        return link_wait_indicator(
            self.queue_length(link), self.capacity[link.index], headway
        )

    def riders_waiting(self) -> int:
        """Riders queued at all stops."""
        return sum(len(queue) for queue in self.stop_queues.values())

    def queues_by_link(self) -> list[tuple[DirectedLink, deque[Trip]]]:
        """Each stop queue that holds riders, with the metro link its riders queue for."""
        return [
            (self._links_by_stop[key], queue)
            for key, queue in self.stop_queues.items()
            if queue
        ]

    def riders_aboard(self) -> int:
        """Riders on all trains."""
        return sum(len(riders) for riders in self.trains.values())

    def riders_by_link(self, t: float) -> dict[int, int]:
        """Riders aboard by the index of the metro link each train is on at ``t``."""
        on_link: dict[int, int] = {}
        for key, riders in self.trains.items():
            link = self.train_link(key, t)
            on_link[link.index] = on_link.get(link.index, 0) + len(riders)
        return on_link

    def join_queue(self, trip: Trip, link: DirectedLink) -> None:
        """Queue a rider at ``link``'s stop, riding on over the next links of the same run.

        The links of ``trip.remaining`` that continue ``link``'s line and direction are taken
        into the trip's path now: the rider stays aboard over them and alights at the last one's
        head.
        """
        run = 1
        while (
            trip.remaining
            and trip.remaining[0].kind == "metro"
            and trip.remaining[0].line == link.line
            and trip.remaining[0].direction == link.direction
        ):
            extra = trip.remaining.popleft()
            trip.links.append(extra)
            trip.path.append(extra.name)
            run += 1
        trip.alight_stop = link.stop + run
        trip.state = TravelState.WAITING
        trip.link = link
        self.stop_queues.setdefault(
            (link.line, link.direction, link.stop), deque()
        ).append(trip)

    def alight(
        self, t: float, rank: int, next_seq: Callable[[], int]
    ) -> list[tuple[float, int, int, Trip, str]]:
        """Let off the riders of trains arriving at their stop in ``(t - dt, t]``.

        Args:
            t: The step's time.
            rank: Sort rank of metro arrivals among the step's arrivals at the same minute.
            next_seq: The engine's sequence counter (ties in arrival order).

        Returns:
            ``(arrival, rank, seq, trip, stop node)`` per rider let off.
        """
        done: list[tuple[float, int, int, Trip, str]] = []
        for (_, direction), (stops, line) in self._directions.items():
            for k in range(1, len(stops)):
                for key, when in self.train_events(
                    line, direction, k, arrival=True, t=t
                ):
                    riders = self.trains.get(key)
                    if not riders:
                        continue
                    stay = []
                    for trip in riders:
                        if trip.alight_stop == k:
                            trip.train = None
                            done.append((when, rank, next_seq(), trip, stops[k]))
                        else:
                            stay.append(trip)
                    if k < len(stops) - 1 and len(stay) < len(riders):
                        self._alighted[(key, k)] = len(riders) - len(stay)
                    if stay:
                        self.trains[key] = stay
                    else:
                        del self.trains[key]
        return done

    def board(self, t: float) -> list[Trip]:
        """Board queued riders onto the trains leaving each stop in ``(t - dt, t]``.

        Returns:
            The riders boarded, in order.
        """
        aboard: list[Trip] = []
        for (line_name, direction), (stops, line) in self._directions.items():
            for k in range(len(stops) - 1):
                link = self._links_by_stop[(line_name, direction, k)]
                queue = self.stop_queues.get((line_name, direction, k))
                for key, when in self.train_events(
                    line, direction, k, arrival=False, t=t
                ):
                    riders = self.trains.get(key, [])
                    alighted = self._alighted.pop((key, k), 0)
                    boarded = 0
                    room = self.capacity[link.index] - len(riders)
                    while queue and room > 0:
                        trip = queue.popleft()
                        trip.state = TravelState.RIDING
                        trip.train = key
                        riders.append(trip)
                        aboard.append(trip)
                        boarded += 1
                        room -= 1
                    if riders:
                        self.trains[key] = riders
                    self._load_rows.append(
                        (
                            line_name,
                            direction,
                            key[2:],
                            link.name,
                            when,
                            boarded,
                            alighted,
                            len(riders),
                        )
                    )
        return aboard

    def moved_riders(self, t: float) -> list[Trip]:
        """Riders of the trains that moved on to another link in ``(t - dt, t]``."""
        moved: list[Trip] = []
        for key, riders in self.trains.items():
            if self.train_link(key, t) is not self.train_link(key, t - self.dt):
                moved.extend(riders)
        return moved

    def train_events(
        self, line: MetroLine, direction: int, k: int, *, arrival: bool, t: float
    ) -> list[tuple[tuple, float]]:
        """Trains of ``line``/``direction`` arriving at / leaving stop ``k`` in ``(t - dt, t]``."""
        offset = train_departure(line, 0, 0, k) - (line.dwell if arrival else 0.0)
        n_max = (
            math.ceil((line.service_end - line.service_start) / line.headway - _EPS) - 1
        )
        lo, hi = t - self.dt, t
        found = []
        for day in range(
            math.floor((lo - offset) / MINUTES_PER_DAY) - 1,
            math.floor(hi / MINUTES_PER_DAY) + 1,
        ):
            base = day * MINUTES_PER_DAY + offset
            first = max(0, math.floor((lo - base) / line.headway + _EPS) + 1)
            last = min(n_max, math.floor((hi - base) / line.headway + _EPS))
            for n in range(first, last + 1):
                found.append(((line.name, direction, day, n), base + n * line.headway))
        return found

    def train_link(self, key: tuple, now: float) -> DirectedLink:
        """The metro link train ``key`` is on (or at whose start it dwells) at ``now``."""
        line_name, direction, day, n = key
        line = self.lines[line_name]
        start = train_departure(line, day, n, 0)
        k = math.floor((now - start) / (line.travel_time + line.dwell) + _EPS)
        k = min(max(k, 0), len(line.stops) - 2)
        return self._links_by_stop[(line_name, direction, k)]

    def loads_frame(self) -> pd.DataFrame:
        """Return one row per train departure from a stop.

        Columns: line, direction, train ``(day, n)``, link, departure, boarded, alighted (at this
        stop), load (riders aboard on the link).
        """
        return pd.DataFrame(self._load_rows, columns=METRO_LOAD_COLUMNS)


def train_departure(line: MetroLine, day: int, train: int, stop: int) -> float:
    """Minute at which train ``train`` of ``day`` leaves its ``stop``-th stop (either direction).

    ``departure = 1440 day + service_start + train x headway + stop x (travel_time + dwell)``;
    the train arrives at that stop ``dwell`` earlier (stops after the first).
    """
    return (
        day * MINUTES_PER_DAY
        + line.service_start
        + train * line.headway
        + stop * (line.travel_time + line.dwell)
    )


def metro_timetable(line: MetroLine, days: int = 1) -> pd.DataFrame:
    """Generate the timetable of a metro line from its parameters.

    Trains leave the first stop of each direction every ``headway`` minutes from
    ``service_start`` while before ``service_end``; see :func:`train_departure`.

    Args:
        line: The metro line.
        days: Number of days to generate.

    Returns:
        One row per train and stop: line, direction, day, train, stop (index in the direction's
        order), node, arrival (NaN at the first stop), departure (NaN at the last stop).
    """
    n_trains = math.ceil((line.service_end - line.service_start) / line.headway - _EPS)
    last = len(line.stops) - 1
    rows = []
    for day in range(days):
        for direction in (0, 1):
            stops = direction_stops(line, direction)
            for train in range(n_trains):
                for k, node in enumerate(stops):
                    leave = train_departure(line, day, train, k)
                    rows.append(
                        (
                            line.name,
                            direction,
                            day,
                            train,
                            k,
                            node,
                            leave - line.dwell if k > 0 else math.nan,
                            leave if k < last else math.nan,
                        )
                    )
    return pd.DataFrame(
        rows,
        columns=[
            "line",
            "direction",
            "day",
            "train",
            "stop",
            "node",
            "arrival",
            "departure",
        ],
    )


def next_train(line: MetroLine, stop: int, minute: float) -> float:
    """Departure of the first train of ``line`` leaving its ``stop``-th stop at or after ``minute``.

    Both directions run the same timetable (:func:`train_departure`), so ``stop`` is the index
    in the direction of travel. Minutes are absolute (day 0 starts at 0); ``inf`` when no train
    runs.
    """
    n_trains = math.ceil((line.service_end - line.service_start) / line.headway - _EPS)
    if n_trains <= 0:
        return math.inf
    day = math.floor(minute / MINUTES_PER_DAY)
    for candidate in range(day - 1, day + 3):
        base = train_departure(line, candidate, 0, stop)
        n = max(0, math.ceil((minute - base) / line.headway - _EPS))
        if n < n_trains:
            return base + n * line.headway
    return math.inf


def transit_journey(
    index: NetworkIndex, links: Sequence[DirectedLink], depart: float
) -> tuple[float, float]:
    """Arrival and time spent waiting for trains, leaving at ``depart`` along a transit path.

    By the timetable and without queues (every train has room): walking legs take the walking
    factor times their free time; at each boarding the traveller takes the first train of the
    line and direction leaving that stop (:func:`next_train`), stays aboard over consecutive
    links of that line and direction, and alights when it arrives at the last one's head, as
    the engine moves riders.

    Args:
        index: Network index.
        links: The path's directed links (as :meth:`Router.path` or
            :func:`~mesa_llm_mobility.urban.routing.validate_path` return them).
        depart: Departure minute (absolute).

    Returns:
        ``(arrival, wait)`` in minutes; ``(inf, inf)`` when a train never comes.
    """
    lines = index.scenario.metro_lines
    factor = index.scenario.walking_factor
    now, wait, k = float(depart), 0.0, 0
    while k < len(links):
        link = links[k]
        if link.kind != "metro":
            now += factor * link.free_time
            k += 1
            continue
        run = 1
        while (
            k + run < len(links)
            and links[k + run].kind == "metro"
            and links[k + run].line == link.line
            and links[k + run].direction == link.direction
        ):
            run += 1
        line = lines[link.line]
        leave = next_train(line, link.stop or 0, now)
        if math.isinf(leave):
            return math.inf, math.inf
        wait += leave - now
        now = leave + run * line.travel_time + (run - 1) * line.dwell
        k += run
    return now, wait
