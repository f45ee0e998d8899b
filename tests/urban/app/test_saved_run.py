from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from mesa_llm_mobility.experiment.run_directory import RunDirectoryError
from mesa_llm_mobility.urban import population as population_module
from mesa_llm_mobility.urban.app.inspector import report_of_model, report_of_run
from mesa_llm_mobility.urban.app.published_replay import published_run_dir
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


# ---------------------------------------------------------------------------- without checkpoints
def _without_checkpoints(source, target):
    shutil.copytree(source, target)
    shutil.rmtree(target / "checkpoints")
    return target


def test_a_run_without_checkpoints_takes_town_and_people_from_its_files(
    saved, tmp_path
):
    copy = SavedRun.open(_without_checkpoints(saved.path, tmp_path / "bare"))
    assert not copy.has_checkpoints and saved.has_checkpoints
    # the bundled population, cut to the run's travellers: the profiles of the checkpoint
    assert copy.personas == saved.personas
    assert copy.scenario.nodes == saved.scenario.nodes
    assert copy.scenario.road_links == saved.scenario.road_links
    assert copy.scenario.events == saved.scenario.events
    minute = 455
    for agent in sorted(saved.personas)[:3]:
        assert report_of_run(copy, agent, minute).profile == (
            report_of_run(saved, agent, minute).profile
        )


def test_a_run_without_checkpoints_shows_missing_tables_as_empty(saved, tmp_path):
    bare = _without_checkpoints(saved.path, tmp_path / "bare")
    for name in ("revisions", "decisions", "chats"):
        shutil.rmtree(bare / "tables" / name)
    copy = SavedRun.open(bare)
    assert not copy.recorded("revisions") and copy.table("decisions").empty
    agent = sorted(copy.personas)[0]
    report = report_of_run(copy, agent, 1000)
    assert report.unrecorded == ("revisions", "chats")
    assert report.revisions.empty and report.conversations.empty
    assert report_of_run(saved, agent, 1000).unrecorded == ()


def test_a_run_without_checkpoints_or_people_is_refused_in_one_line(saved, tmp_path):
    bare = _without_checkpoints(saved.path, tmp_path / "bare")
    config = json.loads((bare / "config.json").read_text())
    (bare / "config.json").write_text(json.dumps({**config, "population": "synthetic"}))
    with pytest.raises(
        RunDirectoryError, match=r"no checkpoint 0 and no population\.json"
    ):
        SavedRun.open(bare)
    # a population without some of the run's travellers
    people = json.loads(
        (
            Path(population_module.__file__).parent / "scenarios" / "population_70.json"
        ).read_text()
    )
    gone = min(saved.personas)
    renamed = json.loads(json.dumps(people).replace(gone, "Somebody Else"))
    (bare / "population.json").write_text(json.dumps(renamed))
    with pytest.raises(
        RunDirectoryError, match=r"population\.json: 1 traveller"
    ) as error:
        SavedRun.open(bare)
    assert gone in str(error.value)
    # a population that does not validate: its first problem, in one line
    broken = {**people, "people": [p for p in people["people"] if p["name"] != gone]}
    (bare / "population.json").write_text(json.dumps(broken))
    with pytest.raises(RunDirectoryError, match="cannot be read") as error:
        SavedRun.open(bare)
    assert "\n" not in str(error.value) and "more)" in str(error.value)


# ---------------------------------------------------------------------------- the published run
@pytest.fixture(scope="module")
def published(tmp_path_factory) -> SavedRun:
    return SavedRun.open(published_run_dir(tmp_path_factory.mktemp("cache")))


def test_the_published_run_opens_like_a_saved_run(published):
    run = published
    assert not run.has_checkpoints
    assert run.published["simulation_name"] == "sim_0623_0136"
    assert run.days == [1, 2, 3] and run.minutes == (0, 4008)
    assert run.scenario.name == "nguyen_dupuis" and run.scenario.events == ()
    assert len(run.personas) == 60  # the adults; the 10 children travel with them
    assert set(run.personas) == set(run.table("positions")["agent"])
    view = run.view_at(8 * 60)
    assert view.clock == "Day 1, 08:00" and len(view.travellers) == 60
    assert (view.travellers["state"] != "staying").sum() > 10  # the morning peak
    assert len(view.trips) and view.trips["departure"].max() < 8 * 60


def test_the_published_run_shows_each_personas_memory_at_the_clock(published):
    agent, step = "Isabella Rodriguez", 8 * 60 - 1
    report = report_of_run(published, agent, 8 * 60)
    assert report.profile["name"] == agent and report.profile["home"]
    memories = published.table("memories")
    mine = memories[memories["agent"] == agent]
    held = mine[(mine["created"] <= step) & (mine["expiration"] > step)]
    assert 0 < len(held) < len(mine[mine["created"] <= step])  # some expired by 08:00
    assert len(report.memories) == len(held)
    assert set(report.memories["content"]) == set(held["content"])
    later = report_of_run(published, agent, 20 * 60)
    assert len(later.memories) != len(report.memories)  # the clock moves the memory
    assert (
        report.recent_memories["content"].iloc[0]
        == (held.sort_values("created")["content"].iloc[-1])
    )
    # the prototype's reflections on its plans, its plan with its routes as text
    assert any("(plan)" in text for text in report.reflections)
    assert len(report.plan) and report.plan["path"].map(type).eq(str).all()
    assert "Ave_3_link_1" in " ".join(report.plan["path"])  # not split into characters
    assert report.unrecorded == ("revisions", "chats", "tool_calls")
