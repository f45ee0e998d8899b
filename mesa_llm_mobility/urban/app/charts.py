"""The app's charts: activity over time, departures per day, mode shares, decisions.

Each function takes plain tables (a live model's frames or a saved run's tables, cut at the
minute shown) and returns a matplotlib figure; none raises on an empty table (the app shows an
empty chart with a note before the first trip).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mesa_llm_mobility.urban import plots
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.viz.panels import enlarge_small_text

TIMELINE_COLUMNS = ["minute", "trips_in_progress", "vehicles_queued", "mean_delay"]

CHART_TEXT_POINTS = 10.0
"""Smallest text of the charts (legible when a chart takes half of a 1,400 px window)."""


def timeline(
    trips: pd.DataFrame,
    link_states: pd.DataFrame | None,
    until: float,
    *,
    every: int = 5,
) -> pd.DataFrame:
    """Trips in progress, vehicles queueing and the delay of arrivals over today, every N min.

    Args:
        trips: Trips departed by ``until`` (arrivals after it empty).
        link_states: The link table (road rows are summed), or None to leave that column empty.
        until: Last minute (absolute).
        every: Sampling step in minutes.

    Returns:
        ``TIMELINE_COLUMNS``: minute (absolute), trips in progress at the minute, vehicles
        waiting or queued on road links, mean delay (min) of the trips that arrived in the
        ``every`` minutes before it (NaN without arrivals).
    """
    day_start = int(until // MINUTES_PER_DAY) * MINUTES_PER_DAY
    minutes = np.arange(day_start, int(until) + 1, every, dtype=float)
    if minutes.size == 0 or minutes[-1] != until:
        minutes = np.append(minutes, float(until))
    departure = trips["departure"].to_numpy(dtype=float) if len(trips) else np.empty(0)
    arrival = trips["arrival"].to_numpy(dtype=float) if len(trips) else np.empty(0)
    delay = trips["delay"].to_numpy(dtype=float) if len(trips) else np.empty(0)
    arrival_or_inf = np.where(np.isnan(arrival), np.inf, arrival)
    in_progress = [
        int(((departure <= m) & (arrival_or_inf > m)).sum()) for m in minutes
    ]
    mean_delay = []
    for m in minutes:
        arrived = (arrival > m - every) & (arrival <= m)
        mean_delay.append(float(delay[arrived].mean()) if arrived.any() else np.nan)
    queued = np.full(minutes.size, np.nan)
    if link_states is not None and len(link_states):
        roads = link_states[
            (link_states["kind"] == "road") & (link_states["time"] >= day_start)
        ]
        per_minute = roads.groupby("time")["queue"].sum()
        queued = per_minute.reindex(minutes, method="ffill").to_numpy(dtype=float)
    return pd.DataFrame(
        {
            "minute": minutes,
            "trips_in_progress": in_progress,
            "vehicles_queued": queued,
            "mean_delay": mean_delay,
        }
    )


def timeline_figure(line: pd.DataFrame, *, figsize=(5.4, 3.2)) -> Figure:
    """Trips in progress and vehicles queueing (left axis), mean delay (right axis)."""
    figure = plots.new_figure(figsize)
    ax = figure.subplots()
    hours = (line["minute"] % MINUTES_PER_DAY) / 60.0
    ax.plot(
        hours, line["trips_in_progress"], label="trips in progress", color="#1565c0"
    )
    if line["vehicles_queued"].notna().any():
        ax.plot(
            hours, line["vehicles_queued"], label="vehicles queueing", color="#d32f2f"
        )
    ax.set_xlabel("hour of the day")
    ax.set_ylabel("travellers")
    right = ax.twinx()
    right.plot(
        hours, line["mean_delay"], ".", color="#fb8c00", label="delay of arrivals"
    )
    right.set_ylabel("mean delay (min)")
    handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    ax.legend(
        handles=handles, fontsize=CHART_TEXT_POINTS, loc="upper left", frameon=False
    )
    day = int(line["minute"].iloc[-1] // MINUTES_PER_DAY) + 1 if len(line) else 1
    ax.set_title(f"Day {day}: the network over time", fontsize=CHART_TEXT_POINTS + 1)
    return enlarge_small_text(figure, CHART_TEXT_POINTS)


def departures_figure(trips: pd.DataFrame, *, figsize=(5.4, 3.2)) -> Figure:
    """Departure times of today against the earlier days (step lines, 10-minute bins)."""
    departed = trips[trips["departure"].notna()] if len(trips) else trips
    if not len(departed):
        return _empty(figsize, "no departures yet")
    figure = plots.departure_histograms(departed, overlay=True)
    figure.set_size_inches(*figsize)
    return enlarge_small_text(figure, CHART_TEXT_POINTS)


def mode_shares_figure(trips: pd.DataFrame, *, figsize=(4.8, 3.2)) -> Figure:
    """Mode shares per day."""
    departed = trips[trips["departure"].notna()] if len(trips) else trips
    if not len(departed):
        return _empty(figsize, "no trips yet")
    figure = plots.mode_shares(departed)
    figure.set_size_inches(*figsize)
    return enlarge_small_text(figure, CHART_TEXT_POINTS)


def decision_counts(decisions: pd.DataFrame) -> pd.DataFrame:
    """Decisions by kind (rows) and outcome (columns: ok, repaired, fallback, replayed, ...)."""
    if not len(decisions):
        return pd.DataFrame()
    return pd.crosstab(decisions["kind"], decisions["outcome"])


def decisions_figure(decisions: pd.DataFrame, *, figsize=(4.8, 3.2)) -> Figure:
    """Stacked bars of decisions by kind and outcome (LLM calls and how they ended)."""
    counts = decision_counts(decisions)
    if counts.empty:
        return _empty(figsize, "no decisions yet")
    figure = plots.new_figure(figsize)
    ax = figure.subplots()
    colours = {"ok": "#2e7d32", "repaired": "#fbc02d", "fallback": "#d32f2f"}
    bottom = np.zeros(len(counts))
    for outcome in counts.columns:
        values = counts[outcome].to_numpy()
        ax.barh(
            counts.index,
            values,
            left=bottom,
            label=outcome,
            color=colours.get(outcome, "#78909c"),
        )
        bottom += values
    ax.set_xlabel("decisions")
    ax.legend(fontsize=CHART_TEXT_POINTS, frameon=False)
    ax.set_title("Decisions by kind and outcome", fontsize=CHART_TEXT_POINTS + 1)
    return enlarge_small_text(figure, CHART_TEXT_POINTS)


def _empty(figsize: tuple[float, float], note: str) -> Figure:
    figure = plots.new_figure(figsize)
    ax = figure.subplots()
    ax.text(
        0.5,
        0.5,
        note,
        ha="center",
        va="center",
        color="#757575",
        fontsize=CHART_TEXT_POINTS + 1,
    )
    ax.set_axis_off()
    return figure
