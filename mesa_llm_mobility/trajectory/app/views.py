"""The trajectory app's views of one individual: its days as tables, a map, a timeline, metrics.

Each view is a plain function of a :class:`~.session.TrajectorySession` (tables) or of those
tables (matplotlib figures), so tests read the data a figure was drawn from:

* :func:`individual_days`: the individual's visits, one row each, with their day's source
  (history, held out, generated) and the hours they cover;
* :func:`map_figure`: the real and the generated days side by side: the session's POIs as a
  grey scatter, each day's visits joined in order, markers coloured by activity;
* :func:`timeline_figure`: a Gantt chart of the visits, one row per day (history, held out,
  then generated), with each generated day's detector score;
* :func:`metrics_table`: the seven metrics for all individuals and for this one;
* :func:`individual_scores`: the detector score of each of its generated days.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.app.session import TrajectorySession
from mesa_llm_mobility.trajectory.metrics import METRICS, evaluate
from mesa_llm_mobility.trajectory.staypoints import local_dates

SOURCES = ("history", "held out", "generated")
"""Where a day comes from, in the order the timeline shows them."""

_PALETTE = (
    "#7f7f7f",
    "#1f1f1f",
    "#1f77b4",
    "#17becf",
    "#bcbd22",
    "#ff7f0e",
    "#8c564b",
    "#d62728",
    "#e377c2",
    "#2ca02c",
    "#98df8a",
    "#9467bd",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#aec7e8",
)
ACTIVITY_COLOURS: dict[str, str] = dict(zip(ACTIVITIES, _PALETTE, strict=True))
"""One colour per activity (Home near black, Work blue), the same in every view."""

DAY_COLUMNS = (
    "source",
    "date",
    "visit",
    "poi_id",
    "latitude",
    "longitude",
    "activity",
    "start_hour",
    "end_hour",
)
"""The columns of :func:`individual_days`."""

SHOWN_SCORE = "percentile"
"""The day score the timeline writes beside each generated day."""

MAP_MARGIN = 0.15
"""Room around the individual's places on the map (a share of their extent)."""


def _visits(stays: pd.DataFrame, agent_id: Any, source: str) -> pd.DataFrame:
    mine = stays[stays["agent_id"] == agent_id]
    dates = local_dates(mine)
    midnight_hours = (mine["start"] - dates).dt.total_seconds() / 3600
    end_hours = (mine["end"] - dates).dt.total_seconds() / 3600
    frame = pd.DataFrame(
        {
            "source": source,
            "date": dates.dt.tz_localize(None).dt.date.astype(str),
            "visit": mine.groupby(dates).cumcount().to_numpy(),
            "poi_id": mine["poi_id"].to_numpy(),
            "latitude": mine["latitude"].to_numpy(float),
            "longitude": mine["longitude"].to_numpy(float),
            "activity": mine["activity"].to_numpy(),
            "start_hour": midnight_hours.clip(0, 24).to_numpy(float),
            "end_hour": end_hours.clip(0, 24).to_numpy(float),
        },
        columns=list(DAY_COLUMNS),
    )
    return frame


def individual_days(session: TrajectorySession, agent_id: Any) -> pd.DataFrame:
    """An individual's visits: history, held-out and generated days (:data:`DAY_COLUMNS`).

    ``date`` is the local date a day's visits start on (``YYYY-MM-DD``); ``visit`` the visit's
    place in its day (from 0); ``start_hour`` and ``end_hour`` the hours after that midnight it
    covers (clipped to 0-24: the night at home runs on into the next day's first visit).
    """
    parts = [
        _visits(session.history, agent_id, "history"),
        _visits(session.held_out, agent_id, "held out"),
        _visits(session.generated, agent_id, "generated"),
    ]
    return pd.concat(parts, ignore_index=True)


def day_rows(days: pd.DataFrame) -> pd.DataFrame:
    """The timeline's rows: one per (source, date), in :data:`SOURCES` then date order."""
    rows = days[["source", "date"]].drop_duplicates()
    order = rows["source"].map({name: k for k, name in enumerate(SOURCES)})
    return (
        rows.assign(order=order)
        .sort_values(["order", "date"], kind="stable")
        .drop(columns="order")
        .reset_index(drop=True)
    )


def _map_limits(days: pd.DataFrame) -> tuple[tuple[float, float], tuple[float, float]]:
    """Latitude and longitude limits around the individual's places (at least ~2 km wide)."""
    lat = days["latitude"].to_numpy(float)
    lon = days["longitude"].to_numpy(float)
    span_lat = max(float(np.ptp(lat)) if lat.size else 0.0, 0.02)
    span_lon = max(float(np.ptp(lon)) if lon.size else 0.0, 0.02)
    mid_lat = float((lat.min() + lat.max()) / 2) if lat.size else 0.0
    mid_lon = float((lon.min() + lon.max()) / 2) if lon.size else 0.0
    half_lat = span_lat * (0.5 + MAP_MARGIN)
    half_lon = span_lon * (0.5 + MAP_MARGIN)
    return (mid_lat - half_lat, mid_lat + half_lat), (
        mid_lon - half_lon,
        mid_lon + half_lon,
    )


def map_figure(days: pd.DataFrame, pois: pd.DataFrame, title: str = "") -> Figure:
    """Real days (history and held out) beside the generated days, on the session's POIs.

    Args:
        days: From :func:`individual_days`.
        pois: ``poi_id, latitude, longitude`` of every POI (the grey background).
        title: Over both maps (the individual).

    Returns:
        A figure with two map axes (real, generated); each day is one line through its visits
        in order, each visit a marker coloured by its activity.
    """
    fig = Figure(figsize=(7.6, 4.4))
    axes = fig.subplots(1, 2, sharex=True, sharey=True)
    (low_lat, high_lat), (low_lon, high_lon) = _map_limits(days)
    nearby = pois[
        pois["latitude"].between(low_lat, high_lat)
        & pois["longitude"].between(low_lon, high_lon)
    ]
    panels = (
        ("real days (history and held out)", days["source"] != "generated"),
        ("generated days", days["source"] == "generated"),
    )
    for ax, (name, mask) in zip(axes, panels, strict=True):
        ax.scatter(
            nearby["longitude"], nearby["latitude"], s=4, color="#d0d0d0", zorder=1
        )
        shown = days[mask]
        for _, day in shown.groupby(["source", "date"], sort=True):
            ax.plot(
                day["longitude"],
                day["latitude"],
                color="#555555",
                lw=0.8,
                alpha=0.35,
                zorder=2,
            )
        ax.scatter(
            shown["longitude"],
            shown["latitude"],
            s=30,
            c=[ACTIVITY_COLOURS[a] for a in shown["activity"]],
            edgecolors="white",
            linewidths=0.5,
            zorder=3,
        )
        n_days = shown[["source", "date"]].drop_duplicates().shape[0]
        ax.set_title(f"{name}: {n_days} days", fontsize=9)
        ax.set_xlim(low_lon, high_lon)
        ax.set_ylim(low_lat, high_lat)
        ax.set_aspect(1 / max(math.cos(math.radians((low_lat + high_lat) / 2)), 0.1))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("longitude", fontsize=8)
    axes[0].set_ylabel("latitude", fontsize=8)
    _activity_legend(fig, days["activity"], below=True)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.2, top=0.9, wspace=0.08)
    return fig


def _activity_legend(fig: Figure, activities: pd.Series, below: bool = False) -> None:
    present = [a for a in ACTIVITIES if a in set(activities)]
    handles = [
        Line2D([], [], marker="o", ls="", color=ACTIVITY_COLOURS[a], label=a)
        for a in present
    ]
    if not handles:
        return
    if below:
        fig.legend(
            handles=handles, loc="lower center", ncol=6, fontsize=7, frameon=False
        )
    else:
        fig.legend(handles=handles, loc="center right", fontsize=7, frameon=False)


def timeline_figure(
    days: pd.DataFrame, scores: pd.DataFrame | None = None, title: str = ""
) -> Figure:
    """A Gantt chart of the visits: one row per day, history first, generated last.

    Args:
        days: From :func:`individual_days`.
        scores: ``date`` and :data:`SHOWN_SCORE` of the generated days (from
            :func:`individual_scores`), written at the right of their rows; ``None`` for none.
        title: Over the chart (the individual).

    Returns:
        The figure: bars from each visit's start to its end hour, coloured by activity.
    """
    rows = day_rows(days)
    fig = Figure(figsize=(9.6, 1.4 + 0.2 * max(len(rows), 1)))
    ax = fig.subplots()
    index = {(r.source, r.date): k for k, r in enumerate(rows.itertuples())}
    score_of = (
        dict(zip(scores["date"], scores[SHOWN_SCORE], strict=True))
        if scores is not None and len(scores)
        else {}
    )
    for (source, date), visits in days.groupby(["source", "date"], sort=False):
        y = index[(source, date)]
        ax.broken_barh(
            list(
                zip(
                    visits["start_hour"],
                    visits["end_hour"] - visits["start_hour"],
                    strict=True,
                )
            ),
            (y - 0.4, 0.8),
            facecolors=[ACTIVITY_COLOURS[a] for a in visits["activity"]],
        )
        if source == "generated" and date in score_of:
            ax.text(24.2, y, f"{score_of[date]:.2f}", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(
        [f"{r.source} {_weekday(r.date)} {r.date}" for r in rows.itertuples()],
        fontsize=7,
    )
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, 26.2 if score_of else 24)
    ax.set_xticks(range(0, 25, 3))
    ax.set_xlabel("hour of the day", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    for k in range(1, len(rows)):  # a line where the source changes
        if rows["source"].iloc[k] != rows["source"].iloc[k - 1]:
            ax.axhline(k - 0.5, color="#444444", lw=0.8)
    if score_of:
        ax.text(24.2, -0.9, SHOWN_SCORE, fontsize=7, va="bottom")
    _activity_legend(fig, days["activity"])
    if title:
        ax.set_title(title, fontsize=10)
    fig.subplots_adjust(left=0.2, right=0.84, bottom=0.4 / fig.get_figheight() + 0.05)
    return fig


def _weekday(date: str) -> str:
    return pd.Timestamp(date).strftime("%a")


def metrics_table(session: TrajectorySession, agent_id: Any = None) -> pd.DataFrame:
    """The seven metrics (lower is closer): all individuals, and the one selected.

    Args:
        session: The session (its :attr:`~.session.TrajectorySession.metrics` for all).
        agent_id: The individual, or ``None`` for the all-individuals column only.

    Returns:
        ``metric, all individuals`` (and ``this individual``, NaN where its few days do not
        make a distribution).
    """
    table = pd.DataFrame(
        {
            "metric": list(METRICS),
            "all individuals": [session.metrics[name] for name in METRICS],
        }
    )
    if agent_id is not None:
        reference = session.reference[session.reference["agent_id"] == agent_id]
        generated = session.generated[session.generated["agent_id"] == agent_id]
        try:
            mine = evaluate(reference, generated)
        except ValueError:
            mine = {}
        table["this individual"] = [mine.get(name, math.nan) for name in METRICS]
    return table


def individual_scores(session: TrajectorySession, agent_id: Any) -> pd.DataFrame:
    """The visit detector's score of each generated day of ``agent_id``.

    Returns:
        ``date`` (``YYYY-MM-DD``), then :func:`~..realism.day_scores`' columns: ``visits``,
        ``score_mean``, ``score_max``, ``anomalous_share``, ``attribution`` and
        ``percentile`` (:data:`SHOWN_SCORE`, the share of real days with a lower mean score:
        0.5 is typical, near 1 unusual), by date.
    """
    scores = session.day_scores
    mine = scores[scores["agent_id"] == agent_id]
    mine = mine.drop(columns=["agent_id", "source"], errors="ignore").rename(
        columns={"day": "date"}
    )
    mine["date"] = mine["date"].astype(str)
    return mine.sort_values("date", ignore_index=True)
