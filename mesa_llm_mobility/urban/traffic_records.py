"""The traffic engine's per-step records: link states and facility states, as tables.

After each step the :class:`~mesa_llm_mobility.urban.traffic.TrafficEngine` may record one row
per directed link (queue, vehicles or riders on it, entries and exits, wait indicator) and one
row per facility (queue, staying, capacity, wait indicator). :class:`TrafficRecorder` keeps these
rows and returns them as DataFrames. A checkpoint leaves out the link rows already stored
elsewhere (:attr:`TrafficRecorder.stored_until`); :meth:`TrafficRecorder.restore_link_history`
puts them back.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.facilities import FacilityState
    from mesa_llm_mobility.urban.metro import MetroService
    from mesa_llm_mobility.urban.road_links import RoadLinkState
    from mesa_llm_mobility.urban.routing import DirectedLink

LINK_STATE_COLUMNS = [
    "time",
    "link",
    "direction",
    "kind",
    "queue",
    "traversing",
    "entered",
    "exited",
    "wait_indicator",
]
"""Columns of :meth:`TrafficRecorder.link_states_frame`."""

FACILITY_STATE_COLUMNS = [
    "time",
    "facility",
    "queue",
    "staying",
    "capacity",
    "wait_indicator",
]
"""Columns of :meth:`TrafficRecorder.facility_states_frame`."""


class TrafficRecorder:
    """Rows of the per-step link and facility tables of one engine."""

    def __init__(self) -> None:
        self._link_rows: list[tuple] = []
        self._facility_rows: list[tuple] = []
        self.stored_until: float | None = None
        """Link rows before this minute are stored elsewhere and left out of checkpoints."""

    def record_links(
        self,
        t: float,
        roads: Iterable[RoadLinkState],
        metro: MetroService,
        link_wait: Callable[[DirectedLink], float],
    ) -> None:
        """Append the link rows of the step at ``t`` (and reset the road entry counts).

        Args:
            t: The step's time.
            roads: The road links, in network order.
            metro: The metro service.
            link_wait: The engine's wait indicator of a directed link.
        """
        rows = self._link_rows
        for state in roads:
            link = state.link
            if state.model == "flow":
                queued = state.exit_queued(t)
                queue = len(state.wait) + queued
                traversing = state.count() - queued
            else:
                queue, traversing = len(state.wait), len(state.moving)
            rows.append(
                (
                    t,
                    link.name,
                    link.direction,
                    "road",
                    queue,
                    traversing,
                    state.entered,
                    state.exited,
                    link_wait(link),
                )
            )
            state.entered = state.exited = 0
        on_link = metro.riders_by_link(t)
        for link in metro.links:
            rows.append(
                (
                    t,
                    link.name,
                    link.direction,
                    "metro",
                    metro.queue_length(link),
                    on_link.get(link.index, 0),
                    0,
                    0,
                    link_wait(link),
                )
            )

    def record_facilities(
        self,
        t: float,
        facilities: Iterable[FacilityState],
        facility_wait: Callable[[str], float],
    ) -> None:
        """Append the facility rows of the step at ``t``.

        Args:
            t: The step's time.
            facilities: The facilities, in scenario order.
            facility_wait: The engine's wait indicator of a facility.
        """
        for facility in facilities:
            self._facility_rows.append(
                (
                    t,
                    facility.name,
                    len(facility.queue),
                    len(facility.staying),
                    facility.capacity,
                    facility_wait(facility.name),
                )
            )

    def link_states_frame(self, since: float | None = None) -> pd.DataFrame:
        """Return the per-step link table (from minute ``since`` on, if given).

        Columns: time, link, direction, kind (road / metro), queue (waiting to enter, plus the
        exit point queue of flow links, or riders waiting at the stop), traversing (vehicles
        within their free time, or riders aboard), entered and exited (road vehicles during the
        step), wait_indicator (minutes).
        """
        rows = self._link_rows
        if since is not None:  # rows are in time order
            rows = rows[bisect.bisect_left(rows, since, key=itemgetter(0)) :]
        return pd.DataFrame(rows, columns=LINK_STATE_COLUMNS)

    def latest_link_states(self) -> pd.DataFrame:
        """The rows of :meth:`link_states_frame` of the last step only (cheap; for live views)."""
        rows = self._link_rows
        start = len(rows)
        while start > 0 and rows[start - 1][0] == rows[-1][0]:
            start -= 1
        return pd.DataFrame(rows[start:], columns=LINK_STATE_COLUMNS)

    def facility_states_frame(self) -> pd.DataFrame:
        """Per-step facility table: time, facility, queue, staying, capacity, wait_indicator."""
        return pd.DataFrame(self._facility_rows, columns=FACILITY_STATE_COLUMNS)

    def __getstate__(self) -> dict[str, Any]:
        """The rows for a checkpoint, without link rows stored elsewhere.

        Link rows before :attr:`stored_until` (set by whoever stores them, e.g. a run
        directory's per-day ``link_states`` table) are left out, so a checkpoint does not hold
        the whole history again every day; :meth:`restore_link_history` puts them back.
        """
        state = self.__dict__.copy()
        until = self.stored_until
        if until is not None:
            rows = self._link_rows
            state["_link_rows"] = rows[
                bisect.bisect_left(rows, until, key=itemgetter(0)) :
            ]
        return state

    def restore_link_history(self, history: pd.DataFrame) -> None:
        """Put back the link rows a checkpoint left out (``link_states_frame`` columns).

        Args:
            history: The rows before :attr:`stored_until`, in time order.

        Raises:
            ValueError: If ``history`` lacks columns, or overlaps the rows the recorder holds.
        """
        missing = sorted(set(LINK_STATE_COLUMNS) - set(history.columns))
        if missing:
            raise ValueError(f"link history: missing columns {', '.join(missing)}")
        kept = self._link_rows
        if len(history) and kept and history["time"].max() >= kept[0][0]:
            raise ValueError(
                f"link history: rows up to minute {history['time'].max():g} overlap the "
                f"engine's rows from minute {kept[0][0]:g}"
            )
        restored = list(history[LINK_STATE_COLUMNS].itertuples(index=False, name=None))
        self._link_rows = restored + kept
