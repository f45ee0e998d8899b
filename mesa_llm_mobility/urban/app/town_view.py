"""The town at one minute, as the app draws it, from a live model or from a saved run.

A :class:`TownView` holds plain tables, so the map, the charts and the tests do not care
whether the minute comes from a running :class:`~mesa_llm_mobility.urban.model.UrbanMobilityModel`
(:func:`view_of_model`) or from a run directory (:meth:`.saved_run.SavedRun.view_at`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, day_clock
from mesa_llm_mobility.urban.routing import direction_stops
from mesa_llm_mobility.urban.scenario import Scenario
from mesa_llm_mobility.urban.traffic_records import LINK_STATE_COLUMNS

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.model import UrbanMobilityModel

TRAVELLER_COLUMNS = ["agent", "state", "place"]
TRAIN_COLUMNS = ["line", "direction", "train", "segment", "share", "x", "y", "at_stop"]


@dataclass(frozen=True)
class TownView:
    """The town at a clock time: the state the last simulated minute left.

    Attributes:
        scenario: The town.
        minute: The clock, in absolute minutes (0 is 00:00 of day 1): ``minute`` minutes have
            been simulated, so links and travellers are as step ``minute - 1`` left them.
        link_states: One row per directed link (``LINK_STATE_COLUMNS``).
        travellers: One row per traveller: agent, state, place (facility, node or link).
        trips: Trips departed by ``minute`` (the model's ``trips_frame`` columns; arrivals
            after ``minute`` are empty).
    """

    scenario: Scenario
    minute: int
    link_states: pd.DataFrame
    travellers: pd.DataFrame
    trips: pd.DataFrame

    @property
    def day(self) -> int:
        """Day number (1-based)."""
        return self.minute // MINUTES_PER_DAY + 1

    @property
    def clock(self) -> str:
        """``"Day d, HH:MM"``."""
        return day_clock(self.minute, sep=", ").capitalize()

    def facility_counts(self) -> pd.DataFrame:
        """Per facility: staying (inside) and queue (waiting at the door), all facilities listed."""
        at = self.travellers[self.travellers["place"].isin(self.scenario.facilities)]
        counts = (
            pd.crosstab(at["place"], at["state"])
            if len(at)
            else pd.DataFrame(index=pd.Index([], name="place"))
        )
        frame = pd.DataFrame(index=pd.Index(sorted(self.scenario.facilities)))
        frame["staying"] = counts.get("staying", pd.Series(dtype=int))
        frame["queue"] = counts.get("waiting_at_door", pd.Series(dtype=int))
        return frame.fillna(0).astype(int).rename_axis("facility").reset_index()


def empty_link_states(scenario: Scenario, minute: int = 0) -> pd.DataFrame:
    """Free-flow rows for every directed link (before the first simulated minute)."""
    rows = []
    for link in scenario.road_links.values():
        for direction in (0, 1) if link.two_way else (0,):
            rows.append((minute, link.name, direction, "road", 0, 0, 0, 0, 0.0))
    for line in scenario.metro_lines.values():
        for name in line.link_names:
            for direction in (0, 1):
                rows.append((minute, name, direction, "metro", 0, 0, 0, 0, 0.0))
    return pd.DataFrame(rows, columns=LINK_STATE_COLUMNS)


def trips_by(trips: pd.DataFrame, minute: float) -> pd.DataFrame:
    """Trips departed before clock ``minute``, arrivals after it emptied.

    A trip departs in step ``departure`` and arrives in step ``arrival`` (both minutes), so at
    clock ``minute`` (steps ``0 .. minute - 1`` done) what happened is what is below ``minute``.
    """
    frame = trips[trips["departure"] < minute].copy()
    later = ~(frame["arrival"] < minute)
    for column in ("arrival", "admitted", "travel_time", "delay", "late"):
        if column in frame.columns:
            frame.loc[later, column] = math.nan
    if "state" in frame.columns:
        frame.loc[later, "state"] = "under way"
    return frame.reset_index(drop=True)


def view_of_model(model: UrbanMobilityModel) -> TownView:
    """The live model's town now (the clock is the number of minutes simulated).

    Args:
        model: An :class:`~mesa_llm_mobility.urban.model.UrbanMobilityModel`.
    """
    minute = model.minute
    links = model.engine.latest_link_states()
    if links.empty:
        links = empty_link_states(model.town, minute)
    travellers = pd.DataFrame(
        [(name, a.state, a.place) for name, a in model.travellers.items()],
        columns=TRAVELLER_COLUMNS,
    )
    trips = model.trips_frame()
    return TownView(model.town, minute, links, travellers, trips_by(trips, minute))


def train_positions(scenario: Scenario, minute: float) -> pd.DataFrame:
    """Where every metro train in service is at ``minute``, from the line parameters.

    A train of direction d leaves its first stop at ``service_start + n headway`` and its k-th
    stop ``k (travel_time + dwell)`` later (:func:`~mesa_llm_mobility.urban.metro.train_departure`);
    between two stops it moves at constant speed, at a stop it stands for ``dwell``.

    Returns:
        One row per train: line, direction, train (number of the day), segment and share (the
        link ``line.link_names[segment]`` and the fraction of it travelled, both in the line's
        direction-0 order), x, y, at_stop (node id while standing, else None).
    """
    of_day = float(minute) % MINUTES_PER_DAY
    nodes = scenario.nodes
    rows = []
    for line in scenario.metro_lines.values():
        cycle = line.travel_time + line.dwell
        last = len(line.stops) - 1
        run_time = last * cycle - line.dwell
        n_trains = math.ceil((line.service_end - line.service_start) / line.headway)
        for direction in (0, 1):
            stops = direction_stops(line, direction)
            for n in range(n_trains):
                since = of_day - (line.service_start + n * line.headway)
                if not 0 <= since <= run_time:
                    continue
                k, into = divmod(since, cycle)
                k = min(int(k), last - 1)
                standing = into >= line.travel_time or since == run_time
                share = 1.0 if standing else into / line.travel_time
                a, b = nodes[stops[k]], nodes[stops[k + 1]]
                x, y = a.x + share * (b.x - a.x), a.y + share * (b.y - a.y)
                # segment and share along the line's direction-0 order (for drawing offsets)
                segment, along = (
                    (k, share) if direction == 0 else (last - 1 - k, 1 - share)
                )
                at_stop = stops[k + 1] if standing else None
                rows.append((line.name, direction, n, segment, along, x, y, at_stop))
    return pd.DataFrame(rows, columns=TRAIN_COLUMNS)
