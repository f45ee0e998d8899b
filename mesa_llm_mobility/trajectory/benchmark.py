"""The benchmark: every baseline on the same held-out days, as the paper's Tables II-VIII.

:func:`run_benchmark` (``mlm traj benchmark``) reads a history (a synthetic city by default,
:func:`~.synth.synthesize`; or a NumoSim-layout file), holds out each individual's last days,
generates those dates with every baseline of :mod:`.baselines` and writes a run directory::

    <out>/
        config.json, metadata.json
        ledger.jsonl                 the LLM baseline's exchanges (with an LLM brain)
        temperature/ledger_T<t>.jsonl  the temperature study's exchanges (with an LLM brain)
        tables/metrics.{parquet,csv}     Tables II and VI: the seven metrics per baseline
        tables/spatial.{parquet,csv}     beyond the paper: location-aware metrics per baseline
        tables/realism.{parquet,csv}     Tables III and VII: AUROC and AP per baseline, detector
        tables/cost.{parquet,csv}        wall and CPU time, training and generation time,
                                         parameters, LLM decisions, calls and tokens
        tables/tools.{parquet,csv}       Table V: tool-invocation success (with an LLM brain)
        tables/temperature.{parquet,csv} Table VIII: verifier failure rates (with an LLM brain)
        tables/held_out.parquet, tables/generated_<baseline>.parquet
        report.md, plots/*.png           the tables in Markdown beside the paper's, and figures

The tables are built by :func:`benchmark_tables` from the runs, so they can be rebuilt from
generated stay points alone.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_atomic
from mesa_llm_mobility.trajectory.baselines import (
    BASELINE_LABELS,
    BASELINES,
    LLM_BASELINES,
    NEURAL_BASELINES,
    BaselineRun,
    neural_available,
    run_baseline,
    with_temperature,
)
from mesa_llm_mobility.trajectory.benchmark_report import BenchmarkTables, write_report
from mesa_llm_mobility.trajectory.evidence import build_evidence
from mesa_llm_mobility.trajectory.freeform import tool_success
from mesa_llm_mobility.trajectory.metrics import METRICS, evaluate
from mesa_llm_mobility.trajectory.model import (
    paper_sampling,
)
from mesa_llm_mobility.trajectory.paper_tables import (
    PAPER_FAILURE_RATES,
    PAPER_GPU_HOURS,
    PAPER_NUMOSIM_DETECTORS,
    PAPER_NUMOSIM_METRICS,
    PAPER_NUMOSIM_REALISM,
    PAPER_NUMOSIM_TABLE,
    PAPER_TOOL_SUCCESS,
    REFERENCE,
)
from mesa_llm_mobility.trajectory.spatial import SPATIAL_METRICS, spatial_metrics
from mesa_llm_mobility.trajectory.staypoints import (
    local_dates,
    read_history,
    split_history,
)
from mesa_llm_mobility.trajectory.synth import synthesize
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings

logger = logging.getLogger(__name__)

STUDY_TEMPERATURES = (0.5, 0.9, 1.5)
"""The temperatures of the paper's Table VIII."""

COST_COLUMNS = (
    "baseline",
    "brain",
    "trajectories",
    "visits",
    "wall_s",
    "cpu_s",
    "train_s",
    "generate_s",
    "parameters",
    "llm_decisions",
    "http_calls",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "fallbacks",
    "workflow_success",
)
"""Columns of the cost table (``train_s``, ``generate_s``, ``parameters``: neural baselines)."""

TOOL_COLUMNS = (
    "baseline",
    "trajectories",
    "visits",
    "trajectory_success",
    "visit_success",
)
"""Columns of the tool-invocation table (the paper's Table V)."""

REALISM_COLUMNS = ("baseline", "detector", "auroc", "ap", "n_real", "n_generated")
"""Columns every realism table has (the detectors' rows, per baseline; the detectors may add
more, e.g. the AUROC's confidence interval)."""

TEMPERATURE_COLUMNS = (
    "temperature",
    "daily_runs",
    "decisions",
    "total",
    "schema",
    "constraint",
    "fallbacks",
    "paper_total",
    "paper_schema",
    "paper_constraint",
)
"""Columns of the temperature table (rates are shares of daily runs)."""

Realism = Callable[..., pd.DataFrame]
"""``realism(real, generated, *, seed) -> DataFrame`` with rows detector, auroc, ap, n_real,
n_generated."""


class BenchmarkConfig(TypedDict):
    """The resolved configuration of a benchmark (``config.json``)."""

    history: str | None
    individuals: int
    weeks: int
    city_seed: int
    hold_out: int
    seed: int
    baselines: list[str]
    brain: str
    cell_km: float
    bin_minutes: int
    detectors: list[str] | None
    temperatures: list[float]
    study_individuals: int
    study_days: int
    timezone: str | None
    neural_epochs: int | None


def benchmark_config(
    *,
    history: str | Path | None = None,
    individuals: int = 300,
    weeks: int = 4,
    city_seed: int = 0,
    hold_out: int = 7,
    seed: int = 0,
    baselines: Sequence[str] | None = None,
    brain: str = "rules",
    cell_km: float = 0.5,
    bin_minutes: int = 60,
    detectors: Sequence[str] | None = None,
    temperatures: Sequence[float] = STUDY_TEMPERATURES,
    study_individuals: int = 100,
    study_days: int = 1,
    timezone: str | None = None,
    neural_epochs: int | None = None,
) -> BenchmarkConfig:
    """The configuration of a benchmark (what ``config.json`` holds).

    Args:
        history: A NumoSim folder or stay-point file; ``None``: a synthetic city.
        individuals: People of the synthetic city.
        weeks: Weeks of the synthetic city's history.
        city_seed: Seed of the synthetic city.
        hold_out: Days held out per individual (the generated dates).
        seed: Seed of every baseline.
        baselines: Baselines to run (default: all; ``"llm"`` and ``"tool_calling"`` only with
            an LLM brain, the neural ones only with the ``neural`` extra installed).
        brain: ``"rules"`` or ``"llm:<model>"`` (the LLM baseline and the temperature study).
        cell_km: Grid cell of the metrics.
        bin_minutes: Start-bin width of the Markov chain.
        detectors: Realism detectors of Table III (default: every one of
            :data:`~.realism.DETECTORS`).
        temperatures: Temperatures of the study.
        study_individuals: Individuals of the temperature study (the first, by id).
        study_days: Held-out dates of the temperature study (the first).
        timezone: Time zone of the history's times.
        neural_epochs: Maximum-likelihood epochs of the neural baselines (default: each
            architecture's, :data:`~.neural.ARCHITECTURES`).

    Returns:
        The configuration, JSON-ready.

    Raises:
        ValueError: For an unknown baseline, an LLM baseline asked for without an LLM brain,
            or a neural one without the ``neural`` extra.
    """
    uses_llm = parse_brain_setting(brain)[0] == "llm"
    has_neural = neural_available()
    chosen = (
        list(baselines)
        if baselines is not None
        else [
            name
            for name in BASELINES
            if (uses_llm or name not in LLM_BASELINES)
            and (has_neural or name not in NEURAL_BASELINES)
        ]
    )
    unknown = [name for name in chosen if name not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baselines {unknown} (use {', '.join(BASELINES)})")
    needs_llm = [name for name in chosen if name in LLM_BASELINES]
    if needs_llm and not uses_llm:
        raise ValueError(f"the {needs_llm[0]} baseline needs --brain llm:<model>")
    needs_neural = [name for name in chosen if name in NEURAL_BASELINES]
    if needs_neural and not has_neural:
        raise ValueError(
            f"the {needs_neural[0]} baseline needs JAX, Flax and Optax: pip install "
            "'mesa-llm-mobility[neural]'"
        )
    if neural_epochs is not None and neural_epochs < 1:
        raise ValueError(f"neural_epochs must be >= 1, got {neural_epochs}")
    if hold_out < 1:
        raise ValueError(f"hold_out must be >= 1, got {hold_out}")
    if detectors is not None:
        from mesa_llm_mobility.trajectory.realism import DETECTORS  # noqa: PLC0415

        wrong = [name for name in detectors if name not in DETECTORS]
        if wrong or not detectors:
            raise ValueError(
                f"unknown detectors {wrong} (use any of {', '.join(DETECTORS)})"
            )
    return {
        "history": None if history is None else str(history),
        "individuals": int(individuals),
        "weeks": int(weeks),
        "city_seed": int(city_seed),
        "hold_out": int(hold_out),
        "seed": int(seed),
        "baselines": chosen,
        "brain": brain,
        "cell_km": float(cell_km),
        "bin_minutes": int(bin_minutes),
        "detectors": None if detectors is None else list(detectors),
        "temperatures": [float(value) for value in temperatures],
        "study_individuals": int(study_individuals),
        "study_days": int(study_days),
        "timezone": timezone,
        "neural_epochs": None if neural_epochs is None else int(neural_epochs),
    }


# ---------------------------------------------------------------------------- tables
def verifier_failure_rates(verification: pd.DataFrame) -> dict[str, float]:
    """The paper's Table VIII rates from a verification table (:mod:`.baselines`).

    A daily run (one individual, one date) fails when any of its LLM answers violated the
    schema (the ``json`` or ``schema`` stage) or the feasibility constraints (``domain``). As in
    the paper, a failed run counts once: as a schema failure if any of its answers broke the
    schema, else as a constraint failure, so ``total = schema + constraint``. Transport
    failures (timeouts, HTTP errors) are not the verifier's and are not counted.

    Args:
        verification: One row per decision with the failed rounds per stage.

    Returns:
        ``daily_runs``, ``decisions``, ``fallbacks`` (counts) and ``total``, ``schema``,
        ``constraint`` (shares of daily runs; NaN without any).
    """
    if verification.empty:
        nan = float("nan")
        return {
            "daily_runs": 0,
            "decisions": 0,
            "fallbacks": 0,
            "total": nan,
            "schema": nan,
            "constraint": nan,
        }
    runs = (
        verification.assign(
            schema_failed=(verification["json"] + verification["schema"]) > 0,
            constraint_failed=verification["domain"] > 0,
        )
        .groupby(["date", "agent_id"])[["schema_failed", "constraint_failed"]]
        .any()
    )
    schema = runs["schema_failed"]
    constraint = runs["constraint_failed"] & ~schema
    return {
        "daily_runs": len(runs),
        "decisions": len(verification),
        "fallbacks": int((verification["outcome"] == "fallback").sum()),
        "total": float((schema | constraint).mean()),
        "schema": float(schema.mean()),
        "constraint": float(constraint.mean()),
    }


def temperature_table(studies: Mapping[float, pd.DataFrame]) -> pd.DataFrame:
    """Table VIII: verifier failure rates per temperature, beside the paper's."""
    rows = []
    for temperature, verification in studies.items():
        paper = PAPER_FAILURE_RATES.get(float(temperature), {})
        rows.append(
            {
                "temperature": float(temperature),
                **verifier_failure_rates(verification),
                **{
                    f"paper_{name}": paper.get(name)
                    for name in ("total", "schema", "constraint")
                },
            }
        )
    return pd.DataFrame(rows, columns=list(TEMPERATURE_COLUMNS))


def metrics_table(
    real: pd.DataFrame, generated: Mapping[str, pd.DataFrame], *, cell_km: float = 0.5
) -> pd.DataFrame:
    """Table II: the seven metrics of each generated table against the real one.

    Returns:
        One row per baseline (index ``baseline``), columns :data:`~.metrics.METRICS`.
    """
    return _per_baseline(evaluate, METRICS, real, generated, cell_km)


def _per_baseline(
    measure: Callable[..., dict[str, float]],
    columns: Sequence[str],
    real: pd.DataFrame,
    generated: Mapping[str, pd.DataFrame],
    cell_km: float,
) -> pd.DataFrame:
    """One row of ``measure(real, stays, cell_km=...)`` per generated table."""
    rows = {
        name: measure(real, stays, cell_km=cell_km) for name, stays in generated.items()
    }
    return pd.DataFrame.from_dict(
        rows, orient="index", columns=list(columns)
    ).rename_axis("baseline")


def spatial_table(
    real: pd.DataFrame, generated: Mapping[str, pd.DataFrame], *, cell_km: float = 0.5
) -> pd.DataFrame:
    """Beyond the paper: the location-aware metrics (:mod:`.spatial`) of each generated table.

    Returns:
        One row per baseline (index ``baseline``), columns :data:`~.spatial.SPATIAL_METRICS`.
    """
    return _per_baseline(spatial_metrics, SPATIAL_METRICS, real, generated, cell_km)


def tool_table(runs: Sequence[BaselineRun]) -> pd.DataFrame:
    """Table V: trajectory- and visit-level tool-invocation success.

    The free-form run's rates come from its tool calls (:func:`~.freeform.tool_success`); a
    workflow run calls its modules in code, so a visit is a success when it got a POI and a
    time, and a trajectory when all of its planned visits did
    (:meth:`~.historical.VerifiedTrajectoryModel.tool_use_frame`).
    """
    rows = []
    for run in runs:
        if run.tool_use is None or run.tool_use.empty:
            continue
        rates = tool_success(run.tool_use)
        rows.append({"baseline": run.name, **rates})
    return pd.DataFrame(rows, columns=list(TOOL_COLUMNS))


def realism_table(
    real: pd.DataFrame,
    generated: Mapping[str, pd.DataFrame],
    realism: Realism,
    *,
    seed: int = 0,
) -> pd.DataFrame:
    """Table III: every detector's AUROC and AP for each generated table against the real one."""
    frames = []
    for name, stays in generated.items():
        frame = realism(real, stays, seed=seed)
        frame.insert(0, "baseline", name)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=list(REALISM_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def cost_table(runs: Sequence[BaselineRun]) -> pd.DataFrame:
    """Wall and CPU time, trajectories and visits, and the LLM's decisions, calls and tokens."""
    rows = []
    for run in runs:
        summary = (
            run.ledger_summary.loc["all"]
            if run.ledger_summary is not None and "all" in run.ledger_summary.index
            else None
        )
        days = run.stays.groupby(["agent_id", local_dates(run.stays)]).ngroups
        rows.append(
            {
                "baseline": run.name,
                "brain": run.brain,
                "trajectories": days,
                "visits": len(run.stays),
                "wall_s": run.wall_s,
                "cpu_s": run.cpu_s,
                "train_s": run.train_s,
                "generate_s": run.generate_s,
                "parameters": run.parameters,
                **{
                    column: int(summary[source]) if summary is not None else 0
                    for column, source in (
                        ("llm_decisions", "decisions"),
                        ("http_calls", "http_calls"),
                        ("prompt_tokens", "prompt_tokens"),
                        ("completion_tokens", "completion_tokens"),
                    )
                },
                "cost_usd": float(summary["cost_usd"]) if summary is not None else 0.0,
                "fallbacks": int(
                    (run.decisions.get("outcome", pd.Series()) == "fallback").sum()
                ),
                "workflow_success": run.workflow_success_rate,
            }
        )
    return pd.DataFrame(rows, columns=list(COST_COLUMNS))


def load_realism(detectors: Sequence[str] | None = None) -> Realism | None:
    """The realism detectors (:mod:`.realism`), or ``None`` when they are not installed.

    Args:
        detectors: Which ones (default: every one of :data:`~.realism.DETECTORS` whose
            packages are installed: ``individual_h3`` needs ``h3``, ``visit_learned`` JAX).
    """
    try:
        from mesa_llm_mobility.trajectory.realism import (  # noqa: PLC0415
            DETECTORS,
            realism,
        )
    except ImportError as error:
        logger.info("realism detectors unavailable: %s", error)
        return None
    if detectors is None:  # every detector whose packages are installed
        needs = {"individual_h3": ("h3",), "visit_learned": ("jax", "flax", "optax")}
        detectors = [
            name
            for name in DETECTORS
            if all(
                importlib.util.find_spec(package) is not None
                for package in needs.get(name, ())
            )
        ]
    return functools.partial(realism, detectors=tuple(detectors))


def benchmark_tables(
    held_out: pd.DataFrame,
    runs: Sequence[BaselineRun],
    *,
    reference: pd.DataFrame | None = None,
    studies: Mapping[float, pd.DataFrame] | None = None,
    realism: Realism | None = None,
    cell_km: float = 0.5,
    seed: int = 0,
) -> BenchmarkTables:
    """Build every table of the benchmark from the baselines' runs.

    Args:
        held_out: The real held-out days.
        runs: One run per baseline.
        reference: Real days to compare like a baseline (the history's last days), or ``None``.
        studies: Temperature -> verification table of the temperature study.
        realism: The detectors (``None``: Table III is left empty, with a note).
        cell_km: Grid cell of the metrics.
        seed: Seed of the detectors.

    Returns:
        The tables.
    """
    generated = {run.name: run.stays for run in runs}
    if reference is not None and not reference.empty:
        generated[REFERENCE] = reference
    notes = []
    if realism is None:
        notes.append(
            "Table III is empty: the realism detectors (mesa_llm_mobility.trajectory.realism) "
            "are not installed."
        )
        realism_rows = pd.DataFrame(columns=list(REALISM_COLUMNS))
    else:
        try:
            realism_rows = realism_table(held_out, generated, realism, seed=seed)
        except ValueError as error:  # e.g. a single held-out day: nothing to learn from
            notes.append(
                f"Table III is empty: the detectors could not score ({error})."
            )
            realism_rows = pd.DataFrame(columns=list(REALISM_COLUMNS))
    if not studies:
        notes.append(
            "No temperature study: it needs an LLM brain (--brain llm:<model>)."
        )
    return BenchmarkTables(
        metrics=metrics_table(held_out, generated, cell_km=cell_km),
        realism=realism_rows,
        cost=cost_table(runs),
        temperature=temperature_table(studies or {}),
        spatial=spatial_table(held_out, generated, cell_km=cell_km),
        tools=tool_table(runs),
        notes=notes,
    )


# ---------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class BenchmarkResult:
    """What :func:`run_benchmark` returns.

    Attributes:
        run: The run directory written.
        tables: The tables.
        runs: One run per baseline.
        report: The Markdown report.
    """

    run: RunDirectory
    tables: BenchmarkTables
    runs: list[BaselineRun]
    report: Path


def reference_days(
    history: pd.DataFrame, held_out: pd.DataFrame
) -> pd.DataFrame | None:
    """The history's days on the held-out dates shifted back by whole weeks.

    The shift is the smallest number of weeks that covers the held-out span (one week for a
    7-day hold-out), so every reference day has the weekday of its held-out day.

    Returns:
        The reference stay points, or ``None`` when the history is too short for them.
    """
    dates = sorted(set(local_dates(held_out)))
    if not dates:
        return None
    span_days = (dates[-1] - dates[0]).days + 1
    shift = pd.Timedelta(days=7 * -(-span_days // 7))
    wanted = {date - shift for date in dates}
    reference = history[local_dates(history).isin(wanted)].reset_index(drop=True)
    if set(local_dates(reference)) != wanted:
        return None
    return reference


def _study_history(history: pd.DataFrame, individuals: int) -> pd.DataFrame:
    """The first ``individuals`` individuals (by id) of a history."""
    people = sorted(history["agent_id"].unique())[:individuals]
    subset = history[history["agent_id"].isin(people)].reset_index(drop=True)
    subset.attrs = dict(history.attrs)
    return subset


def _write_frame(run: RunDirectory, name: str, frame: pd.DataFrame) -> None:
    """A table as Parquet (:meth:`RunDirectory.write_table`) and as CSV beside it."""
    run.write_table(name, frame)
    buffer = io.BytesIO(frame.to_csv(index=False).encode())
    write_atomic(run.tables_dir / f"{name}.csv", buffer.getvalue())


def run_benchmark(
    out: str | Path,
    config: BenchmarkConfig,
    *,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    progress: bool = False,
    realism: Realism | bool | None = True,
) -> BenchmarkResult:
    """Run every baseline on the same held-out days and write tables, report and figures.

    Args:
        out: The run directory.
        config: As built by :func:`benchmark_config`.
        overwrite: Replace an earlier run in ``out``.
        brain_options: Options of the LLM brain (``api_base``, ``temperature``, ...; never
            written to the config). What they leave unsaid is the paper's sampling
            (:func:`paper_sampling`: temperature 0.9, top-p 0.95, 1024 completion tokens).
        progress: Show a progress bar.
        realism: The detectors: ``True`` loads :mod:`.realism` when installed, ``False`` skips
            Table III, or a function.

    Returns:
        The result.

    Raises:
        StayPointError: For a bad history (nothing is written).
        RunDirectoryError: When ``out`` holds another run and ``overwrite`` is false.
    """
    if config["history"] is None:
        stays = synthesize(
            config["individuals"], config["weeks"], seed=config["city_seed"]
        ).stays
    else:
        stays = read_history(config["history"], timezone=config["timezone"])
    split = split_history(stays, config["hold_out"])
    history, held_out = split.history, split.held_out
    dates = sorted(set(local_dates(held_out)))
    reference = split_history(history, config["hold_out"]).held_out
    if (
        reference.empty
        or reference["agent_id"].nunique() < history["agent_id"].nunique()
    ):
        reference = None  # some individuals have too few days for a reference
    run = RunDirectory.create(
        out, dict(config), model="trajectory_benchmark", overwrite=overwrite
    )
    options = paper_sampling(brain_options)
    settings = WorkflowSettings(durations="visit")
    detectors = (
        load_realism(config["detectors"]) if realism is True else (realism or None)
    )
    uses_llm = parse_brain_setting(config["brain"])[0] == "llm"
    temperatures = config["temperatures"] if uses_llm else []
    steps = len(config["baselines"]) + len(temperatures) + 1
    runs: list[BaselineRun] = []
    studies: dict[float, pd.DataFrame] = {}
    with tqdm(total=steps, desc="benchmark", unit="step", disable=not progress) as bar:
        for name in config["baselines"]:
            bar.set_postfix_str(name)
            runs.append(
                run_baseline(
                    name,
                    history,
                    dates,
                    seed=config["seed"],
                    brain=config["brain"],
                    brain_options={**options, "ledger": run.ledger_path},
                    settings=settings,
                    bin_minutes=config["bin_minutes"],
                    cell_km=config["cell_km"],
                    neural_epochs=config.get("neural_epochs"),
                )
            )
            bar.update()
        if temperatures:
            study = _study_history(history, config["study_individuals"])
            book = build_evidence(study, peers=settings.peers)
            study_dates = dates[: config["study_days"]]
            folder = run.path / "temperature"
            folder.mkdir(exist_ok=True)
            for temperature in temperatures:
                bar.set_postfix_str(f"temperature {temperature:g}")
                study_options = with_temperature(options, temperature)
                study_options["ledger"] = folder / f"ledger_T{temperature:g}.jsonl"
                studies[temperature] = run_baseline(
                    "llm",
                    study,
                    study_dates,
                    seed=config["seed"],
                    brain=config["brain"],
                    brain_options=study_options,
                    settings=settings,
                    evidence=book,
                ).verification
                bar.update()
        bar.set_postfix_str("tables")
        tables = benchmark_tables(
            held_out,
            runs,
            reference=reference,
            studies=studies,
            realism=detectors,
            cell_km=config["cell_km"],
            seed=config["seed"],
        )
        bar.update()
    _write_frame(run, "metrics", tables.metrics.reset_index())
    _write_frame(run, "realism", tables.realism)
    _write_frame(run, "cost", tables.cost)
    _write_frame(run, "spatial", tables.spatial.reset_index())
    if not tables.tools.empty:
        _write_frame(run, "tools", tables.tools)
    if not tables.temperature.empty:
        _write_frame(run, "temperature", tables.temperature)
    run.write_table("held_out", held_out.drop(columns="source_row", errors="ignore"))
    for baseline in runs:
        run.write_table(f"generated_{baseline.name}", baseline.stays)
    report = write_report(run, tables)
    run.update_metadata(
        {
            "individuals": int(history["agent_id"].nunique()),
            "dates": [date.date().isoformat() for date in dates],
            "baselines": {name: BASELINE_LABELS[name] for name in config["baselines"]},
            "realism": detectors is not None,
        }
    )
    logger.info("benchmark written to %s", run.path)
    return BenchmarkResult(run, tables, runs, report)


__all__ = [
    "PAPER_FAILURE_RATES",
    "PAPER_GPU_HOURS",
    "PAPER_NUMOSIM_DETECTORS",
    "PAPER_NUMOSIM_METRICS",
    "PAPER_NUMOSIM_REALISM",
    "PAPER_NUMOSIM_TABLE",
    "PAPER_TOOL_SUCCESS",
    "REFERENCE",
    "BenchmarkConfig",
    "BenchmarkResult",
    "BenchmarkTables",
    "benchmark_config",
    "benchmark_tables",
    "cost_table",
    "load_realism",
    "metrics_table",
    "paper_sampling",
    "realism_table",
    "reference_days",
    "run_benchmark",
    "spatial_table",
    "temperature_table",
    "tool_table",
    "verifier_failure_rates",
]
