"""The paper's seven distribution metrics, generated vs real stay points (Sec. IV, Table II).

Both tables are laid on the same spatial grid and the same timeline: each individual's days, from
their first to their last local date, as 96 bins of 15 minutes holding the grid cell of the stay
covering the bin (a stay covers the bins from its start's to its end's, at least one; a later
stay wins a shared bin). Bins no stay covers hold the cell of the previous stay (the first stay's
for an individual's leading bins). From these daily sequences:

=============  =================================================================  ====================
metric         value per unit                                                     bins (default)
=============  =================================================================  ====================
Distance       km between the cells of consecutive bins of a day (95 per day)     100 equal, [0, max]
G-radius       radius of gyration of a day's 96 cells (km)                        100 equal, [0, max]
Duration       length of a run of equal cells within a day (15-minute units)      96: 1, 2, ..., 96
DailyLoc       distinct cells in a day                                            96: 1, 2, ..., 96
G-rank         visit share of the 100 most visited cells (all bins, all people)   100 ranks
I-rank         each individual's visit shares of their 100 most visited cells,    100 ranks
               averaged over individuals
Transition     shares of cell -> cell transitions between consecutive stays       sparse matrix
=============  =================================================================  ====================

``max`` is the largest value of either table, so no value falls outside the bins. The first six
are the Jensen-Shannon divergence of the two histograms (:func:`jensen_shannon`, natural log,
between 0 and ln 2); Transition is the Frobenius norm of the difference of the two normalised
transition matrices, computed on their non-zero entries only (:func:`transition_matrix`).
Distances are in km on an equirectangular projection about the area's mean latitude (exact to
well under 1 % within a metropolitan area); the grid's cells are ``cell_km`` squares.

``compat="trajgenagent"`` reproduces the reference helper's binning instead (see
docs/trajectory.md for each difference): a 100-column grid over the bounding box in degrees,
distances in degrees, histogram edges ``arange(0, max, max / bins)`` (which drop the top bin and
everything above it: 99 of 100 distance bins and 47 of 48 duration and location bins are kept),
Duration and DailyLoc as fractions of a day in 48 bins, I-rank and G-rank both global, and a
random first fill (drawn from ``rng``, where the reference's is unseeded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import scipy.sparse
import scipy.stats

BINS_PER_DAY = 96
BIN_MINUTES = 15
KM_PER_DEGREE_LAT = 110.574
KM_PER_DEGREE_LON_EQUATOR = 111.320
RANKS = 100
COMPAT_COLUMNS = 100

METRICS = (
    "Distance",
    "G-radius",
    "Duration",
    "DailyLoc",
    "I-rank",
    "G-rank",
    "Transition",
)
"""The metrics, in the order of the paper's Table II."""


def entropy(p: np.ndarray) -> float:
    """Shannon entropy in nats of a probability vector (0 log 0 = 0)."""
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> float:
    """JSD(P, Q) = H((P + Q) / 2) - (H(P) + H(Q)) / 2 in nats, of two histograms.

    Args:
        p: Counts or probabilities (normalised here).
        q: The same, of equal length.

    Returns:
        The divergence, in [0, ln 2].

    Raises:
        ValueError: If the lengths differ or a histogram is empty.
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.shape != q.shape:
        raise ValueError(f"histograms differ in length: {p.shape} vs {q.shape}")
    if p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("a histogram is empty: nothing to compare")
    p = p / p.sum()
    q = q / q.sum()
    value = entropy((p + q) / 2.0) - (entropy(p) + entropy(q)) / 2.0
    return float(min(max(value, 0.0), np.log(2.0)))


def _reference_jsd(p: np.ndarray, q: np.ndarray) -> float:
    """The reference helper's JSD: 1e-14 guards, then scipy's KL divergences to the mean."""
    p = p / (p.sum() + 1e-14)
    q = q / (q.sum() + 1e-14)
    m = (p + q) / 2
    return float(0.5 * scipy.stats.entropy(p, m) + 0.5 * scipy.stats.entropy(q, m))


# ---------------------------------------------------------------------------- grids
@dataclass(frozen=True)
class Grid:
    """Square cells over a bounding box, with cell-centre coordinates for distances.

    Attributes:
        min_lat: South edge.
        min_lon: West edge.
        lat_step: Cell height (degrees).
        lon_step: Cell width (degrees).
        rows: Cells north-south.
        columns: Cells west-east.
        km: Whether centre coordinates are km (else degrees, the reference's).
        lat_km: km per degree of latitude (1 for degrees).
        lon_km: km per degree of longitude (1 for degrees).
    """

    min_lat: float
    min_lon: float
    lat_step: float
    lon_step: float
    rows: int
    columns: int
    km: bool
    lat_km: float
    lon_km: float

    @property
    def cells(self) -> int:
        """Number of cells."""
        return self.rows * self.columns

    def cell_of(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Cell index (0-based, row-major) of each point; -1 for missing coordinates."""
        lat = np.asarray(lat, dtype=float)
        lon = np.asarray(lon, dtype=float)
        valid = np.isfinite(lat) & np.isfinite(lon)
        row = np.clip(
            ((lat - self.min_lat) / self.lat_step).astype(np.int64, copy=False),
            0,
            self.rows - 1,
        )
        column = np.clip(
            ((lon - self.min_lon) / self.lon_step).astype(np.int64, copy=False),
            0,
            self.columns - 1,
        )
        return np.where(valid, row * self.columns + column, -1)

    def centres(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cell centres as (north, east) coordinates, in km (or degrees for the reference)."""
        row, column = np.divmod(cells, self.columns)
        north = (row + 0.5) * self.lat_step * self.lat_km
        east = (column + 0.5) * self.lon_step * self.lon_km
        return north, east


def km_grid(lat: np.ndarray, lon: np.ndarray, cell_km: float) -> Grid:
    """Square cells of ``cell_km`` over the points' bounding box (equirectangular)."""
    if cell_km <= 0:
        raise ValueError(f"cell_km must be > 0, got {cell_km}")
    min_lat, max_lat = float(np.nanmin(lat)), float(np.nanmax(lat))
    min_lon, max_lon = float(np.nanmin(lon)), float(np.nanmax(lon))
    lon_km = KM_PER_DEGREE_LON_EQUATOR * np.cos(np.radians((min_lat + max_lat) / 2.0))
    lat_step = cell_km / KM_PER_DEGREE_LAT
    lon_step = cell_km / lon_km
    return Grid(
        min_lat,
        min_lon,
        lat_step,
        lon_step,
        int((max_lat - min_lat) / lat_step) + 1,
        int((max_lon - min_lon) / lon_step) + 1,
        True,
        KM_PER_DEGREE_LAT,
        float(lon_km),
    )


def reference_grid(
    lat: np.ndarray, lon: np.ndarray, columns: int = COMPAT_COLUMNS
) -> Grid:
    """The reference helper's grid: ``columns`` cells west-east, ``int(ratio * columns)`` rows."""
    min_lat, max_lat = float(np.nanmin(lat)), float(np.nanmax(lat))
    min_lon, max_lon = float(np.nanmin(lon)), float(np.nanmax(lon))
    ratio = (max_lat - min_lat) / (max_lon - min_lon) if max_lon != min_lon else 1.0
    rows = max(int(ratio * columns), 1)
    lat_step = (max_lat - min_lat) / rows or 1e-9
    lon_step = (max_lon - min_lon) / columns or 1e-9
    return Grid(min_lat, min_lon, lat_step, lon_step, rows, columns, False, 1.0, 1.0)


# ---------------------------------------------------------------------------- timelines
@dataclass(frozen=True)
class Timelines:
    """Daily 15-minute cell sequences and visit-level cell transitions of one table.

    Attributes:
        days: Shape (days, 96): the cell of each bin.
        day_agent: The individual (0-based code) of each day.
        transitions: Pair codes ``from * cells + to`` of consecutive stays.
    """

    days: np.ndarray
    day_agent: np.ndarray
    transitions: np.ndarray


def _sorted(frame: pd.DataFrame, timezone: str) -> pd.DataFrame:
    """Stays in a canonical order (agent, start, end, POI), times local to ``timezone``."""
    table = pd.DataFrame(
        {
            "agent_id": frame["agent_id"].to_numpy(),
            "start": frame["start"].dt.tz_convert(timezone).dt.tz_localize(None),
            "end": frame["end"].dt.tz_convert(timezone).dt.tz_localize(None),
            "latitude": frame["latitude"].to_numpy(dtype=float),
            "longitude": frame["longitude"].to_numpy(dtype=float),
            "poi": frame["poi_id"].astype(str).to_numpy(),
        }
    )
    return table.sort_values(
        ["agent_id", "start", "end", "poi"], kind="stable"
    ).reset_index(drop=True)


def build_timelines(
    frame: pd.DataFrame,
    grid: Grid,
    timezone: str,
    *,
    random_fill: np.random.Generator | None = None,
) -> Timelines:
    """Lay a stay-point table on the grid and the 96-bin timeline.

    Args:
        frame: Stay points.
        grid: The shared grid.
        timezone: Local time of the bins.
        random_fill: ``None``: leading bins take the first stay's cell. A generator: they take
            a random cell (the reference's fill, seeded here).

    Returns:
        The daily sequences and the transitions.
    """
    table = _sorted(frame, timezone)
    cells = grid.cell_of(table["latitude"].to_numpy(), table["longitude"].to_numpy())
    agent_codes, agent = np.unique(table["agent_id"].to_numpy(), return_inverse=True)
    n_agents = len(agent_codes)
    start = table["start"].to_numpy()
    end = table["end"].to_numpy()
    start_day = start.astype("datetime64[D]")
    end_day = end.astype("datetime64[D]")
    first_day = np.full(n_agents, np.datetime64("9999-12-31"), dtype="datetime64[D]")
    last_day = np.full(n_agents, np.datetime64("0001-01-01"), dtype="datetime64[D]")
    np.minimum.at(first_day, agent, start_day)
    np.maximum.at(last_day, agent, end_day)
    n_days = (last_day - first_day).astype(np.int64) + 1
    offsets = np.concatenate([[0], np.cumsum(n_days * BINS_PER_DAY)])
    total = int(offsets[-1])

    def bin_of(times: np.ndarray, days: np.ndarray) -> np.ndarray:
        day_offset = (days - first_day[agent]).astype(np.int64)
        minutes = (
            (times - days.astype("datetime64[m]")).astype("timedelta64[m]")
        ).astype(np.int64)
        return day_offset * BINS_PER_DAY + minutes // BIN_MINUTES

    start_bin = bin_of(start.astype("datetime64[m]"), start_day)
    end_bin = bin_of(end.astype("datetime64[m]"), end_day)
    end_bin = np.where(end_bin <= start_bin, start_bin + 1, end_bin)
    end_bin = np.minimum(end_bin, n_days[agent] * BINS_PER_DAY)
    valid = cells >= 0
    lengths = np.where(valid, end_bin - start_bin, 0)
    owner = np.full(total, -1, dtype=np.int64)
    stay = np.repeat(np.arange(len(table)), lengths)
    within = np.arange(stay.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    positions = offsets[agent[stay]] + start_bin[stay] + within
    np.maximum.at(owner, positions, stay)  # the later stay wins a shared bin

    covered = owner >= 0
    block = np.repeat(np.arange(n_agents), n_days * BINS_PER_DAY)
    # forward fill: the last covered bin at or before each bin; one of an earlier individual's
    # (or none) marks the individual's leading bins
    last_covered = np.maximum.accumulate(np.where(covered, np.arange(total), -1))
    leading = last_covered < offsets[:-1][block]
    filled = cells[owner[np.maximum(last_covered, 0)]]
    if leading.any():
        if random_fill is None:
            covered_at = np.flatnonzero(covered)
            who, first = np.unique(block[covered_at], return_index=True)
            lead_value = np.zeros(n_agents, dtype=np.int64)
            lead_value[who] = cells[owner[covered_at[first]]]
        else:
            lead_value = random_fill.integers(0, grid.cells, n_agents)
        filled = np.where(leading, lead_value[block], filled)
    days = filled.reshape(-1, BINS_PER_DAY)
    day_agent = np.repeat(np.arange(n_agents), n_days)

    same_agent = agent[1:] == agent[:-1]
    pair_valid = same_agent & valid[1:] & valid[:-1]
    transitions = (
        cells[:-1][pair_valid].astype(np.int64) * grid.cells + cells[1:][pair_valid]
    )
    return Timelines(days, day_agent, transitions)


# ---------------------------------------------------------------------------- quantities
def step_distances(days: np.ndarray, grid: Grid) -> np.ndarray:
    """Distance between the cells of consecutive bins of each day (95 per day)."""
    north, east = grid.centres(days)
    return np.hypot(np.diff(north, axis=1), np.diff(east, axis=1)).ravel()


def gyration_radii(days: np.ndarray, grid: Grid) -> np.ndarray:
    """Radius of gyration of each day's 96 cells: sqrt(mean squared distance to the centroid)."""
    north, east = grid.centres(days)
    return np.sqrt(
        (
            (north - north.mean(axis=1, keepdims=True)) ** 2
            + (east - east.mean(axis=1, keepdims=True)) ** 2
        ).mean(axis=1)
    )


def run_lengths(days: np.ndarray) -> np.ndarray:
    """Lengths (in bins) of the runs of equal cells within each day."""
    change = np.ones(days.shape, dtype=bool)
    change[:, 1:] = days[:, 1:] != days[:, :-1]
    starts = np.flatnonzero(change.ravel())
    return np.diff(np.append(starts, days.size))


def distinct_per_day(days: np.ndarray) -> np.ndarray:
    """Distinct cells in each day."""
    ordered = np.sort(days, axis=1)
    return 1 + (ordered[:, 1:] != ordered[:, :-1]).sum(axis=1)


def global_rank_shares(days: np.ndarray, k: int = RANKS) -> np.ndarray:
    """Visit counts of the ``k`` most visited cells over all bins, largest first, zero-padded."""
    counts = np.unique(days.ravel(), return_counts=True)[1]
    top = np.sort(counts)[::-1][:k].astype(float)
    return np.pad(top, (0, k - top.size))


def individual_rank_shares(
    days: np.ndarray, day_agent: np.ndarray, k: int = RANKS
) -> np.ndarray:
    """Mean over individuals of their visit shares by rank (their ``k`` most visited cells)."""
    agents = np.repeat(day_agent, days.shape[1])
    cells = days.ravel()
    width = int(cells.max()) + 1
    keys, counts = np.unique(
        agents.astype(np.int64) * width + cells, return_counts=True
    )
    owner = keys // width
    order = np.lexsort((-counts, owner))
    owner, counts = owner[order], counts[order].astype(float)
    first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    rank = np.arange(owner.size) - np.repeat(first, np.diff(np.r_[first, owner.size]))
    totals = np.bincount(owner, weights=counts)
    keep = rank < k
    shares = counts[keep] / totals[owner[keep]]
    return np.bincount(rank[keep], weights=shares, minlength=k)[:k] / len(first)


def transition_matrix(transitions: np.ndarray, cells: int) -> scipy.sparse.csr_matrix:
    """The normalised cell-to-cell transition matrix, sparse (``cells x cells``)."""
    keys, counts = np.unique(transitions, return_counts=True)
    rows, columns = np.divmod(keys, cells)
    shares = counts / max(counts.sum(), 1)
    return scipy.sparse.csr_matrix((shares, (rows, columns)), shape=(cells, cells))


def transition_distance(first: np.ndarray, second: np.ndarray, cells: int) -> float:
    """Frobenius norm of the difference of two normalised transition matrices (sparse)."""
    difference = transition_matrix(first, cells) - transition_matrix(second, cells)
    return float(np.sqrt((difference.data**2).sum()))


# ---------------------------------------------------------------------------- evaluate
def _histograms(
    first: np.ndarray, second: np.ndarray, bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Two histograms on ``bins`` equal bins over [0, the larger maximum], top edge included."""
    upper = max(float(first.max(initial=0.0)), float(second.max(initial=0.0))) or 1.0
    edges = np.linspace(0.0, upper, bins + 1)
    return np.histogram(first, edges)[0], np.histogram(second, edges)[0]


def _reference_histogram(values: np.ndarray, upper: float, bins: int) -> np.ndarray:
    """The reference's ``np.histogram(values, np.arange(0, upper, upper / bins))``."""
    return np.histogram(values, np.arange(0, upper, float(upper) / bins))[0]


def evaluate(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    cell_km: float = 0.5,
    compat: Literal["trajgenagent"] | None = None,
    timezone: str | None = None,
    rng: int | np.random.Generator | None = 0,
) -> dict[str, float]:
    """The seven metrics of generated against real stay points (lower is closer).

    Args:
        real: Real stay points.
        generated: Generated stay points.
        cell_km: Grid cell size (0.5 km for NumoSim, 0.7 for MobilitySyn in the paper).
        compat: ``"trajgenagent"`` for the reference helper's binning (then ``cell_km`` is
            unused: its grid has 100 columns).
        timezone: Local time of the 15-minute bins (default: the real table's).
        rng: Seed or generator of the reference's random fill (``compat`` only).

    Returns:
        ``{metric: value}`` for :data:`METRICS`.

    Raises:
        ValueError: If a table is empty or ``compat`` is unknown.
    """
    if compat not in (None, "trajgenagent"):
        raise ValueError(f"unknown compat mode {compat!r} (use 'trajgenagent')")
    if real.empty or generated.empty:
        raise ValueError("evaluate needs non-empty real and generated tables")
    timezone = timezone or str(real["start"].dt.tz)
    lat = np.concatenate(
        [real["latitude"].to_numpy(float), generated["latitude"].to_numpy(float)]
    )
    lon = np.concatenate(
        [real["longitude"].to_numpy(float), generated["longitude"].to_numpy(float)]
    )
    if compat is None:
        grid = km_grid(lat, lon, cell_km)
        first = build_timelines(real, grid, timezone)
        second = build_timelines(generated, grid, timezone)
        result = _default_metrics(first, second, grid)
    else:
        grid = reference_grid(lat, lon)
        generator = (
            rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        )
        first = build_timelines(real, grid, timezone, random_fill=generator)
        second = build_timelines(generated, grid, timezone, random_fill=generator)
        result = _reference_metrics(first, second, grid)
    result["Transition"] = transition_distance(
        first.transitions, second.transitions, grid.cells
    )
    return {name: result[name] for name in METRICS}


def _default_metrics(
    first: Timelines, second: Timelines, grid: Grid
) -> dict[str, float]:
    whole_day = np.arange(1, BINS_PER_DAY + 2) - 0.5  # integer bins 1..96
    return {
        "Distance": jensen_shannon(
            *_histograms(
                step_distances(first.days, grid), step_distances(second.days, grid), 100
            )
        ),
        "G-radius": jensen_shannon(
            *_histograms(
                gyration_radii(first.days, grid), gyration_radii(second.days, grid), 100
            )
        ),
        "Duration": jensen_shannon(
            np.histogram(run_lengths(first.days), whole_day)[0],
            np.histogram(run_lengths(second.days), whole_day)[0],
        ),
        "DailyLoc": jensen_shannon(
            np.histogram(distinct_per_day(first.days), whole_day)[0],
            np.histogram(distinct_per_day(second.days), whole_day)[0],
        ),
        "I-rank": jensen_shannon(
            individual_rank_shares(first.days, first.day_agent),
            individual_rank_shares(second.days, second.day_agent),
        ),
        "G-rank": jensen_shannon(
            global_rank_shares(first.days), global_rank_shares(second.days)
        ),
    }


def _reference_metrics(
    first: Timelines, second: Timelines, grid: Grid
) -> dict[str, float]:
    diagonal = float(
        np.sqrt((grid.rows * grid.lat_step) ** 2 + (grid.columns * grid.lon_step) ** 2)
    )
    location = [global_rank_shares(item.days) for item in (first, second)]
    return {
        "Distance": _reference_jsd(
            *(
                _reference_histogram(step_distances(item.days, grid), diagonal, 100)
                for item in (second, first)
            )
        ),
        "G-radius": _reference_jsd(
            *(
                _reference_histogram(gyration_radii(item.days, grid), diagonal, 100)
                for item in (second, first)
            )
        ),
        "Duration": _reference_jsd(
            *(
                _reference_histogram(
                    run_lengths(item.days) * BIN_MINUTES / 1440.0, 1.0, 48
                )
                for item in (second, first)
            )
        ),
        "DailyLoc": _reference_jsd(
            *(
                _reference_histogram(
                    distinct_per_day(item.days) / BINS_PER_DAY, 1.0, 48
                )
                for item in (second, first)
            )
        ),
        # the reference's I-rank column is its global "Frequency" and G-rank its "Location"
        "I-rank": _reference_jsd(
            *(shares / shares.sum() for shares in reversed(location))
        ),
        "G-rank": _reference_jsd(
            *(shares / (shares.sum() + 1e-9) for shares in reversed(location))
        ),
    }
