"""The declared controls and their component: every value is shown in its label."""

from __future__ import annotations

import ipyvuetify as v
import pytest
import solara

from mesa_llm_mobility.viz.controls import (
    Control,
    ParameterControls,
    control_values,
)

CONTROLS = (
    Control("n_agents", "Travellers", 70, minimum=10, maximum=500, step=10),
    Control("temperature", "LLM temperature", 0.2, minimum=0.0, maximum=1.0, step=0.05),
    Control("interval_ms", "Pause", 200, minimum=0, maximum=1000, step=50, unit="ms"),
    Control("brain", "Brain", "rules", choices=("rules", "llm:x")),
    Control("events", "Events on", True),
)


def test_a_control_is_made_by_its_default_and_shows_its_value():
    agents, temperature, pause, _brain, _events = CONTROLS
    assert [c.kind for c in CONTROLS] == ["int", "float", "int", "choice", "bool"]
    assert agents.caption(80) == "Travellers: 80"
    assert temperature.caption(0.25) == "LLM temperature: 0.25"
    assert pause.caption(150) == "Pause: 150 ms"
    assert control_values(CONTROLS, {"n_agents": 90}) == {
        "n_agents": 90,
        "temperature": 0.2,
        "interval_ms": 200,
        "brain": "rules",
        "events": True,
    }


def test_a_bad_declaration_is_refused_naming_the_control():
    with pytest.raises(ValueError, match="control days: a slider needs minimum"):
        Control("days", "Days", 1)
    with pytest.raises(ValueError, match="control brain: default 'llm' is not among"):
        Control("brain", "Brain", "llm", choices=("rules",))


def _labels(rc) -> list[str]:
    return [w.label for w in rc.find(v.Slider).widgets]


def test_the_sliders_labels_follow_their_values():
    values = solara.reactive(control_values(CONTROLS))

    @solara.component
    def page():
        ParameterControls(CONTROLS, values)

    _, rc = solara.render(page(), handle_error=False)
    assert _labels(rc) == [
        "Travellers: 70",
        "LLM temperature: 0.20",
        "Pause: 200 ms",
    ]
    rc.find(v.Slider, label="Travellers: 70").widget.v_model = 120
    rc.find(v.Slider, label="LLM temperature: 0.20").widget.v_model = 0.35
    assert _labels(rc)[:2] == ["Travellers: 120", "LLM temperature: 0.35"]
    assert values.value["n_agents"] == 120 and values.value["temperature"] == 0.35
    rc.find(v.Select, label="Brain").widget.v_model = "llm:x"
    assert values.value == {
        "n_agents": 120,
        "temperature": 0.35,
        "interval_ms": 200,
        "brain": "llm:x",
        "events": True,
    }
    # each control sits in a box named after it (what the browser tests look for)
    assert {f"mlm-control-{c.name}" for c in CONTROLS} <= _classes(rc.find().widget)


def _classes(widget) -> set[str]:
    """Every CSS class in a widget tree."""
    found = set(str(getattr(widget, "class_", "") or "").split())
    for child in getattr(widget, "children", ()) or ():
        if not isinstance(child, str):
            found |= _classes(child)
    return found


def test_a_control_of_a_declared_parameter_takes_its_bounds_unit_and_default():
    from mesa_llm_mobility.urban.parameters import UrbanParameters  # noqa: PLC0415

    days = Control.from_parameter(UrbanParameters, "days", "Days", maximum=7)
    assert (days.default, days.minimum, days.maximum, days.unit) == (1, 1, 7, "day")
    embedding = Control.from_parameter(UrbanParameters, "embedding", "Embedding")
    assert embedding.choices == ("auto", "minilm", "hash")
    with pytest.raises(ValueError, match="minimum 0 below the declared bound"):
        Control.from_parameter(UrbanParameters, "days", "Days", minimum=0, maximum=7)
