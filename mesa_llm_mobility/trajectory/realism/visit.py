"""Visit-level detector in the spirit of ICAD: an autoregressive next-visit model of real days.

ICAD (Sec. IV-C2 of the TrajGenAgent paper) decomposes each visit into location, arrival time
and departure time, learns next-visit regularities from normal trajectories, scores the
location by a top-k deviation and the times by a mode-margin density score, and fuses them,
which lets it say whether a visit is abnormal in space, in time or both. Ours is a small,
transparent proxy of that idea (no neural network), fitted on the real training days of a
:class:`~.frames.DetectionSplit`:

* **location**: P(p | individual, previous POI), an interpolated back-off (Dirichlet smoothing,
  weight ``tau``) from the individual's transitions to their POI frequencies, the population's
  transitions, the population's frequencies and a uniform floor over the POIs seen. The spatial
  deviation is the *top-k margin* ``max(0, log P_k - log P(p))``: zero when the visited POI is
  among the k most likely, else how many nats it falls short of the k-th.
* **times**: densities of the arrival and departure minute given (individual, activity): a
  Gaussian kernel density of the individual's own visits (Silverman's bandwidth, at least 15
  minutes) shrunk towards the population's smoothed 15-minute histogram of the activity. Each
  is scored by its *mode margin* ``log f(mode) - log f(x)``. The travel gap before a visit is
  scored by ``z^2 / 2`` of a log-log regression of gap minutes on distance. The temporal
  deviation is the sum of the three.
* **score**: spatial + temporal deviation (nats below the model's best guess). A component is
  *anomalous* when it exceeds the 95th percentile of that component over the real evaluation
  visits, which gives the attribution ``spatial``, ``temporal``, ``both`` or ``none``.

Per day and per individual, scores are the mean (and max) of their visits' scores.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.realism.frames import (
    DAY_KEY,
    MINUTES_PER_DAY,
    DetectionSplit,
    split_for_detection,
)

DAY_START = "<day start>"
"""The 'previous POI' of a day's first visit."""

ATTRIBUTIONS = ("none", "spatial", "temporal", "both")
ANOMALY_QUANTILE = 0.95
HISTOGRAM_MINUTES = 15.0
MIN_BANDWIDTH_MINUTES = 15.0
GRID = np.arange(0.0, MINUTES_PER_DAY + 1.0, 5.0)


def top_k_margin(probabilities: np.ndarray, observed: float, k: int) -> float:
    """``max(0, log P_k - log P(observed))`` with P_k the k-th largest probability.

    Args:
        probabilities: Probabilities of the candidates (any order; at least the k largest of
            the whole distribution must be among them, else P_k is the smallest given).
        observed: Probability of what happened.
        k: How many top guesses count as a hit (>= 1).

    Returns:
        0 inside the top k, else the shortfall in nats.
    """
    if len(probabilities) == 0:
        return 0.0
    ordered = np.sort(np.asarray(probabilities, dtype=float))[::-1]
    kth = ordered[min(k, len(ordered)) - 1]
    return float(max(0.0, np.log(kth) - np.log(observed)))


@dataclass
class LocationModel:
    """P(POI | individual, previous POI) by interpolated back-off (see the module docstring)."""

    tau: float = 1.0
    agent_previous: dict[tuple[object, object], Counter] = field(default_factory=dict)
    agent: dict[object, Counter] = field(default_factory=dict)
    previous: dict[object, Counter] = field(default_factory=dict)
    population: Counter = field(default_factory=Counter)
    vocabulary: int = 0
    popular: tuple = ()

    @classmethod
    def fit(cls, train: pd.DataFrame, tau: float = 1.0, k: int = 3) -> LocationModel:
        """Count the training visits' transitions and frequencies."""
        model = cls(tau=tau)
        previous = train["previous_poi"].where(train["previous_poi"].notna(), DAY_START)
        for agent, prev, poi in zip(
            train["agent_id"], previous, train["poi_id"], strict=True
        ):
            model.agent_previous.setdefault((agent, prev), Counter())[poi] += 1
            model.agent.setdefault(agent, Counter())[poi] += 1
            model.previous.setdefault(prev, Counter())[poi] += 1
            model.population[poi] += 1
        model.vocabulary = len(model.population)
        model.popular = tuple(poi for poi, _ in model.population.most_common(k))
        return model

    def probabilities(self, agent: object, prev: object, pois: list) -> np.ndarray:
        """P(p | agent, prev) for each POI of ``pois``."""
        empty: Counter = Counter()
        levels = (
            self.population,
            self.previous.get(prev, empty),
            self.agent.get(agent, empty),
            self.agent_previous.get((agent, prev), empty),
        )
        values = np.full(len(pois), 1.0 / (self.vocabulary + 1.0))
        for counts in levels:
            total = sum(counts.values())
            observed = np.array([counts.get(poi, 0) for poi in pois], dtype=float)
            values = (observed + self.tau * values) / (total + self.tau)
        return values

    def deviation(self, agent: object, prev: object, poi: object, k: int) -> float:
        """The top-k margin of ``poi`` as the next visit after ``prev``."""
        empty: Counter = Counter()
        candidates = set(self.popular)
        candidates.update(self.previous.get(prev, empty))
        candidates.update(self.agent.get(agent, empty))
        candidates.discard(poi)
        pois = [poi, *candidates]
        values = self.probabilities(agent, prev, pois)
        return top_k_margin(values, values[0], k)


def _smoothed_histogram(minutes: np.ndarray) -> np.ndarray:
    """Density per minute on 15-minute bins over [0, 1440], lightly smoothed, never zero."""
    bins = int(MINUTES_PER_DAY / HISTOGRAM_MINUTES)
    index = np.clip((minutes // HISTOGRAM_MINUTES).astype(int), 0, bins - 1)
    counts = np.bincount(index, minlength=bins).astype(float)
    kernel = np.array([0.25, 0.5, 0.25])
    counts = np.convolve(np.pad(counts, 1, mode="edge"), kernel, mode="valid")
    counts += 0.01 * max(counts.sum(), 1.0) / bins
    return counts / (counts.sum() * HISTOGRAM_MINUTES)


def _histogram_density(histogram: np.ndarray, minutes: np.ndarray) -> np.ndarray:
    index = np.clip((minutes // HISTOGRAM_MINUTES).astype(int), 0, len(histogram) - 1)
    return histogram[index]


def _kernel_density(samples: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Gaussian kernel density of ``samples`` at ``at`` (Silverman, >= 15-minute bandwidth)."""
    if len(samples) >= 2:
        bandwidth = 1.06 * float(np.std(samples)) * len(samples) ** -0.2
    else:
        bandwidth = 2.0 * MIN_BANDWIDTH_MINUTES
    bandwidth = max(bandwidth, MIN_BANDWIDTH_MINUTES)
    z = (at[:, None] - samples[None, :]) / bandwidth
    return np.exp(-0.5 * z**2).mean(axis=1) / (bandwidth * np.sqrt(2.0 * np.pi))


@dataclass
class TimeModel:
    """Density of one time column (minutes) given (individual, activity)."""

    column: str
    shrink: float = 3.0
    own: dict[tuple[object, str], np.ndarray] = field(default_factory=dict)
    by_activity: dict[str, np.ndarray] = field(default_factory=dict)
    activity_counts: dict[str, int] = field(default_factory=dict)
    overall: np.ndarray = field(default_factory=lambda: np.ones(1))

    @classmethod
    def fit(cls, train: pd.DataFrame, column: str) -> TimeModel:
        """Collect each (individual, activity)'s minutes and the population's histograms."""
        model = cls(column=column)
        minutes = np.minimum(train[column].to_numpy(dtype=float), MINUTES_PER_DAY)
        model.overall = _smoothed_histogram(minutes)
        activities = train["activity"].to_numpy()
        for name in np.unique(activities):
            chosen = minutes[activities == name]
            model.by_activity[str(name)] = _smoothed_histogram(chosen)
            model.activity_counts[str(name)] = len(chosen)
        for (agent, name), group in train.groupby(["agent_id", "activity"]):
            model.own[(agent, str(name))] = np.minimum(
                group[column].to_numpy(dtype=float), MINUTES_PER_DAY
            )
        return model

    def _density(self, agent: object, activity: str, at: np.ndarray) -> np.ndarray:
        count = self.activity_counts.get(activity, 0)
        weight = count / (count + 10.0)
        population = weight * _histogram_density(
            self.by_activity.get(activity, self.overall), at
        ) + (1.0 - weight) * _histogram_density(self.overall, at)
        samples = self.own.get((agent, activity))
        if samples is None:
            return population
        own_weight = len(samples) / (len(samples) + self.shrink)
        return (
            own_weight * _kernel_density(samples, at) + (1.0 - own_weight) * population
        )

    def margins(self, visits: pd.DataFrame) -> np.ndarray:
        """Mode margin ``log f(mode) - log f(x)`` of every visit's minute."""
        result = np.zeros(len(visits))
        minutes = np.minimum(visits[self.column].to_numpy(dtype=float), MINUTES_PER_DAY)
        groups = visits.groupby(["agent_id", "activity"], sort=False).indices
        for (agent, name), rows in groups.items():
            mode = self._density(agent, str(name), GRID).max()
            density = self._density(agent, str(name), minutes[rows])
            result[rows] = np.maximum(0.0, np.log(mode) - np.log(density))
        return result


def _gaps_and_distances(
    visits: pd.DataFrame,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Travel gap minutes and km before each visit, and which visits have a predecessor."""
    same_day = (
        visits["agent_id"].to_numpy()[1:] == visits["agent_id"].to_numpy()[:-1]
    ) & (visits["day"].to_numpy()[1:] == visits["day"].to_numpy()[:-1])
    has_previous = np.concatenate([[False], same_day])
    gaps = np.zeros(len(visits))
    km = np.zeros(len(visits))
    start = visits["start_minute"].to_numpy(dtype=float)
    end = visits["end_minute"].to_numpy(dtype=float)
    lat = visits["latitude"].to_numpy(dtype=float)
    lon = visits["longitude"].to_numpy(dtype=float)
    gaps[1:] = np.maximum(start[1:] - end[:-1], 0.0)
    km[1:] = haversine_km(lat[:-1], lon[:-1], lat[1:], lon[1:])
    return gaps, km, has_previous


@dataclass
class TravelModel:
    """log(gap + 1) = a + b log(km + 0.1) + noise, fitted on real consecutive visits."""

    intercept: float = 0.0
    slope: float = 0.0
    sigma: float = 1.0

    @classmethod
    def fit(cls, train: pd.DataFrame) -> TravelModel:
        """Least squares on the training days' consecutive visits."""
        gaps, km, has_previous = _gaps_and_distances(train)
        if has_previous.sum() < 3:
            return cls()
        x = np.log(km[has_previous] + 0.1)
        y = np.log(gaps[has_previous] + 1.0)
        slope, intercept = np.polyfit(x, y, 1)
        sigma = max(float(np.std(y - (intercept + slope * x))), 0.1)
        return cls(float(intercept), float(slope), sigma)

    def margins(self, visits: pd.DataFrame) -> np.ndarray:
        """``z^2 / 2`` of each visit's travel gap (0 for a day's first visit)."""
        gaps, km, has_previous = _gaps_and_distances(visits)
        z = (
            np.log(gaps + 1.0) - self.intercept - self.slope * np.log(km + 0.1)
        ) / self.sigma
        return np.where(has_previous, 0.5 * z**2, 0.0)


@dataclass(frozen=True)
class NextVisitModel:
    """The fitted location, arrival, departure and travel models (see the module docstring)."""

    location: LocationModel
    arrival: TimeModel
    departure: TimeModel
    travel: TravelModel
    top_k: int

    @classmethod
    def fit(
        cls, train: pd.DataFrame, *, top_k: int = 3, tau: float = 1.0
    ) -> NextVisitModel:
        """Fit every component on the real training visits (a :func:`~.frames.visit_table`)."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        return cls(
            location=LocationModel.fit(train, tau=tau, k=top_k),
            arrival=TimeModel.fit(train, "start_minute"),
            departure=TimeModel.fit(train, "end_minute"),
            travel=TravelModel.fit(train),
            top_k=top_k,
        )

    def deviations(self, visits: pd.DataFrame) -> pd.DataFrame:
        """``spatial`` and ``temporal`` deviations (nats) of each visit, in order."""
        previous = visits["previous_poi"].where(
            visits["previous_poi"].notna(), DAY_START
        )
        spatial = np.array(
            [
                self.location.deviation(agent, prev, poi, self.top_k)
                for agent, prev, poi in zip(
                    visits["agent_id"], previous, visits["poi_id"], strict=True
                )
            ],
            dtype=float,
        )
        temporal = (
            self.arrival.margins(visits)
            + self.departure.margins(visits)
            + self.travel.margins(visits)
        )
        return pd.DataFrame({"spatial": spatial, "temporal": temporal})


VISIT_SCORE_COLUMNS = (
    "agent_id",
    "day",
    "visit",
    "activity",
    "poi_id",
    "source",
    "spatial",
    "temporal",
    "score",
    "attribution",
)


def score_split(split: DetectionSplit, *, top_k: int = 3) -> pd.DataFrame:
    """Score every real evaluation and generated visit of a split.

    Returns:
        :data:`VISIT_SCORE_COLUMNS`, real visits first (``source`` ``"real"`` or
        ``"generated"``).
    """
    model = NextVisitModel.fit(split.train, top_k=top_k)
    frames = []
    for source in ("real", "generated"):
        visits = getattr(split, source)
        scored = visits[["agent_id", "day", "visit", "activity", "poi_id"]].copy()
        scored["source"] = source
        deviations = model.deviations(visits)
        scored["spatial"] = deviations["spatial"].to_numpy()
        scored["temporal"] = deviations["temporal"].to_numpy()
        frames.append(scored)
    scored = pd.concat(frames, ignore_index=True)
    scored["score"] = scored["spatial"] + scored["temporal"]
    real = scored["source"] == "real"
    flags = []
    for component in ("spatial", "temporal"):
        threshold = float(np.quantile(scored.loc[real, component], ANOMALY_QUANTILE))
        flags.append((scored[component] > threshold).to_numpy())
    scored["attribution"] = np.array(ATTRIBUTIONS, dtype=object)[
        flags[0].astype(int) + 2 * flags[1].astype(int)
    ]
    return scored[list(VISIT_SCORE_COLUMNS)]


def visit_scores(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    top_k: int = 3,
    include_real: bool = False,
) -> pd.DataFrame:
    """Anomaly score and attribution of every generated visit (the visit-level detector).

    Args:
        real: Real stay points (the detector learns from part of each individual's days).
        generated: Generated stay points of the same individuals.
        seed: Seed of the split (:func:`~.frames.split_for_detection`).
        top_k: Guesses that count as a hit for the location.
        include_real: Also return the scored real evaluation visits.

    Returns:
        One row per visit: ``agent_id, day`` (a date), ``visit`` (0-based index in the day),
        ``activity, poi_id, source, spatial, temporal, score`` and ``attribution`` (one of
        ``none, spatial, temporal, both``).
    """
    scored = score_split(split_for_detection(real, generated, seed=seed), top_k=top_k)
    if not include_real:
        scored = scored[scored["source"] == "generated"].reset_index(drop=True)
    return scored


DAY_SCORE_COLUMNS = (
    "agent_id",
    "day",
    "source",
    "visits",
    "score_mean",
    "score_max",
    "anomalous_share",
    "attribution",
    "percentile",
)


def aggregate_days(scored: pd.DataFrame) -> pd.DataFrame:
    """Per (agent, day, source): the mean and max visit score and the main attribution.

    ``attribution`` is the most frequent attribution among the day's anomalous visits (``none``
    without any); ``percentile`` is the share of real days whose mean score is lower.
    """
    keys = [*DAY_KEY, "source"]
    grouped = scored.groupby(keys, sort=False)
    days = grouped.agg(
        visits=("score", "size"),
        score_mean=("score", "mean"),
        score_max=("score", "max"),
        anomalous_share=(
            "attribution",
            lambda values: float((values != "none").mean()),
        ),
    ).reset_index()
    flagged = scored[scored["attribution"] != "none"]
    main = (
        flagged.groupby(keys, sort=False)["attribution"]
        .agg(lambda values: values.value_counts().index[0])
        .rename("attribution")
    )
    days = days.merge(main.reset_index(), on=keys, how="left")
    days["attribution"] = days["attribution"].fillna("none")
    reference = np.sort(days.loc[days["source"] == "real", "score_mean"].to_numpy())
    days["percentile"] = np.searchsorted(
        reference, days["score_mean"], side="left"
    ) / max(len(reference), 1)
    return days[list(DAY_SCORE_COLUMNS)]


def day_scores(
    real: pd.DataFrame,
    generated: pd.DataFrame,
    *,
    seed: int = 0,
    top_k: int = 3,
    include_real: bool = False,
) -> pd.DataFrame:
    """The visit detector's score of every generated day (for the app).

    Args:
        real: Real stay points.
        generated: Generated stay points of the same individuals.
        seed: Seed of the split.
        top_k: Guesses that count as a hit for the location.
        include_real: Also return the real evaluation days.

    Returns:
        :data:`DAY_SCORE_COLUMNS`: per ``agent_id, day``: ``visits``, ``score_mean``,
        ``score_max``, ``anomalous_share`` (visits flagged spatial, temporal or both),
        ``attribution`` (the day's main one) and ``percentile`` (share of real days with a
        lower mean score: 0.5 is typical, near 1 is unusual).
    """
    scored = score_split(split_for_detection(real, generated, seed=seed), top_k=top_k)
    days = aggregate_days(scored)
    if not include_real:
        days = days[days["source"] == "generated"].reset_index(drop=True)
    return days
