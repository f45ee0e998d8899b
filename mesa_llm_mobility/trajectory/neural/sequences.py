"""Fixed-interval day sequences: stay points as 96 grid cells per day, and back (no JAX here).

The paper's neural baselines (GRU, LSTM, Transformer, SeqGAN; Sec. IV-A, IV-E) see a day as 96
steps of 15 minutes, each the grid cell the person is in, and generate the next step's cell.
:class:`DaySequences` lays a history on that representation with the metrics' own timeline
(:func:`~mesa_llm_mobility.trajectory.metrics.build_timelines`: a stay covers the bins from its
start's to its end's, a later stay wins a shared bin, uncovered bins keep the previous cell) on
square cells of ``cell_km`` (0.5 km, the paper's NumoSim grid), and keeps what is needed to
turn generated cells back into stay points (:class:`GridInversion`):

* a run of equal cells within a day is one stay, from its first bin's start to its last bin's
  end (the day's last run ends at midnight);
* its POI is the individual's most visited POI of the history in that cell, else the
  population's (a cell nobody visited cannot be generated: the vocabulary is the history's
  cells);
* its activity is the individual's most frequent activity at that POI, else the population's.

That inversion is the "grid inversion" the paper avoids for its detectors (Sec. IV-F): a
generated stay's POI and activity are the cell's typical ones, never a choice of the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.evidence import day_type
from mesa_llm_mobility.trajectory.metrics import (
    BIN_MINUTES,
    BINS_PER_DAY,
    Grid,
    build_timelines,
    km_grid,
)
from mesa_llm_mobility.trajectory.staypoints import STAY_COLUMNS

DAY_TYPES = ("weekday", "weekend")
"""The day-type token of a sequence (its index is the model's input)."""


def _most_frequent(keys: pd.DataFrame, value: str) -> dict[tuple, object]:
    """For each key tuple (all columns but ``value``), its most frequent ``value`` (ties: first)."""
    columns = [column for column in keys.columns if column != value]
    counts = keys.groupby([*columns, value], sort=True).size().reset_index(name="n")
    best = counts.sort_values("n", ascending=False, kind="stable").drop_duplicates(
        columns
    )
    return {
        tuple(row[:-2]) if len(columns) > 1 else row[0]: row[-2]
        for row in best.itertuples(index=False)
    }


@dataclass(frozen=True)
class GridInversion:
    """From a generated cell to a stay: the cell's POI and the POI's activity.

    Attributes:
        own_poi: (agent, cell) -> the individual's most visited POI there.
        population_poi: cell -> the population's most visited POI there.
        own_activity: (agent, POI) -> the individual's most frequent activity there.
        population_activity: POI -> the population's most frequent activity there.
        coordinates: POI -> (latitude, longitude).
    """

    own_poi: dict[tuple, object]
    population_poi: dict[object, object]
    own_activity: dict[tuple, object]
    population_activity: dict[object, object]
    coordinates: dict[object, tuple[float, float]]

    @classmethod
    def fit(cls, history: pd.DataFrame, cells: np.ndarray) -> GridInversion:
        """The lookups of a history whose stays lie in ``cells`` (one per row)."""
        frame = pd.DataFrame(
            {
                "agent_id": history["agent_id"].to_numpy(),
                "cell": cells,
                "poi_id": history["poi_id"].to_numpy(),
                "activity": history["activity"].to_numpy(),
            }
        )
        first = ~frame["poi_id"].duplicated().to_numpy()
        coordinates = dict(
            zip(
                frame["poi_id"].to_numpy()[first].tolist(),
                zip(
                    history["latitude"].to_numpy(float)[first].tolist(),
                    history["longitude"].to_numpy(float)[first].tolist(),
                    strict=True,
                ),
                strict=True,
            )
        )
        return cls(
            own_poi=_most_frequent(frame[["agent_id", "cell", "poi_id"]], "poi_id"),
            population_poi=_most_frequent(frame[["cell", "poi_id"]], "poi_id"),
            own_activity=_most_frequent(
                frame[["agent_id", "poi_id", "activity"]], "activity"
            ),
            population_activity=_most_frequent(
                frame[["poi_id", "activity"]], "activity"
            ),
            coordinates=coordinates,
        )

    def stay_of(self, agent_id: object, cell: int) -> tuple[object, object]:
        """``(POI, activity)`` of a generated stay in ``cell`` for ``agent_id``."""
        poi = self.own_poi.get((agent_id, cell), self.population_poi[cell])
        activity = self.own_activity.get((agent_id, poi), self.population_activity[poi])
        return poi, activity


@dataclass(frozen=True)
class DaySequences:
    """A history as 96-step cell sequences, with its vocabulary and the way back to stays.

    Attributes:
        tokens: Shape (days, 96): vocabulary index of each bin's cell.
        day_types: Shape (days,): 0 weekday, 1 weekend.
        agents: Shape (days,): the individual of each day.
        weekdays: Shape (days,): 0 = Monday.
        cells: The vocabulary: grid cell of each token.
        grid: The grid.
        inversion: Cells back to POIs and activities.
        timezone: The history's time zone.
    """

    tokens: np.ndarray
    day_types: np.ndarray
    agents: np.ndarray
    weekdays: np.ndarray
    cells: np.ndarray
    grid: Grid
    inversion: GridInversion
    timezone: str

    @property
    def vocabulary(self) -> int:
        """Number of distinct cells (tokens)."""
        return int(self.cells.size)

    @classmethod
    def fit(cls, history: pd.DataFrame, *, cell_km: float = 0.5) -> DaySequences:
        """Lay a history on ``cell_km`` cells and 96 bins per day.

        Raises:
            ValueError: For an empty history.
        """
        if history.empty:
            raise ValueError("the neural baselines need a non-empty history")
        timezone = str(history["start"].dt.tz)
        lat = history["latitude"].to_numpy(float)
        lon = history["longitude"].to_numpy(float)
        grid = km_grid(lat, lon, cell_km)
        timelines = build_timelines(history, grid, timezone)
        agent_ids = np.unique(history["agent_id"].to_numpy())
        local = history["start"].dt.tz_convert(timezone).dt.tz_localize(None)
        first_day = (
            pd.Series(local.dt.normalize().to_numpy())
            .groupby(history["agent_id"].to_numpy())
            .min()
            .reindex(agent_ids)
            .to_numpy()
        )
        # the timelines hold each individual's days from their first to their last date
        offset = np.arange(len(timelines.day_agent)) - np.searchsorted(
            timelines.day_agent, timelines.day_agent
        )
        dates = first_day[timelines.day_agent] + offset * np.timedelta64(1, "D")
        weekdays = pd.DatetimeIndex(dates).day_of_week.to_numpy()
        cells, tokens = np.unique(timelines.days, return_inverse=True)
        return cls(
            tokens=tokens.reshape(timelines.days.shape).astype(np.int32),
            day_types=(weekdays >= 5).astype(np.int32),
            agents=agent_ids[timelines.day_agent],
            weekdays=weekdays,
            cells=cells,
            grid=grid,
            inversion=GridInversion.fit(history, grid.cell_of(lat, lon)),
            timezone=timezone,
        )

    def first_tokens(
        self,
        agent_ids: Sequence[object],
        weekdays: Sequence[int],
        rng: np.random.Generator,
    ) -> np.ndarray:
        """The first bin's token of each (individual, weekday): one of their history days'.

        The day is drawn from the individual's days of that weekday, else of its day type,
        else any (the evidence policy of the workflow).
        """
        by_agent = pd.Series(np.arange(len(self.agents))).groupby(self.agents).indices
        tokens = np.empty(len(agent_ids), dtype=np.int32)
        for index, (agent, weekday) in enumerate(zip(agent_ids, weekdays, strict=True)):
            days = by_agent[agent]
            same = days[self.weekdays[days] == weekday]
            if not same.size:
                same = days[
                    self.day_types[days] == DAY_TYPES.index(day_type(int(weekday)))
                ]
            chosen = same if same.size else days
            tokens[index] = self.tokens[chosen[int(rng.integers(chosen.size))], 0]
        return tokens

    def to_stays(
        self,
        tokens: np.ndarray,
        agent_ids: Sequence[object],
        dates: Sequence[pd.Timestamp],
    ) -> pd.DataFrame:
        """Generated sequences back to stay points (:data:`~.staypoints.STAY_COLUMNS`).

        Args:
            tokens: Shape (days, 96), vocabulary indices.
            agent_ids: The individual of each row.
            dates: The local midnight of each row.

        Returns:
            One stay per run of equal cells, sorted by agent and start.
        """
        cells = self.cells[np.asarray(tokens)]
        rows: dict[str, list] = {name: [] for name in STAY_COLUMNS}
        for day, agent, midnight in zip(cells, agent_ids, dates, strict=True):
            change = np.flatnonzero(np.r_[True, day[1:] != day[:-1]])
            ends = np.r_[change[1:], BINS_PER_DAY]
            for first, last in zip(change, ends, strict=True):
                poi, activity = self.inversion.stay_of(agent, int(day[first]))
                lat, lon = self.inversion.coordinates[poi]
                rows["agent_id"].append(agent)
                rows["poi_id"].append(poi)
                rows["latitude"].append(lat)
                rows["longitude"].append(lon)
                rows["activity"].append(activity)
                rows["start"].append(
                    midnight + pd.Timedelta(minutes=int(first) * BIN_MINUTES)
                )
                rows["end"].append(
                    midnight + pd.Timedelta(minutes=int(last) * BIN_MINUTES)
                )
        frame = pd.DataFrame(rows, columns=list(STAY_COLUMNS))
        for column in ("start", "end"):
            frame[column] = pd.to_datetime(frame[column]).dt.tz_convert(self.timezone)
        return frame.sort_values(["agent_id", "start"], kind="stable").reset_index(
            drop=True
        )
