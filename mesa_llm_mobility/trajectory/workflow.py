"""Stage 2, the deterministic worker workflow: location, then travel time, then duration.

Per visit, in the paper's fixed order (Sec. III-D):

* **location** (eqs. 6-8): the candidates are the individual's POIs for the activity united with
  those of the top-K similar individuals; each scores
  ``S(p) = lf * s_freq(p) + ld * s_dist(p)`` with ``s_freq = (1 - alpha) P_u(p | a) + alpha
  P_sim(p | a)`` and ``s_dist = exp(-beta |dist(p_prev, p) - mean_dist_u(a_prev, a)|)``
  (Haversine km); the POI is drawn from the normalised scores. The first visit has no previous
  POI and scores ``s_freq`` alone. No candidate gives the explicit :data:`INVALID_POI` marker,
  never a silent random POI;
* **travel time** (eq. 9): ``t_s(i) = t_e(i - 1) + clip(dist / v_u(a_prev, a) * 60, 5, 180)``
  minutes, with the speed by distance regime (:func:`default_speed_kmh`) when the individual has
  no speed prior for the pair; the first visit starts at a first start of the evidence days;
* **duration**: a decision kind (:mod:`.durations`), per visit or for the whole day at once;
  the day's last stay then lasts until the day's end, which comes from the same evidence day as
  the first start (:meth:`LocationWorker.day_bounds`): a day of the history ends with a stay
  that runs until midnight, so a generated one does too (the paper leaves the day's end open).

The defaults are the reference implementation's (alpha 0.3, beta 0.5 per km, lf 0.4, ld 0.6,
K 10, speeds 5 km/h up to 5 km and 40 km/h beyond, durations 5-720 minutes) except
:attr:`WorkflowSettings.own_anchors`: by default a person's Home, Work and School are their own
(where they have one), not a similar individual's.

**Without kinematics** (``WorkflowSettings(kinematics=False)``, the paper's ablation of Tables VI
and VII): the location score is ``s_freq`` alone (no distance compatibility with the previous
POI) and a travel time is drawn uniformly from :attr:`WorkflowSettings.ablation_travel_minutes`
(10-45 minutes, the reference's ablation script), whatever the distance. Everything else (the
chains, first starts, durations) is unchanged; the reference's ablation script also replaces the
LLM durations by normal draws and the first start by 08:00 plus -30 to 60 minutes, which the
paper's "w/o kin." does not name, so ours keeps them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from mesa_llm_mobility.trajectory.activities import ACTIVITIES, ACTIVITY_INDEX
from mesa_llm_mobility.trajectory.durations import DurationPrior
from mesa_llm_mobility.trajectory.evidence import EvidenceBook, IndividualEvidence
from mesa_llm_mobility.trajectory.geo import EARTH_RADIUS_KM

INVALID_POI = -1
"""The location worker's explicit marker for a visit without any candidate POI."""

DEFAULT_FIRST_START_MINUTE = 480.0
"""First start when the evidence has none (08:00, plus a random offset below an hour)."""

DEFAULT_DAY_END_MINUTE = 1440.0
"""Day end when the evidence has none (midnight)."""


@dataclass(frozen=True)
class WorkflowSettings:
    """Parameters of the orchestrator and the worker workflow.

    Attributes:
        alpha: Exploration gate of s_freq (weight of the similar individuals).
        beta_per_km: Decay of s_dist per km of mismatch.
        frequency_weight: lf.
        distance_weight: ld.
        peers: K of the similar-individual pool.
        own_anchors: Activities grounded at the individual's own POIs when they have any.
        walk_limit_km: Up to this distance the default speed is :attr:`walk_speed_kmh`.
        walk_speed_kmh: Default speed of short trips.
        drive_speed_kmh: Default speed of longer trips.
        min_travel_minutes: Lower clip of a travel time.
        max_travel_minutes: Upper clip of a travel time.
        min_duration_minutes: d_min.
        max_duration_minutes: d_max (raised per activity to the longest observed dwell).
        durations: ``"visit"`` (the default, the paper's per-visit worker): one duration decision
            per visit; ``"day"``: one per trajectory (ours: fewer calls).
        max_chain_length: Most activities per chain.
        exemplars: Exemplar chains in the orchestrator prompt.
        summary_items: Activity shares and transitions listed in the prompt.
        min_history_days: Individuals with fewer history days are refused.
        anchor_share: When at least this share of an individual's evidence days start (end)
            with one activity, their chains must too (1.01 or more: never).
        kinematics: Distance-aware locations and travel times from speed priors (the paper's
            method); ``False`` is its "w/o kinematics" ablation (see the module docstring).
        ablation_travel_minutes: Range of the uniform travel time without kinematics.
        colocation_weight: Weight of the co-location signal in the peer matching (0: off; see
            :func:`~.evidence.build_evidence`).
    """

    alpha: float = 0.3
    beta_per_km: float = 0.5
    frequency_weight: float = 0.4
    distance_weight: float = 0.6
    peers: int = 10
    own_anchors: tuple[str, ...] = ("Home", "Work", "School")
    walk_limit_km: float = 5.0
    walk_speed_kmh: float = 5.0
    drive_speed_kmh: float = 40.0
    min_travel_minutes: float = 5.0
    max_travel_minutes: float = 180.0
    min_duration_minutes: int = 5
    max_duration_minutes: int = 720
    durations: Literal["day", "visit"] = "visit"
    max_chain_length: int = 24
    exemplars: int = 3
    summary_items: int = 8
    min_history_days: int = 1
    anchor_share: float = 0.9
    kinematics: bool = True
    ablation_travel_minutes: tuple[float, float] = (10.0, 45.0)
    colocation_weight: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if self.durations not in ("day", "visit"):
            raise ValueError(
                f"durations must be 'day' or 'visit', got {self.durations!r}"
            )
        if self.min_travel_minutes > self.max_travel_minutes:
            raise ValueError("min_travel_minutes must not exceed max_travel_minutes")
        if self.max_chain_length < 1:
            raise ValueError(
                f"max_chain_length must be >= 1, got {self.max_chain_length}"
            )
        low, high = self.ablation_travel_minutes
        if not 0 <= low <= high:
            raise ValueError(
                "ablation_travel_minutes must be (low, high) with 0 <= low <= high, got "
                f"{self.ablation_travel_minutes}"
            )
        if self.colocation_weight < 0:
            raise ValueError(
                f"colocation_weight must be >= 0, got {self.colocation_weight}"
            )


def default_speed_kmh(distance_km: float, settings: WorkflowSettings) -> float:
    """The speed of a trip without a prior, by distance regime (walk vs drive)."""
    return (
        settings.walk_speed_kmh
        if distance_km <= settings.walk_limit_km
        else settings.drive_speed_kmh
    )


def travel_minutes(
    distance_km: float, speed_kmh: float | None, settings: WorkflowSettings
) -> float:
    """Eq. 9's travel time: ``clip(dist / v * 60, min, max)``; no prior: the regime's speed."""
    if speed_kmh is None or not np.isfinite(speed_kmh) or speed_kmh <= 0:
        speed_kmh = default_speed_kmh(distance_km, settings)
    minutes = distance_km / max(speed_kmh, 1.0) * 60.0
    return float(
        min(max(minutes, settings.min_travel_minutes), settings.max_travel_minutes)
    )


@dataclass
class LocationCandidates:
    """One individual's candidate POIs for one activity, with s_freq (eq. 7).

    Attributes:
        pois: POI indices of the evidence book.
        frequency_scores: s_freq of each.
    """

    pois: np.ndarray
    frequency_scores: np.ndarray


@dataclass
class GroundedDay:
    """A day after location and travel-time grounding, before durations.

    Attributes:
        activities: Activity names, in order.
        pois: POI indices (:data:`INVALID_POI` where no candidate existed).
        travel: Travel minutes before each visit (0 for the first).
        first_start: When the first visit starts (minutes after midnight).
        priors: Dwell-time priors of each visit.
        trimmed: Activities dropped because the day could not hold them.
        day_end: When the day's last stay ends at the earliest (minutes after midnight).
    """

    activities: list[str]
    pois: list[int]
    travel: list[float]
    first_start: float
    priors: list[DurationPrior]
    trimmed: int = 0
    day_end: float = DEFAULT_DAY_END_MINUTE


@dataclass
class LocationWorker:
    """Grounds activities at POIs and times travel, for every individual of an evidence book."""

    book: EvidenceBook
    settings: WorkflowSettings
    _candidates: dict[tuple[object, int], LocationCandidates] = field(
        default_factory=dict
    )
    _feasible: dict[object, tuple[str, ...]] = field(default_factory=dict)
    _priors: dict[tuple[object, int, str], DurationPrior] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lat = np.radians(self.book.poi_lat)
        self._lon = np.radians(self.book.poi_lon)
        self._cos_lat = np.cos(self._lat)

    def distances_km(self, origin: int, destinations: np.ndarray) -> np.ndarray:
        """Haversine km from one POI to others (indices of the evidence book)."""
        half_lat = np.sin((self._lat[destinations] - self._lat[origin]) / 2.0)
        half_lon = np.sin((self._lon[destinations] - self._lon[origin]) / 2.0)
        a = (
            half_lat**2
            + self._cos_lat[origin] * self._cos_lat[destinations] * half_lon**2
        )
        return 2.0 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.minimum(a, 1.0)))

    def distance_km(self, origin: int, destination: int) -> float:
        """Haversine km between two POIs."""
        half_lat = math.sin((self._lat[destination] - self._lat[origin]) / 2.0)
        half_lon = math.sin((self._lon[destination] - self._lon[origin]) / 2.0)
        a = (
            half_lat**2
            + self._cos_lat[origin] * self._cos_lat[destination] * half_lon**2
        )
        return 2.0 * EARTH_RADIUS_KM * math.asin(math.sqrt(min(a, 1.0)))

    def candidates(self, agent_id: object, activity: int) -> LocationCandidates:
        """The candidate set P(a) = P_u(a) U P_sim(a) with s_freq (cached)."""
        key = (agent_id, activity)
        cached = self._candidates.get(key)
        if cached is not None:
            return cached
        evidence = self.book.individuals[agent_id]
        own_pois, own_probs = evidence.poi_preferences.get(
            activity, (np.zeros(0, dtype=np.int64), np.zeros(0))
        )
        if own_pois.size and ACTIVITIES[activity] in self.settings.own_anchors:
            peer_pois, peer_probs = np.zeros(0, dtype=np.int64), np.zeros(0)
        else:
            peer_pois, peer_probs = self.book.peer_preferences(agent_id, activity)
        pois = np.union1d(own_pois, peer_pois).astype(np.int64)
        scores = np.zeros(pois.size)
        if own_pois.size:
            scores[np.searchsorted(pois, own_pois)] += (
                1.0 - self.settings.alpha
            ) * own_probs
        if peer_pois.size:
            scores[np.searchsorted(pois, peer_pois)] += self.settings.alpha * peer_probs
        result = LocationCandidates(pois, scores)
        self._candidates[key] = result
        return result

    def feasible(self, agent_id: object) -> tuple[str, ...]:
        """Activities with at least one candidate POI for this individual, in code order."""
        cached = self._feasible.get(agent_id)
        if cached is None:
            cached = tuple(
                name
                for code, name in enumerate(ACTIVITIES)
                if self.candidates(agent_id, code).pois.size
            )
            self._feasible[agent_id] = cached
        return cached

    def location_scores(
        self,
        agent_id: object,
        activity: int,
        previous_poi: int | None,
        previous_activity: int | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 6: the candidates and their unnormalised scores S(p).

        Without kinematics the score is ``s_freq`` alone.
        """
        candidates = self.candidates(agent_id, activity)
        if (
            previous_poi is None
            or previous_poi == INVALID_POI
            or not candidates.pois.size
            or not self.settings.kinematics
        ):
            return candidates.pois, candidates.frequency_scores
        evidence = self.book.individuals[agent_id]
        expected = evidence.pair_distance_km.get(
            (previous_activity, activity), evidence.mean_distance_km
        )
        distance = self.distances_km(previous_poi, candidates.pois)
        distance_scores = np.exp(
            -self.settings.beta_per_km * np.abs(distance - expected)
        )
        scores = (
            self.settings.frequency_weight * candidates.frequency_scores
            + self.settings.distance_weight * distance_scores
        )
        return candidates.pois, scores

    def choose_location(
        self,
        agent_id: object,
        activity: int,
        previous_poi: int | None,
        previous_activity: int | None,
        rng: np.random.Generator,
    ) -> int:
        """Draw a POI from the normalised S(p); :data:`INVALID_POI` without candidates."""
        pois, scores = self.location_scores(
            agent_id, activity, previous_poi, previous_activity
        )
        if not pois.size:
            return INVALID_POI
        total = scores.sum()
        if total <= 0:
            return int(pois[int(rng.integers(pois.size))])
        cumulative = np.cumsum(scores)
        return int(
            pois[
                min(
                    int(
                        np.searchsorted(cumulative, rng.random() * total, side="right")
                    ),
                    pois.size - 1,
                )
            ]
        )

    def travel(
        self,
        evidence: IndividualEvidence,
        origin: int,
        destination: int,
        pair: tuple[int, int],
        rng: np.random.Generator,
    ) -> float:
        """Travel minutes between two POIs for an activity pair (eq. 9).

        Without kinematics: a uniform draw from ``settings.ablation_travel_minutes``.
        """
        if not self.settings.kinematics:
            return float(rng.uniform(*self.settings.ablation_travel_minutes))
        if origin == INVALID_POI or destination == INVALID_POI:
            distance = evidence.mean_distance_km
        else:
            distance = self.distance_km(origin, destination)
        return travel_minutes(
            distance, evidence.pair_speed_kmh.get(pair), self.settings
        )

    def day_bounds(
        self, evidence: IndividualEvidence, weekday: int, rng: np.random.Generator
    ) -> tuple[float, float]:
        """First start and day end of one of the weekday's evidence days (drawn together).

        Without evidence days: 08:00 plus up to an hour, and midnight.
        """
        days = evidence.evidence_days(weekday)
        if days.size:
            day = days[int(rng.integers(days.size))]
            return float(evidence.first_starts[day]), float(evidence.day_ends[day])
        return (
            DEFAULT_FIRST_START_MINUTE + float(rng.uniform(0.0, 60.0)),
            DEFAULT_DAY_END_MINUTE,
        )

    def prior(
        self, evidence: IndividualEvidence, activity: int, position: str
    ) -> DurationPrior:
        """The dwell-time prior and bounds of one visit (position: first, middle, final)."""
        key = (evidence.agent_id, activity, position)
        cached = self._priors.get(key)
        if cached is not None:
            return cached
        samples = evidence.duration_samples(activity, position)
        longest = int(np.ceil(samples.max())) if samples.size else 0
        prior = DurationPrior(
            activity=ACTIVITIES[activity],
            prior_minutes=evidence.duration_prior(activity, position),
            samples=samples,
            min_minutes=self.settings.min_duration_minutes,
            max_minutes=max(self.settings.max_duration_minutes, longest),
        )
        self._priors[key] = prior
        return prior

    def ground_day(
        self,
        agent_id: object,
        activities: list[str],
        weekday: int,
        rng: np.random.Generator,
    ) -> GroundedDay:
        """Locations and travel times of a whole chain, trimmed to what fits in the day.

        Locations do not depend on times, so the chain is grounded first; then, if even the
        shortest dwell times would run past midnight, trailing visits are dropped (counted in
        :attr:`GroundedDay.trimmed`).
        """
        evidence = self.book.individuals[agent_id]
        codes = [ACTIVITY_INDEX[name] for name in activities]
        pois: list[int] = []
        travel: list[float] = []
        for index, code in enumerate(codes):
            previous = pois[-1] if index else None
            previous_code = codes[index - 1] if index else None
            poi = self.choose_location(agent_id, code, previous, previous_code, rng)
            travel.append(
                self.travel(evidence, previous, poi, (previous_code, code), rng)
                if index
                else 0.0
            )
            pois.append(poi)
        first_start, day_end = self.day_bounds(evidence, weekday, rng)
        keep = len(codes)
        minimum = self.settings.min_duration_minutes
        while keep > 1 and first_start + sum(travel[:keep]) + minimum * keep > 1440:
            keep -= 1
        priors = [
            self.prior(
                evidence,
                code,
                "final" if index == keep - 1 else "first" if index == 0 else "middle",
            )
            for index, code in enumerate(codes[:keep])
        ]
        return GroundedDay(
            activities=list(activities[:keep]),
            pois=pois[:keep],
            travel=travel[:keep],
            first_start=first_start,
            priors=priors,
            trimmed=len(codes) - keep,
            day_end=day_end,
        )


def stretch_to_day_end(ends: list[float], day_end: float) -> list[float]:
    """The day's ends with the last stay lasting at least until ``day_end``.

    The duration decisions place each visit; the day's last stay then runs on to the day's end
    (as every stay-point day of the history does), never shortened.
    """
    if not ends:
        return ends
    return [*ends[:-1], max(ends[-1], day_end)]
