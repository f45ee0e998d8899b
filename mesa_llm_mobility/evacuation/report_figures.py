"""The report's figures (paper Figs. 6, 7, 9 and S1, and the outcome and appraisal bars).

Each function draws one PNG from the results of :mod:`.report_numbers` with matplotlib's
object-oriented API (no global state, no display needed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from mesa_llm_mobility.evacuation.analysis import (
    EVIDENCE_LEVELS,
    HIGH_URGENCY_LOW_DIRECTNESS,
    HOMOGENEOUS,
    OUTCOMES,
)
from mesa_llm_mobility.evacuation.channels import network_edges
from mesa_llm_mobility.evacuation.report_numbers import ReportData

COLORS = {"evacuated": "tab:blue", "killed": "tab:red", "unresolved": "tab:orange"}
DPI = 110


def _legend(ax: Axes, **options: Any) -> None:
    """A legend when something is labelled (an empty one warns)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**options)


def _stacked(ax: Axes, frame: pd.DataFrame, key: str) -> None:
    bottom = np.zeros(len(frame))
    for name in OUTCOMES:
        values = frame[f"{name}_share"].to_numpy(float)
        ax.bar(
            frame[key].astype(str),
            values,
            bottom=bottom,
            color=COLORS[name],
            label=name,
        )
        bottom += values
    for k, n in enumerate(frame["n"]):
        ax.annotate(f"n={n}", (k, 1.01), ha="center", fontsize=7)
    ax.set_ylim(0, 1.1)
    ax.tick_params(axis="x", labelsize=7)


def outcomes_figure(
    data: ReportData, seed_means: pd.DataFrame | None, path: Path
) -> None:
    """Outcome shares by composition; with seeds, the evacuated share's between-seed interval."""
    fig = Figure(figsize=(7, 3.5))
    ax = fig.subplots()
    _stacked(ax, data.by_composition, "composition")
    if seed_means is not None and len(seed_means) and seed_means["seeds"].max() > 1:
        means = seed_means.set_index("composition").reindex(
            data.by_composition["composition"]
        )
        x = np.arange(len(means))
        ax.errorbar(
            x,
            means["mean"],
            yerr=[means["mean"] - means["low"], means["high"] - means["mean"]],
            fmt="none",
            ecolor="k",
            capsize=3,
            lw=1,
            label="evacuated, 95 % between-seed interval",
        )
    ax.set_ylabel("share of pedestrians")
    ax.set_xlabel("composition")
    _legend(ax, fontsize=7, loc="lower right")
    ax.set_title("Outcomes by composition")
    fig.savefig(path, dpi=DPI, bbox_inches="tight")


def knowledge_figure(data: ReportData, pedestrians: pd.DataFrame, path: Path) -> None:
    """Fig. 9: (a) by usable exits known, (b) by information source, (c) time to knowledge."""
    fig = Figure(figsize=(12, 3.6))
    axes = fig.subplots(1, 3)
    _stacked(
        axes[0], data.knowledge["usable_exits_known"].by_exits_known, "exits_known"
    )
    axes[0].set_title("(a) usable exits known before the final approach", fontsize=8)
    _stacked(axes[1], data.by_source, "knowledge_source")
    axes[1].set_title("(b) information source", fontsize=8)
    _legend(axes[0], fontsize=7)
    ax = axes[2]
    known = pedestrians.dropna(subset=["first_usable_s"])
    for outcome in ("evacuated", "killed"):
        times = np.sort(known.loc[known["outcome"] == outcome, "first_usable_s"])
        if not times.size:
            continue
        median = float(np.median(times))
        ax.step(
            times,
            np.arange(1, times.size + 1) / times.size,
            where="post",
            color=COLORS[outcome],
            label=f"{outcome} (n={times.size}, median {median:.2f} s)",
        )
        ax.plot([median], [0.5], "o", color=COLORS[outcome])
    ax.set_xlabel("time to first usable-exit knowledge (s)")
    ax.set_ylabel("cumulative share")
    ax.set_title("(c) time to usable-exit knowledge", fontsize=8)
    _legend(ax, fontsize=7)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")


def _heat(ax: Axes, decisions: pd.DataFrame) -> None:
    evaluated = decisions.dropna(subset=["urgency", "directness"])
    if len(evaluated):
        ax.hist2d(
            evaluated["urgency"],
            evaluated["directness"],
            bins=20,
            range=[[0, 1], [0, 1]],
            cmap="Greys",
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)


def quadrants_figure(data: ReportData, decisions: pd.DataFrame, path: Path) -> None:
    """Fig. 7: all decisions (a) and the five homogeneous compositions (b).

    (a) carries the pooled medians and the outcome centroids; each panel of (b) its run-level
    high-urgency low-directness share with the paired-block bootstrap interval.
    """
    q = data.quadrants
    fig = Figure(figsize=(15, 3.4))
    axes = fig.subplots(1, 6)
    ax = axes[0]
    _heat(ax, decisions)
    ax.axvline(q.urgency_median, ls="--", color="k", lw=0.8)
    ax.axhline(q.directness_median, ls="--", color="k", lw=0.8)
    for outcome, row in q.centroids.iterrows():
        ax.scatter(
            row["urgency"],
            row["directness"],
            color=COLORS.get(str(outcome), "k"),
            s=50,
            edgecolor="white",
            label=str(outcome),
        )
    ax.set_xlabel("urgency")
    ax.set_ylabel("directness (10 s)")
    _legend(ax, fontsize=6)
    ax.set_title("(a) all decisions", fontsize=8)
    intervals = data.composition_intervals.set_index(["measure", "composition"])
    for ax, composition in zip(axes[1:], HOMOGENEOUS, strict=True):
        _heat(ax, decisions[decisions["composition"] == composition])
        ax.axvline(q.urgency_median, ls="--", color="k", lw=0.6)
        ax.axhline(q.directness_median, ls="--", color="k", lw=0.6)
        key = ("high_urgency_low_directness_share", composition)
        if key in intervals.index:
            row = intervals.loc[key]
            ax.set_title(
                f"{composition}: HU-LD {100 * row['mean']:.1f} % "
                f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]",
                fontsize=7,
            )
        ax.set_xlabel("urgency", fontsize=7)
    fig.suptitle(
        f"(b) {HIGH_URGENCY_LOW_DIRECTNESS} share per homogeneous composition",
        fontsize=8,
        x=0.6,
    )
    fig.savefig(path, dpi=DPI, bbox_inches="tight")


def appraisal_figure(appraisal: pd.DataFrame, path: Path) -> None:
    """Danger-appraisal rate by composition under no / remembered / direct evidence."""
    fig = Figure(figsize=(7, 3.5))
    ax = fig.subplots()
    width = 0.27
    x = np.arange(len(appraisal))
    for k, level in enumerate(EVIDENCE_LEVELS):
        ax.bar(
            x + (k - 1) * width,
            appraisal[level].fillna(0).to_numpy(float),
            width,
            label=f"{level} evidence",
        )
    ax.set_xticks(x, appraisal.index.astype(str))
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of decisions appraised 'danger'")
    ax.set_xlabel("composition")
    _legend(ax, fontsize=7)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")


def revisions_figure(data: ReportData, path: Path) -> None:
    """Fig. 6: (left) revision levels; (right) cumulative revision probabilities by stimulus."""
    fig = Figure(figsize=(11, 3.6))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2.2]})
    levels = data.revisions.reindex(["goal", "plan", "execution", "none"]).fillna(0)
    left.bar(levels.index, levels["share"], color="tab:gray")
    left.set_ylabel("share of decisions")
    left.set_title("revision level (highest per decision)", fontsize=8)
    stimuli = data.stimuli
    x = np.arange(len(stimuli))
    for column, color in (
        ("any_revision", "#c6dbef"),
        ("plan_or_above", "#6baed6"),
        ("goal", "#08519c"),
    ):
        right.bar(
            x, stimuli[column].fillna(0), color=color, label=column.replace("_", " ")
        )
    small = stimuli.set_index("stimulus").loc["urgency change < 0.15", "goal"]
    right.axhline(small, ls="--", color="k", lw=0.8)
    right.set_xticks(x, stimuli["stimulus"], rotation=20, ha="right", fontsize=7)
    right.set_ylim(0, 1)
    _legend(right, fontsize=7)
    right.set_title("cumulative revision probability by stimulus", fontsize=8)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")


def networks_figure(
    pedestrians: pd.DataFrame,
    shouts: pd.DataFrame,
    information: pd.DataFrame,
    title: str,
    path: Path,
) -> None:
    """Fig. S1: one run's heard shouts (a) and exit information (b) between the same nodes."""
    fig = Figure(figsize=(9, 4.2))
    axes = fig.subplots(1, 2)
    xy = pedestrians.set_index("agent_id")[["start_x", "start_y"]]
    shout_edges, info_edges = network_edges(shouts, information)
    for ax, edges, name in (
        (axes[0], shout_edges, "(a) heard shouts"),
        (axes[1], info_edges, "(b) exit information"),
    ):
        for source, target in edges.itertuples(index=False):
            if source in xy.index and target in xy.index:
                ax.annotate(
                    "",
                    xy=tuple(xy.loc[target]),
                    xytext=tuple(xy.loc[source]),
                    arrowprops={"arrowstyle": "->", "color": "0.4", "lw": 0.8},
                )
        for row in pedestrians.itertuples(index=False):
            ax.scatter(
                row.start_x, row.start_y, s=60, color=COLORS[row.outcome], zorder=3
            )
            ax.annotate(
                str(row.agent_id),
                (row.start_x, row.start_y),
                fontsize=6,
                xytext=(3, 3),
                textcoords="offset points",
            )
        ax.set_title(f"{name}: {len(edges)} sender-receiver pairs", fontsize=8)
        ax.set_aspect("equal")
        ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=8)
    fig.savefig(path, dpi=DPI, bbox_inches="tight")
