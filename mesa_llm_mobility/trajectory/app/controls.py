"""The trajectory app's controls, declared in this one place.

:func:`session_controls` lists what the sidebar's Data card offers for a generation (the
fields of :class:`~.session.SessionSettings`, which **Open / generate** builds from their values).
"""

from __future__ import annotations

from mesa_llm_mobility.trajectory.app.session import SessionSettings
from mesa_llm_mobility.viz.controls import Control
from mesa_llm_mobility.viz.panels import brain_choices


def session_controls(
    settings: SessionSettings = SessionSettings(),  # noqa: B008  (frozen, never changed)
) -> tuple[Control, ...]:
    """The generation's settings, starting at ``settings``."""
    return (
        Control(
            "individuals",
            "Synthetic individuals",
            settings.individuals,
            minimum=10,
            maximum=200,
            step=10,
        ),
        Control(
            "weeks", "Synthetic weeks", settings.weeks, minimum=2, maximum=6, step=1
        ),
        Control(
            "hold_out", "Held-out days", settings.hold_out, minimum=1, maximum=7, step=1
        ),
        Control("seed", "Seed", settings.seed, minimum=0, maximum=99, step=1),
        Control("brain", "Brain", settings.brain, choices=tuple(brain_choices())),
        Control(
            "temperature",
            "LLM temperature",
            settings.temperature,
            minimum=0.0,
            maximum=1.5,
            step=0.1,
            digits=1,
        ),
    )
