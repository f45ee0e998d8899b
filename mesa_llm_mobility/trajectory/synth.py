"""A synthetic city and population whose stay-point history looks like NumoSim's (offline, seeded).

The city is a metropolitan area (by default around Los Angeles, 66 x 74 km) with POIs of every
activity type clustered around a few centres. Each individual has a home and, for workers and
students, a work or school anchor chosen with a distance decay; personal preferences (two to
four favourite POIs per activity near home, personal duration means, a speed factor, a departure
time); and weekday and weekend routines. A day is a chain of visits that starts at home at
midnight and ends at home at midnight, with travel times by distance regime (walking under
1.5 km, urban speeds to 8 km, driving beyond) and dwell times drawn around the personal means.
At the paper's scale (1,200 individuals, 4 weeks: 33,600 daily trajectories) the days average
7-9 stays. :func:`synthesize` returns the city, the people and the stays; the command line
writes them in NumoSim's layout (``mlm traj synth``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mesa_llm_mobility.trajectory.activities import ACTIVITIES, HOME, WORK
from mesa_llm_mobility.trajectory.geo import haversine_km

CENTRE = (34.05, -118.25)
"""Centre of the default metropolitan area (Los Angeles)."""

HALF_EXTENT_DEG = (0.3, 0.4)
"""Half height and width of the area in degrees (about 33 and 37 km)."""

TIMEZONE = "America/Los_Angeles"
FIRST_DAY = "2024-01-01"  # a Monday

DISCRETIONARY: dict[str, tuple[float, float, float]] = {
    # activity: (weekday weight, weekend weight, typical minutes)
    "BuyGoods": (0.22, 0.22, 35.0),
    "Services": (0.08, 0.05, 45.0),
    "EatOut": (0.16, 0.18, 55.0),
    "Errands": (0.12, 0.08, 25.0),
    "Recreation": (0.07, 0.14, 110.0),
    "Exercise": (0.08, 0.07, 65.0),
    "Visit": (0.06, 0.11, 100.0),
    "HealthCare": (0.03, 0.01, 55.0),
    "Religious": (0.01, 0.05, 80.0),
    "SomethingElse": (0.06, 0.05, 45.0),
    "DropOff": (0.05, 0.02, 8.0),
    "ChildCare": (0.03, 0.01, 15.0),
    "Transportation": (0.03, 0.01, 12.0),
}
"""Discretionary activities: how often they are chosen on weekdays and weekends, typical dwell."""

SPEED_REGIMES_KMH: tuple[tuple[float, float], ...] = (
    (1.5, 4.5),
    (8.0, 18.0),
    (np.inf, 35.0),
)
"""(up to distance km, speed km/h): walking, urban (bus, bike, slow car), driving."""

ROLES = ("worker", "student", "other")
ROLE_SHARES = (0.62, 0.16, 0.22)


def regime_speed_kmh(distance_km: np.ndarray | float) -> np.ndarray:
    """Typical travel speed by distance regime (:data:`SPEED_REGIMES_KMH`)."""
    distance = np.asarray(distance_km, dtype=float)
    speeds = np.full(distance.shape, SPEED_REGIMES_KMH[-1][1])
    for limit, speed in reversed(SPEED_REGIMES_KMH[:-1]):
        speeds = np.where(distance <= limit, speed, speeds)
    return speeds


@dataclass(frozen=True)
class SyntheticCity:
    """What :func:`synthesize` makes.

    Attributes:
        pois: ``poi_id, latitude, longitude, activity`` (one activity per POI).
        people: ``agent_id, role, home_poi, anchor_poi, radius_km, speed_factor,
            departure_minute`` (``anchor_poi`` is -1 without work or school).
        stays: The stay-point history (:data:`~.staypoints.STAY_COLUMNS`).
    """

    pois: pd.DataFrame
    people: pd.DataFrame
    stays: pd.DataFrame


def _make_pois(
    rng: np.random.Generator, individuals: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shared POIs (not homes): latitudes, longitudes, activity names."""
    counts = {"Work": max(individuals // 5, 10), "School": max(individuals // 40, 4)}
    for name, (weekday, weekend, _) in DISCRETIONARY.items():
        counts[name] = max(int(individuals * (weekday + weekend) * 2.0), 6)
    names = np.concatenate(
        [np.full(n, name, dtype=object) for name, n in counts.items()]
    )
    lat, lon = _scatter(rng, len(names))
    return lat, lon, names


def _scatter(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Points around eight centres (70 %) and uniformly over the area (30 %)."""
    centres_lat = CENTRE[0] + rng.uniform(-0.7, 0.7, 8) * HALF_EXTENT_DEG[0]
    centres_lon = CENTRE[1] + rng.uniform(-0.7, 0.7, 8) * HALF_EXTENT_DEG[1]
    clustered = rng.random(n) < 0.7
    which = rng.integers(0, 8, n)
    spread = rng.uniform(0.02, 0.06, n)
    lat = np.where(
        clustered,
        centres_lat[which] + rng.normal(0, 1, n) * spread,
        CENTRE[0] + rng.uniform(-1, 1, n) * HALF_EXTENT_DEG[0],
    )
    lon = np.where(
        clustered,
        centres_lon[which] + rng.normal(0, 1, n) * spread * 1.2,
        CENTRE[1] + rng.uniform(-1, 1, n) * HALF_EXTENT_DEG[1],
    )
    lat = np.clip(lat, CENTRE[0] - HALF_EXTENT_DEG[0], CENTRE[0] + HALF_EXTENT_DEG[0])
    lon = np.clip(lon, CENTRE[1] - HALF_EXTENT_DEG[1], CENTRE[1] + HALF_EXTENT_DEG[1])
    return lat, lon


def _pick_near(
    rng: np.random.Generator,
    lat: float,
    lon: float,
    pool_lat: np.ndarray,
    pool_lon: np.ndarray,
    scale_km: float,
    size: int,
) -> np.ndarray:
    """Indices into the pool, drawn without replacement with weights exp(-d / scale)."""
    distance = haversine_km(lat, lon, pool_lat, pool_lon)
    weights = np.exp(-(distance - distance.min()) / scale_km)
    weights /= weights.sum()
    size = min(size, int(np.count_nonzero(weights)))
    return rng.choice(len(pool_lat), size=size, replace=False, p=weights)


@dataclass
class _Person:
    """One synthetic individual's anchors and preferences (internal)."""

    agent_id: int
    role: str
    home: int
    anchor: int
    radius_km: float
    speed_factor: float
    departure_minute: float
    favourites: dict[str, tuple[np.ndarray, np.ndarray]]
    mean_minutes: dict[str, float]
    weekday_weights: np.ndarray
    weekend_weights: np.ndarray
    outings: float


def _make_people(
    rng: np.random.Generator,
    individuals: int,
    poi_lat: np.ndarray,
    poi_lon: np.ndarray,
    poi_activity: np.ndarray,
) -> tuple[list[_Person], np.ndarray, np.ndarray]:
    """People and their home coordinates (homes become POIs after the shared ones)."""
    home_lat, home_lon = _scatter(rng, individuals)
    by_activity = {
        name: np.flatnonzero(poi_activity == name) for name in set(poi_activity)
    }
    activities = list(DISCRETIONARY)
    base_weekday = np.array([DISCRETIONARY[name][0] for name in activities])
    base_weekend = np.array([DISCRETIONARY[name][1] for name in activities])
    first_home = len(poi_lat)
    people = []
    for agent in range(individuals):
        role = ROLES[int(rng.choice(3, p=ROLE_SHARES))]
        radius = float(np.exp(rng.normal(np.log(4.0), 0.5)))
        anchor = -1
        if role in ("worker", "student"):
            pool = by_activity[WORK if role == "worker" else "School"]
            pick = _pick_near(
                rng,
                home_lat[agent],
                home_lon[agent],
                poi_lat[pool],
                poi_lon[pool],
                10.0 if role == "worker" else 3.0,
                1,
            )
            anchor = int(pool[pick[0]])
        favourites = {}
        for name in activities:
            pool = by_activity[name]
            pick = _pick_near(
                rng,
                home_lat[agent],
                home_lon[agent],
                poi_lat[pool],
                poi_lon[pool],
                radius,
                int(rng.integers(2, 5)),
            )
            favourites[name] = (pool[pick], rng.dirichlet(np.full(len(pick), 1.5)))
        mean_minutes = {
            name: DISCRETIONARY[name][2] * float(np.exp(rng.normal(0, 0.25)))
            for name in activities
        }
        mean_minutes[WORK] = float(rng.normal(480, 40))
        mean_minutes["School"] = float(rng.normal(400, 30))
        tilt = rng.dirichlet(np.full(len(activities), 4.0)) * len(activities)
        people.append(
            _Person(
                agent_id=agent,
                role=role,
                home=first_home + agent,
                anchor=anchor,
                radius_km=radius,
                speed_factor=float(np.exp(rng.normal(0, 0.12))),
                departure_minute=float(
                    np.clip(rng.normal(450 if role != "other" else 560, 45), 300, 720)
                ),
                favourites=favourites,
                mean_minutes=mean_minutes,
                weekday_weights=_normalised(base_weekday * tilt),
                weekend_weights=_normalised(base_weekend * tilt),
                outings=float(rng.uniform(0.7, 1.3)),
            )
        )
    return people, home_lat, home_lon


def _normalised(weights: np.ndarray) -> np.ndarray:
    return weights / weights.sum()


def _discretionary(
    rng: np.random.Generator, person: _Person, weekend: bool, count: int, previous: str
) -> list[str]:
    """``count`` discretionary activities with no two alike in a row."""
    names = list(DISCRETIONARY)
    weights = person.weekend_weights if weekend else person.weekday_weights
    chosen: list[str] = []
    while len(chosen) < count:
        name = names[int(rng.choice(len(names), p=weights))]
        if name != (chosen[-1] if chosen else previous):
            chosen.append(name)
    return chosen


def _chain(rng: np.random.Generator, person: _Person, weekend: bool) -> list[str]:
    """One day's activity chain: home, the day's pattern, home."""
    chain = [HOME]
    anchored = person.role != "other" and not weekend
    if anchored:
        anchor = WORK if person.role == "worker" else "School"
        if rng.random() < 0.2:
            chain += _discretionary(rng, person, weekend, 1, HOME)
        chain.append(anchor)
        if rng.random() < 0.5:
            chain += [*_discretionary(rng, person, weekend, 1, anchor), anchor]
        extra = min(int(rng.poisson(3.0 * person.outings)), 5)
    else:
        extra = min(int(rng.poisson(4.2 * person.outings)), 7)
    while extra > 0:
        step = min(extra, int(rng.integers(1, 4)))
        chain += _discretionary(rng, person, weekend, step, chain[-1])
        extra -= step
        if extra > 0 and rng.random() < 0.45:
            chain.append(HOME)
    if chain[-1] != HOME:
        chain.append(HOME)
    if rng.random() < 0.55:
        chain += [*_discretionary(rng, person, weekend, 1, HOME), HOME]
    return chain


def _travel_minutes(
    rng: np.random.Generator,
    person: _Person,
    poi_lat: np.ndarray,
    poi_lon: np.ndarray,
    origin: int,
    destination: int,
) -> float:
    """Door-to-door minutes: distance at the regime's speed plus a little access time."""
    distance = float(
        haversine_km(
            poi_lat[origin], poi_lon[origin], poi_lat[destination], poi_lon[destination]
        )
    )
    speed = float(regime_speed_kmh(distance)) * person.speed_factor
    return float(np.clip(distance / speed * 60.0 + rng.gamma(2.0, 2.0), 5.0, 180.0))


def _place(rng: np.random.Generator, person: _Person, name: str) -> int:
    if name == HOME:
        return person.home
    if name in (WORK, "School") and person.anchor >= 0:
        return person.anchor
    choices, weights = person.favourites[name]
    return int(choices[int(rng.choice(len(choices), p=weights))])


LAST_DEPARTURE_MINUTE = 1320.0
"""After 22:00 nobody sets off anywhere but home."""


def _day_visits(
    rng: np.random.Generator,
    person: _Person,
    weekend: bool,
    poi_lat: np.ndarray,
    poi_lon: np.ndarray,
) -> tuple[list[str], list[int], list[float], list[float]]:
    """Activities, POIs, start and end minutes (from midnight, the last one 1440) of a day."""
    chain = _chain(rng, person, weekend)
    departure = person.departure_minute + rng.normal(0, 20) + (90 if weekend else 0)
    activities, pois = [HOME], [person.home]
    starts, ends = [0.0], [float(np.clip(departure, 240, 900))]
    for index in range(1, len(chain)):
        name = chain[index]
        last = index == len(chain) - 1
        poi = _place(rng, person, name)
        start = ends[-1] + _travel_minutes(rng, person, poi_lat, poi_lon, pois[-1], poi)
        if not last and start > LAST_DEPARTURE_MINUTE:
            if activities[-1] == HOME:
                break
            name, poi, last = HOME, person.home, True
            start = ends[-1] + _travel_minutes(
                rng, person, poi_lat, poi_lon, pois[-1], poi
            )
        start = min(start, 1435.0)
        if last:
            end = 1440.0
        else:
            mean = person.mean_minutes.get(name, 60.0)
            if name == WORK and chain[index + 1] != HOME:
                mean *= 0.45  # a work block broken by lunch
            duration = float(np.clip(mean * np.exp(rng.normal(0, 0.3)), 5.0, 900.0))
            end = min(start + duration, 1435.0)
        activities.append(name)
        pois.append(poi)
        starts.append(start)
        ends.append(end)
        if last:
            break
    ends[-1] = 1440.0
    return activities, pois, starts, ends


def synthesize(
    individuals: int = 1200, weeks: int = 4, *, seed: int | None = 0
) -> SyntheticCity:
    """Build a synthetic city, its population and their stay-point history.

    Args:
        individuals: People (>= 2).
        weeks: Weeks of history from Monday 2024-01-01 (>= 1).
        seed: Random seed: the same seed gives the same city, people and stays.

    Returns:
        The city (POIs), the people and their stays (local times of Los Angeles).

    Raises:
        ValueError: If ``individuals`` < 2 or ``weeks`` < 1.
    """
    if individuals < 2:
        raise ValueError(f"individuals must be >= 2, got {individuals}")
    if weeks < 1:
        raise ValueError(f"weeks must be >= 1, got {weeks}")
    rng = np.random.default_rng(seed)
    shared_lat, shared_lon, shared_activity = _make_pois(rng, individuals)
    people, home_lat, home_lon = _make_people(
        rng, individuals, shared_lat, shared_lon, shared_activity
    )
    poi_lat = np.concatenate([shared_lat, home_lat])
    poi_lon = np.concatenate([shared_lon, home_lon])
    poi_activity = np.concatenate(
        [shared_activity, np.full(individuals, HOME, dtype=object)]
    )
    rows: dict[str, list] = {
        "agent_id": [],
        "poi_id": [],
        "activity": [],
        "day": [],
        "start": [],
        "end": [],
    }
    for day in range(weeks * 7):
        weekend = day % 7 >= 5
        for person in people:
            chain, pois, starts, ends = _day_visits(
                rng, person, weekend, poi_lat, poi_lon
            )
            n = len(chain)
            rows["agent_id"] += [person.agent_id] * n
            rows["poi_id"] += pois
            rows["activity"] += chain
            rows["day"] += [day] * n
            rows["start"] += starts
            rows["end"] += ends
    table = pd.DataFrame(rows)
    midnight = pd.Timestamp(FIRST_DAY) + pd.to_timedelta(table["day"], unit="D")
    poi_index = table["poi_id"].to_numpy()
    stays = pd.DataFrame(
        {
            "agent_id": table["agent_id"].to_numpy(),
            "poi_id": poi_index,
            "latitude": poi_lat[poi_index],
            "longitude": poi_lon[poi_index],
            "activity": table["activity"].to_numpy(dtype=object),
            "start": (
                midnight + pd.to_timedelta(table["start"].round(), unit="min")
            ).dt.tz_localize(TIMEZONE, nonexistent="shift_forward", ambiguous=False),
            "end": (
                midnight + pd.to_timedelta(table["end"].round(), unit="min")
            ).dt.tz_localize(TIMEZONE, nonexistent="shift_forward", ambiguous=False),
        }
    )
    stays = stays.sort_values(["agent_id", "start"], kind="stable").reset_index(
        drop=True
    )
    stays.attrs["source"] = f"synthetic city (seed {seed})"
    pois = pd.DataFrame(
        {
            "poi_id": np.arange(len(poi_lat)),
            "latitude": poi_lat,
            "longitude": poi_lon,
            "activity": poi_activity,
        }
    )
    people_table = pd.DataFrame(
        {
            "agent_id": [p.agent_id for p in people],
            "role": [p.role for p in people],
            "home_poi": [p.home for p in people],
            "anchor_poi": [p.anchor for p in people],
            "radius_km": [p.radius_km for p in people],
            "speed_factor": [p.speed_factor for p in people],
            "departure_minute": [p.departure_minute for p in people],
        }
    )
    assert set(stays["activity"]) <= set(ACTIVITIES)
    return SyntheticCity(pois, people_table, stays)
