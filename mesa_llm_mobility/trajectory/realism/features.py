"""Features of one individual-day, absolute and relative to the individual's real training days.

The individual-level detector clusters days by these features and the classifier two-sample
test learns from them. Absolute features describe the day alone (how many visits, how far, when
the person leaves and comes back, what share of each four-hour block is spent at home, at work
or school, elsewhere or travelling). Relative features compare it with the same individual's
training days (what share of the day's visits fall in places, at three spatial scales, that the
individual visited in training; how far the day's places are from their training home; how much
earlier or later they leave than usual), so a day that would be ordinary for someone else but not
for this person stands out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.activities import HOME, WORK
from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.realism.frames import DAY_KEY, MINUTES_PER_DAY

CELL_SCALES_KM = (0.5, 2.0, 8.0)
"""Grid cell sizes of the multi-scale familiarity features (km)."""

BLOCK_HOURS = 4
GROUPS = ("home", "anchor", "other", "travel")
ANCHORS = (WORK, "School")
KM_PER_DEGREE_LAT = 110.574


def _cells(
    lat: np.ndarray, lon: np.ndarray, scale_km: float, lon_km: float
) -> np.ndarray:
    rows = np.floor(lat * KM_PER_DEGREE_LAT / scale_km).astype(np.int64)
    columns = np.floor(lon * lon_km / scale_km).astype(np.int64)
    return rows * 10_000_019 + columns


@dataclass(frozen=True)
class Profiles:
    """What the training days say about each individual.

    Attributes:
        home: agent -> (latitude, longitude) of their most visited Home POI (or most visited).
        cells: (agent, scale index) -> set of the grid cells they visited.
        departure: agent -> median minute of the first departure of a day.
        visits: agent -> median visits per day.
        lon_km: km per degree of longitude at the training data's mean latitude.
    """

    home: dict[object, tuple[float, float]]
    cells: dict[tuple[object, int], set]
    departure: dict[object, float]
    visits: dict[object, float]
    lon_km: float

    @classmethod
    def fit(cls, train: pd.DataFrame) -> Profiles:
        """Profiles of every individual of the training visits."""
        lon_km = 111.320 * float(np.cos(np.radians(train["latitude"].mean())))
        # home: the most visited Home POI (the most visited POI for someone never at home)
        at_home = train["activity"].to_numpy() == HOME
        has_home = (
            pd.Series(at_home).groupby(train["agent_id"].to_numpy()).transform("any")
        )
        pool = train.loc[at_home | ~has_home.to_numpy()]
        counts = pool.groupby(["agent_id", "poi_id"], sort=True).size()
        top = counts.groupby(level="agent_id").idxmax().tolist()
        places = pool.drop_duplicates(["agent_id", "poi_id"]).set_index(
            ["agent_id", "poi_id"]
        )
        coordinates = places.loc[top, ["latitude", "longitude"]].to_numpy(dtype=float)
        home = {
            agent: (float(lat), float(lon))
            for (agent, _), (lat, lon) in zip(top, coordinates, strict=True)
        }
        lat = train["latitude"].to_numpy(dtype=float)
        lon = train["longitude"].to_numpy(dtype=float)
        cells: dict[tuple[object, int], set] = {}
        for index, scale in enumerate(CELL_SCALES_KM):
            visited = pd.DataFrame(
                {
                    "agent_id": train["agent_id"].to_numpy(),
                    "cell": _cells(lat, lon, scale, lon_km),
                }
            ).drop_duplicates()
            for agent, group in visited.groupby("agent_id", sort=False)["cell"]:
                cells[(agent, index)] = set(group.tolist())
        absolute = absolute_day_features(train)
        per_agent = absolute.groupby("agent_id")
        return cls(
            home=home,
            cells=cells,
            departure=per_agent["first_departure"].median().to_dict(),
            visits=per_agent["visits"].median().to_dict(),
            lon_km=lon_km,
        )


def _group_of(activities: pd.Series) -> np.ndarray:
    names = activities.to_numpy()
    return np.where(names == HOME, 0, np.where(np.isin(names, ANCHORS), 1, 2))


def _occupancy(visits: pd.DataFrame) -> np.ndarray:
    """Per visit row: minutes it covers of each (block, group); summed per day later."""
    blocks = int(24 / BLOCK_HOURS)
    edges = np.arange(blocks + 1) * BLOCK_HOURS * 60.0
    start = np.clip(visits["start_minute"].to_numpy(dtype=float), 0, MINUTES_PER_DAY)
    end = np.clip(visits["end_minute"].to_numpy(dtype=float), 0, MINUTES_PER_DAY)
    covered = np.clip(
        np.minimum(end[:, None], edges[None, 1:])
        - np.maximum(start[:, None], edges[None, :-1]),
        0.0,
        None,
    )
    groups = _group_of(visits["activity"])
    result = np.zeros((len(visits), blocks, len(GROUPS) - 1))
    result[np.arange(len(visits)), :, groups] = covered
    return result.reshape(len(visits), -1)


def absolute_day_features(visits: pd.DataFrame) -> pd.DataFrame:
    """One row per (agent, day) of a :func:`~.frames.visit_table`: the day's own features.

    Columns: ``agent_id, day``, ``visits``, ``places`` (distinct POIs), ``activities``
    (distinct), ``log_km`` (log1p of the km between consecutive visits), ``log_radius`` (log1p
    of the radius of gyration of the visits, km), ``first_departure`` and ``last_arrival``
    (minutes), ``log_dwell`` (mean log1p of the visits' minutes), ``weekend`` (0/1) and the
    shares of each four-hour block at home, anchor, other and travelling (``b0_home`` ...).
    """
    frame = visits.reset_index(drop=True)
    lat = frame["latitude"].to_numpy(dtype=float)
    lon = frame["longitude"].to_numpy(dtype=float)
    key = frame[list(DAY_KEY)]
    same_day = (key.shift(1) == key).all(axis=1).to_numpy()
    step_km = np.zeros(len(frame))
    step_km[1:] = haversine_km(lat[:-1], lon[:-1], lat[1:], lon[1:])
    step_km[~same_day] = 0.0
    dwell = np.maximum(
        frame["end_minute"].to_numpy(dtype=float)
        - frame["start_minute"].to_numpy(dtype=float),
        0.0,
    )
    occupancy = _occupancy(frame)
    table = pd.DataFrame(
        {
            "agent_id": frame["agent_id"],
            "day": frame["day"],
            "km": step_km,
            "log_dwell": np.log1p(dwell),
            "lat": lat,
            "lon": lon,
            "start_minute": frame["start_minute"].to_numpy(dtype=float),
            "end_minute": frame["end_minute"].to_numpy(dtype=float),
            "poi_id": frame["poi_id"],
            "activity": frame["activity"],
        }
    )
    occupancy_columns = [
        f"b{block}_{group}"
        for block in range(int(24 / BLOCK_HOURS))
        for group in GROUPS[:-1]
    ]
    table[occupancy_columns] = occupancy
    grouped = table.groupby(list(DAY_KEY), sort=False)
    days = grouped.agg(
        visits=("poi_id", "size"),
        places=("poi_id", "nunique"),
        activities=("activity", "nunique"),
        km=("km", "sum"),
        first_departure=("end_minute", "first"),
        last_arrival=("start_minute", "last"),
        log_dwell=("log_dwell", "mean"),
    ).reset_index()
    sums = grouped[occupancy_columns].sum().reset_index(drop=True)
    days["log_km"] = np.log1p(days.pop("km"))
    centre_lat = grouped["lat"].transform("mean").to_numpy()
    centre_lon = grouped["lon"].transform("mean").to_numpy()
    table["squared_km"] = haversine_km(centre_lat, centre_lon, lat, lon) ** 2
    radius = np.sqrt(
        table.groupby(list(DAY_KEY), sort=False)["squared_km"].mean().to_numpy()
    )
    days["log_radius"] = np.log1p(radius)
    days["weekend"] = [int(day.weekday() >= 5) for day in days["day"]]
    block_minutes = BLOCK_HOURS * 60.0
    for block in range(int(24 / BLOCK_HOURS)):
        at = [f"b{block}_{group}" for group in GROUPS[:-1]]
        shares = sums[at].to_numpy() / block_minutes
        days[at] = shares
        days[f"b{block}_travel"] = np.clip(1.0 - shares.sum(axis=1), 0.0, 1.0)
    return days


def day_features(visits: pd.DataFrame, profiles: Profiles) -> pd.DataFrame:
    """Absolute and relative features of every (agent, day) of ``visits``.

    Adds to :func:`absolute_day_features`: ``familiar_0`` ... ``familiar_2`` (share of the
    day's visits in cells of :data:`CELL_SCALES_KM` the individual visited in training),
    ``log_home_km`` (mean log1p km of the day's visits from the training home),
    ``departure_shift`` (first departure minus the training median, minutes) and
    ``visits_shift`` (visits minus the training median).
    """
    days = absolute_day_features(visits)
    frame = visits.reset_index(drop=True)
    lat = frame["latitude"].to_numpy(dtype=float)
    lon = frame["longitude"].to_numpy(dtype=float)
    agents = frame["agent_id"].to_numpy()
    per_visit = pd.DataFrame({"agent_id": agents, "day": frame["day"]})
    for index, scale in enumerate(CELL_SCALES_KM):
        cells = _cells(lat, lon, scale, profiles.lon_km)
        per_visit[f"familiar_{index}"] = [
            float(cell in profiles.cells.get((agent, index), ()))
            for agent, cell in zip(agents, cells.tolist(), strict=True)
        ]
    home = np.array([profiles.home.get(agent, (np.nan, np.nan)) for agent in agents])
    per_visit["log_home_km"] = np.log1p(haversine_km(home[:, 0], home[:, 1], lat, lon))
    relative = per_visit.groupby(list(DAY_KEY), sort=False).mean().reset_index()
    days = days.merge(relative, on=list(DAY_KEY), how="left")
    days["departure_shift"] = days["first_departure"] - days["agent_id"].map(
        profiles.departure
    ).astype(float)
    days["visits_shift"] = days["visits"] - days["agent_id"].map(
        profiles.visits
    ).astype(float)
    return days.fillna(0.0)
