"""Evidence profiles (eq. 4), the evidence subset policy and the similar-individual pool."""

from __future__ import annotations

import numpy as np
import pytest

from mesa_llm_mobility.trajectory.activities import ACTIVITY_INDEX as A
from mesa_llm_mobility.trajectory.evidence import (
    END,
    build_evidence,
    colocations,
    similar_individuals,
)
from mesa_llm_mobility.trajectory.geo import haversine_km
from mesa_llm_mobility.trajectory.staypoints import StayPointError, validate_staypoints

from .conftest import stays_table


def _history():
    # Monday 2024-01-01 and Saturday 2024-01-06; work is 0.1 degree of latitude north of home
    rows = [
        ("u", "home", 34.0, -118.0, "Home", "2024-01-01 00:00", "2024-01-01 08:00"),
        ("u", "work", 34.1, -118.0, "Work", "2024-01-01 08:30", "2024-01-01 17:00"),
        (
            "u",
            "shop",
            34.1,
            -118.01,
            "BuyGoods",
            "2024-01-01 17:10",
            "2024-01-01 17:40",
        ),
        ("u", "home", 34.0, -118.0, "Home", "2024-01-01 18:10", "2024-01-02 00:00"),
        ("u", "home", 34.0, -118.0, "Home", "2024-01-06 00:00", "2024-01-06 10:00"),
        (
            "u",
            "shop",
            34.1,
            -118.01,
            "BuyGoods",
            "2024-01-06 10:30",
            "2024-01-06 11:30",
        ),
        ("u", "home", 34.0, -118.0, "Home", "2024-01-06 12:00", "2024-01-07 00:00"),
        ("v", "home2", 34.2, -118.2, "Home", "2024-01-01 00:00", "2024-01-02 00:00"),
    ]
    return validate_staypoints(stays_table(rows), "history.csv")


def test_profile_terms_of_eq_4():
    book = build_evidence(_history())
    u = book.individuals["u"]
    assert u.activity_probs[A["Home"]] == pytest.approx(4 / 7)
    assert u.activity_probs[A["Work"]] == pytest.approx(1 / 7)
    assert u.transition_counts[A["Home"], A["Work"]] == 1
    assert u.transition_counts[A["BuyGoods"], A["Home"]] == 2
    pois, probs = u.poi_preferences[A["Home"]]
    assert book.poi_ids[pois].tolist() == ["home"] and probs.tolist() == [1.0]
    # Haversine of 0.1 degree of latitude: 11.12 km; gap 30 min: 22.24 km/h
    expected = float(haversine_km(34.0, -118.0, 34.1, -118.0))
    assert expected == pytest.approx(11.119, abs=1e-3)
    assert u.pair_distance_km[(A["Home"], A["Work"])] == pytest.approx(expected)
    assert u.pair_speed_kmh[(A["Home"], A["Work"])] == pytest.approx(expected / 0.5)
    assert u.first_starts.tolist() == [0.0, 0.0]
    assert u.day_ends.tolist() == [1440.0, 1440.0]  # the last stays end at midnight
    assert u.chain_lengths(0).tolist() == [4] and u.chain_lengths(5).tolist() == [3]
    assert u.duration_samples(A["Work"]).tolist() == [510.0]
    assert u.duration_samples(A["Home"], "first").tolist() == [480.0, 600.0]
    assert u.duration_samples(A["Home"], "final").tolist() == [350.0, 720.0]
    assert u.duration_prior(A["Exercise"]) == 60.0  # never observed


def test_evidence_subset_same_weekday_then_day_type_then_all():
    u = build_evidence(_history()).individuals["u"]
    assert u.evidence_days(0).tolist() == [0]  # Monday
    assert u.evidence_days(2).tolist() == [0]  # Wednesday: the weekdays
    assert u.evidence_days(6).tolist() == [1]  # Sunday: the weekend days
    v = build_evidence(_history()).individuals["v"]
    assert v.evidence_days(5).tolist() == [0]  # no weekend: all days


def test_markov_model_of_the_weekday():
    u = build_evidence(_history()).individuals["u"]
    start, transitions = u.markov(5)
    assert start[A["Home"]] == 1.0
    # Saturday: Home -> BuyGoods -> Home -> end of day
    assert transitions[A["Home"], A["BuyGoods"]] == 0.5
    assert transitions[A["Home"], END] == 0.5
    assert transitions[A["BuyGoods"], A["Home"]] == 1.0
    assert transitions[A["Home"]].sum() == pytest.approx(1.0)
    start, transitions = u.markov(0)
    assert transitions[A["Home"], A["Work"]] == pytest.approx(0.5)
    assert transitions[A["Work"], A["BuyGoods"]] == 1.0
    assert np.diag(transitions[:, :END]).sum() == 0


def test_too_few_history_days_names_file_row_and_field():
    with pytest.raises(
        StayPointError,
        match=r"history.csv: row 8, field agent_id: individual 'v' has 1 history day",
    ):
        build_evidence(_history(), min_history_days=2)


def test_similar_individuals_are_the_nearest_signatures():
    signatures = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.0, 5.2]])
    pool = similar_individuals(signatures, ["a", "b", "c", "d"], 1, block=3)
    assert pool == {"a": ("b",), "b": ("a",), "c": ("d",), "d": ("c",)}
    assert similar_individuals(signatures, ["a", "b", "c", "d"], 10)["a"] == (
        "b",
        "c",
        "d",
    )


def test_peers_are_alike_in_the_synthetic_city(small_city):
    book = build_evidence(small_city.stays, peers=3)
    roles = small_city.people.set_index("agent_id")["role"]
    same_role = np.mean(
        [
            roles[peer] == roles[agent]
            for agent, peers in book.peers.items()
            for peer in peers
        ]
    )
    assert same_role > 0.6  # routines (work, school, none) dominate the signature


def _colocated():
    """a and b share the cafe at noon for 30 min; c is there too but a minute only; d never."""
    rows = []
    for agent, start, end in (
        ("a", "12:00", "13:00"),
        ("b", "12:30", "14:00"),
        ("c", "12:59", "13:30"),
        ("d", "18:00", "19:00"),
    ):
        rows += [
            (
                agent,
                f"home_{agent}",
                34.0,
                -118.0,
                "Home",
                "2024-01-01 00:00",
                "2024-01-01 11:00",
            ),
            (
                agent,
                "cafe",
                34.01,
                -118.0,
                "EatOut",
                f"2024-01-01 {start}",
                f"2024-01-01 {end}",
            ),
            (
                agent,
                f"home_{agent}",
                34.0,
                -118.0,
                "Home",
                f"2024-01-01 {end}",
                "2024-01-01 23:59",
            ),
        ]
    return validate_staypoints(stays_table(rows))


def test_colocations_count_overlaps_of_two_minutes_at_one_poi():
    history = _colocated()
    codes = np.array(["a", "b", "c", "d"])
    counts = colocations(history, codes)
    assert (counts == counts.T).all() and (np.diag(counts) == 0).all()
    # a-b overlap 30 min; b-c 60 min; a-c one minute (under two); d overlaps nobody
    assert counts[0, 1] == 1 and counts[1, 2] == 1
    assert counts[0, 2] == 0 and counts[:, 3].sum() == 0


def test_colocation_brings_colocated_people_into_the_peer_pool():
    signatures = np.array([[0.0], [0.3], [0.1], [0.2]])  # a's nearest: c, d, then b
    ids = ["a", "b", "c", "d"]
    plain = similar_individuals(signatures, ids, 1)
    assert plain["a"] == ("c",)
    bonus = np.zeros((4, 4))
    bonus[0, 1] = bonus[1, 0] = 2.0 * np.log1p(1) / 5.0  # a and b met once, weight 2
    assert similar_individuals(signatures, ids, 1, bonus=bonus)["a"] == ("b",)
    # the pool of build_evidence uses it only when asked
    history = _colocated()
    weighted = build_evidence(history, peers=1, colocation_weight=50.0)
    assert weighted.peers["a"] == ("b",)
