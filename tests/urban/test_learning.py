"""The day-to-day learning model of rule travellers (urban/decisions/learning.py)."""

from __future__ import annotations

import math

import pytest

from mesa_llm_mobility.urban.decisions.learning import (
    EARLY_BANDS,
    SMALL_1982,
    TravelBelief,
    adjusted_departure,
    belief_text,
    best_departure,
    best_departure_by_time,
    early_band,
    expected_minutes,
    expected_schedule_cost,
    habitual_departure,
    learnt_link_waits,
    learnt_path,
    link_costs,
    parse_beliefs,
    queue_lesson_text,
    schedule_cost,
    smooth_belief,
    travel_time_by_departure,
    update_beliefs,
    worth_switching,
)
from mesa_llm_mobility.urban.decisions.persona import TripExperience
from mesa_llm_mobility.urban.routing import NetworkIndex
from mesa_llm_mobility.urban.scenario import load_scenario

INDEX = NetworkIndex(load_scenario("nguyen_dupuis"))


def test_small_1982_ratios():
    # Small (1982): a minute early is worth 0.61, a minute late 2.4 minutes of travel
    assert SMALL_1982.early / SMALL_1982.travel == pytest.approx(0.61, abs=0.01)
    assert SMALL_1982.late / SMALL_1982.travel == pytest.approx(2.40, abs=0.01)
    # 40 min trip arriving 5 min early: 0.106*40 + 0.065*5; 3 min late: + 0.254*3 + 0.58
    assert schedule_cost(415, 40, 460) == pytest.approx(4.24 + 0.325)
    assert schedule_cost(423, 40, 460) == pytest.approx(4.24 + 0.762 + 0.58)


def test_smoothing_by_hand():
    assert smooth_belief(34, 2, 62) == (48.0, 15.0)  # 0.5*34 + 0.5*62; 0.5*2 + 0.5*28
    assert smooth_belief(48, 15, 48) == (48.0, 7.5)
    with pytest.raises(ValueError, match="smoothing weight"):
        smooth_belief(1, 1, 1, weight=0)
    trip = TripExperience("A", "B", "drive", 438, 62, 28, 20, 1, 480)
    belief = update_beliefs({}, [trip])[("A", "B", "drive")]
    assert (belief.minutes, belief.spread) == (48.0, 15.0)  # from free flow 62 - 28
    text = "Day 1: 2 trips. " + belief_text(belief)
    assert parse_beliefs(text) == {("A", "B", "drive"): belief}


def test_expected_cost_and_best_departure():
    # with no uncertainty the expectation is the deterministic cost
    assert expected_schedule_cost(45, 40, 1e-9) == pytest.approx(
        schedule_cost(0, 40, 45)
    )
    # the optimum leaves a buffer: P(late) near beta / (beta + gamma) ~ 0.2 or less
    depart = best_departure(480, 40, 4)
    sd = 4 * math.sqrt(math.pi / 2)
    z = (40 - (480 - depart)) / sd
    assert 0.5 * (1 + math.erf(z / math.sqrt(2))) < 0.21
    assert 480 - 40 - 3 * sd < depart < 480 - 40


def test_inertia():
    assert adjusted_departure(440, 475, 480, 400) == 440  # 5 min early: inside the band
    assert adjusted_departure(440, 490, 480, 435) == 430  # 10 late: at least 10 earlier
    # 30 early: a quarter of the way toward the optimum
    assert adjusted_departure(400, 450, 480, 440) == 410
    assert adjusted_departure(440, 481, 480, 450) == 439  # 1 min late: no tolerance
    assert worth_switching(40, 33) and not worth_switching(40, 35)


def test_a_personal_early_band():
    assert (
        adjusted_departure(440, 460, 480, 460, early_band=25.0) == 440
    )  # 20 early: fine
    assert adjusted_departure(440, 460, 480, 460, early_band=5.0) == 445  # a quarter on
    # the band is a trait: the same name, the same band; names spread over all of them
    assert early_band("Ann Lee") == early_band("Ann Lee")
    bands = {early_band(f"Person {k}") for k in range(50)}
    assert bands == set(EARLY_BANDS)


def test_habit_rounds_the_allowance_to_ten_minutes():
    assert habitual_departure(480, 30) == 450
    assert habitual_departure(480, 34) == 450  # "half an hour": late by plan
    assert habitual_departure(480, 36) == 440  # "forty minutes"
    assert habitual_departure(480, 34, extra=5) == 440
    assert habitual_departure(480, 33, rounding=5) == 445
    with pytest.raises(ValueError, match="rounding"):
        habitual_departure(480, 30, rounding=0)


def test_travel_time_by_departure_interpolates_and_stays_flat_outside():
    knots = travel_time_by_departure([(450, 50), (430, 35), (450, 40)])
    assert knots == ((430, 35.0), (450, 45.0))  # two departures at 7:30 averaged
    assert expected_minutes(knots, 420) == 35.0
    assert expected_minutes(knots, 440) == 40.0
    assert expected_minutes(knots, 470) == 45.0
    with pytest.raises(ValueError):
        expected_minutes((), 400)


def test_the_optimum_knows_the_queue_comes_later():
    # leaving at 7:10 took 35 min, at 7:30 took 55 (a queue): aiming at 8:00 with little
    # spread, the commuter leaves near 7:15-7:17, not at 8:00 - 35 = 7:25
    knots = travel_time_by_departure([(430, 35), (450, 55)])
    depart = best_departure_by_time(480, knots, 1.0)
    assert 430 <= depart <= 438
    flat = travel_time_by_departure([(430, 35)])
    assert best_departure_by_time(480, flat, 1.0) == best_departure(480, 35, 1.0)


def test_route_lessons_and_announcements_become_link_waits():
    lesson = queue_lesson_text(
        1, 450, "Node_12", 12, ["St_5_link_1", "St_5_link_2"], "Office"
    )
    waits = learnt_link_waits(INDEX, 2, reflections=[lesson, "unrelated"])
    assert [w.minutes for w in waits] == [3.0, 3.0]  # 12 / 2 links, halved after a day
    assert link_costs(waits, 450 + 200) == {}  # far from 07:30: not counted
    works = "Road works on Ave_2_link_2 halve its capacity from 08:00 to 09:00."
    announced = learnt_link_waits(INDEX, 1, announcements=[works])
    assert {w.around for w in announced} == {510} and announced[0].minutes == 10.0
    costs = link_costs(waits, 450)
    assert learnt_path(INDEX, "Node_12", "Office", {k: 3 * v for k, v in costs.items()})


def test_belief_round_trips_in_long_term_reflection():
    belief = TravelBelief("Uptown apartment", "Office", "transit", 61.5, 4.0)
    assert (
        parse_beliefs(f"x. {belief_text(belief)} y.")[
            ("Uptown apartment", "Office", "transit")
        ]
        == belief
    )
