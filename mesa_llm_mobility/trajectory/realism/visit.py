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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.realism.features import Profiles
from mesa_llm_mobility.trajectory.realism.frames import (
    DAY_KEY,
    DetectionSplit,
    split_for_detection,
)

DAY_START = "<day start>"
"""The 'previous POI' of a day's first visit."""

_UNSEEN = (
    object()
)  # a token no context has seen: the probability of every non-candidate

ATTRIBUTIONS = ("none", "spatial", "temporal", "both")
ANOMALY_QUANTILE = 0.95


def top_k_deviation(
    probabilities: np.ndarray, rest_mass: float, rest_count: int, k: int
) -> float:
    """Zero inside the top k, else the surprise ``-log P(observed)`` beyond the entropy.

    The entropy ``H`` is the surprise a typical draw of the distribution has, so the deviation
    ``max(0, -log P(x) - H)`` is large for an unlikely choice where the next visit is
    predictable (someone else's home) and small where many places are about equally likely.

    Args:
        probabilities: P of what happened (first) and of the other candidates.
        rest_mass: P of all the tokens that are not candidates together (for the entropy
            they count as equally likely, which overstates it a little).
        rest_count: How many such tokens there are.
        k: How many top guesses count as a hit (>= 1).

    Returns:
        The deviation in nats (>= 0).
    """
    probabilities = np.asarray(probabilities, dtype=float)
    rest_probability = rest_mass / rest_count if rest_count > 0 else 0.0
    observed = float(probabilities[0])
    ordered = np.sort(probabilities)[::-1]
    kth = ordered[k - 1] if len(ordered) >= k else rest_probability
    if observed >= kth:
        return 0.0
    entropy = -float(np.sum(probabilities * np.log(probabilities)))
    if rest_count > 0 and rest_probability > 0:
        entropy -= rest_count * rest_probability * np.log(rest_probability)
    return float(max(0.0, -np.log(observed) - entropy))


@dataclass
class BackoffModel:
    """P(token | contexts) by interpolated back-off over nested contexts (Dirichlet smoothing).

    ``P_j(t) = (c_j(t) + tau P_{j-1}(t)) / (n_j + tau)`` from the most general context (j = 0)
    to the most specific, starting from a floor: uniform ``1 / (V + 1)`` over the ``V`` tokens
    seen with the most general context, or a given function of the contexts and tokens.
    """

    tau: float = 1.0
    k: int = 3
    levels: list[dict[object, Counter]] = field(default_factory=list)
    popular: dict[object, tuple] = field(default_factory=dict)
    floor: Callable[[tuple, list], np.ndarray] | None = None

    @classmethod
    def fit(
        cls,
        contexts: list[list[object]],
        tokens: list[object],
        *,
        tau: float,
        k: int,
        floor: Callable[[tuple, list], np.ndarray] | None = None,
    ) -> BackoffModel:
        """Count ``tokens`` under each level's context (``contexts[j][i]`` of token ``i``)."""
        model = cls(tau=tau, k=k, levels=[{} for _ in contexts], floor=floor)
        for level, keys in zip(model.levels, contexts, strict=True):
            for key, token in zip(keys, tokens, strict=True):
                level.setdefault(key, Counter())[token] += 1
        model.popular = {
            key: tuple(token for token, _ in counts.most_common(k))
            for key, counts in model.levels[0].items()
        }
        return model

    def probabilities(self, keys: tuple, tokens: list) -> np.ndarray:
        """P(token | the contexts ``keys``, one per level) of each of ``tokens``."""
        empty: Counter = Counter()
        levels = zip(self.levels, keys, strict=True)
        if self.floor is not None:  # the floor replaces the most general level
            values = self.floor(keys, tokens)
            next(levels)
        else:
            general = self.levels[0].get(keys[0], empty)
            values = np.full(len(tokens), 1.0 / (len(general) + 1.0))
        for level, key in levels:
            counts = level.get(key, empty)
            total = counts.total()
            observed = np.array([counts.get(token, 0) for token in tokens], dtype=float)
            values = (observed + self.tau * values) / (total + self.tau)
        return values

    def deviation(self, keys: tuple, token: object) -> float:
        """The top-k deviation of ``token`` in its contexts (:func:`top_k_deviation`)."""
        empty: Counter = Counter()
        candidates = set(self.popular.get(keys[0], ()))
        for level, key in zip(self.levels[1:], keys[1:], strict=True):
            candidates.update(level.get(key, empty))
        candidates.discard(token)
        tokens = [token, *candidates]
        values = self.probabilities(keys, tokens)
        vocabulary = len(self.levels[0].get(keys[0], empty)) + 1
        return top_k_deviation(
            values,
            max(1.0 - float(values.sum()), 0.0),
            max(vocabulary - len(tokens), 0),
            self.k,
        )

    def deviations(self, contexts: list[list[object]], tokens: list) -> np.ndarray:
        """:meth:`deviation` of every token (``contexts`` as in :meth:`fit`)."""
        return np.array(
            [
                self.deviation(keys, token)
                for keys, token in zip(zip(*contexts, strict=True), tokens, strict=True)
            ],
            dtype=float,
        )


@dataclass
class DistanceFloor:
    """The location model's most general level: popular places near home are likelier.

    ``P_0(p | u, a) = P_pop(p | a) exp(-d(p, home_u) / R_u) / Z_{u,a}``, with ``P_pop`` the
    population's visit shares of the activity's POIs (plus one unseen POI), ``R_u`` the root mean
    square distance of u's training visits from their home (at least 1 km) and ``Z`` the sum
    over the activity's POIs: a place u never went to is likelier near where u lives than
    across the city, as it is in real data.
    """

    coordinates: dict[object, tuple[float, float]]
    counts: dict[str, Counter]
    home: dict[object, tuple[float, float]]
    radius_km: dict[object, float]
    normaliser: dict[tuple[object, str], float] = field(default_factory=dict)

    @classmethod
    def fit(cls, train: pd.DataFrame) -> DistanceFloor:
        """POI coordinates and visit counts, homes and radii of the training visits."""
        profiles = Profiles.fit(train)
        pois = train.drop_duplicates("poi_id")
        coordinates = dict(
            zip(
                pois["poi_id"],
                zip(pois["latitude"], pois["longitude"], strict=True),
                strict=True,
            )
        )
        counts = {
            str(name): Counter(group.tolist())
            for name, group in train.groupby("activity")["poi_id"]
        }
        radius = {}
        for agent, group in train.groupby("agent_id"):
            lat, lon = profiles.home[agent]
            distance = haversine_km(lat, lon, group["latitude"], group["longitude"])
            radius[agent] = max(float(np.sqrt(np.mean(distance**2))), 1.0)
        return cls(coordinates, counts, profiles.home, radius)

    def learn_coordinates(self, visits: pd.DataFrame) -> None:
        """Add the coordinates of POIs met while scoring (a generated POI may be new)."""
        for poi, lat, lon in zip(
            visits["poi_id"], visits["latitude"], visits["longitude"], strict=True
        ):
            self.coordinates.setdefault(poi, (lat, lon))

    def _weights(self, agent: object, tokens: list, activity: str) -> np.ndarray:
        """``P_pop(p | a) exp(-d / R_u)`` of each token, before normalising."""
        counts = self.counts.get(activity, Counter())
        total = counts.total()
        shares = np.array(
            [
                (counts.get(token, 0) + 1.0) / (total + len(counts) + 1.0)
                for token in tokens
            ]
        )
        points = np.array(
            [self.coordinates.get(token, (np.nan, np.nan)) for token in tokens],
            dtype=float,
        ).reshape(-1, 2)
        home_lat, home_lon = self.home.get(agent, (np.nan, np.nan))
        if np.isnan(home_lat):
            return shares
        distance = haversine_km(home_lat, home_lon, points[:, 0], points[:, 1])
        closeness = np.exp(-distance / self.radius_km[agent])
        typical = float(np.nanmean(closeness)) if np.isfinite(closeness).any() else 1.0
        return shares * np.nan_to_num(closeness, nan=typical)

    def __call__(self, keys: tuple, tokens: list) -> np.ndarray:
        """``P_0`` of ``tokens`` (location contexts: ``keys[2] = (agent, activity)``)."""
        agent, activity = keys[2]
        normaliser = self.normaliser.get((agent, activity))
        if normaliser is None:
            known = list(self.counts.get(activity, Counter()))
            weights = self._weights(agent, known, activity)
            unseen = 1.0 / (
                sum(self.counts.get(activity, Counter()).values()) + len(known) + 1.0
            )
            normaliser = float(weights.sum()) + unseen * (
                float(weights.mean()) if known else 1.0
            )
            self.normaliser[(agent, activity)] = normaliser
        return self._weights(agent, tokens, activity) / normaliser


def _location_contexts(visits: pd.DataFrame) -> list[list[object]]:
    """Contexts of a visit's POI: activity; + previous POI; + individual; + both."""
    agents = visits["agent_id"].tolist()
    activities = visits["activity"].tolist()
    previous = visits["previous_poi"].where(visits["previous_poi"].notna(), DAY_START)
    previous = previous.tolist()
    return [
        activities,
        list(zip(activities, previous, strict=True)),
        list(zip(agents, activities, strict=True)),
        list(zip(agents, activities, previous, strict=True)),
    ]


def _activity_contexts(visits: pd.DataFrame) -> list[list[object]]:
    """Contexts of a visit's activity: none; previous activity; individual; both."""
    agents = visits["agent_id"].tolist()
    previous = (
        visits.groupby(list(DAY_KEY), sort=False)["activity"]
        .shift(1)
        .fillna(DAY_START)
        .tolist()
    )
    return [
        [None] * len(visits),
        previous,
        agents,
        list(zip(agents, previous, strict=True)),
    ]


def _positions(visits: pd.DataFrame) -> np.ndarray:
    """``first``, ``middle`` or ``last`` visit of its day."""
    sizes = visits.groupby(list(DAY_KEY), sort=False)["visit"].transform("size")
    index = visits["visit"].to_numpy()
    return np.where(
        index == 0, "first", np.where(index == sizes.to_numpy() - 1, "last", "middle")
    )


@dataclass
class TimeModel:
    """Gaussian of one time quantity given (individual, activity, position in the day).

    Mean and variance are shrunk towards the population's for (activity, position) with
    ``kappa`` pseudo-visits (a one-component GMM per individual), variances get ``floor^2``
    added, and the score of ``x`` is the mode margin ``log f(mean) - log f(x) = z^2 / 2``.
    """

    kappa: float = 3.0
    floor: float = 10.0
    own: dict[tuple, tuple[int, float, float]] = field(default_factory=dict)
    population: dict[tuple, tuple[float, float]] = field(default_factory=dict)
    overall: tuple[float, float] = (0.0, 1.0)

    @classmethod
    def fit(cls, train: pd.DataFrame, values: np.ndarray, *, floor: float) -> TimeModel:
        """Means and variances of ``values`` (one per training visit)."""
        frame = pd.DataFrame(
            {
                "agent_id": train["agent_id"].to_numpy(),
                "activity": train["activity"].to_numpy(),
                "position": _positions(train),
                "value": values,
            }
        )
        model = cls(floor=floor)
        model.overall = (float(np.mean(values)), float(np.var(values)) + floor**2)
        for key, group in frame.groupby(["activity", "position"], sort=False)["value"]:
            model.population[key] = (
                float(group.mean()),
                float(group.var(ddof=0)) + floor**2,
            )
        for key, group in frame.groupby(
            ["agent_id", "activity", "position"], sort=False
        )["value"]:
            model.own[key] = (len(group), float(group.mean()), float(group.var(ddof=0)))
        return model

    def margins(self, visits: pd.DataFrame, values: np.ndarray) -> np.ndarray:
        """``z^2 / 2`` of each visit's value under its shrunk Gaussian."""
        positions = _positions(visits)
        result = np.empty(len(values))
        for row, (agent, activity, position) in enumerate(
            zip(visits["agent_id"], visits["activity"], positions, strict=True)
        ):
            mean, variance = self.population.get((activity, position), self.overall)
            own = self.own.get((agent, activity, position))
            if own is not None:
                n, own_mean, own_variance = own
                weight = n / (n + self.kappa)
                mean = weight * own_mean + (1.0 - weight) * mean
                variance = (
                    weight * (own_variance + self.floor**2) + (1.0 - weight) * variance
                )
            result[row] = 0.5 * (values[row] - mean) ** 2 / variance
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


ACTIVITY_TOP_K = 5
"""Guesses that count as a hit for a visit's activity (more than for the POI: a day's
discretionary activities are many and interchangeable)."""

TIME_FLOOR_MINUTES = 10.0
"""Added (squared) to every variance of the time models: a 10-minute error is never striking."""


@dataclass(frozen=True)
class NextVisitModel:
    """The fitted location, activity, arrival, departure and travel models."""

    location: BackoffModel
    activity: BackoffModel
    arrival: TimeModel
    departure: TimeModel
    travel: TravelModel

    @classmethod
    def fit(
        cls, train: pd.DataFrame, *, top_k: int = 3, tau: float = 1.0
    ) -> NextVisitModel:
        """Fit every component on the real training visits (a :func:`~.frames.visit_table`)."""
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        return cls(
            location=BackoffModel.fit(
                _location_contexts(train),
                train["poi_id"].tolist(),
                tau=tau,
                k=top_k,
                floor=DistanceFloor.fit(train),
            ),
            activity=BackoffModel.fit(
                _activity_contexts(train),
                train["activity"].tolist(),
                tau=tau,
                k=ACTIVITY_TOP_K,
            ),
            arrival=TimeModel.fit(
                train, train["start_minute"].to_numpy(), floor=TIME_FLOOR_MINUTES
            ),
            departure=TimeModel.fit(
                train, train["end_minute"].to_numpy(), floor=TIME_FLOOR_MINUTES
            ),
            travel=TravelModel.fit(train),
        )

    def deviations(self, visits: pd.DataFrame) -> pd.DataFrame:
        """``spatial`` and ``temporal`` deviations (nats) of each visit, in order."""
        if isinstance(self.location.floor, DistanceFloor):
            self.location.floor.learn_coordinates(visits)
        spatial = self.location.deviations(
            _location_contexts(visits), visits["poi_id"].tolist()
        ) + self.activity.deviations(
            _activity_contexts(visits), visits["activity"].tolist()
        )
        temporal = (
            self.arrival.margins(visits, visits["start_minute"].to_numpy())
            + self.departure.margins(visits, visits["end_minute"].to_numpy())
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

    Takes the arguments of :func:`visit_scores` and returns :data:`DAY_SCORE_COLUMNS`: per
    ``agent_id, day``: ``visits``, ``score_mean``, ``score_max``, ``anomalous_share`` (visits
    flagged spatial, temporal or both), ``attribution`` (the day's main one) and
    ``percentile`` (share of real days with a lower mean score: about 0.5 is typical, near 1
    unusual). ``include_real`` adds the real evaluation days.
    """
    days = aggregate_days(
        visit_scores(real, generated, seed=seed, top_k=top_k, include_real=True)
    )
    if not include_real:
        days = days[days["source"] == "generated"].reset_index(drop=True)
    return days
