import pandas as pd
import pytest

from mesa_llm_mobility.trajectory.realism.controls import (
    permute_locations,
    shuffle_times,
    swap_individuals,
)
from mesa_llm_mobility.trajectory.staypoints import local_dates, validate_staypoints


def _days(stays):
    return set(zip(stays["agent_id"], local_dates(stays), strict=True))


def test_split_halves_deals_every_day_once(realism_stays, halves):
    first, second = halves
    assert len(first) + len(second) == len(realism_stays)
    assert not _days(first) & _days(second)
    assert _days(first) | _days(second) == _days(realism_stays)
    per_agent = first.groupby("agent_id")["start"].apply(
        lambda s: s.dt.normalize().nunique()
    )
    assert (per_agent == 14).all()  # 28 days each, half of them


def test_permute_locations_keeps_every_pois_visit_count(halves):
    stays = halves[1]
    permuted = permute_locations(stays, seed=3)
    validate_staypoints(permuted)
    pd.testing.assert_series_equal(
        stays["poi_id"].value_counts().sort_index(),
        permuted["poi_id"].value_counts().sort_index(),
    )
    assert (permuted["poi_id"] != stays["poi_id"]).mean() > 0.9
    assert permuted["activity"].tolist() == stays["activity"].tolist()
    within = permute_locations(stays, seed=3, within_activity=True)
    pois = stays.drop_duplicates("poi_id").set_index("poi_id")["activity"]
    assert (within["poi_id"].map(pois) == within["activity"]).all()


def test_shuffle_times_moves_schedules_between_days_of_equal_length(halves):
    stays = halves[1]
    shuffled = shuffle_times(stays, seed=3)
    validate_staypoints(shuffled)
    assert shuffled["poi_id"].tolist() == stays["poi_id"].tolist()
    assert _days(shuffled) == _days(stays)
    assert (shuffled["start"] != stays["start"]).mean() > 0.5


def test_swap_individuals_changes_only_the_owner(halves):
    stays = halves[1]
    swapped = swap_individuals(stays, seed=3)
    assert sorted(swapped["poi_id"]) == sorted(stays["poi_id"])
    assert set(swapped["agent_id"]) == set(stays["agent_id"])
    assert len(swapped) == len(stays)
    home = stays[stays["activity"] == "Home"].groupby("agent_id")["poi_id"].first()
    new_home = (
        swapped[swapped["activity"] == "Home"].groupby("agent_id")["poi_id"].first()
    )
    assert (
        home != new_home.reindex(home.index)
    ).all()  # a derangement: nobody keeps theirs
    with pytest.raises(ValueError, match="two individuals"):
        swap_individuals(stays[stays["agent_id"] == 0])
