"""The benchmark's report: its tables in Markdown beside the paper's rows, and figures.

:func:`write_report` writes ``report.md`` and ``plots/metrics.png``, ``plots/realism.png``
(with detectors) and ``plots/temperature.png`` (with an LLM brain) into a benchmark's run
directory. The paper's rows are its published NumoSim numbers (Tables II-VII): another dataset,
printed for scale, not for a like-for-like comparison; Geo-CETRA and Geo-Llama appear only
there (they are not run here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.experiment.markdown import markdown_table
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_atomic
from mesa_llm_mobility.trajectory.baselines import BASELINE_LABELS
from mesa_llm_mobility.trajectory.metrics import METRICS
from mesa_llm_mobility.trajectory.paper_tables import (
    PAPER_GPU_HOURS,
    PAPER_NUMOSIM_DETECTORS,
    PAPER_NUMOSIM_METRICS,
    PAPER_NUMOSIM_TABLE,
    PAPER_TOOL_SUCCESS,
    REFERENCE,
)


@dataclass(frozen=True)
class BenchmarkTables:
    """The benchmark's tables.

    Attributes:
        metrics: Tables II and VI, one row per baseline (and the reference), index
            ``baseline``.
        realism: Tables III and VII, one row per baseline and detector (empty without
            detectors).
        cost: One row per baseline.
        temperature: Table VIII (empty without an LLM brain).
        spatial: Beyond the paper: the location-aware metrics, index ``baseline``.
        tools: Table V: tool-invocation success per workflow baseline.
        notes: What was left out and why (e.g. no detectors installed).
    """

    metrics: pd.DataFrame
    realism: pd.DataFrame
    cost: pd.DataFrame
    temperature: pd.DataFrame
    spatial: pd.DataFrame = field(default_factory=pd.DataFrame)
    tools: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)


REPORT_FILE = "report.md"
PAPER_ROW = "paper: TrajGenAgent, NumoSim (another dataset)"


def _label(name: str) -> str:
    return BASELINE_LABELS.get(name, name)


def paper_label(model: str) -> str:
    """The row name of one of the paper's published NumoSim rows."""
    if model == "TrajGenAgent":
        return PAPER_ROW
    return f"paper: {model}, NumoSim (another dataset)"


def metrics_markdown(metrics: pd.DataFrame) -> str:
    """Tables II and VI with readable baseline names, then every published NumoSim row."""
    table = metrics.rename(index=_label)
    for model, values in PAPER_NUMOSIM_TABLE.items():
        table.loc[paper_label(model)] = list(values)
    return markdown_table(table.rename_axis("baseline"), digits=4)


def spatial_markdown(spatial: pd.DataFrame) -> str:
    """The location-aware metrics (beyond the paper) with readable names."""
    return markdown_table(
        spatial.rename(index=_label).rename_axis("baseline"), digits=4
    )


def tools_markdown(tools: pd.DataFrame) -> str:
    """Table V: our tool-invocation success beside the paper's."""
    table = tools.assign(baseline=tools["baseline"].map(_label)).set_index("baseline")
    for name, (trajectory, visit) in PAPER_TOOL_SUCCESS.items():
        table.loc[f"paper: {name}, Qwen2.5-32B"] = {
            "trajectory_success": trajectory,
            "visit_success": visit,
        }
    return markdown_table(table, digits=3)


def realism_wide(realism: pd.DataFrame) -> pd.DataFrame:
    """Table III as one row per baseline, AUROC and AP columns per detector."""
    if realism.empty:
        return pd.DataFrame()
    wide = realism.pivot_table(
        index="baseline", columns="detector", values=["auroc", "ap"], sort=False
    )
    detectors = list(dict.fromkeys(realism["detector"]))
    order = list(dict.fromkeys(realism["baseline"]))
    wide = wide.reindex(order)
    columns = {}
    for detector in detectors:
        for value in ("auroc", "ap"):
            columns[f"{detector} {value.upper()}"] = wide[(value, detector)]
    return pd.DataFrame(columns).rename(index=_label).rename_axis("baseline")


PUBLISHED_DETECTOR_COLUMNS = {
    "individual AUROC": 0,
    "visit AUROC": 1,
    "visit AP": 2,
    "visit_individual AUROC": 3,
    "visit_individual AP": 4,
}
"""Our detector columns -> position in :data:`~.paper_tables.PAPER_NUMOSIM_DETECTORS` (BeSTAD
under ``individual``, ICAD's two levels under ``visit`` and ``visit_individual``)."""


def realism_markdown(realism: pd.DataFrame) -> str:
    """Tables III and VII (ours) with the paper's NumoSim rows.

    The published rows stand under our detectors in the spirit of the paper's (BeSTAD has no
    AP there, and the paper has no classifier).
    """
    table = realism_wide(realism)
    for model, published in PAPER_NUMOSIM_DETECTORS.items():
        table.loc[paper_label(model)] = {
            column: published[PUBLISHED_DETECTOR_COLUMNS[column]]
            if column in PUBLISHED_DETECTOR_COLUMNS
            else np.nan
            for column in table.columns
        }
    return markdown_table(table, digits=3)


def cost_markdown(cost: pd.DataFrame) -> str:
    """The cost table with readable names."""
    table = cost.assign(baseline=cost["baseline"].map(_label)).set_index("baseline")
    return markdown_table(table, digits=2)


def temperature_markdown(temperature: pd.DataFrame) -> str:
    """Table VIII: our failure rates (shares of daily runs) beside the paper's."""
    table = temperature.set_index("temperature")
    return markdown_table(table, digits=3)


def _finish(fig: Any, ax: Any, ylabel: str, title: str, path: Path) -> None:
    """Label, legend beside the axes, title, and save a figure."""
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _figure_metrics(metrics: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(9, 3.8))
    ax = fig.subplots()
    rows = list(metrics.index)
    width = 0.8 / (len(rows) + 1)
    x = np.arange(len(METRICS))
    floor = 1e-5  # a zero on a log axis
    for index, name in enumerate(rows):
        values = np.maximum(metrics.loc[name, list(METRICS)].to_numpy(float), floor)
        ax.bar(x + index * width, values, width, label=_label(name))
    paper = np.maximum([PAPER_NUMOSIM_METRICS[name] for name in METRICS], floor)
    ax.bar(
        x + len(rows) * width,
        paper,
        width,
        label=PAPER_ROW,
        color="none",
        edgecolor="black",
        hatch="//",
    )
    ax.set_xticks(x + width * len(rows) / 2, list(METRICS))
    ax.set_yscale("log")
    _finish(
        fig,
        ax,
        "JSD (Transition: Frobenius), lower is closer",
        "Table II: generated vs held-out days",
        path,
    )


def _figure_realism(realism: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(8, 3.6))
    ax = fig.subplots()
    detectors = list(dict.fromkeys(realism["detector"]))
    baselines = list(dict.fromkeys(realism["baseline"]))
    width = 0.8 / max(len(baselines), 1)
    x = np.arange(len(detectors))
    for index, name in enumerate(baselines):
        rows = realism[realism["baseline"] == name].set_index("detector")
        ax.bar(
            x + index * width,
            rows["auroc"].reindex(detectors).to_numpy(float),
            width,
            label=_label(name),
        )
    ax.axhline(0.5, color="black", linewidth=1, linestyle="--", label="chance (best)")
    ax.set_xticks(x + width * (len(baselines) - 1) / 2, detectors)
    ax.set_ylim(0, 1)
    _finish(
        fig,
        ax,
        "AUROC real vs generated",
        "Table III: how well detectors separate real from generated days",
        path,
    )


def _figure_temperature(temperature: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(6, 3.4))
    ax = fig.subplots()
    x = np.arange(len(temperature))
    ax.bar(x - 0.2, temperature["schema"], 0.4, label="ours: schema")
    ax.bar(
        x - 0.2,
        temperature["constraint"],
        0.4,
        bottom=temperature["schema"],
        label="ours: constraint",
    )
    ax.bar(
        x + 0.2, temperature["paper_schema"].astype(float), 0.4, label="paper: schema"
    )
    ax.bar(
        x + 0.2,
        temperature["paper_constraint"].astype(float),
        0.4,
        bottom=temperature["paper_schema"].astype(float),
        label="paper: constraint",
    )
    ax.set_xticks(x, [f"T = {value:g}" for value in temperature["temperature"]])
    _finish(
        fig,
        ax,
        "share of daily runs failing the verifier",
        "Table VIII: verifier failures by temperature",
        path,
    )


def write_report(run: RunDirectory, tables: BenchmarkTables) -> Path:
    """Write ``report.md`` and the figures into a benchmark's run directory.

    Returns:
        The report's path.
    """
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    _figure_metrics(tables.metrics, run.plots_dir / "metrics.png")
    config = run.config
    source = config.get("history") or (
        f"synthetic city: {config.get('individuals')} individuals x {config.get('weeks')} "
        f"weeks, seed {config.get('city_seed')}"
    )
    lines = [
        "# Trajectory generation benchmark",
        "",
        (
            f"History: {source}; the last {config.get('hold_out')} days of every individual "
            f"held out and generated by every baseline (seed {config.get('seed')}). "
            f"`{REFERENCE}` is the history's own last {config.get('hold_out')} days against the "
            "held-out days: what copying real data scores."
        ),
        "",
        "## Tables II and VI: aggregate statistics (lower is closer)",
        "",
        (
            "The neural rows work on 96 fifteen-minute bins of 0.5 km cells and are turned "
            "back into stays at each cell's most visited POI (grid inversion); "
            "`workflow without kinematics` is the paper's ablation (Table VI)."
        ),
        "",
        metrics_markdown(tables.metrics),
        "",
        "![metrics](plots/metrics.png)",
        "",
    ]
    if not tables.spatial.empty:
        lines += [
            "## Beyond the paper: where the visits are (lower is closer)",
            "",
            (
                "Density and OD flow are JSDs of the visits' and consecutive visits' cells, "
                "EMD km the sliced earth mover's distance of the visit locations, Daily "
                "distance the paper's text's Distance (cumulative per individual-day; the "
                "Distance column above is the reference code's per-bin jump)."
            ),
            "",
            spatial_markdown(tables.spatial),
            "",
        ]
    lines += [
        "## Tables III and VII: realism detectors (AUROC / AP, 0.5 is best)",
        "",
    ]
    if tables.realism.empty:
        lines += ["Not computed (see the notes).", ""]
    else:
        _figure_realism(tables.realism, run.plots_dir / "realism.png")
        lines += [
            realism_markdown(tables.realism),
            "",
            "![realism](plots/realism.png)",
            "",
        ]
    lines += [
        "## Cost (the paper's Table IV)",
        "",
        (
            "Wall time and this process's CPU time (user + system), fitting included; the "
            "neural baselines' training and generation wall time and trained parameters; LLM "
            "decisions, HTTP calls and tokens from the ledger. The paper's H100 GPU hours for "
            "34,000 trajectories: "
            + ", ".join(f"{name} {hours:g}" for name, hours in PAPER_GPU_HOURS.items())
            + "."
        ),
        "",
        cost_markdown(tables.cost),
        "",
    ]
    if not tables.tools.empty:
        lines += [
            "## Table V: tool-invocation success",
            "",
            (
                "A visit succeeds when its location and time calls were made without a "
                "fallback's substitution, a trajectory when all of its visits did; the "
                "workflow calls its modules in code."
            ),
            "",
            tools_markdown(tables.tools),
            "",
        ]
    if not tables.temperature.empty:
        _figure_temperature(tables.temperature, run.plots_dir / "temperature.png")
        lines += [
            "## Table VIII: verifier failures by temperature",
            "",
            (
                "A daily run fails when an LLM answer of it breaks the schema (counted as schema) "
                "or, else, the feasibility constraints (constraint); shares of daily runs."
            ),
            "",
            temperature_markdown(tables.temperature),
            "",
            "![temperature](plots/temperature.png)",
            "",
        ]
    if tables.notes:
        lines += ["## Notes", "", *[f"- {note}" for note in tables.notes], ""]
    path = run.path / REPORT_FILE
    write_atomic(path, "\n".join(lines).encode())
    return path


__all__ = [
    "REPORT_FILE",
    "cost_markdown",
    "metrics_markdown",
    "paper_label",
    "realism_markdown",
    "realism_wide",
    "spatial_markdown",
    "temperature_markdown",
    "tools_markdown",
    "write_report",
]
