"""The documentation page of the 8 x 8 experiment, regenerated from an experiment's report.

``mlm evac report <experiment> --doc docs/experiments/evacuation.md`` (or
:func:`write_experiment_doc`) rewrites the page from ``report.json`` and ``tables/*.csv``
(:mod:`.report`) and copies the figures beside it. Nothing on the page is typed in by hand
except the explanations: which statistics agree with the paper and which do not is decided
from the numbers (the paper's value inside or outside our between-seed interval), which
composition differences exceed seed noise likewise, and :data:`WHY` holds the mechanism-level
reason for each statistic that differs, printed only when it does. When the engine's
mechanisms change, rerun the experiment and this command; edit :data:`WHY` if a reason no
longer holds.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from mesa_llm_mobility.evacuation.paper_values import RELATIVE_AGREEMENT, STATISTICS
from mesa_llm_mobility.evacuation.report import FIGURES_DIR, NUMBERS_FILE, TABLES_DIR
from mesa_llm_mobility.experiment.markdown import markdown_table

FIGURES = {
    "outcomes": "Outcomes by composition",
    "exit_knowledge": "Exit knowledge and outcomes (Fig. 9 a-c)",
    "urgency_directness": "Urgency and directness (Fig. 7 a, b)",
    "revisions": "Decision revisions (Fig. 6)",
    "danger_appraisal": "Danger appraisal by threat evidence",
    "networks": "Shouts and exit information in one run (Fig. S1)",
}
"""Figures copied to the page's ``img/evacuation_<name>.png``."""

WHY: dict[str, str] = {
    "unresolved_share": (
        "The rule pedestrian always walks to the nearest believed-usable opening or explores "
        "a frontier; it never waits or hesitates for long, so everyone is resolved well "
        "before 240 s. The paper's LLM agents sometimes turn and observe, wait, or go back "
        "and forth."
    ),
    "goal_revision_share": (
        "A goal revision is a change of the answer's goal category (`commit.revision_level`); "
        "the rule pedestrian's goal follows its appraisal (tour when normal, seek_exit when "
        "unsure, escape in danger), which switches as soon as a cue appears or fades."
    ),
    "goal_rate_large_urgency_change": (
        "Rule urgency is graded from fear and the threat evidence "
        "(`decisions.urgency_from_evidence`), the same cues that switch the rule appraisal "
        "and with it the goal: a large urgency change almost always comes with a goal "
        "revision and a small one rarely does, so the risk ratios are far above the paper's."
    ),
    "goal_rate_new_direct_evidence": (
        "Seeing A or D makes the rule appraisal danger and the goal escape: a goal "
        "revision whenever the pedestrian was not already in danger."
    ),
    "goal_rate_first_receipt": (
        "A first shout or message turns a normal rule appraisal into unsure (goal "
        "seek_exit): a goal revision unless the pedestrian was already alarmed."
    ),
    "physical_plan_or_above": (
        "A closing gate or a blocked route gives the rule pedestrian a new anchor (a plan "
        "revision) nearly every time; the paper's agents often kept their plan and checked "
        "the gate first (its Table 5, case 2)."
    ),
    "retention_threat_avoidance": (
        "The rule goal is escape only while the appraisal is danger (A or D in view, or a "
        "stale sighting while afraid); when the threat leaves view and fear decays it "
        "becomes unsure and seek_exit, while the paper's agents kept avoiding the threat."
    ),
    "urgency_median": (
        "Rule urgency is 0.05 + 0.5 x fear + 0.45 x evidence "
        "(`decisions.urgency_from_evidence`): a calm pedestrian with no evidence and no fear "
        "has 0.05 exactly, and most decisions are made calm, so the median is 0.05, the median "
        "split puts all calm decisions on the low side, and the quadrant shares and their AUCs "
        "say little (grading the urgency did not change that)."
    ),
    "auc_hu_ld": (
        "Rule urgency follows the same evidence as the appraisal, not an independent judgment, and a rule "
        "pedestrian that is afraid still walks its route directly: high urgency with low "
        "directness does not mark the killed."
    ),
    "evacuated_if_usable_known": (
        "Almost every rule pedestrian sees an exit while exploring (it walks to frontiers), "
        "so knowing one separates little; who dies depends on where the adversary patrols."
    ),
    "evacuated_if_none_known": (
        "A rule pedestrian steps only onto an opening its route targets, and a route "
        "targets only an opening it saw, but a sight from the opening's Moore neighbourhood "
        "does not count: those who first saw their exit from beside it evacuated without "
        "knowledge (in the paper 2 of 190 did)."
    ),
    "spearman_rho": (
        "Nearly everyone knows a usable exit in every run, so the per-run count of knowers "
        "hardly varies and cannot follow the number rescued."
    ),
    "rescued_told": (
        "Exit information reaches a rule pedestrian only from a sender heading for an exit "
        "within 5 m; most of those whose only knowledge came from others had already seen "
        "the threat when they were told (compare `first_threat_evidence_s` and "
        "`first_usable_s` in the pooled pedestrians), and the compositions of a block "
        "repeat nearly the same situations, so the few cases recur."
    ),
    "shout_response_higher_urgency": (
        "Any heard shout makes the rule appraisal unsure and adds to the evidence its "
        "urgency is graded from: all of them report a higher urgency, by construction."
    ),
    "danger_gap_direct": (
        "The rule policy appraises danger on every direct sighting, whatever the personality."
    ),
    "logit_r2_information": (
        "Information separates outcomes less than in the paper because almost everyone has "
        "it (see the knowledge rows)."
    ),
    "ols_r2_geometry": (
        "A calm rule pedestrian tours (openings score below frontiers until it is alarmed), "
        "so its evacuation time is set by when the alarm reaches it more than by its "
        "initial distance to the nearest exit."
    ),
}
"""Mechanism-level reason why a statistic of the rule brain differs from the paper's."""

ASSUMPTIONS = (
    (
        "**Exit knowledge** (`exit_knowledge.exit_knowledge_measure`): a pedestrian knows an "
        "opening when, at or before its resolving step, it saw the opening from outside the "
        "opening's Moore neighbourhood (every perception map holds the Moore neighbourhood, and "
        "the opening a pedestrian steps through is in it one step earlier), or was told of it by "
        "a pedestrian or by the system. A known exit is usable; a gate is usable only if the "
        "pedestrian resolved before the gates closed. The paper does not define the measure "
        "beyond 'acquired knowledge of a usable exit'; its 2 of 190 evacuees without knowledge "
        "show that it did not count the final step."
    ),
    (
        "**Information groups** (Fig. 9b): observed (a usable exit seen) > told by a peer > "
        "system-provided > only a closed gate (knew a gate, no usable exit) > none, first match. "
        "The paper's group sizes follow from its percentages: 491 observed (91.2 % rescued), 23 "
        "told (52.2 %), 58 only a closed gate, 132 with nothing."
    ),
    "**Exits only**: the same measure counting only the three exits that never close.",
    (
        "**Shout AUCs**: killed (positive) against evacuated, scores = distinct pedestrians "
        "reached by one's shouts (out-degree) and distinct shouters heard (in-degree), "
        "two-sided Mann-Whitney p. The paper's p = 7e-98 for usable-exit knowledge is exactly "
        "the Mann-Whitney test of evacuated against killed on its 460/2 vs 50/152 table, which "
        "fixes the groups (the unresolved are left out). Fig. S1's 'exit knowledge AUC 0.651 "
        "for rescue' is read as the out-degree of exit information (134 senders among 462 "
        "rescued give 0.645)."
    ),
    (
        "**Goal revision**: the engine's `revision_level` (the highest level of the epoch); the "
        "paper counts the layers separately (they can co-occur), so our plan and execution "
        "shares are lower bounds of its. Goal categories for retention come from the free-text "
        "intent by keywords (`revisions.goal_category`), whatever its wording."
    ),
    (
        "**Stimulus classes** (Fig. 6 right): absolute urgency change >= 0.15 or < 0.15 from the "
        "previous decision; new direct threat evidence (A or D in view, not at the previous "
        "decision); first / later decision whose input holds peer information (a shout heard "
        "or exit information received); physical constraint (a gate seen closing or closed "
        "since the previous decision, a rejected previous answer, or a blocked route)."
    ),
    (
        "**Shout response**: per pedestrian, its first decision after the initial one whose "
        "input holds a shout; kept when the previous appraisal was normal and there was neither "
        "direct nor remembered threat evidence."
    ),
    (
        "**Directional mismatch**: threat-avoidance decisions on remembered evidence; the last "
        "sighting is reconstructed from the recorded positions and headings with the model's "
        "own perception (it matches the recorded sightings exactly); the first executed step is "
        "the step in which the decision took effect."
    ),
    (
        "**Factor models**: logistic regression of evacuated (1) against killed (0) and OLS of "
        "log evacuation time of the evacuated; information = information group, shouters "
        "heard, pedestrians reached, threat evidence and its time (0 without); affect = mean "
        "urgency, mean fear, share of high-urgency low-directness decisions (0 without "
        "evaluated decisions); geometry = initial distance to the nearest exit; personality = "
        "composition. A category that predicts the outcome perfectly (quasi-separation) leaves "
        "the fit at its iteration limit; the table says so."
    ),
    (
        "**Fig. 7 intervals**: mean run-level share over the paired blocks (with several seeds, "
        "every seed's blocks), 95 % percentile interval from 2,000 resamples of the blocks."
    ),
    (
        "**Seed noise**: each statistic computed on every seed's complete 8 x 8 design alone; "
        "the mean over seeds with a 95 % t-interval. A composition difference exceeds seed "
        "noise when the t-interval of its per-seed differences excludes 0."
    ),
)


def _csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (
        pd.errors.EmptyDataError
    ):  # a table without rows or columns (e.g. one composition)
        return pd.DataFrame()


def _read(experiment: Path) -> tuple[dict, dict[str, pd.DataFrame]]:
    report = json.loads((experiment / NUMBERS_FILE).read_text())
    tables = {p.stem: _csv(p) for p in sorted((experiment / TABLES_DIR).glob("*.csv"))}
    return report, tables


def _table(tables: dict[str, pd.DataFrame], name: str) -> str:
    """A detail table as Markdown (``(none)`` when the experiment has no rows for it)."""
    frame = tables.get(name)
    return "(none)" if frame is None or frame.empty else markdown_table(frame)


def _value(value: object) -> float:
    if value is None:
        return math.nan
    if value in ("inf", "-inf"):
        return math.inf if value == "inf" else -math.inf
    return float(value)  # type: ignore[arg-type]


def verdicts(report: dict) -> pd.DataFrame:
    """Per statistic with a comparable paper value: ours, interval, paper's, whether it agrees.

    The rule is :meth:`~.paper_values.Statistic.agrees` (the paper's value inside our
    between-seed interval; with one seed, within 10 %; p-values on the same side of 0.05).
    """
    rows = []
    for key, stat in STATISTICS.items():
        if key not in report["ours"]:
            continue
        ours = _value(report["ours"][key])
        interval = report.get("seeds", {}).get(key)
        low = _value(interval["low"]) if interval else math.nan
        high = _value(interval["high"]) if interval else math.nan
        low, high = stat.clip(low, high)
        agrees = stat.agrees(ours, low, high)
        if agrees is None:
            continue
        rows.append(
            {
                "key": key,
                "statistic": stat.label,
                "ours": stat.format(ours),
                "interval": "-"
                if math.isnan(low)
                else f"[{stat.format(low)}, {stat.format(high)}]",
                "paper": stat.paper_string(),
                "agrees": agrees,
            }
        )
    return pd.DataFrame(rows)


def _differences_text(tables: dict[str, pd.DataFrame]) -> list[str]:
    frame = tables.get("composition_differences")
    if frame is None or frame.empty or frame["seeds"].max() < 2:
        return ["One seed: the differences cannot be set against seed noise."]
    lines = []
    for measure, rows in frame.groupby("measure"):
        above = rows[rows["exceeds_seed_noise"].astype(bool)]
        pairs = ", ".join(
            f"{r.first}-{r.second} ({100 * r.mean_difference:+.1f} points)"
            for r in above.itertuples()
        )
        lines.append(
            f"- `{measure}`: {len(above)} of {len(rows)} pairs exceed seed noise"
            + (f": {pairs}." if pairs else ".")
        )
        for first, second in (("B", "D"), ("B", "H")):
            hit = rows[(rows["first"] == first) & (rows["second"] == second)]
            if len(hit):
                r = hit.iloc[0]
                lines.append(
                    f"  - {first} vs {second} (the paper's comparison): "
                    f"{100 * r['mean_difference']:+.1f} points, interval "
                    f"[{100 * r['low']:+.1f}, {100 * r['high']:+.1f}], "
                    f"{'exceeds' if r['exceeds_seed_noise'] else 'within'} seed noise, "
                    f"Holm p {r['p_holm']:.3g}."
                )
    return lines


def _gate_text(ours: dict) -> str:
    """The gate timing against the paper's Fig. 8 and its "merely one person"."""
    per_run = _value(ours.get("gate_evacuations_per_run"))
    before = _value(ours.get("gate_evacuations_before_closing_share"))
    cells = _value(ours.get("gate_evacuation_start_cells"))
    last = _value(ours.get("last_gate_evacuation_s"))
    return (
        "**Gate timing against Fig. 8.** Here the gates start closing at 5 s and are closed "
        "at 11.67 s (passable while closing), the time at which the paper's Fig. 8 shows the "
        "south gate closed. The paper says the gates closed 'with merely one person being "
        f"able to go out of them' (in its Fig. 8 run). Here {per_run:.2f} pedestrians per run "
        f"left through a gate; {100 * before:.0f} % of them before the gates started "
        f"closing, the last at {last:.2f} s, from {cells:.0f} distinct start cell(s). "
        "Those who leave before 5 s leave before the emergency, through an open gate; the "
        "paper's remark concerns the closing gates, so it is matched when the share before "
        "closing is near 100 % and the count per run is at most about one."
    )


def _llm_section(rows: Sequence[dict]) -> list[str]:
    """The LLM path with the scripted pedestrians (``bench_evac_scripted_llm.py`` rows)."""
    lines = [
        "## The LLM path with a pedestrian that answers like a model",
        "",
        (
            "The same design runs through the LLM brain (litellm) against the project's local "
            "OpenAI-compatible server with two scripted pedestrians that make the same decisions "
            "(`evacuation/scripted_llm.py`): `exact_respond` answers in the engine's own tokens "
            "with every field, `realistic_respond` words them like a real model (paraphrased "
            "intents, varied case and punctuation, optional fields left out, unknown fields "
            "added, sometimes the paper's minimal output or a code fence). Whatever the engine "
            "derives from the answers should come out the same for both; "
            "`python benchmarks/bench_evac_scripted_llm.py` measures it."
        ),
        "",
    ]
    if not rows:
        return [*lines, "(no benchmark rows given)", ""]
    frame = pd.DataFrame(rows)
    return [*lines, markdown_table(frame.set_index("answerer")), ""]


def render_experiment_doc(
    report: dict,
    tables: dict[str, pd.DataFrame],
    *,
    command: str,
    llm_rows: Sequence[dict] = (),
) -> str:
    """The page's Markdown from a report's numbers and tables.

    Args:
        report: ``report.json``.
        tables: ``tables/*.csv`` by name.
        command: The command that produced the experiment (printed on the page).
        llm_rows: Rows of ``benchmarks/results/evac_scripted_llm.json`` to show.
    """
    e = report.get("experiment", {})
    ours = report["ours"]
    judged = verdicts(report)
    agree = judged[judged["agrees"]]
    differ = judged[~judged["agrees"]]
    seeds = e.get("seeds") or [e.get("seed", 0)]
    statistics = tables["statistics"].drop(columns=["key"])
    lines = [
        "# The 8 x 8 evacuation experiment (paper Sec. 3-4)",
        "",
        (
            "<!-- generated by `mlm evac report <experiment> --doc docs/experiments/evacuation.md` "
            "(mesa_llm_mobility/evacuation/experiment_doc.py): edit WHY / ASSUMPTIONS there, "
            "not this file -->"
        ),
        "",
        (
            "The paper runs eight personality compositions (A 11 average, B calm-independent, C "
            "bold-solitary, D rule-following, E 8 RF + 3 AC, F 6 + 5, G 3 + 8, H 11 "
            "anxious-conformist) in eight matched blocks (profiles re-assigned among the fixed "
            "start cells), 64 runs of 11 pedestrians, 704 in all, with LLM agents (GLM, "
            "temperature 0.2). This page runs the same design with the offline rule brain, "
            f"replicated over {len(seeds)} seed(s), and sets every statistic the paper reports "
            "beside ours. The rule brain is the classical baseline the paper argues against, not "
            "a reproduction of its agents."
        ),
        "",
        "## Command",
        "",
        "```bash",
        command,
        "mlm evac report runs/exp --doc docs/experiments/evacuation.md   # this page",
        "```",
        "",
        (
            "`run_experiment(out, seeds=N, factors={...})` in "
            "`mesa_llm_mobility.evacuation.experiment` does the same from Python: every seed "
            "runs the complete paired design (the compositions of a block share the seed), each "
            "run's seed is in its folder name and in the pooled tables, and `factors` crosses "
            "further model parameters with the design (for example system-provided initial exit "
            "information, once the model has it)."
        ),
        "",
        (
            f"**This run**: {ours.get('runs')} runs, {ours.get('pedestrians')} pedestrians, "
            f"brain `{e.get('brain')}`, seeds {seeds}; the sweep took {e.get('wall_s')} s wall "
            + (
                f"and {e.get('cpu_s')} s CPU (serial executor)."
                if e.get("executor") == "serial"
                else f"({e.get('executor')} executor; its workers' CPU is not in the "
                f"{e.get('cpu_s')} s CPU of the calling process)."
            )
        ),
        "",
        "## What agrees with the paper",
        "",
        (
            "The paper's value lies inside our 95 % between-seed interval (a p-value: on "
            "the same side of 0.05)"
            if len(seeds) > 1
            else f"Within {100 * RELATIVE_AGREEMENT:.0f} % of the paper's value (a p-value: "
            "on the same side of 0.05)"
        )
        + f" for {len(agree)} of {len(judged)} statistics. *ours* is computed on every "
        "seed's runs pooled; the interval is the 95 % t-interval of the per-seed values "
        "(clipped to [0, 1] for shares and p-values), so a statistic whose size grows with "
        "the sample (a p-value, a pseudo-R2) can lie outside it:",
        "",
        markdown_table(agree.drop(columns=["key", "agrees"]).set_index("statistic"))
        if len(agree)
        else "(none)",
        "",
        "## What does not, and why",
        "",
        markdown_table(differ.drop(columns=["key", "agrees"]).set_index("statistic"))
        if len(differ)
        else "(none)",
        "",
    ]
    for key in differ["key"]:
        if key in WHY:
            lines.append(f"- *{STATISTICS[key].label}*: {WHY[key]}")
    lines += [
        "",
        "## Which composition differences exceed seed noise",
        "",
        *_differences_text(tables),
        "",
        _table(tables, "composition_means"),
        "",
        "![outcomes](img/evacuation_outcomes.png)",
        "",
        "## Exit knowledge",
        "",
        _table(tables, "knowledge_measures"),
        "",
        _table(tables, "knowledge_by_source"),
        "",
        _table(tables, "time_to_knowledge"),
        "",
        _gate_text(ours),
        "",
        "![exit knowledge](img/evacuation_exit_knowledge.png)",
        "",
        "## Every statistic beside the paper's",
        "",
        markdown_table(statistics.set_index("statistic")),
        "",
        *[
            f"![{title}](img/evacuation_{name}.png)\n"
            for name, title in FIGURES.items()
            if name not in ("outcomes", "exit_knowledge")
        ],
        "## Factor models",
        "",
        _table(tables, "factor_models"),
        "",
        *_llm_section(llm_rows),
        "## The representation benchmark (Sec. 2.2.4)",
        "",
        (
            "`mlm evac representation --brain <brain>` freezes pedestrians' views from a "
            "rule-brain run, writes each as no map, structured cells, lean ASCII and ASCII with "
            "a decoding protocol (also turned a quarter turn), asks what the view determines "
            "(the glyph at an offset, an exit cell's offset, the armed person's offset, the "
            "number of other pedestrians) and prints each encoding's accuracy "
            "(`evacuation/representation.py`). With `--brain rules` a parser reads the encodings "
            "back: 100 % on the three that hold the map, guesses without one, which checks the "
            "questions; a model's own accuracy needs `--brain llm:<model>`."
        ),
        "",
        "## Definitions and assumptions",
        "",
        *[f"- {text}" for text in ASSUMPTIONS],
        "",
    ]
    return "\n".join(lines)


def write_experiment_doc(
    experiment: str | Path,
    path: str | Path,
    *,
    command: str = "mlm evac experiment --compositions A-H --blocks 8 --seeds 10 "
    "--brain rules --out runs/exp --executor process",
    llm_benchmark: str | Path | None = None,
) -> Path:
    """Write the documentation page of an experiment folder and copy its figures beside it.

    Args:
        experiment: The experiment folder (with ``report.json`` and ``tables/``).
        path: The page to write (its ``img/`` folder receives the figures).
        command: The experiment's command, as printed on the page.
        llm_benchmark: ``benchmarks/results/evac_scripted_llm.json`` (its latest exact and
            realistic rows are shown), or ``None``.

    Returns:
        The page.

    Raises:
        FileNotFoundError: When the folder has no report (run ``mlm evac report`` first).
    """
    root = Path(experiment)
    if not (root / NUMBERS_FILE).is_file():
        raise FileNotFoundError(
            f"{root / NUMBERS_FILE}: no report; run `mlm evac report {root}` first"
        )
    report, tables = _read(root)
    page = Path(path)
    images = page.parent / "img"
    images.mkdir(parents=True, exist_ok=True)
    for name in FIGURES:
        source = root / FIGURES_DIR / f"{name}.png"
        if source.is_file():
            shutil.copyfile(source, images / f"evacuation_{name}.png")
    rows = json.loads(Path(llm_benchmark).read_text()) if llm_benchmark else []
    latest = list({row["answerer"]: row for row in rows}.values())
    page.write_text(
        render_experiment_doc(report, tables, command=command, llm_rows=latest), "utf-8"
    )
    return page
