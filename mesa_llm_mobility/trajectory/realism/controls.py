"""Controls for the detectors: real data split in two halves, and real data visibly broken.

A detector is only worth its AUROC if it cannot tell two halves of the same real data apart
(:func:`split_halves`: AUROC near 0.5) and if it does tell real data from a copy whose
individual behaviour was destroyed while its aggregate statistics were kept:

* :func:`permute_locations`: the places of all visits are permuted (or only among visits of
  the same activity); activities and times stay;
* :func:`shuffle_times`: every day keeps its places but takes the schedule (arrival and
  departure times) of a random individual-day with as many visits;
* :func:`swap_individuals`: whole histories change owner (every aggregate statistic is exactly
  the same; only who did what changes).

All are seeded and return valid stay-point tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.staypoints import (
    STAY_COLUMNS,
    local_dates,
    validate_staypoints,
)


def _day_ids(stays: pd.DataFrame) -> np.ndarray:
    """One integer per (agent, local date)."""
    keys = pd.DataFrame({"agent_id": stays["agent_id"], "day": local_dates(stays)})
    return keys.groupby(["agent_id", "day"], sort=False).ngroup().to_numpy()


def split_halves(
    stays: pd.DataFrame, *, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each individual's days, shuffled and dealt into two halves (seeded).

    Returns:
        The two stay-point tables (an individual with an odd number of days has one more day
        in the first).
    """
    stays = validate_staypoints(stays)
    day = _day_ids(stays)
    agents = stays["agent_id"].to_numpy()
    rng = np.random.default_rng(seed)
    first = np.zeros(day.max() + 1, dtype=bool)
    for agent in pd.unique(agents):
        days = np.unique(day[agents == agent])
        days = days[rng.permutation(len(days))]
        first[days[: (len(days) + 1) // 2]] = True
    chosen = first[day]
    return (
        stays.loc[chosen].reset_index(drop=True),
        stays.loc[~chosen].reset_index(drop=True),
    )


def permute_locations(
    stays: pd.DataFrame, *, seed: int = 0, within_activity: bool = False
) -> pd.DataFrame:
    """Permute the places of all visits (activities and times stay where they were).

    Every POI keeps its number of visits, so the global visit-frequency ranking (G-rank) is
    exactly the real one; who goes where, and what is done there, is lost.

    Args:
        stays: A valid stay-point table.
        seed: Seed of the permutation.
        within_activity: Permute only among visits of the same activity (a restaurant visit
            stays at a restaurant, just not this person's).

    Returns:
        The permuted table.
    """
    stays = validate_staypoints(stays)
    rng = np.random.default_rng(seed)
    result = stays[list(STAY_COLUMNS)].copy()
    groups = (
        stays.groupby("activity", sort=True).indices.values()
        if within_activity
        else [np.arange(len(stays))]
    )
    columns = [
        result.columns.get_loc(name) for name in ("poi_id", "latitude", "longitude")
    ]
    for rows in groups:
        shuffled = rows[rng.permutation(len(rows))]
        result.iloc[rows, columns] = stays.iloc[shuffled, columns].to_numpy()
    return result


def shuffle_times(stays: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Give every day the arrival and departure times of a random day with as many visits."""
    stays = validate_staypoints(stays)
    rng = np.random.default_rng(seed)
    day = _day_ids(stays)
    midnight = local_dates(stays)
    offsets_start = (stays["start"] - midnight).to_numpy()
    offsets_end = (stays["end"] - midnight).to_numpy()
    sizes = np.bincount(day)
    first_row = np.searchsorted(day, np.arange(len(sizes)))
    assert (np.diff(day) >= 0).all()  # validate_staypoints sorts by agent and start
    donor = np.arange(len(sizes))
    for size in np.unique(sizes):
        same = np.flatnonzero(sizes == size)
        donor[same] = same[rng.permutation(len(same))]
    position = np.arange(len(stays)) - first_row[day]
    source_row = first_row[donor[day]] + position
    result = stays[list(STAY_COLUMNS)].copy()
    result["start"] = midnight + pd.to_timedelta(offsets_start[source_row])
    result["end"] = midnight + pd.to_timedelta(offsets_end[source_row])
    return result


def swap_individuals(stays: pd.DataFrame, *, seed: int = 0) -> pd.DataFrame:
    """Give every individual's whole history to another individual (a random derangement)."""
    stays = validate_staypoints(stays)
    agents = np.array(sorted(pd.unique(stays["agent_id"])), dtype=object)
    if len(agents) < 2:
        raise ValueError("swap_individuals needs at least two individuals")
    rng = np.random.default_rng(seed)
    shift = int(rng.integers(1, len(agents)))
    order = rng.permutation(len(agents))
    owner = {
        agents[order[i]]: agents[order[(i + shift) % len(agents)]]
        for i in range(len(agents))
    }
    result = stays[list(STAY_COLUMNS)].copy()
    result["agent_id"] = stays["agent_id"].map(owner).astype(stays["agent_id"].dtype)
    return validate_staypoints(result)
