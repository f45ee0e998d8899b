"""The Solara components of the trajectory explorer (``examples/trajgen_app.py``).

The page opens a :class:`~.session.TrajectorySession` (by default a small synthetic city, its
last week held out and generated with the rule brain; or the run directory or history given
with ``-- --run PATH`` / ``-- --history PATH`` or typed in the sidebar) and shows one individual
at a time: the map of its real and generated days, the Gantt timeline of its visits, the seven
metrics, and the detector score of each generated day. Every browser session opens its own
session (``use_memo``) and has its own selection (a per-session reactive variable); nothing
mutable lives at module level but those.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd
import solara

from mesa_llm_mobility.trajectory.app.controls import session_controls
from mesa_llm_mobility.trajectory.app.session import (
    SessionSettings,
    TrajectorySession,
    open_session,
)
from mesa_llm_mobility.trajectory.app.views import (
    individual_days,
    individual_scores,
    map_figure,
    metrics_table,
    timeline_figure,
)
from mesa_llm_mobility.viz.controls import ParameterControls, control_values
from mesa_llm_mobility.viz.launch import open_or_error, option_from_argv, run_from_argv
from mesa_llm_mobility.viz.panels import APP_CSS, figure_image, html_table

logger = logging.getLogger(__name__)

selected_individual: solara.Reactive[Any] = solara.reactive(None)
"""The individual shown (per browser session); the first one when unset or unknown."""

SCORE_NOTE = (
    "The visit-level detector (a next-visit model learned on half of the real days) scores "
    "each visit; a day's percentile is the share of held-back real days that score lower "
    "(0.5 is typical, near 1 unusual; attribution: what made its visits unusual, spatial, "
    "temporal or both). A proxy, not a truth; days beyond the real ones it can be paired "
    "with are not scored."
)

SCORE_COLUMNS = (
    "date",
    "visits",
    "score_mean",
    "anomalous_share",
    "attribution",
    "percentile",
)
"""The day-score columns the page shows (:func:`~.views.individual_scores` has all)."""

SCORE_HEADERS = {"score_mean": "mean score", "anomalous_share": "share unusual"}
"""Shorter headers of two day-score columns (the table fits half of a 1,400 px window)."""

TABLE_CSS = (
    ".mlm-table td { white-space: nowrap; }"
    " .mlm-table th { white-space: normal; vertical-align: bottom; }"
)
"""Cells on one line (dates), headers wrapped at their spaces."""


def launch_path() -> str:
    """The run directory or history the app was started with, or ``""`` (synthetic city).

    ``solara run examples/trajgen_app.py -- --run DIR`` (or ``MLM_APP_RUN``), or
    ``-- --history PATH`` (or ``MLM_APP_HISTORY``): either takes a run directory, a NumoSim
    folder or a stay-point file.
    """
    return run_from_argv() or option_from_argv("--history", "MLM_APP_HISTORY") or ""


def shown_individual(session: TrajectorySession, selected: Any) -> Any:
    """The selected individual if the session has it, else its first."""
    individuals = session.individuals()
    return selected if selected in individuals else individuals[0]


def decision_counts(decisions: pd.DataFrame) -> pd.DataFrame:
    """Decisions per kind and outcome (``kind`` then one column per outcome)."""
    if decisions.empty:
        return pd.DataFrame()
    table = pd.crosstab(decisions["kind"], decisions["outcome"])
    table.columns.name = None
    return table.reset_index()


def scores_or_error(
    session: TrajectorySession, agent_id: Any
) -> tuple[pd.DataFrame, str | None]:
    """The individual's day scores, or none and why the detector could not score the session."""
    try:
        return individual_scores(session, agent_id), None
    except ValueError as error:  # RealismError, or tables the detector refuses
        logger.warning("no day scores for %s: %s", session.label, error)
        return pd.DataFrame(columns=list(SCORE_COLUMNS)), str(error)


# ---------------------------------------------------------------------------- panels
@solara.component
def MapPanel(session: TrajectorySession, agent_id: Any, days: pd.DataFrame) -> None:
    """The individual's real and generated days on the map."""
    figure = map_figure(days, session.pois, title=f"Individual {agent_id}")
    figure_image(figure, classes=["mlm-traj-map"])


@solara.component
def TimelinePanel(agent_id: Any, days: pd.DataFrame, scores: pd.DataFrame) -> None:
    """The Gantt timeline of the individual's visits, one row per day, with the day scores."""
    figure = timeline_figure(
        days, scores, title=f"Individual {agent_id}: visits by day"
    )
    figure_image(figure, classes=["mlm-traj-timeline"])


@solara.component
def MetricsPanel(
    session: TrajectorySession,
    agent_id: Any,
    scores: pd.DataFrame,
    scores_error: str | None,
) -> None:
    """The seven metrics, all individuals and this one, and the detector scores of its days."""
    with solara.Column(classes=["mlm-traj-metrics"]):
        solara.Text(
            f"Seven metrics, generated against the {session.reference_name} (lower is closer)",
            style={"font-weight": "bold"},
        )
        html_table(metrics_table(session, agent_id).round(4))
    with solara.Column(classes=["mlm-traj-scores"]):
        solara.Text(
            "Detector score of each generated day", style={"font-weight": "bold"}
        )
        if scores_error is not None:
            solara.Warning(
                f"no day scores: {scores_error}", classes=["mlm-traj-no-scores"]
            )
        shown = scores[list(SCORE_COLUMNS)].round(3).rename(columns=SCORE_HEADERS)
        with solara.Column(classes=["mlm-traj-score-table"]):
            html_table(shown, "no scored day")
        solara.Text(SCORE_NOTE, style={"font-size": "11px", "color": "#757575"})
    with solara.Details("Decisions and LLM calls"):
        with solara.Column(classes=["mlm-traj-decisions"]):
            html_table(decision_counts(session.decisions), "not stored in the run")
        if len(session.llm_summary):
            solara.Text("LLM calls (ledger)")
            with solara.Column(classes=["mlm-llm-summary"]):
                html_table(session.llm_summary.reset_index())


@solara.component
def Explorer(session: TrajectorySession) -> None:
    """Pick an individual; its map, timeline, metrics and day scores."""
    agent_id = shown_individual(session, selected_individual.value)
    days = solara.use_memo(
        lambda: individual_days(session, agent_id), [session, agent_id]
    )
    scores, scores_error = solara.use_memo(
        lambda: scores_or_error(session, agent_id), [session, agent_id]
    )
    with solara.Row(style={"align-items": "center"}):
        solara.Select(
            "Individual",
            values=session.individuals(),
            value=agent_id,
            on_value=selected_individual.set,
            classes=["mlm-individual-select"],
        )
        solara.Text(session.summary(), classes=["mlm-traj-summary"])
    with solara.Columns([5, 4]):
        MapPanel(session, agent_id, days)
        MetricsPanel(session, agent_id, scores, scores_error)
    TimelinePanel(agent_id, days, scores)


@solara.component
def SourceCard(
    path: solara.Reactive[str], settings: solara.Reactive[SessionSettings]
) -> None:
    """What to show: a run directory or history (typed), or the synthetic city; how to generate.

    The generation's controls are :func:`.controls.session_controls`, each showing its value.
    """
    typed = solara.use_reactive(path.value)
    controls = session_controls(settings.value)
    values = solara.use_reactive(control_values(controls))

    def apply() -> None:
        settings.set(SessionSettings(**control_values(controls, values.value)))
        path.set(typed.value.strip())

    with solara.Card("Data"):
        solara.InputText(
            "Run directory or history (empty: synthetic city)",
            value=typed,
            classes=["mlm-source-path"],
        )
        ParameterControls(controls, values)
        solara.Button(
            "Open / generate", on_click=apply, color="primary", classes=["mlm-apply"]
        )


@solara.component
def Page() -> None:
    """The app: a session of this browser tab, its source in the sidebar, the explorer."""
    path = solara.use_reactive(launch_path())
    settings = solara.use_reactive(SessionSettings())
    session, error = solara.use_memo(
        lambda: open_or_error(lambda p: open_session(p, settings.value), path.value),
        [path.value, settings.value],
    )
    solara.Style(APP_CSS + TABLE_CSS)
    with solara.AppBar():
        solara.AppBarTitle("TrajGenAgent: real and generated days")
    with solara.Sidebar():
        SourceCard(path, settings)
        if session is not None:
            solara.Text(session.label, classes=["mlm-traj-source"])
    if session is None:
        solara.Error(f"cannot show {path.value}: {error}", classes=["mlm-error"])
    elif not session.individuals():
        solara.Error(f"{session.label}: no generated day", classes=["mlm-error"])
    else:
        Explorer(session)
