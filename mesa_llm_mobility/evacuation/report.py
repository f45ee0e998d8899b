"""The experiment's report: every statistic of the paper beside ours, tables, figures, JSON.

:func:`write_report` reads an experiment folder's pooled frames (:mod:`.experiment`) and writes::

    <out>/report.md        every result, each beside the paper's value
    <out>/report.json      the numbers: ours (all seeds pooled), per-seed means with 95 %
                           intervals, the paper's, and the composition differences
    <out>/tables/*.csv     the detail tables (read by :mod:`.experiment_doc`)
    <out>/figures/*.png    outcomes, exit knowledge (Fig. 9), urgency x directness (Fig. 7),
                           danger appraisal, revisions (Fig. 6), networks (Fig. S1)

The numbers are computed by :func:`~.report_numbers.analyse` on all seeds pooled and, with
several seeds, on every seed alone (:mod:`.replicates`); the registry of statistics with the
paper's values is :data:`~.paper_values.STATISTICS`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.evacuation.analysis import HOMOGENEOUS, QUADRANTS, outcome_shares
from mesa_llm_mobility.evacuation.experiment import (
    EXPERIMENT_FILE,
    read_pooled,
    run_keys,
)
from mesa_llm_mobility.evacuation.knowledge_outcomes import KNOWLEDGE_MEASURES
from mesa_llm_mobility.evacuation.paper_values import STATISTICS
from mesa_llm_mobility.evacuation.replicates import (
    composition_differences,
    composition_means,
    seed_intervals,
    seed_numbers,
)
from mesa_llm_mobility.evacuation.report_figures import (
    appraisal_figure,
    knowledge_figure,
    networks_figure,
    outcomes_figure,
    quadrants_figure,
    revisions_figure,
)
from mesa_llm_mobility.evacuation.report_numbers import ReportData, analyse
from mesa_llm_mobility.evacuation.statistics import block_bootstrap_ci
from mesa_llm_mobility.experiment.markdown import markdown_table
from mesa_llm_mobility.experiment.storage import write_json

REPORT_FILE = "report.md"
NUMBERS_FILE = "report.json"
FIGURES_DIR = "figures"
TABLES_DIR = "tables"

LEGACY_KEYS = {
    "evacuated_if_usable_exit_known": "evacuated_if_usable_known",
    "evacuated_if_no_usable_exit_known": "evacuated_if_none_known",
}
"""Names the command line's summary reads, kept beside the registry's."""

PAPER = {key: stat.paper for key, stat in STATISTICS.items() if stat.paper is not None}
"""The paper's numbers by key (GLM LLM agents; Sec. 4)."""


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


def statistics_table(
    numbers: dict[str, float], intervals: pd.DataFrame | None
) -> pd.DataFrame:
    """Every registered statistic: ours, the between-seed mean and interval, the paper's.

    ``agrees`` applies :meth:`~.paper_values.Statistic.agrees`: the paper's value inside our
    95 % between-seed interval (with one seed: within 10 %; p-values: the same side of 0.05);
    ``-`` without a comparable paper value.
    """
    rows = []
    for key, stat in STATISTICS.items():
        ours = numbers.get(key)
        row = {
            "key": key,
            "statistic": stat.label,
            "section": stat.section,
            "ours": stat.format(ours),
            "seed mean [95 % interval]": "-",
            "paper": stat.paper_string(),
            "agrees": "-",
        }
        low = high = math.nan
        if intervals is not None and key in intervals.index:
            iv = intervals.loc[key]
            if iv["seeds"] > 1 and not math.isnan(iv["low"]):
                low, high = stat.clip(float(iv["low"]), float(iv["high"]))
                row["seed mean [95 % interval]"] = (
                    f"{stat.format(iv['mean'])} [{stat.format(low)}, "
                    f"{stat.format(high)}]"
                )
        value = math.nan if ours is None else float(ours)
        agrees = stat.agrees(value, low, high)
        if agrees is not None:
            row["agrees"] = "yes" if agrees else "no"
        rows.append(row)
    return pd.DataFrame(rows)


def mismatch_tables(mismatch: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mismatch rate by composition (paired-block bootstrap interval) and by evidence age."""
    if not len(mismatch):
        empty = pd.DataFrame(columns=["steps", "mismatch_rate", "ci_low", "ci_high"])
        return empty, empty
    rows = []
    for composition, steps in mismatch.groupby("composition"):
        by_block = steps.groupby(["seed", "block"])["mismatch"].mean()
        low, high = block_bootstrap_ci(by_block)
        rows.append(
            {
                "composition": composition,
                "steps": len(steps),
                "mismatch_rate": float(steps["mismatch"].mean()),
                "ci_low": low,
                "ci_high": high,
            }
        )
    bins = pd.cut(
        mismatch["evidence_age_s"],
        [0, 5, 10, 20, 40, np.inf],
        right=False,
        labels=["0-5 s", "5-10 s", "10-20 s", "20-40 s", "40+ s"],
    )
    by_age = (
        mismatch.groupby(bins, observed=True)["mismatch"]
        .agg(steps="size", mismatch_rate="mean")
        .rename_axis("evidence age")
        .reset_index()
    )
    return pd.DataFrame(rows), by_age


def knowledge_measure_table(data: ReportData) -> pd.DataFrame:
    """The three knowledge measures side by side: shares, table, odds ratio, p."""
    rows = []
    for measure, meaning in KNOWLEDGE_MEASURES.items():
        result = data.knowledge[measure]
        rows.append(
            {
                "measure": meaning,
                "evacuated if known": result.evacuated_share(True),
                "evacuated if none": result.evacuated_share(False),
                "table [[known ev, not], [none ev, not]]": str(result.table),
                "odds ratio": result.odds_ratio,
                "Fisher p": result.p_value,
            }
        )
    return pd.DataFrame(rows)


def compute_report(out: str | Path) -> dict[str, Any]:
    """Every result of the report, as frames and numbers (what :func:`write_report` renders)."""
    pooled = read_pooled(out)
    experiment_file = Path(out) / EXPERIMENT_FILE
    experiment = (
        json.loads(experiment_file.read_text()) if experiment_file.is_file() else {}
    )
    factors = list(experiment.get("factors") or {})
    keys = run_keys(factors)
    data = analyse(pooled, keys)
    numbers = dict(data.numbers)
    for legacy, key in LEGACY_KEYS.items():
        numbers[legacy] = numbers[key]
    seeds = sorted(pooled["pedestrians"]["seed"].unique().tolist())
    per_seed = seed_numbers(pooled, keys) if len(seeds) > 1 else None
    intervals = seed_intervals(per_seed) if per_seed is not None else None
    differences = pd.concat(
        [
            composition_differences(data.per_run, "evacuated_share"),
            composition_differences(
                data.per_run, "high_urgency_low_directness_share", HOMOGENEOUS
            ),
        ],
        ignore_index=True,
    )
    means = composition_means(data.per_run, "evacuated_share")
    by_factor = {
        f: outcome_shares(pooled["pedestrians"].astype({f: str}), f) for f in factors
    }
    mismatch_by_composition, mismatch_by_age = mismatch_tables(data.mismatch)
    return {
        "numbers": numbers,
        "data": data,
        "pooled": pooled,
        "experiment": experiment,
        "run_keys": keys,
        "seeds": seeds,
        "per_seed": per_seed,
        "intervals": intervals,
        "statistics": statistics_table(numbers, intervals),
        "differences": differences,
        "composition_means": means,
        "by_factor": by_factor,
        "knowledge_measures": knowledge_measure_table(data),
        "mismatch_by_composition": mismatch_by_composition,
        "mismatch_by_age": mismatch_by_age,
    }


def _tables(r: dict[str, Any]) -> dict[str, pd.DataFrame]:
    data: ReportData = r["data"]
    tables = {
        "statistics": r["statistics"],
        "by_composition": data.by_composition,
        "composition_means": r["composition_means"],
        "composition_differences": r["differences"],
        "knowledge_measures": r["knowledge_measures"],
        "knowledge_graded": data.knowledge["usable_exits_known"].by_exits_known,
        "knowledge_by_source": data.by_source,
        "time_to_knowledge": data.time_to_knowledge,
        "revision_levels": data.revisions.rename_axis("revision_level").reset_index(),
        "urgency_revisions": data.urgency_revisions,
        "stimuli": data.stimuli,
        "retention": data.retention,
        "appraisal": data.appraisal.rename_axis("composition").reset_index(),
        "composition_intervals": data.composition_intervals,
        "comparisons": data.comparisons,
        "factor_models": data.factor_models,
        "mismatch_by_composition": r["mismatch_by_composition"],
        "mismatch_by_age": r["mismatch_by_age"],
    }
    for factor, frame in r["by_factor"].items():
        tables[f"by_{factor}"] = frame
    if r["per_seed"] is not None:
        tables["per_seed"] = r["per_seed"].reset_index()
    return tables


def _first_run(r: dict[str, Any]) -> tuple[str, dict[str, pd.DataFrame]]:
    """The run drawn in Fig. S1: the first of the rule-following composition D, block 5."""
    pooled = r["pooled"]
    peds = pooled["pedestrians"]
    keys = r["run_keys"]
    runs = peds[keys].drop_duplicates()
    chosen = runs[(runs["composition"] == "D") & (runs["block"] == 5)]
    run = (chosen if len(chosen) else runs).iloc[0]
    title = ", ".join(f"{k} {run[k]}" for k in keys)
    mine = {}
    for name in ("pedestrians", "shouts", "information"):
        frame = pooled[name]
        mask = np.ones(len(frame), dtype=bool)
        for k in keys:
            mask &= (frame[k] == run[k]).to_numpy()
        mine[name] = frame[mask]
    return title, mine


def write_report(out: str | Path) -> Path:
    """Write ``report.md``, ``report.json``, the tables and the figures of an experiment folder.

    Args:
        out: The experiment folder (with its pooled tables).

    Returns:
        The report file.

    Raises:
        FileNotFoundError: When the folder holds no pooled experiment tables.
    """
    root = Path(out)
    r = compute_report(root)
    data: ReportData = r["data"]
    n = r["numbers"]
    pooled = r["pooled"]
    figures = root / FIGURES_DIR
    figures.mkdir(exist_ok=True)
    outcomes_figure(data, r["composition_means"], figures / "outcomes.png")
    knowledge_figure(data, pooled["pedestrians"], figures / "exit_knowledge.png")
    quadrants_figure(data, pooled["decisions"], figures / "urgency_directness.png")
    appraisal_figure(data.appraisal, figures / "danger_appraisal.png")
    revisions_figure(data, figures / "revisions.png")
    title, run = _first_run(r)
    networks_figure(
        run["pedestrians"],
        run["shouts"],
        run["information"],
        title,
        figures / "networks.png",
    )
    tables_dir = root / TABLES_DIR
    tables_dir.mkdir(exist_ok=True)
    tables = _tables(r)
    for name, frame in tables.items():
        frame.to_csv(tables_dir / f"{name}.csv", index=False)
    e = r["experiment"]
    seeds = r["seeds"]
    intervals = r["intervals"]
    sections = [
        "# Evacuation experiment report",
        (
            f"{n['runs']} runs, {n['pedestrians']} pedestrians, brain `{e.get('brain')}`; "
            f"compositions {', '.join(e.get('compositions', []))}, blocks {e.get('blocks')}, "
            f"seeds {seeds}"
            + (f", factors {e.get('factors')}" if e.get("factors") else "")
            + f". Sweep: {e.get('wall_s')} s wall, {e.get('cpu_s')} s CPU, executor "
            f"{e.get('executor')} ({e.get('executed')} executed, {e.get('skipped')} already "
            f"complete, {e.get('failed')} failed)."
        ),
        "## Every statistic beside the paper's",
        (
            "`ours`: all seeds pooled. `seed mean [95 % interval]`: the statistic computed on "
            "each seed's complete design alone, its mean over the seeds and the t-interval of "
            "that mean. `agrees`: the paper's value (GLM LLM agents) lies inside our interval "
            "(with one seed: within 10 % of ours; p-values: on the same side of 0.05)."
        ),
        markdown_table(r["statistics"].drop(columns="key").set_index("statistic")),
        "## Outcomes by composition",
        "![outcomes](figures/outcomes.png)",
        markdown_table(data.by_composition),
        "### Which composition differences exceed seed noise",
        (
            "Per seed, each composition's mean run-level value over the blocks; the difference "
            "of two compositions in every seed, its mean over the seeds with a 95 % t-interval "
            "(*exceeds seed noise* when the interval excludes 0), a sign-flip test over the "
            "seeds and Holm's adjustment over the pairs of a measure."
            if len(seeds) > 1
            else "One seed: between-seed noise cannot be estimated (run with `seeds`)."
        ),
        markdown_table(r["composition_means"]),
        markdown_table(r["differences"]) if len(r["differences"]) else "",
        "## Exit knowledge (Fig. 9)",
        (
            "A pedestrian knows an opening when it saw it from outside the opening's Moore "
            "neighbourhood, or was told of it (by a peer or the system), at or before its "
            "resolving step; a gate is usable only if the pedestrian resolved before the gates "
            "closed. The exits-only variant counts the three exits that never close; the last "
            "row counts every sight, the measure that is true by construction."
        ),
        "![exit knowledge](figures/exit_knowledge.png)",
        markdown_table(r["knowledge_measures"]),
        markdown_table(data.knowledge["usable_exits_known"].by_exits_known),
        markdown_table(data.by_source),
        markdown_table(data.time_to_knowledge),
        "## Shouts and exit information (Fig. S1)",
        "![networks](figures/networks.png)",
        (
            f"{data.propagation.messages} exit-information messages, "
            f"{n['mean_senders_per_run']:.2f} senders per run, the two most active senders "
            f"{100 * n['top_two_share']:.1f} % of the receiving relations; "
            f"{n['shouts_heard_per_run']:.1f} distinct shout pairs heard per run."
        ),
        "## Decision revisions (Fig. 6)",
        "![revisions](figures/revisions.png)",
        markdown_table(data.revisions.rename_axis("revision level")),
        markdown_table(data.urgency_revisions),
        markdown_table(data.stimuli),
        markdown_table(data.retention),
        "## Danger appraisal by composition and threat evidence",
        "![appraisal](figures/danger_appraisal.png)",
        markdown_table(data.appraisal.rename_axis("composition")),
        "## Urgency x directness (Fig. 7)",
        "![quadrants](figures/urgency_directness.png)",
        markdown_table(
            pd.DataFrame(
                {
                    "share of decisions": data.quadrants.shares,
                    "AUC killed vs evacuated": data.quadrants.auc_killed_vs_evacuated,
                }
            ).rename_axis("quadrant")
        ),
        markdown_table(
            data.quadrants.by_outcome.reindex(columns=list(QUADRANTS)).rename_axis(
                "outcome"
            )
        ),
        markdown_table(data.quadrants.centroids.rename_axis("outcome (centroid)")),
        markdown_table(data.composition_intervals),
        "### Paired sign-flip tests across blocks (Holm-adjusted per measure)",
        markdown_table(data.comparisons) if len(data.comparisons) else "(none)",
        "## Directional mismatch under remembered evidence",
        (
            f"{n['mismatch_steps']} first executed steps of threat-avoidance decisions on "
            "remembered evidence; the rate is among the steps that moved away from the last "
            "sighting (intervals: paired blocks resampled)."
        ),
        markdown_table(r["mismatch_by_composition"]),
        markdown_table(r["mismatch_by_age"]),
        "## Factor models (McFadden pseudo-R2 of evacuated vs killed; R2 of log time)",
        markdown_table(data.factor_models),
    ]
    for factor, frame in r["by_factor"].items():
        sections += [f"## Outcomes by {factor}", markdown_table(frame)]
    path = root / REPORT_FILE
    path.write_text("\n\n".join(s for s in sections if s) + "\n", encoding="utf-8")
    seeds_json = (
        {
            key: {
                c: intervals.loc[key, c] for c in ("mean", "low", "high", "sd", "seeds")
            }
            for key in intervals.index
        }
        if intervals is not None
        else {}
    )
    write_json(
        root / NUMBERS_FILE,
        _json_ready(
            {
                "ours": n,
                "seeds": seeds_json,
                "paper": PAPER,
                "experiment": e,
                "composition_differences": r["differences"].to_dict("records"),
            }
        ),
    )
    return path
