from __future__ import annotations

import shutil

import pandas as pd
import pytest

from mesa_llm_mobility.experiment.run_directory import RunDirectoryError
from mesa_llm_mobility.urban.app.inspector import report_of_model, report_of_run
from mesa_llm_mobility.urban.app.saved_run import SavedRun
from mesa_llm_mobility.urban.app.town_view import view_of_model
from mesa_llm_mobility.urban.model import UrbanMobilityModel

MINUTES = (0, 1, 400, 455, 480, 1000, 1440, 1440 + 470, 2880)


@pytest.fixture(scope="module")
def saved(finished_run) -> SavedRun:
    return SavedRun.open(finished_run.run.path)


@pytest.fixture(scope="module")
def live_views(finished_run):
    """The same run again, live, with views and reports at MINUTES."""
    config = finished_run.run.config
    model = UrbanMobilityModel(
        scenario=config["scenario"], population=config["population"], days=config["days"],
        start_date=config["start_date"], brain=config["brain"], embedding=config["embedding"],
        rng=config["seed"], events=config["events"], n_agents=config["n_agents"],
    )  # fmt: skip
    views, reports = {}, {}
    agent = sorted(model.travellers)[0]
    for minute in MINUTES:
        while model.minute < minute:
            model.step()
        views[minute] = view_of_model(model)
        reports[minute] = report_of_model(model, agent)
        if minute == 1000:  # everybody who talked by then
            talkers = {c.initiator for c in model.conversations}
            reports["talkers"] = {n: report_of_model(model, n) for n in sorted(talkers)}
    return views, reports, agent


def test_replay_shows_what_the_live_model_showed(saved, live_views):
    views, _, _ = live_views
    assert saved.minutes == (0, 2879) and saved.days == [1, 2]
    for minute, live in views.items():
        replay = saved.view_at(minute)
        assert replay.minute == live.minute == minute
        pd.testing.assert_frame_equal(
            replay.travellers.sort_values("agent").reset_index(drop=True),
            live.travellers.sort_values("agent").reset_index(drop=True),
        )
        if minute > 0:
            columns = [
                "time",
                "link",
                "direction",
                "queue",
                "traversing",
                "wait_indicator",
            ]
            pd.testing.assert_frame_equal(
                replay.link_states[columns].reset_index(drop=True),
                live.link_states[columns].reset_index(drop=True),
                check_dtype=False,
            )
        assert len(replay.trips) == len(live.trips), minute
        assert (
            replay.trips["arrival"].notna().sum() == live.trips["arrival"].notna().sum()
        )


def test_replay_report_matches_the_live_report(saved, live_views):
    _, reports, agent = live_views
    for minute, live in reports.items():
        if minute == "talkers":
            continue
        replay = report_of_run(saved, agent, minute)
        assert replay.state == live.state, minute
        assert replay.profile == live.profile
        assert list(replay.revisions["reason"]) == list(live.revisions["reason"]), (
            minute
        )
        assert list(replay.plan["facility"]) == list(live.plan["facility"]), minute
        pd.testing.assert_frame_equal(replay.trips, live.trips[replay.trips.columns])


def test_replay_shows_conversations_turn_by_turn_as_the_live_model(saved, live_views):
    _, reports, _ = live_views
    talkers = reports["talkers"]
    assert talkers
    for name, live in talkers.items():
        replay = report_of_run(saved, name, 1000)
        assert len(live.conversations) >= 2  # both sides of at least one conversation
        assert set(live.conversations["speaker"]) >= {name}
        assert len(set(live.conversations["speaker"])) >= 2
        pd.testing.assert_frame_equal(
            replay.conversations, live.conversations, check_dtype=False
        )
        assert replay.tool_calls.empty and live.tool_calls.empty  # rules call no tool


def test_views_are_clipped_to_the_run(saved):
    assert saved.view_at(-50).minute == 0
    assert saved.view_at(10**6).minute == 2880
    assert saved.view_at(2880).clock == "Day 3, 00:00"


def test_open_errors_name_the_problem(tmp_path, finished_run):
    with pytest.raises(RunDirectoryError, match="config"):
        SavedRun.open(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(finished_run.run.path, copy)
    shutil.rmtree(copy / "tables" / "positions")
    with pytest.raises(RunDirectoryError, match="positions"):
        SavedRun.open(copy)
