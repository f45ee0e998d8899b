"""The Solara components of the urban app (``examples/gatsim_app.py``).

The live app steps an :class:`AppModel` with the shared live controls
(:func:`~mesa_llm_mobility.viz.playback.LiveControls`: Reset, play / pause, Step, and the
parameters of :mod:`.controls`, each showing its value) and shows our panels in two tabs; the
replay shows the same panels for a minute of a saved run, chosen with a time slider or played,
and can fork the run from a day (a run with checkpoints). The paper's published GATSim run opens
like a saved run (``-- --published``, or the *Saved runs* card's button). Panels read a :mod:`.sources` object, never the model or the
run directly. Every browser session builds its own model (``Page`` makes it with ``use_memo``);
nothing mutable lives at module level but per-session reactive variables.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import solara
from mesa.visualization.utils import force_update, update_counter

from mesa_llm_mobility.experiment.lifecycle import fork_run
from mesa_llm_mobility.urban.app import charts
from mesa_llm_mobility.urban.app.controls import (
    REPLAY_SPEED,
    STEPPING,
    fork_controls,
    parameter_controls,
)
from mesa_llm_mobility.urban.app.inspector import TravellerReport
from mesa_llm_mobility.urban.app.published_replay import (
    published_from_argv,
    published_run_dir,
)
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
from mesa_llm_mobility.viz.controls import ParameterControls, control_values
from mesa_llm_mobility.viz.launch import open_or_error, run_from_argv
from mesa_llm_mobility.viz.panels import (
    APP_CSS,
    figure_image,
    html_table,
    png_bytes,
)
from mesa_llm_mobility.viz.playback import LiveControls, ReplayControls

selected_traveller: solara.Reactive[str | None] = solara.reactive(None)
"""The traveller shown in the inspector and ringed on the map (per browser session)."""


class AppModel(UrbanMobilityModel):
    """The urban model with the app's parameters (:func:`.controls.parameter_controls`).

    Reset re-creates it from the controls' values; it takes only those parameters (the town
    is the bundled one), collects every 5 minutes.
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


# ---------------------------------------------------------------------------- panels
@solara.component
def TownMapPanel(source: LiveSource | ReplaySource, live_model: Any = None) -> None:
    """The network map with the clock and what is on it (and fast-forward when live).

    Clicking a traveller's marker selects it for the inspector.
    """
    update_counter.get()  # redraw when the live model steps
    view = source.view()
    positions = traveller_positions(view)
    figure = draw_town(
        view, selected=selected_traveller.value, positions=positions, title=False
    )
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
            f"{moving} travellers on the map (click one to inspect), {inside} inside "
            "facilities (the number after a facility's name; + queue at its door)",
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
        for label, minutes, name in (
            ("+15 min", 15, "mlm-plus15"),
            ("+1 h", 60, "mlm-plus60"),
        ):
            solara.Button(
                label,
                on_click=run_for(minutes),
                outlined=True,
                disabled=not model.running,
                classes=[name],
            )


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
        solara.Text(
            f"{report.name}: {report.state}",
            classes=["mlm-state"],
            style={"font-weight": "bold"},
        )
        with solara.Details("Profile"):
            html_table(pd.DataFrame(report.profile.items(), columns=["field", "value"]))
        solara.Text("Today's plan")
        with solara.Column(classes=["mlm-plan"]):
            html_table(report.plan, "no plan yet today")
        with solara.Details("Plan as decided at day start"):
            html_table(report.first_plan, "no plan yet today")
        solara.Text("Revisions (with reasons)")
        with solara.Column(classes=["mlm-revisions"]):
            html_table(
                report.revisions, _empty(report, "revisions", "no revision yet today")
            )
        with solara.Details("Conversations"):
            with solara.Column(classes=["mlm-conversations"]):
                html_table(
                    report.conversations,
                    _empty(report, "chats", "no conversation today"),
                )
            solara.Text("Summaries remembered")
            html_table(pd.DataFrame({"chat": report.chats}), "no chat today")
        with (
            solara.Details("Tool calls"),
            solara.Column(classes=["mlm-tool-calls"]),
        ):
            html_table(
                report.tool_calls, _empty(report, "tool_calls", "no tool call today")
            )
        with solara.Details("Memories"), solara.Column(classes=["mlm-memory"]):
            solara.Text("Recently retrieved")
            html_table(report.recent_memories)
            solara.Text("Most important")
            html_table(report.important_memories)
            solara.Text(
                f"All {len(report.memories)} memories held now, newest first",
                classes=["mlm-memory-count"],
            )
            with solara.Column(
                classes=["mlm-memories"],
                style={"max-height": "360px", "overflow-y": "auto"},
            ):
                html_table(report.memories)
        with solara.Details("Reflections"):
            html_table(pd.DataFrame({"reflection": report.reflections}))
        solara.Text("Trips")
        html_table(report.trips, "no trip yet")


def _empty(report: TravellerReport, part: str, text: str) -> str:
    """What an empty part says: ``text``, or that the run did not record that part."""
    return "not recorded in this run" if part in report.unrecorded else text


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
    counts = charts.decision_counts(decisions).rename_axis(columns=None)
    html_table(counts.reset_index(), "no decisions yet")
    llm = source.llm_summary()
    if len(llm):
        solara.Text("LLM calls (ledger)")
        with solara.Column(classes=["mlm-llm-summary"]):
            html_table(llm.reset_index())


# ---------------------------------------------------------------------------- tabs
TAB_NAMES = ("Town map and traveller", "Charts: network, departures, modes, decisions")
"""The app's tabs, named for what they hold."""
MAP_COLUMNS = [2, 1]
"""Widths of the map and the inspector in the first tab."""


@solara.component
def AppTabs(source: LiveSource | ReplaySource, live_model: Any = None) -> None:
    """The two tabs of the live and the replay app: map and inspector, then the charts.

    Tabs named for what they hold (not SolaraViz's "Page 0", "Page 1", which also give each
    component half the width in a grid): the map takes two thirds of the panel, each chart half.
    """
    with solara.lab.Tabs(lazy=True):  # a hidden tab is not drawn
        with solara.lab.Tab(TAB_NAMES[0]), solara.Columns(MAP_COLUMNS):
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
    """This session's own model: the live controls in the sidebar, the app's tabs.

    The model is a reactive value the controls replace on Reset; the tabs read the current one.
    """
    model = solara.use_memo(lambda: solara.reactive(AppModel()), [])
    with solara.AppBar():
        solara.AppBarTitle("GATSim: urban daily travel")
    with solara.Sidebar():
        LiveControls(
            model, lambda values: AppModel(**values), parameter_controls(), STEPPING
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
    run, error = solara.use_memo(lambda: open_or_error(open_saved_run, path), [path])
    if run is None:
        solara.Error(f"cannot replay {path}: {error}", classes=["mlm-error"])
    else:
        ReplayView(run, on_open).key(str(run.path))  # a new run starts at its own 08:00


@solara.component
def ReplayView(run: SavedRun, on_open: Callable[[str], None]) -> None:
    """The replay of an opened run: its clock (slider, buttons, play / pause) and the panels."""
    first, last = run.minutes
    end = last + 1  # the clock after the last recorded minute
    minute = solara.use_reactive(min(first + 8 * 60, last))
    source = ReplaySource(run, minute.value)

    def move(minutes: float) -> bool:
        """Move the clock by ``minutes`` within the run; whether it can move on."""
        minute.set(min(max(minute.value + round(minutes), first), end))
        return minute.value < end

    published = run.published
    with solara.AppBar():
        solara.AppBarTitle(
            f"GATSim replay: {run.path.name}"
            if published is None
            else "GATSim replay: the paper's published run "
            f"({published.get('simulation_name', 'experiment_2')})"
        )
    with solara.Sidebar():
        with solara.Card("Replay"):
            if published is not None:
                solara.Div(
                    "The GATSim authors' LLM run (github.com/qiliuchn/gatsim, "
                    f"{published.get('run_folder', '')}, {published.get('licence', '')}), "
                    "imported by mesa_llm_mobility.urban.published; stored in",
                    classes=["mlm-published-note"],
                )
            solara.Div(f"{run.path} ({len(run.days)} days, read-only)")
            with solara.Column(classes=["mlm-time-slider"]):
                solara.SliderInt(
                    "Time",
                    value=minute,
                    min=first,
                    max=end,
                    step=1,
                    thumb_label=False,
                )
            solara.Text(
                day_clock(minute.value, sep=", ").capitalize(),
                classes=["mlm-replay-clock"],
            )
            ReplayControls(move, REPLAY_JUMPS, REPLAY_SPEED, at_end=minute.value >= end)
        if run.has_checkpoints:
            ForkForm(run, on_open)
        else:
            with solara.Card("Fork from a day"):
                solara.Text(
                    "This run has no checkpoints: it cannot be forked"
                    + (" (the prototype's agents are not ours)." if published else ".")
                )
    AppTabs(source)


REPLAY_JUMPS = (("-1 h", -60), ("-5 min", -5), ("+5 min", 5), ("+1 h", 60))
"""The replay's buttons that move its clock: label and minutes."""


@solara.component
def ForkForm(run: SavedRun, on_open: Callable[[str], None]) -> None:
    """Fork the run from a day with another brain, more days or events off."""
    days = [0, *run.days]
    from_day = solara.use_reactive(days[0])
    brain = solara.use_reactive(str(run.config.get("brain", "rules")))
    controls = fork_controls(run.config)
    changes = solara.use_reactive(control_values(controls))
    status = solara.use_reactive("")

    def fork() -> None:
        target = fork_target(run.path, from_day.value)
        status.set(f"forking into {target} ...")
        chosen = control_values(controls, changes.value)
        try:
            fork_run(
                run.path,
                target,
                at=from_day.value,
                model=UrbanParameters.model_name,
                changes={
                    "brain": brain.value,
                    "days": max(int(chosen["days"]), from_day.value, 1),
                    "events": bool(chosen["events"]),
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
        ParameterControls(controls, changes)
        solara.Button(
            "Fork",
            on_click=lambda: threading.Thread(target=fork).start(),
            color="primary",
            classes=["mlm-fork"],
        )
        if status.value:
            solara.Text(status.value, classes=["mlm-fork-status"])


@solara.component
def RunPicker(current: str | None, on_open: Callable[[str], None]) -> None:
    """Open a run directory: type its path or pick one found under ``runs/``."""
    typed = solara.use_reactive(current or "")
    with solara.Card("Saved runs"):
        found = find_runs()
        if found:
            solara.Select(
                "Runs under runs/",
                values=found,
                value=current if current in found else None,
                on_value=on_open,
            )
        solara.InputText("Run directory", value=typed, classes=["mlm-run-path"])
        with solara.Row():
            solara.Button(
                "Open",
                on_click=lambda: on_open(typed.value),
                disabled=not typed.value,
                classes=["mlm-open-run"],
            )
            if current:
                solara.Button("Live model", on_click=lambda: on_open(""), text=True)
        solara.Button(
            "The paper's published run",
            on_click=lambda: on_open(PUBLISHED_RUN),
            outlined=True,
            classes=["mlm-open-published"],
        )


PUBLISHED_RUN = "published:gatsim"
"""What the app opens for the paper's published run (in the run field, after ``--run``)."""


def open_saved_run(path: str) -> SavedRun:
    """A run directory, or for :data:`PUBLISHED_RUN` the published run (stored the first time)."""
    return SavedRun.open(published_run_dir() if path == PUBLISHED_RUN else path)


def first_run() -> str:
    """The run the app opens at start: ``--published``, ``--run DIR``, or none (live)."""
    return PUBLISHED_RUN if published_from_argv() else run_from_argv() or ""


@solara.component
def Page() -> None:
    """The app: the live model, or a saved run when one is opened."""
    run_path = solara.use_reactive(solara.use_memo(first_run, []))
    solara.Style(APP_CSS)
    if run_path.value:
        ReplayApp(run_path.value, on_open=run_path.set)
    else:
        LiveApp()
    with solara.Sidebar():
        RunPicker(run_path.value or None, on_open=run_path.set)
