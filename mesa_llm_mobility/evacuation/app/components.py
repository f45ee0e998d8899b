"""The Solara components of the evacuation app (``examples/evacuation_app.py``).

The live app steps an :class:`~mesa_llm_mobility.evacuation.app.sources.AppModel` with the
shared live controls (:func:`~mesa_llm_mobility.viz.playback.LiveControls`: Reset, play /
pause, Step in seconds, and the parameters of :mod:`.controls`, each showing its value) and
shows our panels in two tabs named for what they hold: the plaza map (click a pedestrian to
inspect it) with the inspector, and the plots of outcomes and fear levels. The clock, in
seconds, is written once, above the map. The replay shows the same tabs for a moment of a saved
run, chosen with a slider or played. Panels read a :mod:`.sources` object. Every browser
session builds its own model (``use_memo``); nothing mutable lives at module level but
per-session reactive variables.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd
import solara
from matplotlib.figure import Figure
from mesa.visualization.utils import update_counter

from mesa_llm_mobility.evacuation.affect import FEAR_LEVELS
from mesa_llm_mobility.evacuation.app.controls import (
    REPLAY_SPEED,
    STEPPING,
    parameter_controls,
)
from mesa_llm_mobility.evacuation.app.plaza_view import (
    FEAR_COLOURS,
    draw_plaza,
    pedestrian_markers,
)
from mesa_llm_mobility.evacuation.app.sources import (
    AppModel,
    LiveSource,
    ReplaySource,
    SavedEvacuation,
)
from mesa_llm_mobility.evacuation.timing import DT_S, STEPS_PER_SECOND
from mesa_llm_mobility.viz.clickable import ClickableMap, marker_at, marker_fractions
from mesa_llm_mobility.viz.launch import open_or_error, run_from_argv
from mesa_llm_mobility.viz.panels import (
    APP_CSS,
    enlarge_small_text,
    field_table,
    figure_image,
    html_table,
    png_bytes,
)
from mesa_llm_mobility.viz.playback import LiveControls, ReplayControls

selected_pedestrian: solara.Reactive[int | None] = solara.reactive(None)
"""The pedestrian shown in the inspector and ringed on the map (per browser session)."""


CHART_TEXT_POINTS = 10.0
"""Smallest text of the plots (legible when a plot takes half of a 1,400 px window)."""

TAB_NAMES = ("Plaza and pedestrian", "Charts: outcomes and fear")
"""The app's tabs, named for what they hold."""


def pre_text(text: str, css_class: str, wrap: bool = True) -> solara.Element:
    """Text in a ``<pre>``, escaped: its lines wrap at the panel's edge, or scroll sideways.

    Args:
        text: What to show.
        css_class: Class of the element.
        wrap: Wrap long lines (memory, capsule); ``False`` keeps every line whole, with a
            scroll bar when one is wider than the panel (the ASCII view's grid).
    """
    white_space = "pre-wrap; overflow-wrap: anywhere" if wrap else "pre"
    return solara.HTML(
        tag="pre",
        unsafe_innerHTML=html.escape(text),
        classes=[css_class],
        style=f"font-size: 12px; white-space: {white_space}; overflow-x: auto;",
    )


def outcomes_figure(history: pd.DataFrame) -> Figure:
    """Pedestrians in the plaza, evacuated and killed over time."""
    fig = Figure(figsize=(5, 3.0), layout="constrained")
    ax = fig.subplots()
    if len(history):
        for column, label, colour in (
            ("active", "in the plaza", "tab:gray"),
            ("evacuated", "evacuated", "tab:blue"),
            ("reached", "killed", "tab:red"),
        ):
            ax.plot(history["time_s"], history[column], label=label, color=colour)
        ax.legend(fontsize=CHART_TEXT_POINTS)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("pedestrians")
    return enlarge_small_text(fig, CHART_TEXT_POINTS)


def fear_figure(history: pd.DataFrame, levels: pd.Series) -> Figure:
    """Mean fear over time and pedestrians per fear level now."""
    fig = Figure(figsize=(5, 3.0), layout="constrained")
    left, right = fig.subplots(1, 2)
    if len(history):
        left.plot(history["time_s"], history["mean_fear"], color="tab:red")
    left.set_ylim(0, 1)
    left.set_xlabel("time (s)")
    left.set_ylabel("mean fear")
    right.bar(
        list(FEAR_LEVELS),
        levels.to_numpy(),
        color=[FEAR_COLOURS[level] for level in FEAR_LEVELS],
    )
    right.tick_params(axis="x", labelrotation=30)
    right.set_title("fear levels now", fontsize=CHART_TEXT_POINTS)
    return enlarge_small_text(fig, CHART_TEXT_POINTS)


# ---------------------------------------------------------------------------- panels
@solara.component
def PlazaPanel(source: LiveSource | ReplaySource) -> None:
    """The plaza with its clock; clicking a pedestrian selects it for the inspector."""
    update_counter.get()  # redraw when the live model steps
    frame = source.frame()
    figure = draw_plaza(frame, source.plaza, selected=selected_pedestrian.value)
    markers = marker_fractions(figure, pedestrian_markers(frame))

    def on_click(where: dict) -> None:
        agent = marker_at(markers, float(where["x"]), float(where["y"]), figure)
        if agent is not None:
            selected_pedestrian.set(int(agent))

    with solara.Column(classes=["mlm-plaza"]):
        solara.Text(
            frame.clock(), classes=["mlm-evac-clock"], style={"font-weight": "bold"}
        )
        ClickableMap(
            src="data:image/png;base64," + base64.b64encode(png_bytes(figure)).decode(),
            markers=markers.round(4).to_json(orient="records"),
            event_click=on_click,
        )
        solara.Text(
            f"{frame.active} pedestrians in the plaza (click one to inspect)",
            classes=["mlm-plaza-count"],
        )


@solara.component
def InspectorPanel(source: LiveSource | ReplaySource) -> None:
    """Pick a pedestrian; show its view and prompt as sent, capsule, memory, decision, routes."""
    update_counter.get()
    ids = source.pedestrians()
    with solara.Column(classes=["mlm-inspector"]):
        solara.Select(
            "Pedestrian",
            values=ids,
            value=selected_pedestrian.value,
            on_value=selected_pedestrian.set,
            classes=["mlm-pedestrian-select"],
        )
        agent = selected_pedestrian.value
        if agent is None or agent not in ids:
            solara.Text("Choose a pedestrian to inspect.")
            return
        report = source.report(agent)
        solara.Text(
            f"Pedestrian {report.agent_id} ({report.archetype}): {report.status}",
            classes=["mlm-ped-state"],
            style={"font-weight": "bold"},
        )
        solara.Text("Last decision")
        with solara.Column(classes=["mlm-last-decision"]):
            field_table(report.last_decision, "no decision yet")
        solara.Text("Route options offered")
        html_table(report.options, "none recorded")
        solara.Text("Short-term capsule")
        pre_text(report.capsule, "mlm-capsule")
        solara.Text("Long-term memory versions (newest first)")
        pre_text(report.memory, "mlm-memory")
        with solara.Details("ASCII view and prompt, as sent"):
            pre_text(report.prompt, "mlm-prompt", wrap=False)


@solara.component
def OutcomesPanel(source: LiveSource | ReplaySource) -> None:
    """Outcomes over time."""
    update_counter.get()
    figure_image(outcomes_figure(source.history()), classes=["mlm-outcomes"])


@solara.component
def FearPanel(source: LiveSource | ReplaySource) -> None:
    """Mean fear and the fear levels."""
    update_counter.get()
    figure = fear_figure(source.history(), source.fear_levels())
    figure_image(figure, classes=["mlm-fear"])


# ---------------------------------------------------------------------------- tabs
@solara.component
def AppTabs(source: LiveSource | ReplaySource) -> None:
    """The two tabs of the live and the replay app: plaza and inspector, then the plots."""
    with solara.lab.Tabs(lazy=True):  # a hidden tab is not drawn
        with solara.lab.Tab(TAB_NAMES[0]), solara.Columns([3, 2]):
            PlazaPanel(source)
            InspectorPanel(source)
        with solara.lab.Tab(TAB_NAMES[1]), solara.Columns([1, 1]):
            OutcomesPanel(source)
            FearPanel(source)


# ---------------------------------------------------------------------------- live app
@solara.component
def LiveApp() -> None:
    """This session's own model: the live controls in the sidebar, the app's tabs."""
    model = solara.use_memo(lambda: solara.reactive(AppModel()), [])
    with solara.AppBar():
        solara.AppBarTitle("Plaza evacuation under a moving threat")
    with solara.Sidebar():
        LiveControls(
            model, lambda values: AppModel(**values), parameter_controls(), STEPPING
        )
    AppTabs(LiveSource(model.value))


# ---------------------------------------------------------------------------- replay
REPLAY_JUMPS = (("-3 s", -3), ("-1 s", -1), ("+1 s", 1), ("+3 s", 3))
"""The replay's buttons that move its clock: label and seconds."""


@solara.component
def ReplayApp(path: str) -> None:
    """A saved run, read-only: its clock (slider, buttons, play / pause) and the tabs."""
    saved, error = solara.use_memo(lambda: open_or_error(SavedEvacuation, path), [path])
    step = solara.use_reactive(0)
    if saved is None:
        solara.Error(f"cannot replay {path}: {error}", classes=["mlm-error"])
        return
    last = saved.last_step
    source = ReplaySource(saved, min(step.value, last))

    def move(seconds: float) -> bool:
        """Move the clock by ``seconds`` within the run; whether it can move on."""
        step.set(min(max(step.value + round(seconds * STEPS_PER_SECOND), 0), last))
        return step.value < last

    with solara.AppBar():
        solara.AppBarTitle(f"Evacuation replay: {saved.path.name}")
    with solara.Sidebar(), solara.Card("Replay"):
        solara.Text(
            f"{saved.path} (composition {saved.config.get('composition')}, "
            f"block {saved.config.get('block')}, read-only)"
        )
        with solara.Column(classes=["mlm-step-slider"]):
            solara.SliderInt(
                f"Time: {step.value * DT_S:.1f} s",
                value=step,
                min=0,
                max=last,
                thumb_label=False,
            )
        ReplayControls(move, REPLAY_JUMPS, REPLAY_SPEED, at_end=step.value >= last)
    AppTabs(source)


@solara.component
def Page() -> None:
    """The app: the live model, or a saved run given with ``-- --run DIR``."""
    path = run_from_argv()
    solara.Style(APP_CSS)
    if path and Path(path).exists():
        ReplayApp(path)
    elif path:
        solara.Error(f"no run directory {path}", classes=["mlm-error"])
    else:
        LiveApp()
