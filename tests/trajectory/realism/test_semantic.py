"""The individual-level detector on H3 cells and POI categories (closer to BeSTAD)."""

import pytest

from mesa_llm_mobility.trajectory.realism import realism
from mesa_llm_mobility.trajectory.realism.controls import swap_individuals
from mesa_llm_mobility.trajectory.realism.frames import split_for_detection

pytest.importorskip("h3")

from mesa_llm_mobility.trajectory.realism import semantic


def test_poi_categories_are_the_activities_done_there(halves):
    real, _ = halves
    categories = semantic.poi_categories(real)
    counts = real.groupby(["poi_id", "activity"]).size()
    for poi in list(categories)[:50]:
        assert counts.loc[poi].idxmax() == categories[poi]


def test_two_halves_of_real_days_are_indistinguishable_and_swapped_people_are_not(
    halves,
):
    real, other = halves
    table = realism(real, other, detectors=("individual_h3",), seed=0)
    assert table["level"].iloc[0] == "individual"
    assert 0.3 < table["auroc"].iloc[0] < 0.7
    swapped = realism(
        real, swap_individuals(other, seed=1), detectors=("individual_h3",), seed=0
    )
    assert swapped["auroc"].iloc[0] > 0.9


def test_scores_cover_every_compared_individual_on_both_sides(halves):
    real, other = halves
    scored = semantic.score_split(split_for_detection(real, other, seed=0))
    assert scored.groupby("source").size().to_dict() == {"generated": 40, "real": 40}
    assert scored["score"].notna().all() and (scored["score"] >= 0).all()
