"""The urban app's controls, declared in this one place.

:func:`parameter_controls` lists the model parameters the live app offers (Reset builds
``AppModel(**values)`` from them), :data:`STEPPING` what Step and play run, :data:`REPLAY_SPEED`
how far a played replay moves per frame, and :func:`fork_controls` what a fork may change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.viz.controls import Control
from mesa_llm_mobility.viz.panels import brain_choices
from mesa_llm_mobility.viz.playback import Stepping


def parameter_controls() -> tuple[Control, ...]:
    """The live model's declared parameters: travellers, brain, days, seed, events.

    Defaults, bounds and units come from :class:`UrbanParameters`.
    """
    declared = UrbanParameters
    return (
        Control.from_parameter(
            declared,
            "n_agents",
            "Travellers",
            default=70,
            minimum=10,
            maximum=500,
            step=10,
        ),
        Control.from_parameter(
            declared, "brain", "Brain", choices=tuple(brain_choices())
        ),
        Control.from_parameter(declared, "days", "Days", maximum=7, step=1),
        Control.from_parameter(declared, "seed", "Seed", minimum=0, maximum=99, step=1),
        Control.from_parameter(declared, "events", "Events on"),
    )


STEPPING = Stepping(
    Control(
        "minutes", "Minutes per step", 5, minimum=1, maximum=60, step=1, unit="min"
    ),
    steps_per_unit=1,
)
"""Step (and each frame of play) runs this many simulated minutes; one model step each."""

REPLAY_SPEED = Control(
    "minutes", "Minutes per frame", 5, minimum=1, maximum=60, step=1, unit="min"
)
"""How far a playing replay moves its clock per frame."""


def fork_controls(config: Mapping[str, Any]) -> tuple[Control, ...]:
    """What a fork of a run with ``config`` may change besides the brain: days, events."""
    days = int(config.get("days", 1))
    return (
        Control.from_parameter(
            UrbanParameters, "days", "Days", default=days, maximum=max(14, days), step=1
        ),
        Control.from_parameter(
            UrbanParameters,
            "events",
            "Events on",
            default=bool(config.get("events", True)),
        ),
    )
