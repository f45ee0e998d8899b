import math

import pytest

from mesa_llm_mobility.memory.formulas import (
    RECENCY_HABITS,
    RECENCY_RECENT,
    extended_expiration,
    interval_overlap,
    jaccard,
    lifespan,
    mode_score,
    overlap,
    recency,
    semantic_match,
    spatiotemporal_match,
)

DAY = 1440


@pytest.mark.parametrize(
    ("decay", "days", "expected"),
    [
        (RECENCY_RECENT, 1, 0.90),
        (RECENCY_RECENT, 7, 0.48),
        (RECENCY_RECENT, 30, 0.04),
        (RECENCY_HABITS, 1, 0.95),
        (RECENCY_HABITS, 7, 0.70),
        (RECENCY_HABITS, 30, 0.21),
    ],
)
def test_recency_matches_paper_table_1(decay, days, expected):
    assert round(recency(days * DAY, decay), 2) == expected


def test_recency_is_one_at_zero_and_clamps_negative_elapsed():
    assert recency(0) == 1.0
    assert recency(-30) == 1.0
    assert recency(DAY / 2, 0.81) == pytest.approx(0.9)


@pytest.mark.parametrize("decay", [0.0, 1.0, -0.5, 1.5])
def test_recency_rejects_decay_outside_open_unit_interval(decay):
    with pytest.raises(ValueError, match="decay"):
        recency(10, decay)


def test_jaccard():
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard({"a"}, {"a"}) == 1.0
    assert jaccard({"a"}, {"b"}) == 0.0


def test_jaccard_empty_sets():
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, set()) == 0.0
    assert jaccard(set(), {"a"}) == 0.0


def test_overlap_subset_scores_one():
    assert overlap({"a"}, {"a", "b", "c"}) == 1.0
    assert overlap({"a", "b"}, {"b", "c", "d"}) == 0.5
    assert overlap({"a"}, {"b"}) == 0.0


def test_overlap_empty_sets():
    assert overlap(set(), set()) == 0.0
    assert overlap({"a"}, set()) == 0.0
    assert overlap(set(), {"a"}) == 0.0


def test_interval_overlap():
    assert interval_overlap((0, 60), (30, 90)) == 0.5
    assert interval_overlap((0, 60), (10, 20)) == 1.0  # subset
    assert (
        interval_overlap((0, 60), (60, 120)) == 0.0
    )  # touching intervals share no length
    assert interval_overlap((0, 60), (61, 120)) == 0.0


def test_interval_overlap_instants_and_missing():
    assert interval_overlap((30, 30), (0, 60)) == 1.0
    assert interval_overlap((90, 90), (0, 60)) == 0.0
    assert interval_overlap((5, 5), (5, 5)) == 1.0
    assert interval_overlap(None, (0, 60)) == 0.0
    assert interval_overlap((0, 60), None) == 0.0


def test_spatiotemporal_is_product_of_overlaps():
    score = spatiotemporal_match(
        {"Office", "St_1_link_2"}, {"Office"}, (0, 60), (30, 90)
    )
    assert score == pytest.approx(1.0 * 0.5)
    assert spatiotemporal_match({"Gym"}, {"Office"}, (0, 60), (0, 60)) == 0.0
    assert spatiotemporal_match({"Gym"}, {"Gym"}, None, (0, 60)) == 0.0


def test_semantic_match():
    assert semantic_match(0.0) == 1.0
    assert (
        semantic_match(0.25) == 0.75
    )  # default d_max = 1: cosine similarity clipped at 0
    assert semantic_match(1.0) == 0.0
    assert semantic_match(1.7) == 0.0
    assert semantic_match(1.0, d_max=2.0) == 0.5
    assert semantic_match(2.0000001, d_max=2.0) == 0.0
    with pytest.raises(ValueError, match="d_max"):
        semantic_match(0.5, d_max=0.0)


def test_mode_score_is_weighted_sum():
    assert mode_score(
        0.5, 0.8, 0.9, weight=2.0, gamma=0.5, delta=0.25
    ) == pytest.approx(1.0 + 0.4 + 0.225)


@pytest.mark.parametrize(
    ("minimum", "maximum", "power"),
    [(120, 4 * DAY, 2.4), (240, 2 * DAY, 3.2), (480, 8 * DAY, 1.6)],
)
def test_lifespan_endpoints_of_paper_parameters(minimum, maximum, power):
    assert lifespan(0.0, minimum, maximum, power) == minimum
    assert lifespan(1.0, minimum, maximum, power) == maximum
    assert lifespan(0.5, minimum, maximum, power) == pytest.approx(
        minimum + (maximum - minimum) * 0.5**power
    )


def test_lifespan_event_midpoint():
    # event, importance 0.5: 120 + 5640 * 0.5 ** 2.4 = 1188.6 minutes, about 20 hours
    assert math.isclose(lifespan(0.5, 120, 5760, 2.4), 1188.58, abs_tol=0.01)


@pytest.mark.parametrize("importance", [-0.1, 1.1])
def test_lifespan_rejects_importance_outside_unit_interval(importance):
    with pytest.raises(ValueError, match="importance"):
        lifespan(importance, 120, 5760, 2.4)


def test_extended_expiration_adds_lifespan_up_to_three_lifespans():
    created, life = 100.0, 200.0
    first = extended_expiration(created + life, created, life)
    assert first == created + 2 * life
    second = extended_expiration(first, created, life)
    assert second == created + 3 * life
    assert extended_expiration(second, created, life) == created + 3 * life
