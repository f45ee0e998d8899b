"""The play loop, the play / pause button and the live controls, rendered without a browser."""

from __future__ import annotations

import threading
import time

import ipyvuetify as v
import solara

from mesa_llm_mobility.viz.controls import Control
from mesa_llm_mobility.viz.playback import (
    PAUSE_LABEL,
    PLAY_LABEL,
    LiveControls,
    PlayPause,
    Stepping,
    play_loop,
)


def _wait_for(condition, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def _click(rc, label: str) -> None:
    rc.find(v.Btn, children=[label]).widget.fire_event("click", {})


def test_the_loop_runs_until_nothing_is_left_or_it_is_cancelled():
    calls = []
    assert play_loop(lambda: calls.append(1) or len(calls) < 3, 0.0, threading.Event())
    assert len(calls) == 3
    cancelled = threading.Event()
    cancelled.set()
    assert not play_loop(lambda: calls.append(1) or True, 0.0, cancelled)
    assert len(calls) == 3


def test_play_advances_the_clock_to_its_end_then_offers_play_again():
    clock = solara.reactive(0)

    def advance() -> bool:
        clock.set(clock.value + 1)
        return clock.value < 5

    @solara.component
    def page():
        PlayPause(advance, interval_ms=1)
        solara.Text(f"t = {clock.value}")

    _, rc = solara.render(page(), handle_error=False)
    _click(rc, PLAY_LABEL)
    _wait_for(lambda: clock.value == 5, "the clock reached its end")
    _wait_for(
        lambda: rc.find(v.Btn).widget.children == [PLAY_LABEL], "play offered again"
    )
    time.sleep(0.1)
    assert clock.value == 5  # nothing advances past the end


def test_pause_stops_the_clock():
    clock = solara.reactive(0)

    def advance() -> bool:
        clock.set(clock.value + 1)
        return True

    @solara.component
    def page():
        PlayPause(advance, interval_ms=1)

    _, rc = solara.render(page(), handle_error=False)
    _click(rc, PLAY_LABEL)
    _wait_for(lambda: clock.value >= 3, "the clock moved")
    _click(rc, PAUSE_LABEL)
    _wait_for(lambda: rc.find(v.Btn).widget.children == [PLAY_LABEL], "paused")
    stopped = clock.value
    time.sleep(0.2)
    assert clock.value <= stopped + 1  # at most the frame under way when paused


class CountingModel:
    """Steps counted; stops running at ``limit``."""

    def __init__(self, limit: int = 1000, label: str = "") -> None:
        self.steps, self.limit, self.label = 0, limit, label
        self.running = True

    def step(self) -> None:
        self.steps += 1
        self.running = self.steps < self.limit


def test_step_runs_the_size_in_clock_units_and_reset_builds_from_the_values():
    built = []

    def build(values):
        built.append(values)
        return CountingModel(label=values["label"])

    model = solara.reactive(CountingModel(limit=20))
    parameters = (Control("label", "Label", "a", choices=("a", "b")),)
    stepping = Stepping(
        Control("seconds", "Seconds per step", 2, minimum=1, maximum=9), 3
    )

    @solara.component
    def page():
        LiveControls(model, build, parameters, stepping)

    _, rc = solara.render(page(), handle_error=False)
    assert rc.find(v.Slider, label="Seconds per step: 2").widget
    _click(rc, "Step")
    assert model.value.steps == 6  # 2 s of 3 steps
    rc.find(v.Slider, label="Seconds per step: 2").widget.v_model = 9
    _click(rc, "Step")
    _click(rc, "Step")
    assert model.value.steps == 20 and not model.value.running  # stops at the end
    assert rc.find(v.Btn, children=["Step"]).widget.disabled
    rc.find(v.Select, label="Label").widget.v_model = "b"
    _click(rc, "Reset")
    assert built == [{"label": "b"}]
    assert model.value.label == "b" and model.value.steps == 0
    assert not rc.find(v.Btn, children=["Step"]).widget.disabled
