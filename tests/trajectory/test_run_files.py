"""A trajectory run's inputs: the declared parameters against a settings object, warnings."""

from __future__ import annotations

import pytest

from mesa_llm_mobility.trajectory import TrajectoryParameters, synthesize
from mesa_llm_mobility.trajectory.model import TrajectoryModel, paper_sampling
from mesa_llm_mobility.trajectory.run_files import (
    read_inputs,
    settings_parameters,
    workflow_settings,
)
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings


@pytest.fixture(scope="module")
def stays():
    return synthesize(8, 2, seed=0).stays


def test_the_paper_s_method_is_the_default():
    parameters = TrajectoryParameters(history="data/")
    assert parameters.durations == "visit" and parameters.kinematics
    options = paper_sampling(None)
    assert options["temperature"] == 0.9 and options["max_tokens"] == 1024
    assert options["extra_params"] == {"top_p": 0.95}
    assert paper_sampling({"temperature": 0.2})["temperature"] == 0.2  # the user's wins


def test_a_settings_object_cannot_contradict_a_declared_parameter(stays):
    parameters = TrajectoryParameters(history=stays, durations="day", alpha=0.5)
    settings = workflow_settings(parameters, WorkflowSettings(own_anchors=()))
    assert (settings.durations, settings.alpha, settings.own_anchors) == (
        "day",
        0.5,
        (),
    )
    with pytest.raises(
        ValueError,
        match=r"settings\.kinematics=False differs from the parameter kinematics=True: "
        r"give kinematics as a parameter",
    ):
        TrajectoryModel(stays, days=1, settings=WorkflowSettings(kinematics=False))
    ablation = WorkflowSettings(kinematics=False)
    with TrajectoryModel(
        stays, days=1, settings=ablation, **settings_parameters(ablation)
    ) as model:
        assert model.settings.kinematics is False
        assert model.parameters.kinematics is False


def test_inputs_hold_out_the_last_days(stays):
    inputs = read_inputs(TrajectoryParameters(history=stays, hold_out=3))
    held_days = inputs.held_out.groupby("agent_id")["start"].agg(
        lambda s: s.dt.normalize().nunique()
    )
    assert (held_days == 3).all() and len(inputs.dates) == 3
    assert inputs.history["start"].max() < inputs.held_out["start"].min()
