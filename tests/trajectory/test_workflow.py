"""The worker workflow: S(p) of eqs. 6-8, eq. 9's travel time, anchors and the invalid marker."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.activities import ACTIVITY_INDEX as A
from mesa_llm_mobility.trajectory.evidence import build_evidence
from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.staypoints import validate_staypoints
from mesa_llm_mobility.trajectory.workflow import (
    INVALID_POI,
    LocationWorker,
    WorkflowSettings,
    travel_minutes,
)

from .conftest import stays_table


def _book():
    """u eats out at r1 (twice) and r2; its peer v at r3. Home is at the origin."""
    rows = []
    for day, restaurant in ((1, "r1"), (2, "r1"), (3, "r2")):
        lat = {"r1": 34.01, "r2": 34.05}[restaurant]
        rows += [
            (
                "u",
                "home",
                34.0,
                -118.0,
                "Home",
                f"2024-01-0{day} 00:00",
                f"2024-01-0{day} 12:00",
            ),
            (
                "u",
                restaurant,
                lat,
                -118.0,
                "EatOut",
                f"2024-01-0{day} 12:30",
                f"2024-01-0{day} 13:30",
            ),
            (
                "u",
                "home",
                34.0,
                -118.0,
                "Home",
                f"2024-01-0{day} 14:00",
                f"2024-01-0{day + 1} 00:00",
            ),
        ]
    rows += [
        ("v", "home_v", 34.2, -118.0, "Home", "2024-01-01 00:00", "2024-01-01 12:00"),
        ("v", "r3", 34.03, -118.0, "EatOut", "2024-01-01 12:30", "2024-01-01 13:00"),
        ("v", "home_v", 34.2, -118.0, "Home", "2024-01-01 14:00", "2024-01-02 00:00"),
    ]
    return build_evidence(validate_staypoints(stays_table(rows)), peers=1)


def test_location_score_is_eq_6_with_eqs_7_and_8():
    book = _book()
    settings = WorkflowSettings(
        alpha=0.3, beta_per_km=0.5, frequency_weight=0.4, distance_weight=0.6
    )
    worker = LocationWorker(book, settings)
    home = int(np.flatnonzero(book.poi_ids == "home")[0])
    pois, scores = worker.location_scores("u", A["EatOut"], home, A["Home"])
    names = book.poi_ids[pois].tolist()
    assert names == ["r1", "r2", "r3"]
    mean_distance = book.individuals["u"].pair_distance_km[(A["Home"], A["EatOut"])]
    assert mean_distance == pytest.approx(
        float(
            np.mean(
                [haversine_km(34, -118, lat, -118) for lat in (34.01, 34.01, 34.05)]
            )
        )
    )
    frequency = {"r1": 0.7 * 2 / 3, "r2": 0.7 * 1 / 3, "r3": 0.3 * 1.0}
    for name, score in zip(names, scores, strict=True):
        lat = {"r1": 34.01, "r2": 34.05, "r3": 34.03}[name]
        distance = float(haversine_km(34.0, -118.0, lat, -118.0))
        expected = 0.4 * frequency[name] + 0.6 * math.exp(
            -0.5 * abs(distance - mean_distance)
        )
        assert score == pytest.approx(expected)
    # the first visit of a day has no previous POI: s_freq alone
    _, first_scores = worker.location_scores("u", A["EatOut"], None, None)
    assert first_scores.tolist() == pytest.approx([frequency[name] for name in names])


def test_sampling_follows_the_normalised_scores():
    book = _book()
    worker = LocationWorker(book, WorkflowSettings())
    pois, scores = worker.location_scores("u", A["EatOut"], None, None)
    rng = np.random.default_rng(5)
    draws = [
        worker.choose_location("u", A["EatOut"], None, None, rng) for _ in range(3000)
    ]
    shares = np.array([draws.count(int(poi)) for poi in pois]) / len(draws)
    assert shares == pytest.approx(scores / scores.sum(), abs=0.03)


def test_own_anchors_stay_own_and_alpha_zero_copies():
    book = _book()
    worker = LocationWorker(book, WorkflowSettings())
    assert book.poi_ids[worker.candidates("u", A["Home"]).pois].tolist() == ["home"]
    literal = LocationWorker(book, WorkflowSettings(own_anchors=()))
    assert sorted(book.poi_ids[literal.candidates("u", A["Home"]).pois]) == [
        "home",
        "home_v",
    ]
    copy = LocationWorker(book, WorkflowSettings(alpha=0.0))
    assert copy.candidates("u", A["EatOut"]).frequency_scores.tolist()[2] == 0.0


def test_no_candidate_is_the_explicit_invalid_marker():
    worker = LocationWorker(_book(), WorkflowSettings())
    assert (
        worker.choose_location("u", A["School"], None, None, np.random.default_rng(0))
        == INVALID_POI
    )
    assert "School" not in worker.feasible("u") and "EatOut" in worker.feasible("u")


def test_travel_time_is_eq_9_with_regime_defaults():
    settings = WorkflowSettings()
    assert travel_minutes(10.0, 20.0, settings) == 30.0
    assert travel_minutes(0.1, 20.0, settings) == 5.0  # clipped to 5 min
    assert travel_minutes(200.0, 20.0, settings) == 180.0  # clipped to 180 min
    assert travel_minutes(2.0, None, settings) == 24.0  # walking, 5 km/h
    assert travel_minutes(20.0, float("nan"), settings) == 30.0  # driving, 40 km/h


def test_ground_day_trims_what_does_not_fit():
    book = _book()
    worker = LocationWorker(
        book, WorkflowSettings(max_travel_minutes=180, min_travel_minutes=179)
    )
    day = worker.ground_day(
        "u", ["Home", "EatOut"] * 6, weekday=0, rng=np.random.default_rng(0)
    )
    # first start 00:00, 179 min per trip and 5 per visit: 8 visits fit, 4 are trimmed
    assert len(day.pois) == 8 and day.trimmed == 4
    assert day.travel[0] == 0.0 and set(day.travel[1:]) == {179.0}
    assert [prior.activity for prior in day.priors][:2] == ["Home", "EatOut"]


def test_settings_are_checked():
    with pytest.raises(ValueError, match="alpha"):
        WorkflowSettings(alpha=1.5)
    with pytest.raises(ValueError, match="durations"):
        WorkflowSettings(durations="hour")


def test_without_kinematics_locations_ignore_distance_and_travel_is_uniform():
    book = _book()
    worker = LocationWorker(book, WorkflowSettings(kinematics=False))
    home = int(np.flatnonzero(book.poi_ids == "home")[0])
    pois, scores = worker.location_scores("u", A["EatOut"], home, A["Home"])
    candidates = worker.candidates("u", A["EatOut"])
    assert (pois == candidates.pois).all()
    assert scores == pytest.approx(candidates.frequency_scores)  # s_freq alone
    with_kinematics = LocationWorker(book, WorkflowSettings())
    assert with_kinematics.location_scores("u", A["EatOut"], home, A["Home"])[
        1
    ] != pytest.approx(candidates.frequency_scores)
    evidence = book.individuals["u"]
    rng = np.random.default_rng(0)
    far = int(np.flatnonzero(book.poi_ids == "home_v")[0])  # 22 km away
    drawn = [
        worker.travel(evidence, home, far, (A["Home"], A["EatOut"]), rng)
        for _ in range(200)
    ]
    assert min(drawn) >= 10 and max(drawn) <= 45 and np.std(drawn) > 5
    assert with_kinematics.travel(
        evidence, home, far, (A["Home"], A["EatOut"]), rng
    ) == pytest.approx(
        travel_minutes(
            haversine_km(34.0, -118.0, 34.2, -118.0),
            evidence.pair_speed_kmh.get((A["Home"], A["EatOut"])),
            WorkflowSettings(),
        )
    )


def test_ablation_and_colocation_settings_are_checked():
    with pytest.raises(ValueError, match="ablation_travel_minutes"):
        WorkflowSettings(ablation_travel_minutes=(45.0, 10.0))
    with pytest.raises(ValueError, match="colocation_weight"):
        WorkflowSettings(colocation_weight=-1.0)
