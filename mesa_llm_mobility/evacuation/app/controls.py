"""The evacuation app's controls, declared in this one place.

:func:`parameter_controls` lists the model parameters the live app offers (Reset builds
:class:`~.sources.AppModel` from them), :data:`STEPPING` what Step and play run (in seconds of
the model's clock), :data:`REPLAY_SPEED` how far a played replay moves per frame.
"""

from __future__ import annotations

from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.evacuation.personality import COMPOSITIONS
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND
from mesa_llm_mobility.viz.controls import Control
from mesa_llm_mobility.viz.panels import brain_choices
from mesa_llm_mobility.viz.playback import Stepping


def parameter_controls() -> tuple[Control, ...]:
    """The live model's declared parameters, and the LLM's temperature (a brain option).

    Composition, block, brain and seed come from :class:`EvacuationParameters`.
    """
    declared = EvacuationParameters
    return (
        Control.from_parameter(
            declared, "composition", "Composition", choices=tuple(sorted(COMPOSITIONS))
        ),
        # 0 stands for none (the declaration's none; a slider holds numbers)
        Control("block", "Block (0: none)", 1, minimum=0, maximum=8, step=1),
        Control.from_parameter(
            declared, "brain", "Brain", choices=tuple(brain_choices())
        ),
        Control(
            "temperature", "LLM temperature", 0.2, minimum=0.0, maximum=1.0, step=0.05
        ),
        Control.from_parameter(declared, "seed", "Seed", minimum=0, maximum=99, step=1),
    )


STEPPING = Stepping(
    Control("seconds", "Seconds per step", 1, minimum=1, maximum=30, step=1, unit="s"),
    steps_per_unit=STEPS_PER_SECOND,
)
"""Step (and each frame of play) runs this many simulated seconds."""

REPLAY_SPEED = Control(
    "seconds", "Seconds per frame", 1, minimum=1, maximum=30, step=1, unit="s"
)
"""How far a playing replay moves its clock per frame."""
