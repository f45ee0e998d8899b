"""The evacuation app's pieces without a browser: controls, tabs, plots, inspector text."""

from __future__ import annotations

import pandas as pd

from mesa_llm_mobility.evacuation.app import components
from mesa_llm_mobility.evacuation.app.controls import (
    STEPPING,
    parameter_controls,
)
from mesa_llm_mobility.evacuation.app.sources import AppModel
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND
from mesa_llm_mobility.viz.controls import control_values
from mesa_llm_mobility.viz.panels import smallest_text_points


def test_reset_builds_the_model_from_the_controls():
    controls = parameter_controls()
    assert [c.name for c in controls] == [
        "composition",
        "block",
        "brain",
        "temperature",
        "seed",
    ]
    model = AppModel(**control_values(controls, {"composition": "H", "block": 0}))
    assert model.n_pedestrians == 11 and model.block is None
    model.close()
    # Step runs whole seconds of the model's clock
    assert STEPPING.steps_per_unit == STEPS_PER_SECOND
    assert STEPPING.size.caption(1) == "Seconds per step: 1 s"


def test_the_tabs_are_named_for_what_they_hold():
    assert components.TAB_NAMES == ("Plaza and pedestrian", "Charts: outcomes and fear")


def test_the_plots_are_written_at_least_at_the_chart_size():
    history = pd.DataFrame(
        {
            "time_s": [0.0, 1.0, 2.0],
            "active": [11, 10, 9],
            "evacuated": [0, 1, 1],
            "reached": [0, 0, 1],
            "mean_fear": [0.0, 0.3, 0.5],
        }
    )
    levels = pd.Series([5, 2, 1, 1], index=["calm", "alert", "afraid", "high fear"])
    for figure in (
        components.outcomes_figure(history),
        components.fear_figure(history, levels),
    ):
        assert smallest_text_points(figure) >= components.CHART_TEXT_POINTS


def test_memory_text_wraps_and_the_ascii_view_keeps_its_lines():
    memory = components.pre_text("I saw a man running. " * 10, "mlm-memory")
    assert "white-space: pre-wrap" in memory.kwargs["style"]
    prompt = components.pre_text("#....@....#", "mlm-prompt", wrap=False)
    assert "white-space: pre;" in prompt.kwargs["style"]
    assert "overflow-x: auto" in prompt.kwargs["style"]
