"""The Solara components of the evacuation app (``examples/evacuation_app.py``).

The live app is Mesa's :func:`~mesa.visualization.SolaraViz` around an
:class:`~mesa_llm_mobility.evacuation.app.sources.AppModel` (composition, block, brain,
temperature, seed; Step / Play / Reset) with our panels: the plaza map (click a pedestrian to
inspect it), the inspector, and live plots of outcomes and fear levels. The replay shows the
same panels for a step of a saved run, chosen with a slider. Panels read a :mod:`.sources`
object. Every browser session builds its own model (``use_memo``); nothing mutable lives at
module level but per-session reactive variables.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import solara
from matplotlib.figure import Figure
from mesa.visualization import SolaraViz
from mesa.visualization.utils import update_counter

from mesa_llm_mobility.evacuation.affect import FEAR_LEVELS
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
from mesa_llm_mobility.evacuation.personality import COMPOSITIONS
from mesa_llm_mobility.viz.clickable import ClickableMap, marker_at, marker_fractions
from mesa_llm_mobility.viz.launch import open_or_error, run_from_argv
from mesa_llm_mobility.viz.panels import (
    brain_choices,
    figure_image,
    html_table,
    png_bytes,
)

selected_pedestrian: solara.Reactive[int | None] = solara.reactive(None)
"""The pedestrian shown in the inspector and ringed on the map (per browser session)."""


def model_params() -> dict[str, Any]:
    """SolaraViz model parameters: composition, block, brain, temperature, seed."""
    return {
        "composition": {"type": "Select", "value": "A", "values": sorted(COMPOSITIONS),
                        "label": "Composition"},
        "block": {"type": "SliderInt", "value": 1, "min": 0, "max": 8, "step": 1,
                  "label": "Block (0: none)"},
        "brain": {"type": "Select", "value": "rules", "values": brain_choices(),
                  "label": "Brain"},
        "temperature": {"type": "SliderFloat", "value": 0.2, "min": 0.0, "max": 1.0,
                        "step": 0.05, "label": "LLM temperature"},
        "seed": {"type": "SliderInt", "value": 0, "min": 0, "max": 99, "step": 1,
                 "label": "Seed"},
    }  # fmt: skip


def pre_text(text: str, css_class: str) -> solara.Element:
    """Text kept exactly as it is (the ASCII view), escaped, in a ``<pre>``."""
    return solara.HTML(
        tag="pre",
        unsafe_innerHTML=html.escape(text),
        classes=[css_class],
        style="font-size: 11px; white-space: pre; overflow-x: auto;",
    )


def outcomes_figure(history: pd.DataFrame) -> Figure:
    """Pedestrians in the plaza, evacuated and killed over time."""
    fig = Figure(figsize=(5, 2.6))
    ax = fig.subplots()
    if len(history):
        for column, label, colour in (
            ("active", "in the plaza", "tab:gray"),
            ("evacuated", "evacuated", "tab:blue"),
            ("reached", "killed", "tab:red"),
        ):
            ax.plot(history["time_s"], history[column], label=label, color=colour)
        ax.legend(fontsize=7)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("pedestrians")
    fig.tight_layout()
    return fig


def fear_figure(history: pd.DataFrame, levels: pd.Series) -> Figure:
    """Mean fear over time and pedestrians per fear level now."""
    fig = Figure(figsize=(5, 2.6))
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
    right.tick_params(axis="x", labelsize=6)
    right.set_title("fear levels now", fontsize=8)
    fig.tight_layout()
    return fig


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
        solara.Text(f"Pedestrian {report.agent_id} ({report.archetype}): {report.status}",
                    classes=["mlm-ped-state"], style={"font-weight": "bold"})  # fmt: skip
        solara.Text("Last decision")
        with solara.Column(classes=["mlm-last-decision"]):
            html_table(report.last_decision, "no decision yet")
        solara.Text("Route options offered")
        html_table(report.options, "none recorded")
        solara.Text("Short-term capsule")
        pre_text(report.capsule, "mlm-capsule")
        solara.Text("Long-term memory versions (newest first)")
        pre_text(report.memory, "mlm-memory")
        with solara.Details("ASCII view and prompt, as sent"):
            pre_text(report.prompt, "mlm-prompt")


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


# ---------------------------------------------------------------------------- live app
def _live(panel: Callable[..., Any]) -> Callable[[Any], Any]:
    def component(model: AppModel) -> Any:
        update_counter.get()
        return panel(LiveSource(model))

    component.__name__ = panel.__name__
    return component


LIVE_COMPONENTS: list[tuple[Callable[[Any], Any], int]] = [
    (_live(PlazaPanel), 0),
    (_live(InspectorPanel), 0),
    (_live(OutcomesPanel), 1),
    (_live(FearPanel), 1),
]
"""SolaraViz components of the live app: map and inspector (page 0), plots (page 1)."""


@solara.component
def LiveApp() -> None:
    """Mesa's SolaraViz around this session's own model."""
    model = solara.use_memo(AppModel, [])
    SolaraViz(
        model,
        components=LIVE_COMPONENTS,
        model_params=model_params(),
        name="Plaza evacuation under a moving threat",
        play_interval=200,
        render_interval=3,
    )


# ---------------------------------------------------------------------------- replay
@solara.component
def ReplayApp(path: str) -> None:
    """A saved run, read-only, with a step slider."""
    saved, error = solara.use_memo(lambda: open_or_error(SavedEvacuation, path), [path])
    step = solara.use_reactive(0)
    if saved is None:
        solara.Error(f"cannot replay {path}: {error}", classes=["mlm-error"])
        return
    source = ReplaySource(saved, min(step.value, saved.last_step))
    with solara.AppBar():
        solara.AppBarTitle(f"Evacuation replay: {saved.path.name}")
    with solara.Sidebar(), solara.Card("Replay"):
        solara.Text(
            f"{saved.path} (composition {saved.config.get('composition')}, block {saved.config.get('block')}, read-only)"
        )
        with solara.Column(classes=["mlm-step-slider"]):
            solara.SliderInt(
                "Step", value=step, min=0, max=saved.last_step, tick_labels=False
            )
        with solara.Row():
            for label, delta in (("-3 s", -9), ("-1 s", -3), ("+1 s", 3), ("+3 s", 9)):
                solara.Button(
                    label,
                    outlined=True,
                    on_click=lambda d=delta: step.set(
                        min(max(step.value + d, 0), saved.last_step)
                    ),
                )
    with solara.Columns([3, 2]):
        PlazaPanel(source)
        InspectorPanel(source)
    with solara.Columns([1, 1]):
        OutcomesPanel(source)
        FearPanel(source)


@solara.component
def Page() -> None:
    """The app: the live model, or a saved run given with ``-- --run DIR``."""
    path = run_from_argv()
    if path and Path(path).exists():
        ReplayApp(path)
    elif path:
        solara.Error(f"no run directory {path}", classes=["mlm-error"])
    else:
        LiveApp()
