"""Shouts and exit information (mesa_llm_mobility/evacuation/channels.py)."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats

from mesa_llm_mobility.evacuation.channels import (
    channel_aucs,
    network_edges,
    propagation,
)


def test_channel_aucs_by_hand():
    peds = pd.DataFrame(
        {
            "outcome": ["killed", "killed", "evacuated", "evacuated", "unresolved"],
            "shouts_reached": [3, 1, 1, 0, 9],
            "shouters_heard": [2, 2, 2, 2, 0],
            "exit_info_receivers": [0, 0, 2, 0, 0],
            "exit_info_senders": [0, 1, 0, 0, 0],
        }
    )
    aucs = channel_aucs(peds)
    # killed 3, 1 vs evacuated 1, 0: pairs (3>1, 3>0, 1=1, 1>0) -> 3.5 / 4
    assert aucs["shouts_reached"].statistic == pytest.approx(3.5 / 4)
    assert aucs["shouts_reached"].p_value == pytest.approx(
        stats.mannwhitneyu([3, 1], [1, 0], method="asymptotic").pvalue
    )
    assert aucs["shouters_heard"].statistic == 0.5  # all tied
    # evacuated is the positive group for telling others: 2, 0 vs 0, 0 -> (2 + 2 / 2) / 4
    assert aucs["exit_info_receivers"].statistic == pytest.approx(3 / 4)
    assert aucs["exit_info_senders"].statistic == pytest.approx(1 / 4)


def test_the_papers_exit_information_auc_fits_its_sender_count():
    # 2.1 senders per run x 64 runs = 134 senders, nearly all rescued: the out-degree's AUC
    # for rescue is then about 0.5 + 134 / 462 / 2 = 0.645 (Fig. S1: 0.651)
    senders = round(2.1 * 64)
    peds = pd.DataFrame(
        {
            "outcome": ["evacuated"] * 462 + ["killed"] * 202,
            "exit_info_receivers": [1] * senders + [0] * (462 - senders) + [0] * 202,
            "shouts_reached": 0,
            "shouters_heard": 0,
            "exit_info_senders": 0,
        }
    )
    assert channel_aucs(peds)["exit_info_receivers"].statistic == pytest.approx(
        0.645, abs=0.002
    )


def test_propagation_senders_top_two_hops_and_sources():
    information = pd.DataFrame(
        {
            "seed": 0,
            "composition": ["A"] * 5 + ["B"] + ["A"],
            "block": [1] * 7,
            "sender_id": pd.array([1, 1, 1, 2, 3, 4, pd.NA], dtype="Int64"),
            "receiver_id": [5, 6, 6, 7, 8, 9, 5],
            "hops": pd.array([1, 1, 1, 1, 2, 1, 0], dtype="Int64"),
        }
    )
    pedestrians = pd.DataFrame(
        {
            "knowledge_source": ["observed", "observed", "told", "none"],
            "openings_seen": [1, 2, 0, 0],
        }
    )
    result = propagation(
        information, pedestrians, runs=2, run_keys=["seed", "composition", "block"]
    )
    # run A: relations 1-5, 1-6, 2-7, 3-8 (1-6 twice): top two senders 1 (2) + 2 or 3 (1)
    # run B: 4-9: 1 of 1 -> (3 + 1) / 5; the system row (no sender) is not a message
    assert result.mean_senders_per_run == pytest.approx((3 + 1) / 2)
    assert result.top_two_share == pytest.approx(4 / 5)
    assert result.messages == 6 and result.hops.to_dict() == {1: 5, 2: 1}
    assert result.observed_directly == 2 and result.told_only == 1
    assert (
        result.told_by_observer == 4
    )  # 5, 6, 7 in A and 9 in B heard from an observer


def test_network_edges_are_deduplicated():
    shouts = pd.DataFrame({"listener_id": [2, 2, 3], "shouter_id": [1, 1, 1]})
    information = pd.DataFrame(
        {"sender_id": pd.array([1, 1, pd.NA], dtype="Int64"), "receiver_id": [2, 2, 4]}
    )
    shout_edges, info_edges = network_edges(shouts, information)
    assert shout_edges.values.tolist() == [[1, 2], [1, 3]]
    assert info_edges.values.tolist() == [[1, 2]]
