"""The Solara components of the urban app (``examples/gatsim_app.py``).

The live app is Mesa's :func:`~mesa.visualization.SolaraViz` around an :class:`AppModel` with
our panels; the replay shows the same panels for a minute of a saved run, chosen with a time
slider, and can fork the run from a day. Panels read a :mod:`.sources` object, never the model
or the run directly. Every browser session builds its own model (``Page`` makes it with
``use_memo``); nothing mutable lives at module level but per-session reactive variables.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import solara
from mesa.visualization import SolaraViz
from mesa.visualization.utils import force_update, update_counter

from mesa_llm_mobility.experiment.lifecycle import fork_run
from mesa_llm_mobility.urban.app import charts
from mesa_llm_mobility.urban.app.saved_run import SavedRun
from mesa_llm_mobility.urban.app.sources import LiveSource, ReplaySource
from mesa_llm_mobility.urban.app.town_map import (
    draw_town,
    marker_fractions,
    shown_travellers,
    traveller_at,
    traveller_positions,
)
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, day_clock
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.viz.clickable import ClickableMap
from mesa_llm_mobility.viz.launch import open_or_error, run_from_argv
from mesa_llm_mobility.viz.panels import (
    brain_choices,
    figure_image,
    html_table,
    png_bytes,
)

selected_traveller: solara.Reactive[str | None] = solara.reactive(None)
"""The traveller shown in the inspector and ringed on the map (per browser session)."""


class AppModel(UrbanMobilityModel):
    """The urban model with the app's parameters (what SolaraViz re-creates on Reset).

    Mesa's SolaraViz passes a Mesa ``Scenario`` to models whose ``__init__`` takes a
    ``scenario`` argument; the urban model's ``scenario`` is the town, so the app model
    takes only the parameters the app shows.
    """

    def __init__(
        self,
        n_agents: int = 70,
        brain: str = "rules",
        days: int = 1,
        seed: int = 0,
        events: bool = True,
    ) -> None:
        super().__init__(
            n_agents=int(n_agents),
            brain=brain,
            days=int(days),
            rng=int(seed),
            events=bool(events),
            collect_every=5,
        )


def model_params() -> dict[str, Any]:
    """SolaraViz model parameters: population size, brain, days, seed, events."""
    return {
        "n_agents": {"type": "SliderInt", "value": 70, "min": 10, "max": 500,
                     "step": 10, "label": "Travellers"},
        "brain": {"type": "Select", "value": "rules", "values": brain_choices(),
                  "label": "Brain"},
        "days": {"type": "SliderInt", "value": 1, "min": 1, "max": 7, "step": 1,
                 "label": "Days"},
        "seed": {"type": "SliderInt", "value": 0, "min": 0, "max": 99, "step": 1,
                 "label": "Seed"},
        "events": {"type": "Checkbox", "value": True, "label": "Events on"},
    }  # fmt: skip


# ---------------------------------------------------------------------------- panels
@solara.component
def TownMapPanel(source: LiveSource | ReplaySource, live_model: Any = None) -> None:
    """The network map with the clock and what is on it (and fast-forward when live).

    Clicking a traveller's marker selects it for the inspector.
    """
    update_counter.get()  # redraw when the live model steps
    view = source.view()
    positions = traveller_positions(view)
    figure = draw_town(view, selected=selected_traveller.value, positions=positions)
    markers = marker_fractions(figure, shown_travellers(positions))
    moving = int((view.travellers["state"] != "staying").sum())
    inside = int((view.travellers["state"] == "staying").sum())

    def on_click(where: dict) -> None:
        name = traveller_at(markers, float(where["x"]), float(where["y"]), figure)
        if name is not None:
            selected_traveller.set(name)

    with solara.Column(classes=["mlm-map"]):
        solara.Text(view.clock, classes=["mlm-clock"], style={"font-weight": "bold"})
        ClickableMap(
            src="data:image/png;base64," + base64.b64encode(png_bytes(figure)).decode(),
            markers=markers.round(4).to_json(orient="records"),
            event_click=on_click,
        )
        solara.Text(
            f"{moving} travellers on the map, {inside} inside facilities "
            "(click one to inspect)",
            classes=["mlm-map-count"],
        )
        if live_model is not None:
            FastForward(live_model)


@solara.component
def FastForward(model: UrbanMobilityModel) -> None:
    """Buttons that run the live model 15 minutes or an hour on."""

    def run_for(minutes: int) -> Callable[[], None]:
        def run() -> None:
            end = min(model.minute + minutes, model.days * MINUTES_PER_DAY)
            while model.running and model.minute < end:
                model.step()
            force_update()

        return run

    with solara.Row():
        solara.Button("+15 min", on_click=run_for(15), outlined=True,
                      disabled=not model.running, classes=["mlm-plus15"])  # fmt: skip
        solara.Button("+1 h", on_click=run_for(60), outlined=True,
                      disabled=not model.running, classes=["mlm-plus60"])  # fmt: skip


@solara.component
def InspectorPanel(source: LiveSource | ReplaySource) -> None:
    """Pick a traveller; show profile, plan, revisions, conversations, tool calls, memories, trips."""
    update_counter.get()  # redraw when the live model steps
    names = source.travellers()
    with solara.Column(classes=["mlm-inspector"]):
        solara.Select(
            "Traveller",
            values=names,
            value=selected_traveller.value,
            on_value=selected_traveller.set,
            classes=["mlm-traveller-select"],
        )
        name = selected_traveller.value
        if name is None or name not in names:
            solara.Text("Choose a traveller to inspect.")
            return
        report = source.report(name)
        solara.Text(f"{report.name}: {report.state}", classes=["mlm-state"],
                    style={"font-weight": "bold"})  # fmt: skip
        with solara.Details("Profile"):
            html_table(pd.DataFrame(report.profile.items(), columns=["field", "value"]))
        solara.Text("Today's plan")
        with solara.Column(classes=["mlm-plan"]):
            html_table(report.plan, "no plan yet today")
        with solara.Details("Plan as decided at day start"):
            html_table(report.first_plan, "no plan yet today")
        solara.Text("Revisions (with reasons)")
        with solara.Column(classes=["mlm-revisions"]):
            html_table(report.revisions, "no revision yet today")
        with solara.Details("Conversations"):
            with solara.Column(classes=["mlm-conversations"]):
                html_table(report.conversations, "no conversation today")
            solara.Text("Summaries remembered")
            html_table(pd.DataFrame({"chat": report.chats}), "no chat today")
        with (
            solara.Details("Tool calls"),
            solara.Column(classes=["mlm-tool-calls"]),
        ):
            html_table(report.tool_calls, "no tool call today")
        with solara.Details("Memories"):
            solara.Text("Recently retrieved")
            html_table(report.recent_memories)
            solara.Text("Most important")
            html_table(report.important_memories)
        with solara.Details("Reflections"):
            html_table(pd.DataFrame({"reflection": report.reflections}))
        solara.Text("Trips")
        html_table(report.trips, "no trip yet")


@solara.component
def TimelinePanel(source: LiveSource | ReplaySource) -> None:
    """Trips in progress and network delay over today."""
    update_counter.get()  # redraw when the live model steps
    view = source.view()
    line = charts.timeline(view.trips, source.link_states(), view.minute)
    figure_image(charts.timeline_figure(line))


@solara.component
def DeparturesPanel(source: LiveSource | ReplaySource) -> None:
    """Departure times of today against the earlier days."""
    update_counter.get()  # redraw when the live model steps
    trips = source.view().trips
    figure_image(charts.departures_figure(trips))


@solara.component
def ModeSharesPanel(source: LiveSource | ReplaySource) -> None:
    """Mode shares per day."""
    update_counter.get()  # redraw when the live model steps
    trips = source.view().trips
    figure_image(charts.mode_shares_figure(trips))


@solara.component
def DecisionsPanel(source: LiveSource | ReplaySource) -> None:
    """Decisions (LLM calls when an LLM brain decides) by kind and outcome."""
    update_counter.get()  # redraw when the live model steps
    decisions = source.decisions()
    figure_image(charts.decisions_figure(decisions))
    html_table(charts.decision_counts(decisions).reset_index(), "no decisions yet")
    llm = source.llm_summary()
    if len(llm):
        solara.Text("LLM calls (ledger)")
        with solara.Column(classes=["mlm-llm-summary"]):
            html_table(llm.reset_index())


# ---------------------------------------------------------------------------- tabs
TAB_NAMES = ("Town map and traveller", "Charts: network, departures, modes, decisions")
"""The app's tabs, named for what they hold."""


@solara.component
def AppTabs(source: LiveSource | ReplaySource, live_model: Any = None) -> None:
    """The two tabs of the live and the replay app: map and inspector, then the charts.

    The app's own tabs rather than SolaraViz pages: those are called "Page 0", "Page 1" and
    give each component half the width in a grid; here the map takes three fifths of the
    panel and each chart half.
    """
    with solara.lab.Tabs():
        with solara.lab.Tab(TAB_NAMES[0]), solara.Columns([3, 2]):
            TownMapPanel(source, live_model=live_model)
            InspectorPanel(source)
        with solara.lab.Tab(TAB_NAMES[1]):
            with solara.Columns([1, 1]):
                TimelinePanel(source)
                DeparturesPanel(source)
            with solara.Columns([1, 1]):
                ModeSharesPanel(source)
                DecisionsPanel(source)


# ---------------------------------------------------------------------------- live app
@solara.component
def LiveApp() -> None:
    """Mesa's SolaraViz controls around this session's own model, and the app's tabs.

    SolaraViz gets the model as a reactive value it replaces on Reset, and no components: the
    tabs below read the current model.
    """
    model = solara.use_memo(lambda: solara.reactive(AppModel()), [])
    SolaraViz(
        model,
        components=[],
        model_params=model_params(),
        name="GATSim: urban daily travel",
        play_interval=150,
        render_interval=5,
    )
    AppTabs(LiveSource(model.value), live_model=model.value)


# ---------------------------------------------------------------------------- replay
def find_runs(root: str | Path = "runs") -> list[str]:
    """Urban run directories under ``root`` (folders with a ``config.json``), sorted."""
    base = Path(root)
    if not base.is_dir():
        return []
    return sorted(str(p.parent) for p in base.glob("*/config.json"))


def fork_target(source: Path, from_day: int) -> Path:
    """A free folder name beside ``source`` for a fork from ``from_day``."""
    n = 1
    while (target := source.with_name(f"{source.name}-fork-d{from_day}-{n}")).exists():
        n += 1
    return target


@solara.component
def ReplayApp(path: str, on_open: Callable[[str], None]) -> None:
    """A saved run, read-only: time slider, the panels, and a fork form."""
    run, error = solara.use_memo(lambda: open_or_error(SavedRun.open, path), [path])
    if run is None:
        solara.Error(f"cannot replay {path}: {error}", classes=["mlm-error"])
    else:
        ReplayView(run, on_open).key(str(run.path))  # a new run starts at its own 08:00


@solara.component
def ReplayView(run: SavedRun, on_open: Callable[[str], None]) -> None:
    """The replay of an opened run."""
    first, last = run.minutes
    minute = solara.use_reactive(min(first + 8 * 60, last))
    source = ReplaySource(run, minute.value)
    with solara.AppBar():
        solara.AppBarTitle(f"GATSim replay: {run.path.name}")
    with solara.Sidebar():
        with solara.Card("Replay"):
            solara.Text(f"{run.path} ({len(run.days)} days, read-only)")
            with solara.Column(classes=["mlm-time-slider"]):
                solara.SliderInt("Minute", value=minute, min=first, max=last + 1, step=1,
                                 tick_labels=False)  # fmt: skip
            solara.Text(
                day_clock(minute.value, sep=", ").capitalize(),
                classes=["mlm-replay-clock"],
            )
            with solara.Row():
                for label, delta in (("-1 h", -60), ("-5 min", -5), ("+5 min", 5),
                                     ("+1 h", 60)):  # fmt: skip
                    solara.Button(
                        label,
                        outlined=True,
                        on_click=lambda d=delta: minute.set(
                            min(max(minute.value + d, first), last + 1)
                        ),
                    )
        ForkForm(run, on_open)
    AppTabs(source)


@solara.component
def ForkForm(run: SavedRun, on_open: Callable[[str], None]) -> None:
    """Fork the run from a day with another brain, more days or events off."""
    days = [0, *run.days]
    from_day = solara.use_reactive(days[0])
    brain = solara.use_reactive(str(run.config.get("brain", "rules")))
    n_days = solara.use_reactive(int(run.config.get("days", 1)))
    events = solara.use_reactive(bool(run.config.get("events", True)))
    status = solara.use_reactive("")

    def fork() -> None:
        target = fork_target(run.path, from_day.value)
        status.set(f"forking into {target} ...")
        try:
            fork_run(
                run.path,
                target,
                at=from_day.value,
                model=UrbanParameters.model_name,
                changes={
                    "brain": brain.value,
                    "days": max(n_days.value, from_day.value, 1),
                    "events": events.value,
                },
                progress=False,
            )
        except (OSError, ValueError) as error:
            status.set(f"fork failed: {error}")
            return
        status.set(f"forked into {target}")
        on_open(str(target))

    with solara.Card("Fork from a day"):
        solara.Select("From day (0: the start)", values=days, value=from_day)
        solara.InputText("Brain ('rules' or 'llm:<model>')", value=brain)
        solara.SliderInt("Days", value=n_days, min=1, max=max(14, n_days.value))
        solara.Checkbox(label="Events on", value=events)
        solara.Button("Fork", on_click=lambda: threading.Thread(target=fork).start(),
                      color="primary", classes=["mlm-fork"])  # fmt: skip
        if status.value:
            solara.Text(status.value, classes=["mlm-fork-status"])


@solara.component
def RunPicker(current: str | None, on_open: Callable[[str], None]) -> None:
    """Open a run directory: type its path or pick one found under ``runs/``."""
    typed = solara.use_reactive(current or "")
    with solara.Card("Saved runs"):
        found = find_runs()
        if found:
            solara.Select("Runs under runs/", values=found, value=current if current in found
                          else None, on_value=on_open)  # fmt: skip
        solara.InputText("Run directory", value=typed, classes=["mlm-run-path"])
        with solara.Row():
            solara.Button("Open", on_click=lambda: on_open(typed.value),
                          disabled=not typed.value, classes=["mlm-open-run"])  # fmt: skip
            if current:
                solara.Button("Live model", on_click=lambda: on_open(""), text=True)


@solara.component
def Page() -> None:
    """The app: the live model, or a saved run when one is opened."""
    run_path = solara.use_reactive(run_from_argv() or "")
    if run_path.value:
        ReplayApp(run_path.value, on_open=run_path.set)
    else:
        LiveApp()
    with solara.Sidebar():
        RunPicker(run_path.value or None, on_open=run_path.set)
