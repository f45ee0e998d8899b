"""Playing the apps' clocks: a play / pause button, and the controls of a live model.

:func:`PlayPause` is the one play loop of every app: while playing, it calls an ``advance``
function at a fixed interval (in a thread of the browser session) until it returns ``False``
(the end of the run or of the replay) or the button is pressed again. :func:`LiveControls`
puts it beside Reset and Step for a live model, with the model's parameters
(:mod:`.controls`) under them: the controls Mesa's ``SolaraViz`` draws, with every slider's
value shown and the step size in the model's clock unit. :func:`ReplayControls` puts it beside
the buttons that move a replay's clock, with the playing speed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import solara
from mesa.visualization.utils import force_update, update_counter

from mesa_llm_mobility.viz.controls import (
    Control,
    ControlValue,
    ParameterControls,
    control_values,
)

PLAY_LABEL = "▶ Play"
"""The play button's label while paused."""
PAUSE_LABEL = "❚❚ Pause"
"""The play button's label while playing."""

FRAME_INTERVAL = Control(
    "interval_ms",
    "Pause between frames",
    200,
    minimum=0,
    maximum=1000,
    step=50,
    unit="ms",
)
"""How long a playing clock waits between two frames."""


def play_loop(
    advance: Callable[[], bool], interval_s: float, cancel: threading.Event
) -> bool:
    """Call ``advance`` every ``interval_s`` seconds until it returns ``False`` or ``cancel``.

    Returns:
        ``True`` when ``advance`` ended the loop (nothing left to play), ``False`` when
        ``cancel`` did.
    """
    while not cancel.wait(interval_s):
        if not advance():
            return True
    return False


@solara.component
def PlayPause(
    advance: Callable[[], bool],
    interval_ms: int = 200,
    disabled: bool = False,
    playing: solara.Reactive[bool] | bool = False,
) -> None:
    """A play / pause button that runs ``advance`` every ``interval_ms`` while playing.

    Args:
        advance: Moves the clock one frame on; returns ``False`` when there is nothing more
            (playing then stops). Called in a thread of this browser session.
        interval_ms: Wait between two frames.
        disabled: Grey the button out while paused (a finished model).
        playing: Whether it plays (a reactive variable to share with other controls).
    """
    playing = solara.use_reactive(playing)
    latest = solara.use_ref(advance)
    latest.current = advance  # the thread calls the newest closure

    def play(cancel: threading.Event) -> None:
        # the newest closure at each frame, not the one of the render that started playing
        if playing.value and play_loop(
            lambda: latest.current(),  # noqa: PLW0108
            interval_ms / 1000,
            cancel,
        ):
            playing.set(False)

    solara.use_thread(
        play, dependencies=[playing.value, interval_ms], intrusive_cancel=False
    )
    solara.Button(
        PAUSE_LABEL if playing.value else PLAY_LABEL,
        on_click=lambda: playing.set(not playing.value),
        color="primary",
        disabled=disabled and not playing.value,
        classes=["mlm-play"],
    )


@dataclass(frozen=True)
class Stepping:
    """How :func:`LiveControls` steps a model: in units of its clock.

    Attributes:
        size: How many clock units a click of Step (and a frame of play) runs.
        steps_per_unit: Model steps per clock unit (1 per minute, 3 per second).
    """

    size: Control
    steps_per_unit: int = 1


def run_steps(model: Any, steps: int) -> bool:
    """Step ``model`` up to ``steps`` times while it runs; whether it still runs."""
    for _ in range(steps):
        if not model.running:
            break
        model.step()
    return bool(model.running)


@solara.component
def LiveControls(
    model: solara.Reactive[Any],
    build: Callable[[dict[str, ControlValue]], Any],
    parameters: Sequence[Control],
    stepping: Stepping,
) -> None:
    """Reset, play / pause and Step for a live model, then its parameters (sidebar cards).

    Args:
        model: This session's model; Reset replaces it with ``build(values)``.
        build: Makes a model from the parameter values.
        parameters: The model's controls (the app's ``controls`` module).
        stepping: What a Step click and a played frame run.
    """
    update_counter.get()  # render again when the model steps (it may have stopped)
    values = solara.use_reactive(control_values(parameters))
    speed = solara.use_reactive(control_values((stepping.size, FRAME_INTERVAL)))
    playing = solara.use_reactive(False)
    size = int(speed.value[stepping.size.name])
    running = bool(model.value.running)

    def advance() -> bool:
        alive = run_steps(model.value, size * stepping.steps_per_unit)
        force_update()
        return alive

    def reset() -> None:
        playing.set(False)
        model.set(build(control_values(parameters, values.value)))
        force_update()

    with solara.Card("Run", classes=["mlm-run-controls"]):
        with solara.Row(justify="space-between"):
            solara.Button(
                "Reset", on_click=reset, color="primary", classes=["mlm-reset"]
            )
            PlayPause(
                advance,
                interval_ms=int(speed.value[FRAME_INTERVAL.name]),
                disabled=not running,
                playing=playing,
            )
            solara.Button(
                "Step",
                on_click=advance,
                color="primary",
                disabled=playing.value or not running,
                classes=["mlm-step"],
            )
        ParameterControls((stepping.size, FRAME_INTERVAL), speed)
    with solara.Card("Parameters", classes=["mlm-parameters"]):
        ParameterControls(parameters, values)
        solara.Text("Reset builds a new model with them.", style={"color": "#757575"})


@solara.component
def ReplayControls(
    move: Callable[[float], bool],
    jumps: Sequence[tuple[str, float]],
    speed: Control,
    at_end: bool,
) -> None:
    """Play / pause and buttons that move a replay's clock, then the playing speed.

    Args:
        move: Moves the clock by a number of its units (clamped to the run); whether it can
            move on.
        jumps: The buttons: label and units to move (``("+1 h", 60)``).
        speed: Units a played frame moves (its value is shown, like every slider's).
        at_end: The clock is at the end of the run (play is greyed out).
    """
    values = solara.use_reactive(control_values((speed, FRAME_INTERVAL)))
    with solara.Row(classes=["mlm-button-row"]):
        PlayPause(
            lambda: move(float(values.value[speed.name])),
            interval_ms=int(values.value[FRAME_INTERVAL.name]),
            disabled=at_end,
        )
        for label, units in jumps:
            solara.Button(label, outlined=True, on_click=lambda d=units: move(d))
    ParameterControls((speed, FRAME_INTERVAL), values)
