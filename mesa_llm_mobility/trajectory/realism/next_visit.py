"""The next-visit model of the visit-level detector: where, what and when, given the day so far.

Fitted on real training visits (a :func:`~.frames.visit_table`), it scores each visit by how far
it falls from the model's expectation, in nats:

* **location**: P(POI | individual, activity, previous POI) by interpolated back-off
  (:class:`BackoffModel`, Dirichlet smoothing with weight ``tau``) from the individual's
  transitions to their POI frequencies for the activity, the population's transitions and, most
  general, the population's visit shares of the activity's POIs weighted by closeness to the
  individual's home (:class:`DistanceFloor`);
* **activity**: P(activity | individual, previous activity), the same way with a uniform floor;
* both scored by the *top-k deviation* (:func:`top_k_deviation`): zero among the k most
  likely, else the surprise ``-log P`` beyond the prediction's entropy; their sum is the
  spatial deviation;
* **times**: Gaussians of the arrival and departure minute given (individual, activity, first /
  middle / last visit of the day), shrunk towards the population's (:class:`TimeModel`), and the
  travel gap against a log-log regression on the distance (:class:`TravelModel`), each scored by
  the mode margin ``z^2 / 2``; their sum is the temporal deviation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.realism.features import Profiles
from mesa_llm_mobility.trajectory.realism.frames import DAY_KEY

DAY_START = "<day start>"
"""The 'previous POI' (and activity) of a day's first visit."""


@dataclass(frozen=True)
class Prediction:
    """What a context predicts: its candidates' probabilities, the k-th largest, the entropy.

    Tokens that are not candidates share the rest of the mass; for the entropy they count as
    equally likely, which overstates it a little.
    """

    candidates: dict[object, float]
    kth: float
    entropy: float

    @classmethod
    def of(cls, candidates: dict[object, float], rest_count: int, k: int) -> Prediction:
        """The prediction of ``candidates`` plus ``rest_count`` other tokens."""
        values = np.fromiter(candidates.values(), dtype=float, count=len(candidates))
        rest_mass = max(1.0 - float(values.sum()), 0.0)
        rest = rest_mass / rest_count if rest_count > 0 else 0.0
        ordered = np.sort(values)[::-1]
        kth = float(ordered[k - 1]) if len(ordered) >= k else rest
        entropy = -float(np.sum(values * np.log(values)))
        if rest > 0:
            entropy -= rest_count * rest * np.log(rest)
        return cls(candidates, kth, entropy)


def top_k_deviation(observed: float, prediction: Prediction) -> float:
    """Zero inside the top k, else the surprise ``-log P(observed)`` beyond the entropy.

    The entropy ``H`` is the surprise a typical draw of the distribution has, so the deviation
    ``max(0, -log P(x) - H)`` is large for an unlikely choice where the next visit is
    predictable (someone else's home) and small where many places are about equally likely.

    Args:
        observed: P of what happened.
        prediction: The context's prediction.

    Returns:
        The deviation in nats (>= 0).
    """
    if observed >= prediction.kth:
        return 0.0
    return float(max(0.0, -np.log(observed) - prediction.entropy))


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
    _predictions: dict[tuple, Prediction] = field(default_factory=dict, repr=False)

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

    def predict(self, keys: tuple) -> Prediction:
        """The prediction of a context (cached: contexts repeat from day to day)."""
        cached = self._predictions.get(keys)
        if cached is not None:
            return cached
        empty: Counter = Counter()
        candidates = set(self.popular.get(keys[0], ()))
        for level, key in zip(self.levels[1:], keys[1:], strict=True):
            candidates.update(level.get(key, empty))
        tokens = list(candidates)
        values = self.probabilities(keys, tokens)
        vocabulary = len(self.levels[0].get(keys[0], empty)) + 1
        prediction = Prediction.of(
            dict(zip(tokens, values.tolist(), strict=True)),
            max(vocabulary - len(tokens), 0),
            self.k,
        )
        self._predictions[keys] = prediction
        return prediction

    def deviation(self, keys: tuple, token: object) -> float:
        """The top-k deviation of ``token`` in its contexts (:func:`top_k_deviation`)."""
        prediction = self.predict(keys)
        observed = prediction.candidates.get(token)
        if observed is None:
            observed = float(self.probabilities(keys, [token])[0])
        return top_k_deviation(observed, prediction)

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

    def _shares(self, activity: str, tokens: list) -> np.ndarray:
        """``P_pop(p | a)`` of each token, with one pseudo-visit per POI and one unseen POI."""
        counts = self.counts.get(activity, Counter())
        total = counts.total() + len(counts) + 1.0
        return np.array([(counts.get(token, 0) + 1.0) / total for token in tokens])

    def _weights(self, agent: object, tokens: list, activity: str) -> np.ndarray:
        """``P_pop(p | a) exp(-d / R_u)`` of each token, before normalising."""
        shares = self._shares(activity, tokens)
        home_lat, home_lon = self.home.get(agent, (np.nan, np.nan))
        if np.isnan(home_lat):
            return shares
        points = np.array(
            [self.coordinates.get(token, (np.nan, np.nan)) for token in tokens],
            dtype=float,
        ).reshape(-1, 2)
        distance = haversine_km(home_lat, home_lon, points[:, 0], points[:, 1])
        closeness = np.exp(-distance / self.radius_km[agent])
        missing = np.isnan(closeness)
        if missing.any():  # no coordinates: a typical closeness
            closeness[missing] = (
                float(np.nanmean(closeness)) if (~missing).any() else 1.0
            )
        return shares * closeness

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
