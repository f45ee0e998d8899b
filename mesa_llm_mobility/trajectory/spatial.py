"""Metrics that see where people go, reported beside the paper's seven and never mixed into them.

Six of the paper's seven metrics (:mod:`.metrics`) are blind to location: Distance, G-radius,
Duration, DailyLoc, I-rank and G-rank are distributions of distances, counts and rank shares,
which do not change when every generated visit is moved 330 km away; only Transition (which
cells follow which) does. :func:`spatial_metrics` adds three that compare *where* the visits
are, on the same grid of ``cell_km`` squares over both tables:

================  ================================================================================
metric            value
================  ================================================================================
Density           JSD (nats, [0, ln 2]) of the visits' shares over grid cells: every stay counts
                  once, in the cell of its POI
OD flow           JSD of the shares of origin-destination cell pairs of consecutive stays of one
                  individual on one day (a stay to the next, the same cell included)
EMD km            earth mover's distance (1-Wasserstein, km) between the two sets of visit
                  locations, sliced: the mean over 36 evenly spaced directions of the exact
                  one-dimensional distance between the projections (a lower bound of the planar
                  distance, equal to it for a pure shift along a direction, about 2/pi of it on
                  average otherwise; deterministic)
Daily distance    JSD of each individual-day's cumulative travel distance (the paper's text,
                  "cumulative travel distance per user per day"); the paper's Distance column
                  (:data:`~.metrics.METRICS`) follows the reference code instead: the distance
                  between the cells of consecutive 15-minute bins, 95 per day
================  ================================================================================

Coordinates are km on the equirectangular projection of :mod:`.metrics`; lower is closer for
all four. Daily distance is as blind to location as the paper's Distance; it is here because the
paper's text and its code define Distance differently, and both are offered.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.stats

from mesa_llm_mobility.trajectory.metrics import (
    BINS_PER_DAY,
    KM_PER_DEGREE_LAT,
    build_timelines,
    jensen_shannon,
    km_grid,
    step_distances,
)
from mesa_llm_mobility.trajectory.staypoints import local_dates

SPATIAL_METRICS = ("Density", "OD flow", "EMD km", "Daily distance")
"""The location-aware metrics, in table order."""

SLICE_DIRECTIONS = 36
"""Directions of the sliced earth mover's distance (every 5 degrees of a half turn)."""

DAILY_DISTANCE_BINS = 100


def _shares_jsd(first: np.ndarray, second: np.ndarray) -> float:
    """JSD of two samples of integer keys, as shares over the union of their keys."""
    keys, inverse = np.unique(np.concatenate([first, second]), return_inverse=True)
    counts_first = np.bincount(inverse[: first.size], minlength=keys.size)
    counts_second = np.bincount(inverse[first.size :], minlength=keys.size)
    return jensen_shannon(counts_first, counts_second)


def _od_pairs(stays: pd.DataFrame, cells: np.ndarray, width: int) -> np.ndarray:
    """Keys ``origin * width + destination`` of consecutive stays of one individual-day."""
    order = np.lexsort((stays["start"].to_numpy(), stays["agent_id"].to_numpy()))
    agents = stays["agent_id"].to_numpy()[order]
    days = local_dates(stays).to_numpy()[order]
    ordered = cells[order]
    same = (agents[1:] == agents[:-1]) & (days[1:] == days[:-1])
    return ordered[:-1][same].astype(np.int64) * width + ordered[1:][same]


def sliced_emd_km(
    first: np.ndarray, second: np.ndarray, directions: int = SLICE_DIRECTIONS
) -> float:
    """Mean 1-Wasserstein distance of two point sets (N, 2) projected on evenly spaced directions.

    Args:
        first: Points in km.
        second: Points in km.
        directions: Directions over a half turn.

    Returns:
        The sliced earth mover's distance in km.
    """
    angles = np.arange(directions) * np.pi / directions
    axes = np.column_stack([np.cos(angles), np.sin(angles)])
    return float(
        np.mean(
            [
                scipy.stats.wasserstein_distance(first @ axis, second @ axis)
                for axis in axes
            ]
        )
    )


def spatial_metrics(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    cell_km: float = 0.5,
    timezone: str | None = None,
) -> dict[str, float]:
    """The location-aware metrics of generated against real stay points (lower is closer).

    Args:
        real: Real stay points.
        generated: Generated stay points.
        cell_km: Grid cell (the metrics' default 0.5 km).
        timezone: Local time of the days (default: the real table's).

    Returns:
        ``{metric: value}`` for :data:`SPATIAL_METRICS`.

    Raises:
        ValueError: If a table is empty.
    """
    if real.empty or generated.empty:
        raise ValueError("spatial metrics need non-empty real and generated tables")
    timezone = timezone or str(real["start"].dt.tz)
    lat = [table["latitude"].to_numpy(float) for table in (real, generated)]
    lon = [table["longitude"].to_numpy(float) for table in (real, generated)]
    grid = km_grid(np.concatenate(lat), np.concatenate(lon), cell_km)
    cells = [grid.cell_of(a, b) for a, b in zip(lat, lon, strict=True)]
    od = [
        _od_pairs(table, table_cells, grid.cells)
        for table, table_cells in zip((real, generated), cells, strict=True)
    ]
    points = [
        np.column_stack(
            [
                (a - grid.min_lat) * KM_PER_DEGREE_LAT,
                (b - grid.min_lon) * grid.lon_km,
            ]
        )
        for a, b in zip(lat, lon, strict=True)
    ]
    daily = [
        step_distances(build_timelines(table, grid, timezone).days, grid)
        .reshape(-1, BINS_PER_DAY - 1)
        .sum(axis=1)
        for table in (real, generated)
    ]
    upper = max(float(daily[0].max(initial=0.0)), float(daily[1].max(initial=0.0)))
    edges = np.linspace(0.0, upper or 1.0, DAILY_DISTANCE_BINS + 1)
    return {
        "Density": _shares_jsd(cells[0], cells[1]),
        "OD flow": _shares_jsd(od[0], od[1]) if od[0].size and od[1].size else np.nan,
        "EMD km": sliced_emd_km(points[0], points[1]),
        "Daily distance": jensen_shannon(
            np.histogram(daily[0], edges)[0], np.histogram(daily[1], edges)[0]
        ),
    }


__all__ = [
    "SPATIAL_METRICS",
    "sliced_emd_km",
    "spatial_metrics",
]
