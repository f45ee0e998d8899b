"""The evacuation app's frames and sources, live and replayed (no browser)."""

from __future__ import annotations

import pandas as pd

from mesa_llm_mobility.evacuation.app.components import fear_figure, outcomes_figure
from mesa_llm_mobility.evacuation.app.plaza_view import draw_plaza, gate_state_at
from mesa_llm_mobility.evacuation.app.sources import (
    AppModel,
    LiveSource,
    ReplaySource,
    SavedEvacuation,
    messages_text,
)
from mesa_llm_mobility.evacuation.decisions import EVACUATION_MOVE
from mesa_llm_mobility.experiment.lifecycle import write_end
from mesa_llm_mobility.experiment.run_directory import RunDirectory


def test_replay_shows_the_frame_the_live_model_showed(tmp_path):
    model = AppModel(composition="H", block=2)
    for _ in range(45):
        model.step()
    live = LiveSource(model).frame()
    run = RunDirectory.create(
        tmp_path / "run", model.parameters.to_config(), model="evacuation"
    )
    write_end(run, model)
    replay = ReplaySource(SavedEvacuation(run.path), model.tick).frame()
    assert replay.clock() == live.clock()
    columns = ["agent_id", "x", "y", "status"]
    pd.testing.assert_frame_equal(
        replay.pedestrians[columns].reset_index(drop=True),
        live.pedestrians[columns].reset_index(drop=True),
        check_dtype=False,
    )
    assert (replay.codes == live.codes).all()  # gates closed at 15 s in both
    assert replay.adversary[:2] == live.adversary[:2]
    assert draw_plaza(live, model.plaza, selected=1).axes


def test_live_report_holds_the_prompt_as_sent_and_the_options():
    model = AppModel(composition="A", block=1)
    for _ in range(4):
        model.step()
    source = LiveSource(model)
    agent = source.pedestrians()[0]
    report = source.report(agent)
    context = model.last_context[agent]
    assert "[system]" in report.prompt and context.view.text in report.prompt
    assert report.options["route"].tolist() == [o.route_id for o in context.options]
    assert report.last_decision["request_step"].iloc[0] == 0
    # the prompt is the move kind's messages as sent (schema instruction first), and the memory
    # panel lists the memory role's revisions, newest first
    assert report.prompt == messages_text(EVACUATION_MOVE.messages(context))
    versions = model.memory_versions_frame()
    mine = versions[versions["agent_id"] == agent].sort_values("version")
    assert report.memory.startswith(f"v{int(mine['version'].iloc[-1])} at ")
    assert mine["memory"].iloc[-1] in report.memory
    assert source.fear_levels().sum() == 11
    assert outcomes_figure(source.history()).axes
    assert fear_figure(source.history(), source.fear_levels()).axes


def test_gate_state_from_the_events():
    events = pd.DataFrame(
        {
            "event": ["gate_state"] * 3,
            "step": [0, 15, 35],
            "detail": ["g:open", "g:closing", "g:closed"],
        }
    )
    assert [str(gate_state_at(events, s)) for s in (0, 20, 40)] == [
        "open",
        "closing",
        "closed",
    ]
