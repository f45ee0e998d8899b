"""The experiment's report: Markdown, figures and the headline numbers as JSON.

:func:`write_report` reads an experiment folder's pooled frames (:mod:`.experiment`) and writes::

    <out>/report.md        every result of the paper's Sec. 4 that the tables support
    <out>/report.json      the headline numbers (for comparisons and tests)
    <out>/figures/outcomes.png, exit_knowledge.png, urgency_directness.png, danger_appraisal.png

The sections: outcome shares (overall and by composition); evacuation by usable exits known and
by information group with Fisher's exact odds ratio; urgency x directness quadrants with the AUC
of killed vs evacuated; danger-appraisal rate by composition under no / remembered / direct threat
evidence; paired sign-flip tests across blocks with Holm adjustment; decision revision levels;
exit-information propagation (senders, hops). The paper's own numbers are printed beside ours.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.analysis import (
    EVIDENCE_LEVELS,
    HIGH_URGENCY_LOW_DIRECTNESS,
    OUTCOMES,
    QUADRANTS,
    KnowledgeResult,
    QuadrantResult,
    block_comparisons,
    danger_appraisal,
    knowledge_outcomes,
    outcome_shares,
    propagation,
    revision_levels,
    urgency_directness,
)
from mesa_llm_mobility.evacuation.experiment import (
    EXPERIMENT_FILE,
    RUN_KEYS,
    read_pooled,
)
from mesa_llm_mobility.experiment.markdown import markdown_table
from mesa_llm_mobility.experiment.storage import write_json

REPORT_FILE = "report.md"
NUMBERS_FILE = "report.json"
FIGURES_DIR = "figures"

PAPER = {
    "evacuated_share": 0.656,
    "killed_share": 0.287,
    "unresolved_share": 0.057,
    "evacuated_if_usable_exit_known": 0.895,
    "evacuated_if_no_usable_exit_known": 0.0105,
    "odds_ratio": 800.7,
    "fisher_p": 6.1e-118,
    "evacuated_by_exits_known": {"0": 0.0105, "1": 0.643, "2+": 0.957},
    "median_first_usable_s": {"evacuated": 5.17, "killed": 32.33},
    "auc_high_urgency_low_directness": 0.839,
    "mean_senders_per_run": 2.1,
    "top_two_share": 0.901,
}
"""The paper's numbers (GLM LLM agents; Secs. 4.1-4.2) printed beside ours."""


def _json_ready(value: Any) -> Any:
    """Numbers for JSON: infinities as ``"inf"``/``"-inf"``, NaN as ``None``, numpy as Python."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _pct(value: float) -> str:
    return (
        "n/a"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else f"{100 * value:.1f} %"
    )


def _figure_outcomes(shares: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(7, 3.5))
    ax = fig.subplots()
    bottom = np.zeros(len(shares))
    colors = {"evacuated": "tab:blue", "killed": "tab:red", "unresolved": "tab:orange"}
    for name in OUTCOMES:
        values = shares[f"{name}_share"].to_numpy(float)
        ax.bar(
            shares["composition"], values, bottom=bottom, label=name, color=colors[name]
        )
        bottom += values
    ax.set_ylabel("share of pedestrians")
    ax.set_xlabel("composition")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("Outcomes by composition")
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _figure_knowledge(knowledge: KnowledgeResult, path: Path) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(9, 3.5))
    axes = fig.subplots(1, 2)
    for ax, frame, key, title in (
        (axes[0], knowledge.by_exits_known, "exits_known", "(a) usable exits known"),
        (axes[1], knowledge.by_group, "information_group", "(b) information group"),
    ):
        bottom = np.zeros(len(frame))
        for name, color in zip(
            OUTCOMES, ("tab:blue", "tab:red", "tab:orange"), strict=True
        ):
            values = frame[f"{name}_share"].to_numpy(float)
            ax.bar(
                frame[key].astype(str), values, bottom=bottom, color=color, label=name
            )
            bottom += values
        for k, n in enumerate(frame["n"]):
            ax.annotate(f"n={n}", (k, 1.01), ha="center", fontsize=7)
        ax.set_ylim(0, 1.1)
        ax.set_title(title, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    axes[0].legend(fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _figure_quadrants(
    decisions: pd.DataFrame, quadrants: QuadrantResult, path: Path
) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

    fig = Figure(figsize=(5, 4.5))
    ax = fig.subplots()
    evaluated = decisions.dropna(subset=["urgency", "directness"])
    ax.hist2d(
        evaluated["urgency"],
        evaluated["directness"],
        bins=20,
        range=[[0, 1], [0, 1]],
        cmap="Greys",
    )
    ax.axvline(quadrants.urgency_median, ls="--", color="k", lw=0.8)
    ax.axhline(quadrants.directness_median, ls="--", color="k", lw=0.8)
    colors = {"evacuated": "tab:blue", "killed": "tab:red", "unresolved": "tab:orange"}
    for outcome, row in quadrants.centroids.iterrows():
        ax.scatter(
            row["urgency"],
            row["directness"],
            color=colors.get(str(outcome), "k"),
            s=60,
            label=str(outcome),
            edgecolor="white",
        )
    ax.set_xlabel("reported urgency")
    ax.set_ylabel("movement directness (10 s after the decision)")
    ax.legend(fontsize=7)
    ax.set_title("Urgency x directness (dashed: pooled medians)", fontsize=9)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def _figure_appraisal(appraisal: pd.DataFrame, path: Path) -> None:
    from matplotlib.figure import Figure  # noqa: PLC0415

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
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=110, bbox_inches="tight")


def run_level_measures(
    pedestrians: pd.DataFrame, quadrants: QuadrantResult
) -> pd.DataFrame:
    """One row per run: evacuated share and the mean per-pedestrian high-urgency, low-directness share."""
    evacuated = pedestrians.groupby(RUN_KEYS)["outcome"].apply(
        lambda s: float((s == "evacuated").mean())
    )
    hu_ld = quadrants.per_pedestrian.groupby(RUN_KEYS)[
        HIGH_URGENCY_LOW_DIRECTNESS
    ].mean()
    frame = pd.DataFrame(
        {"evacuated_share": evacuated, "high_urgency_low_directness_share": hu_ld}
    )
    return frame.reset_index()


def compute_report(out: str | Path) -> dict[str, Any]:
    """Every result of the report, as frames and numbers (what :func:`write_report` renders)."""
    pooled = read_pooled(out)
    peds, decisions, information = (
        pooled["pedestrians"],
        pooled["decisions"],
        pooled["information"],
    )
    experiment_file = Path(out) / EXPERIMENT_FILE
    experiment = (
        json.loads(experiment_file.read_text()) if experiment_file.is_file() else {}
    )
    overall = outcome_shares(peds).iloc[0]
    by_composition = outcome_shares(peds, "composition")
    knowledge = knowledge_outcomes(peds)
    quadrants = urgency_directness(decisions, [*RUN_KEYS, "agent_id"])
    appraisal = danger_appraisal(decisions)
    per_run = run_level_measures(peds, quadrants)
    comparisons = block_comparisons(
        per_run, ["evacuated_share", "high_urgency_low_directness_share"]
    )
    revisions = revision_levels(decisions)
    runs = int(peds.groupby(RUN_KEYS).ngroups)
    spread = propagation(information, peds, runs, RUN_KEYS)
    (known_evac, known_not), (unknown_evac, unknown_not) = knowledge.table
    numbers = {
        "runs": runs,
        "pedestrians": len(peds),
        "decisions_evaluated": int(
            decisions.dropna(subset=["urgency", "directness"]).shape[0]
        ),
        "evacuated_share": float(overall["evacuated_share"]),
        "killed_share": float(overall["killed_share"]),
        "unresolved_share": float(overall["unresolved_share"]),
        "evacuated_if_usable_exit_known": known_evac / (known_evac + known_not)
        if known_evac + known_not
        else math.nan,
        "evacuated_if_no_usable_exit_known": unknown_evac / (unknown_evac + unknown_not)
        if unknown_evac + unknown_not
        else math.nan,
        "knowledge_table": knowledge.table,
        "odds_ratio": knowledge.odds_ratio,
        "fisher_p": knowledge.p_value,
        "evacuated_by_exits_known": dict(
            zip(
                knowledge.by_exits_known["exits_known"].astype(str),
                knowledge.by_exits_known["evacuated_share"].astype(float),
                strict=True,
            )
        ),
        "median_first_usable_s": {
            str(k): float(v)
            for k, v in peds.groupby("outcome")["first_usable_s"].median().items()
        },
        "urgency_median": quadrants.urgency_median,
        "directness_median": quadrants.directness_median,
        "auc_high_urgency_low_directness": float(
            quadrants.auc_killed_vs_evacuated[HIGH_URGENCY_LOW_DIRECTNESS]
        ),
        "mean_senders_per_run": spread.mean_senders_per_run,
        "top_two_share": spread.top_two_share,
        "messages": spread.messages,
        "max_hops": int(information["hops"].max())
        if len(information) and information["hops"].notna().any()
        else None,
        "wall_s": experiment.get("wall_s"),
        "cpu_s": experiment.get("cpu_s"),
        "brain": experiment.get("brain"),
    }
    return {
        "numbers": numbers,
        "by_composition": by_composition,
        "knowledge": knowledge,
        "quadrants": quadrants,
        "appraisal": appraisal,
        "comparisons": comparisons,
        "revisions": revisions,
        "propagation": spread,
        "decisions": decisions,
        "experiment": experiment,
    }


def write_report(out: str | Path) -> Path:
    """Write ``report.md``, ``report.json`` and the figures of an experiment folder.

    Args:
        out: The experiment folder (with its pooled tables).

    Returns:
        The report file.

    Raises:
        FileNotFoundError: When the folder holds no pooled experiment tables.
    """
    root = Path(out)
    r = compute_report(root)
    n = r["numbers"]
    figures = root / FIGURES_DIR
    figures.mkdir(exist_ok=True)
    _figure_outcomes(r["by_composition"], figures / "outcomes.png")
    _figure_knowledge(r["knowledge"], figures / "exit_knowledge.png")
    _figure_quadrants(
        r["decisions"], r["quadrants"], figures / "urgency_directness.png"
    )
    _figure_appraisal(r["appraisal"], figures / "danger_appraisal.png")
    q: QuadrantResult = r["quadrants"]
    k: KnowledgeResult = r["knowledge"]
    spread = r["propagation"]
    e = r["experiment"]
    comparison = pd.DataFrame(
        {
            "this run": [
                _pct(n["evacuated_share"]),
                _pct(n["killed_share"]),
                _pct(n["unresolved_share"]),
                _pct(n["evacuated_if_usable_exit_known"]),
                _pct(n["evacuated_if_no_usable_exit_known"]),
                f"{n['odds_ratio']:.1f}",
                f"{n['fisher_p']:.2g}",
                f"{n['auc_high_urgency_low_directness']:.3f}",
                f"{n['mean_senders_per_run']:.2f}",
                _pct(n["top_two_share"]),
            ],
            "paper (LLM agents)": [
                "65.6 %",
                "28.7 %",
                "5.7 %",
                "89.5 %",
                "1.05 %",
                "800.7",
                "6.1e-118",
                "0.839",
                "2.1",
                "90.1 %",
            ],
        },
        index=pd.Index(
            [
                "evacuated",
                "killed",
                "unresolved",
                "evacuated, knew a usable exit",
                "evacuated, knew none",
                "odds ratio (Fisher)",
                "Fisher p",
                "AUC, high urgency & low directness share, killed vs evacuated",
                "exit-information senders per run",
                "two most active senders' share",
            ],
            name="measure",
        ),
    )
    sections = [
        "# Evacuation experiment report",
        (
            f"{n['runs']} runs, {n['pedestrians']} pedestrians, brain `{n['brain']}`; compositions "
            f"{', '.join(e.get('compositions', []))}, blocks {e.get('blocks')}, seed {e.get('seed')}. "
            f"Sweep: {e.get('wall_s')} s wall, {e.get('cpu_s')} s CPU, executor {e.get('executor')} "
            f"({e.get('executed')} executed, {e.get('skipped')} already complete, {e.get('failed')} failed)."
        ),
        "## Headline numbers beside the paper's",
        markdown_table(comparison),
        "## Outcome shares by composition",
        "![outcomes](figures/outcomes.png)",
        markdown_table(r["by_composition"]),
        "## Evacuation by usable-exit knowledge",
        (
            "A pedestrian knew a usable exit when it saw or was told of an opening in a passable state "
            "before it resolved (gates only if it resolved before they closed)."
        ),
        (
            f"Knew at least one: {_pct(n['evacuated_if_usable_exit_known'])} evacuated; knew none: "
            f"{_pct(n['evacuated_if_no_usable_exit_known'])}. Table [[knew & evacuated, knew & not], "
            f"[none & evacuated, none & not]] = {k.table}; Fisher's exact odds ratio "
            f"{k.odds_ratio:.1f}, p = {k.p_value:.2g}."
        ),
        (
            "Median time to the first usable-exit knowledge by outcome (paper: 5.17 s "
            "evacuated, 32.33 s killed): "
            + ", ".join(f"{k} {v:.2f} s" for k, v in n["median_first_usable_s"].items())
            + "."
        ),
        "![exit knowledge](figures/exit_knowledge.png)",
        markdown_table(k.by_exits_known),
        markdown_table(k.by_group),
        "## Urgency x directness",
        (
            f"Pooled medians: urgency {q.urgency_median:.3f}, directness {q.directness_median:.3f} "
            f"({n['decisions_evaluated']} evaluated decisions after the initial ones). Share of all "
            "evaluated decisions per quadrant, mean per-pedestrian share by outcome, and the AUC of "
            "each per-pedestrian share for killed vs evacuated:"
        ),
        "![quadrants](figures/urgency_directness.png)",
        markdown_table(
            pd.DataFrame(
                {
                    "share of decisions": q.shares,
                    "AUC killed vs evacuated": q.auc_killed_vs_evacuated,
                }
            ).rename_axis("quadrant")
        ),
        markdown_table(
            q.by_outcome.reindex(columns=list(QUADRANTS)).rename_axis("outcome")
        ),
        markdown_table(q.centroids.rename_axis("outcome (centroid)")),
        "## Danger appraisal by composition and threat evidence",
        "![appraisal](figures/danger_appraisal.png)",
        markdown_table(r["appraisal"].rename_axis("composition")),
        "## Paired sign-flip tests across blocks (Holm-adjusted per measure)",
        (
            "Run-level measures of the homogeneous compositions compared pairwise within blocks; "
            "two-sided exact sign-flip test over all 2^blocks sign assignments, Holm adjustment "
            "across the pairs of each measure."
        ),
        markdown_table(r["comparisons"])
        if len(r["comparisons"])
        else "(fewer than two homogeneous compositions)",
        "## Decision revision levels",
        markdown_table(r["revisions"].rename_axis("revision level")),
        "## Exit-information propagation",
        (
            f"{spread.messages} messages; {spread.mean_senders_per_run:.2f} distinct senders per run; "
            f"the two most active senders of each run sent {_pct(spread.top_two_share)} of the "
            f"sender-receiver relations; {spread.observed_directly} pedestrians saw a usable exit "
            f"themselves, {spread.told_only} knew one only from others."
        ),
        markdown_table(spread.hops.rename("messages").rename_axis("hops").to_frame())
        if len(spread.hops)
        else "(no messages)",
    ]
    path = root / REPORT_FILE
    path.write_text("\n\n".join(sections) + "\n", encoding="utf-8")
    write_json(root / NUMBERS_FILE, _json_ready({"ours": n, "paper": PAPER}))
    return path
