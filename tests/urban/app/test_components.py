from __future__ import annotations

import pytest

from mesa_llm_mobility.urban.app import components
from mesa_llm_mobility.urban.app.controls import fork_controls, parameter_controls
from mesa_llm_mobility.viz.controls import control_values
from mesa_llm_mobility.viz.panels import brain_choices


def test_run_from_argv_reads_what_follows_the_double_dash(monkeypatch):
    monkeypatch.delenv("MLM_APP_RUN", raising=False)
    assert components.run_from_argv(["solara", "run", "app.py"]) is None
    assert (
        components.run_from_argv(["solara", "run", "app.py", "--", "--run", "runs/x"])
        == "runs/x"
    )
    assert (
        components.run_from_argv(["solara", "app.py", "--", "--run=runs/y"]) == "runs/y"
    )
    assert components.run_from_argv(["solara", "run", "--run", "runs/z"]) is None
    monkeypatch.setenv("MLM_APP_RUN", "runs/env")
    assert components.run_from_argv(["solara"]) == "runs/env"


def test_find_runs_and_fork_targets(tmp_path):
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    (tmp_path / "not-a-run").mkdir()
    assert components.find_runs(tmp_path) == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert components.find_runs(tmp_path / "missing") == []
    first = components.fork_target(tmp_path / "a", 1)
    assert first.name == "a-fork-d1-1"
    first.mkdir()
    assert components.fork_target(tmp_path / "a", 1).name == "a-fork-d1-2"


def test_app_model_takes_only_the_app_parameters():
    model = components.AppModel(n_agents=10, days=1, seed=2, events=False)
    assert len(model.travellers) == 10 and model.town.events == ()
    with pytest.raises(TypeError):
        components.AppModel(scenario="nguyen_dupuis")
    controls = parameter_controls()
    assert [c.name for c in controls] == ["n_agents", "brain", "days", "seed", "events"]
    # Reset builds the model from the controls' values: every control is a parameter
    values = control_values(controls, {"n_agents": 10, "seed": 5})
    rebuilt = components.AppModel(**values)
    assert len(rebuilt.travellers) == 10 and rebuilt.days == 1


def test_fork_controls_start_at_the_runs_config():
    days, events = fork_controls({"days": 3, "events": False})
    assert (days.default, days.maximum, events.default) == (3, 14, False)
    assert fork_controls({"days": 20})[0].maximum == 20


def test_brain_choices_offer_the_configured_llm(monkeypatch):
    monkeypatch.delenv("MLM_BRAIN", raising=False)
    assert brain_choices() == ["rules"]
    monkeypatch.setenv("MLM_BRAIN", "llm:openai/gpt-4o-mini")
    assert brain_choices() == ["rules", "llm:openai/gpt-4o-mini"]
    brain = parameter_controls()[1]
    assert brain.choices == ("rules", "llm:openai/gpt-4o-mini")
