"""Evidence profiles (the paper's eq. 4) and the similar-individual pool.

From each individual's history :func:`build_evidence` derives the profile

    Pi_u = { pi_u(a), pi_u(a' | a), pi_u(p | a), mu_u(delta | a),
             mu_u(l | a -> a'), mu_u(v | a -> a'), mu_u(t1_s | w) }

activity likelihoods, activity transitions, POI preferences per activity, dwell-time priors per
activity, transition distance (Haversine km) and speed (km/h, distance over the observed gap
between consecutive visits of a day) priors per activity pair, and first-start times per weekday.
The evidence of a target date is the subset of days with the same weekday, else the same day type
(weekday / weekend), else all days (:meth:`IndividualEvidence.evidence_days`).

The similar-individual pool ranks individuals by the distance between their mobility signatures
(spatial scale, daily rhythm, activity and transition distributions) and keeps the top K
(:func:`similar_individuals`). Optionally (``colocation_weight > 0``, off by default) the
co-location signal of the reference code (``colocation_extract.py``, ``peer_agents_match.py``)
brings people who were at the same POI at the same time closer: :func:`colocations` counts, for
every pair of individuals, their stays at one POI that overlap by at least two minutes, and a
pair's signature distance is lowered by ``colocation_weight * log1p(count) / 5`` (the
reference's score of the signal, ``log1p(count) / 5`` with weight 2 among its nine scores).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.activities import ACTIVITIES, ACTIVITY_INDEX
from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.staypoints import ROW_COLUMN, StayPointError

N_ACTIVITIES = len(ACTIVITIES)
END = N_ACTIVITIES
"""The end-of-day state of the activity Markov model (after the last activity)."""

WEEKDAYS = (
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
)


def day_type(weekday: int) -> str:
    """``"weekend"`` for Saturday (5) and Sunday (6), else ``"weekday"``."""
    return "weekend" if weekday >= 5 else "weekday"


@dataclass
class IndividualEvidence:
    """One individual's history, as the evidence profile Pi_u.

    Attributes:
        agent_id: The individual.
        chains: Each history day's activity codes, in order.
        weekdays: Each history day's weekday (0 = Monday).
        first_starts: Each history day's first start (minutes after midnight).
        day_ends: Each history day's last end (minutes after that day's midnight; 1440 for a
            day whose last stay lasts until midnight).
        activity_probs: pi_u(a), shape (16,).
        transition_counts: Counts of a -> a' within days, shape (16, 16).
        poi_preferences: a -> (POI indices, pi_u(p | a)).
        durations: a -> observed dwell minutes of the visits between the day's first and last.
        first_durations: a -> observed dwell minutes of the day's first visits.
        final_durations: a -> observed dwell minutes of the day's last visits.
        pair_distance_km: (a, a') -> mean transition distance.
        pair_speed_kmh: (a, a') -> mean transition speed.
        mean_distance_km: Mean transition distance over all pairs (the default).
    """

    agent_id: object
    chains: list[np.ndarray]
    weekdays: np.ndarray
    first_starts: np.ndarray
    day_ends: np.ndarray
    activity_probs: np.ndarray
    transition_counts: np.ndarray
    poi_preferences: dict[int, tuple[np.ndarray, np.ndarray]]
    durations: dict[int, np.ndarray]
    first_durations: dict[int, np.ndarray]
    final_durations: dict[int, np.ndarray]
    pair_distance_km: dict[tuple[int, int], float]
    pair_speed_kmh: dict[tuple[int, int], float]
    mean_distance_km: float
    _markov_cache: dict[int, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False
    )
    _days_cache: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def evidence_days(self, weekday: int) -> np.ndarray:
        """Indices of the evidence days for a target weekday.

        Same weekday, else same day type, else all days (the paper's prioritised policy).
        """
        cached = self._days_cache.get(weekday)
        if cached is not None:
            return cached
        days = np.flatnonzero(self.weekdays == weekday)
        if not days.size:
            weekend = self.weekdays >= 5
            typed = np.flatnonzero(weekend if weekday >= 5 else ~weekend)
            days = typed if typed.size else np.arange(len(self.chains))
        self._days_cache[weekday] = days
        return days

    def markov(self, weekday: int) -> tuple[np.ndarray, np.ndarray]:
        """The weekday-conditioned activity Markov model of the evidence days.

        Returns:
            ``(start, transitions)``: start probabilities, shape (16,), and transition
            probabilities with the end state, shape (16, 17); no self-transitions (the
            chains' no-adjacent-duplicate rule). A row without successors ends the day.
        """
        cached = self._markov_cache.get(weekday)
        if cached is not None:
            return cached
        days = self.evidence_days(weekday)
        start = np.zeros(N_ACTIVITIES)
        counts = np.zeros((N_ACTIVITIES, N_ACTIVITIES + 1))
        for day in days:
            chain = self.chains[day]
            start[chain[0]] += 1
            np.add.at(counts, (chain[:-1], chain[1:]), 1)
            counts[chain[-1], END] += 1
        np.fill_diagonal(counts[:, :N_ACTIVITIES], 0.0)
        empty = counts.sum(axis=1) == 0
        counts[empty, END] = 1.0
        result = (start / start.sum(), counts / counts.sum(axis=1, keepdims=True))
        self._markov_cache[weekday] = result
        return result

    def chain_lengths(self, weekday: int) -> np.ndarray:
        """Activities per evidence day of a weekday (the visit counts the chain should match)."""
        return np.array(
            [len(self.chains[day]) for day in self.evidence_days(weekday)],
            dtype=np.int64,
        )

    def duration_prior(self, activity: int, position: str = "middle") -> float:
        """Mean dwell minutes of an activity at a position (60 when never observed)."""
        samples = self.duration_samples(activity, position)
        return float(samples.mean()) if samples.size else 60.0

    def duration_samples(self, activity: int, position: str = "middle") -> np.ndarray:
        """mu_u(delta | a): observed dwell minutes of an activity.

        Args:
            activity: The activity code.
            position: ``"first"``, ``"middle"`` or ``"final"`` visit of the day: the day's
                first visit's dwell is its departure time and the last one's runs into the
                night, so each position has its own samples; without samples at the position,
                the middle ones, then any.

        Returns:
            The samples (empty if the activity was never observed).
        """
        by_position = {
            "first": self.first_durations,
            "middle": self.durations,
            "final": self.final_durations,
        }
        samples = by_position[position].get(activity)
        for fallback in (self.durations, self.first_durations, self.final_durations):
            if samples is not None and samples.size:
                break
            samples = fallback.get(activity)
        return samples if samples is not None else np.zeros(0)


@dataclass
class EvidenceBook:
    """Every individual's evidence, the POI coordinates and the similar-individual pool.

    Attributes:
        individuals: agent id -> evidence.
        poi_ids: POI ids, indexed like the coordinate arrays.
        poi_lat: Latitudes.
        poi_lon: Longitudes.
        peers: agent id -> the top-K most similar other individuals, most similar first.
        timezone: The history's time zone.
    """

    individuals: dict[object, IndividualEvidence]
    poi_ids: np.ndarray
    poi_lat: np.ndarray
    poi_lon: np.ndarray
    peers: dict[object, tuple[object, ...]]
    timezone: str

    def peer_preferences(
        self, agent_id: object, activity: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """P_sim(p | a): the peers' POI preferences for an activity.

        Averaged over the peers that have the activity (the reference's rule).

        Returns:
            ``(POI indices, probabilities)`` (empty arrays if no peer has the activity).
        """
        pools = [
            self.individuals[peer].poi_preferences[activity]
            for peer in self.peers.get(agent_id, ())
            if activity in self.individuals[peer].poi_preferences
        ]
        if not pools:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        mixed: dict[int, float] = {}
        for pois, probs in pools:
            for poi, prob in zip(pois.tolist(), probs.tolist(), strict=True):
                mixed[poi] = mixed.get(poi, 0.0) + prob
        order = sorted(mixed)
        return (
            np.array(order, dtype=np.int64),
            np.array([mixed[poi] for poi in order]) / len(pools),
        )


def _grouped_arrays(keys: pd.DataFrame, values: np.ndarray) -> dict[tuple, np.ndarray]:
    """Group ``values`` by the rows of ``keys`` (a dict of key tuple -> array)."""
    order = np.lexsort([keys[column].to_numpy() for column in reversed(keys.columns)])
    sorted_keys = keys.iloc[order].to_numpy()
    sorted_values = values[order]
    if not len(order):
        return {}
    change = np.flatnonzero((sorted_keys[1:] != sorted_keys[:-1]).any(axis=1)) + 1
    bounds = np.concatenate([[0], change, [len(order)]])
    return {
        tuple(sorted_keys[bounds[i]]): sorted_values[bounds[i] : bounds[i + 1]]
        for i in range(len(bounds) - 1)
    }


def _by_agent(groups: dict[tuple, np.ndarray]) -> dict[int, dict[int, np.ndarray]]:
    """``{(agent, activity): values}`` -> ``{agent: {activity: values}}``."""
    nested: dict[int, dict[int, np.ndarray]] = {}
    for (agent, activity), values in groups.items():
        nested.setdefault(int(agent), {})[int(activity)] = values
    return nested


def build_evidence(
    history: pd.DataFrame,
    *,
    peers: int = 10,
    min_history_days: int = 1,
    colocation_weight: float = 0.0,
) -> EvidenceBook:
    """Build every individual's evidence profile and the similar-individual pool.

    Args:
        history: A valid stay-point table (sorted by agent and start, as loaders return).
        peers: K of the similar-individual pool.
        min_history_days: Individuals with fewer history days are refused.
        colocation_weight: Weight of the co-location signal in the peer matching (0: off).

    Returns:
        The evidence book.

    Raises:
        StayPointError: If an individual has fewer than ``min_history_days`` history days,
            naming the file, the individual's first row and the field ``agent_id``.
    """
    if history.empty:
        raise StayPointError(f"{history.attrs.get('source', 'history')}: no stays")
    timezone = str(history["start"].dt.tz)
    poi_ids, poi_index = np.unique(history["poi_id"].to_numpy(), return_inverse=True)
    first_rows = ~pd.Series(poi_index).duplicated().to_numpy()
    order = np.argsort(poi_index[first_rows], kind="stable")
    poi_lat = history["latitude"].to_numpy(dtype=float)[first_rows][order]
    poi_lon = history["longitude"].to_numpy(dtype=float)[first_rows][order]

    agents = history["agent_id"].to_numpy()
    dates = history["start"].dt.normalize()
    agent_codes, agent_index = np.unique(agents, return_inverse=True)
    date_index = pd.factorize(dates)[0]
    day_key = agent_index.astype(np.int64) * (date_index.max() + 1) + date_index
    activity = history["activity"].map(ACTIVITY_INDEX).to_numpy(dtype=np.int64)
    start_min = (history["start"] - dates).dt.total_seconds().to_numpy() / 60.0
    duration = (history["end"] - history["start"]).dt.total_seconds().to_numpy() / 60.0
    gap_h = (
        history["start"].shift(-1) - history["end"]
    ).dt.total_seconds().to_numpy() / 3600.0
    same_day = np.zeros(len(history), dtype=bool)
    same_day[:-1] = day_key[1:] == day_key[:-1]
    next_index = np.minimum(np.arange(len(history)) + 1, len(history) - 1)
    distance = haversine_km(
        poi_lat[poi_index],
        poi_lon[poi_index],
        poi_lat[poi_index[next_index]],
        poi_lon[poi_index[next_index]],
    )
    is_first = np.ones(len(history), dtype=bool)
    is_first[1:] = day_key[1:] != day_key[:-1]
    is_last = ~same_day

    n_days = pd.Series(day_key).groupby(agent_index).nunique().to_numpy()
    too_few = np.flatnonzero(n_days < min_history_days)
    if too_few.size:
        who = int(too_few[0])
        position = int(np.flatnonzero(agent_index == who)[0])
        row = (
            int(history[ROW_COLUMN].iloc[position])
            if ROW_COLUMN in history.columns
            else position + 1
        )
        raise StayPointError(
            f"{history.attrs.get('source', 'history')}: row {row}, field agent_id: individual "
            f"{agent_codes[who]!r} has {int(n_days[who])} history day(s); at least "
            f"{min_history_days} are needed"
        )

    frame = pd.DataFrame({"agent": agent_index, "activity": activity, "poi": poi_index})
    poi_counts = frame.groupby(["agent", "activity", "poi"], sort=True).size()
    preferences: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
    for (agent, act), counts in poi_counts.groupby(level=[0, 1], sort=False):
        pois = counts.index.get_level_values(2).to_numpy()
        values = counts.to_numpy(dtype=float)
        preferences.setdefault(int(agent), {})[int(act)] = (pois, values / values.sum())

    keys = pd.DataFrame({"agent": agent_index, "activity": activity})
    middle = ~is_last & ~is_first
    durations = _by_agent(_grouped_arrays(keys[middle], duration[middle]))
    firsts = _by_agent(
        _grouped_arrays(keys[is_first & ~is_last], duration[is_first & ~is_last])
    )
    finals = _by_agent(_grouped_arrays(keys[is_last], duration[is_last]))
    pair_frame = pd.DataFrame(
        {
            "agent": agent_index[same_day],
            "a": activity[same_day],
            "b": activity[next_index][same_day],
            "distance": distance[same_day],
            "speed": np.where(
                (gap_h[same_day] > 0) & (distance[same_day] > 0),
                distance[same_day]
                / np.where(gap_h[same_day] > 0, gap_h[same_day], 1.0),
                np.nan,
            ),
        }
    )
    pair_means = pair_frame.groupby(["agent", "a", "b"], sort=False)[
        ["distance", "speed"]
    ].mean()
    mean_distance = pair_frame.groupby("agent")["distance"].mean()

    day_frame = pd.DataFrame(
        {"day": day_key, "agent": agent_index, "activity": activity, "start": start_min}
    )
    chain_groups = _grouped_arrays(day_frame[["agent", "day"]], activity)
    weekday_of_day = (
        pd.Series(dates.dt.day_of_week.to_numpy(), index=day_key)
        .groupby(level=0)
        .first()
    )
    first_start_of_day = pd.Series(start_min, index=day_key).groupby(level=0).first()
    end_min = (history["end"] - dates).dt.total_seconds().to_numpy() / 60.0
    day_end_of_day = pd.Series(end_min, index=day_key).groupby(level=0).last()
    # chains keep their within-day order: _grouped_arrays' lexsort is stable
    by_agent_days: dict[int, list[int]] = {}
    for agent, day in chain_groups:
        by_agent_days.setdefault(int(agent), []).append(int(day))

    individuals: dict[object, IndividualEvidence] = {}
    pair_by_agent: dict[int, dict] = {}
    for (agent, a, b), row in pair_means.iterrows():
        store = pair_by_agent.setdefault(int(agent), {"distance": {}, "speed": {}})
        store["distance"][(int(a), int(b))] = float(row["distance"])
        if np.isfinite(row["speed"]):
            store["speed"][(int(a), int(b))] = float(row["speed"])
    act_counts = np.zeros((len(agent_codes), N_ACTIVITIES))
    np.add.at(act_counts, (agent_index, activity), 1)
    transitions = np.zeros((len(agent_codes), N_ACTIVITIES, N_ACTIVITIES))
    np.add.at(
        transitions,
        (agent_index[same_day], activity[same_day], activity[next_index][same_day]),
        1,
    )
    for agent, agent_id in enumerate(agent_codes.tolist()):
        days = by_agent_days.get(agent, [])
        pairs = pair_by_agent.get(agent, {"distance": {}, "speed": {}})
        individuals[agent_id] = IndividualEvidence(
            agent_id=agent_id,
            chains=[chain_groups[(agent, day)] for day in days],
            weekdays=weekday_of_day.loc[days].to_numpy(dtype=np.int64),
            first_starts=first_start_of_day.loc[days].to_numpy(dtype=float),
            day_ends=day_end_of_day.loc[days].to_numpy(dtype=float),
            activity_probs=act_counts[agent] / act_counts[agent].sum(),
            transition_counts=transitions[agent],
            poi_preferences=preferences.get(agent, {}),
            durations=durations.get(agent, {}),
            first_durations=firsts.get(agent, {}),
            final_durations=finals.get(agent, {}),
            pair_distance_km=pairs["distance"],
            pair_speed_kmh=pairs["speed"],
            mean_distance_km=float(mean_distance.get(agent, 3.0)),
        )
    signatures = mobility_signatures(
        individuals, poi_lat, poi_lon, history, agent_index, poi_index
    )
    bonus = None
    if colocation_weight > 0:
        bonus = colocation_weight * np.log1p(colocations(history, agent_codes)) / 5.0
    pool = similar_individuals(signatures, list(individuals), peers, bonus=bonus)
    return EvidenceBook(individuals, poi_ids, poi_lat, poi_lon, pool, timezone)


def mobility_signatures(
    individuals: dict[object, IndividualEvidence],
    poi_lat: np.ndarray,
    poi_lon: np.ndarray,
    history: pd.DataFrame,
    agent_index: np.ndarray,
    poi_index: np.ndarray,
) -> np.ndarray:
    """One row per individual: standardised spatial scale and rhythm, then distributions.

    Columns: log radius of gyration (km) and log mean transition distance, mean first start
    and mean visits per day (each z-scored over individuals), then the square roots of the
    activity distribution and of the transition distribution (so that Euclidean distance
    between those parts is the Hellinger distance, times sqrt 2).
    """
    n = len(individuals)
    lat = poi_lat[poi_index]
    lon = poi_lon[poi_index]
    count = np.bincount(agent_index, minlength=n).astype(float)
    centre_lat = np.bincount(agent_index, weights=lat, minlength=n) / count
    centre_lon = np.bincount(agent_index, weights=lon, minlength=n) / count
    spread = haversine_km(lat, lon, centre_lat[agent_index], centre_lon[agent_index])
    gyration = np.sqrt(np.bincount(agent_index, weights=spread**2, minlength=n) / count)
    evidence = list(individuals.values())
    scalars = np.column_stack(
        [
            np.log1p(gyration),
            np.log1p([item.mean_distance_km for item in evidence]),
            [item.first_starts.mean() for item in evidence],
            [count[i] / max(len(item.chains), 1) for i, item in enumerate(evidence)],
        ]
    )
    std = scalars.std(axis=0)
    scalars = (scalars - scalars.mean(axis=0)) / np.where(std > 0, std, 1.0)
    activity = np.sqrt(np.array([item.activity_probs for item in evidence]))
    transition = np.array([item.transition_counts.ravel() for item in evidence])
    totals = transition.sum(axis=1, keepdims=True)
    transition = np.sqrt(transition / np.where(totals > 0, totals, 1.0))
    return np.hstack([scalars, activity, transition])


COLOCATION_OVERLAP_S = 120.0
"""Least overlap (seconds) of two stays at one POI that makes a co-location (the reference's)."""


def colocations(
    history: pd.DataFrame,
    agent_codes: np.ndarray,
    *,
    overlap_s: float = COLOCATION_OVERLAP_S,
) -> np.ndarray:
    """Co-location counts of every pair of individuals (the reference's ``colocation_extract``).

    Two stays of different individuals at the same POI co-locate when they overlap in time by
    at least ``overlap_s``; a pair's count is the number of such pairs of stays.

    Args:
        history: Stay points.
        agent_codes: The individuals, in the order of the result's rows and columns.
        overlap_s: Least overlap in seconds.

    Returns:
        A symmetric (n, n) count matrix with a zero diagonal.
    """
    n = len(agent_codes)
    counts = np.zeros((n, n))
    agent = np.searchsorted(agent_codes, history["agent_id"].to_numpy())
    epoch = pd.Timestamp(0, tz="UTC")
    start = (history["start"] - epoch).dt.total_seconds().to_numpy()
    end = (history["end"] - epoch).dt.total_seconds().to_numpy()
    for rows in (
        pd.Series(np.arange(len(history)))
        .groupby(history["poi_id"].to_numpy())
        .indices.values()
    ):
        if rows.size < 2:
            continue
        overlap = np.minimum(end[rows, None], end[None, rows]) - np.maximum(
            start[rows, None], start[None, rows]
        )
        first, second = np.nonzero(np.triu(overlap >= overlap_s, k=1))
        a, b = agent[rows[first]], agent[rows[second]]
        other = a != b
        np.add.at(counts, (a[other], b[other]), 1.0)
        np.add.at(counts, (b[other], a[other]), 1.0)
    return counts


def similar_individuals(
    signatures: np.ndarray,
    agent_ids: list[object],
    k: int,
    *,
    block: int = 1024,
    bonus: np.ndarray | None = None,
) -> dict[object, tuple[object, ...]]:
    """The top-``k`` most similar individuals of each (smallest signature distance, not self).

    Ties are broken by position (stable sort). Computed in blocks of rows, so memory stays
    ``block x n``. ``bonus`` (n, n), when given, is subtracted from the squared distances'
    square roots: a larger bonus makes a pair more similar (the co-location signal).
    """
    n = len(agent_ids)
    k = min(k, n - 1)
    if k <= 0:
        return dict.fromkeys(agent_ids, ())
    squared = (signatures**2).sum(axis=1)
    pool: dict[object, tuple[object, ...]] = {}
    for first in range(0, n, block):
        rows = signatures[first : first + block]
        distance = (
            squared[first : first + block, None]
            + squared[None, :]
            - 2.0 * rows @ signatures.T
        )
        if bonus is not None:
            distance = np.sqrt(np.maximum(distance, 0.0)) - bonus[first : first + block]
        distance[np.arange(len(rows)), np.arange(first, first + len(rows))] = np.inf
        nearest = np.argsort(distance, axis=1, kind="stable")[:, :k]
        for offset, row in enumerate(nearest):
            pool[agent_ids[first + offset]] = tuple(agent_ids[j] for j in row)
    return pool
