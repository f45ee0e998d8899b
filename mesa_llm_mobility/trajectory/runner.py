"""Generate trajectories into a file and a run directory (config, metadata, ledger, tables).

::

    <run>/
        config.json            the resolved configuration (:func:`generation_config`)
        metadata.json          versions, creation time; extra: brain, individuals, dates, success
        ledger.jsonl           every LLM exchange (LLM brains only)
        tables/<name>.parquet  trajectories, decisions, workflow; held_out (with a hold-out);
                               llm_summary (the ledger's summary, LLM brains only)

The history is read and checked before anything is written, so bad input leaves nothing behind.
A sharded run (``executor=`` or ``shards=``, :mod:`~.shards`) writes the same files, merged from
its shards, and keeps the shards in ``shards/`` for resuming.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.experiment.executors import Executor, ExecutorName
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_atomic
from mesa_llm_mobility.trajectory.evidence import EvidenceBook, build_evidence
from mesa_llm_mobility.trajectory.model import TrajectoryModel, workflow_success_rate
from mesa_llm_mobility.trajectory.staypoints import read_history, split_history
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings

logger = logging.getLogger(__name__)

LLM_SUMMARY_TABLE = "llm_summary"


class GenerationConfig(TypedDict):
    """The resolved configuration of one generation run (``config.json``)."""

    history: str
    days: int
    hold_out: int
    seed: int | None
    brain: str
    durations: str
    alpha: float
    peers: int
    timezone: str | None


@dataclass(frozen=True)
class GenerationRun:
    """What :func:`run_generation` returns.

    Attributes:
        run: The run directory written.
        model: The finished (closed) model, its tables still readable; ``None`` for a sharded
            run (each shard had its own model).
        trajectories: The generated stay points (also written to the output file).
        held_out: The held-out real days (empty without a hold-out).
        output: The generated stay-point file.
        brain: The brain's name (``"rules"`` or the LLM model).
        individuals: Individuals generated.
        dates: The dates generated (ISO dates).
        workflow_success_rate: See :func:`~.model.workflow_success_rate`.
        shards: Shards of a sharded run (``None``: unsharded).
    """

    run: RunDirectory
    model: TrajectoryModel | None
    trajectories: pd.DataFrame
    held_out: pd.DataFrame
    output: Path
    brain: str
    individuals: int
    dates: list[str]
    workflow_success_rate: float
    shards: int | None = None


@dataclass(frozen=True)
class GenerationInputs:
    """The checked inputs of a generation run, read before anything is written.

    Attributes:
        history: The history the evidence is built from (without the held-out days).
        held_out: The held-out days (empty without a hold-out).
        dates: The dates to generate (the held-out ones), or ``None``: ``config["days"]``
            after the history.
        book: The evidence of ``history``.
        settings: The workflow settings of the config.
    """

    history: pd.DataFrame
    held_out: pd.DataFrame
    dates: list[pd.Timestamp] | None
    book: EvidenceBook
    settings: WorkflowSettings


def generation_config(
    history: str | Path,
    *,
    days: int = 7,
    hold_out: int = 0,
    seed: int | None = 0,
    brain: str = "rules",
    durations: str = "day",
    alpha: float = 0.3,
    peers: int = 10,
    timezone: str | None = None,
) -> GenerationConfig:
    """The configuration of a generation run (what ``config.json`` holds).

    Args:
        history: NumoSim folder, NumoSim stay file or schema file.
        days: Dates to generate after the history (unused with a hold-out).
        hold_out: Hold out each individual's last ``hold_out`` days and generate those dates.
        seed: Random seed.
        brain: ``"rules"`` or ``"llm:<litellm model>"``.
        durations: ``"day"`` or ``"visit"``.
        alpha: The exploration gate.
        peers: K of the similar-individual pool.
        timezone: Time zone of the history's times (default: see :func:`read_history`).

    Returns:
        The configuration, JSON-ready.
    """
    return {
        "history": str(history),
        "days": int(days),
        "hold_out": int(hold_out),
        "seed": seed,
        "brain": brain,
        "durations": durations,
        "alpha": float(alpha),
        "peers": int(peers),
        "timezone": timezone,
    }


def default_run_dir(output: str | Path) -> Path:
    """``gen.parquet`` -> ``gen.run`` beside it."""
    output = Path(output)
    return output.with_name(f"{output.stem}.run")


def read_inputs(config: GenerationConfig) -> GenerationInputs:
    """Read and check the history of a config, split off its hold-out, build its evidence.

    Raises:
        StayPointError: For a bad history.
    """
    settings = WorkflowSettings(
        durations=config["durations"], alpha=config["alpha"], peers=config["peers"]
    )
    stays = read_history(config["history"], timezone=config["timezone"])
    if config["hold_out"] > 0:
        split = split_history(stays, config["hold_out"])
        history, held_out = split.history, split.held_out
        dates = sorted(set(held_out["start"].dt.normalize()))
    else:
        history, held_out, dates = stays, stays.iloc[:0], None
    book = build_evidence(
        history, peers=settings.peers, min_history_days=settings.min_history_days
    )
    return GenerationInputs(history, held_out, dates, book, settings)


def check_output(output: str | Path) -> Path:
    """The output path, if it is a ``.parquet`` or ``.csv`` file name.

    Raises:
        ValueError: For another suffix.
    """
    output = Path(output)
    if output.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"{output}: the output must be a .parquet or .csv file")
    return output


def run_generation(
    output: str | Path,
    config: GenerationConfig,
    *,
    run_dir: str | Path | None = None,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    progress: bool = False,
    executor: ExecutorName | Executor | None = None,
    workers: int | None = None,
    shards: int | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
) -> GenerationRun:
    """Read the history, generate, write the output file and the run directory.

    With ``executor`` or ``shards``, the individuals are split into shards run on an executor
    and merged (:func:`~.shards.run_sharded_generation`): the same result as unsharded, and
    resumable.

    Args:
        output: The generated stay-point file (``.parquet`` or ``.csv``).
        config: As built by :func:`generation_config`.
        run_dir: The run directory (default: :func:`default_run_dir`).
        overwrite: Replace an earlier run in ``run_dir``.
        brain_options: Extra brain options (``api_base``, ...); never written to the config.
        progress: Show a progress bar.
        executor: ``"serial"``, ``"process"``, ``"ray"`` or an executor: generate sharded.
        workers: Worker processes (``"process"``).
        shards: Shards (default: four per worker; a resumed run keeps its own).
        ray_address: Ray cluster address (``"ray"``; ``None``: a local instance).
        num_cpus: CPUs of a local Ray instance.

    Returns:
        The run.

    Raises:
        StayPointError: For a bad history (nothing is written).
        RunDirectoryError: When ``run_dir`` holds another run and ``overwrite`` is false.
        ShardsFailedError: When shards failed (sharded runs; the others are kept).
    """
    if executor is not None or shards is not None:
        from mesa_llm_mobility.trajectory.shards import (  # noqa: PLC0415
            run_sharded_generation,
        )

        return run_sharded_generation(
            output,
            config,
            run_dir=run_dir,
            overwrite=overwrite,
            brain_options=brain_options,
            progress=progress,
            executor=executor or "serial",
            workers=workers,
            shards=shards,
            ray_address=ray_address,
            num_cpus=num_cpus,
        )
    output = check_output(output)
    inputs = read_inputs(config)
    run = RunDirectory.create(
        run_dir or default_run_dir(output), dict(config), overwrite=overwrite
    )
    options = dict(brain_options or {})
    if parse_brain_setting(str(config["brain"]))[0] == "llm":
        options.setdefault("ledger", run.ledger_path)
    try:
        model = TrajectoryModel(
            inputs.history,
            days=config["days"],
            dates=inputs.dates,
            settings=inputs.settings,
            evidence=inputs.book,
            brain=config["brain"],
            brain_options=options,
            rng=config["seed"],
        )
    except BaseException:
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    with model:
        model.run(progress=progress)
    tables = {
        "trajectories": model.trajectories_frame(),
        "decisions": model.decisions_frame(),
        "workflow": model.workflow_frame(),
    }
    result = write_results(
        run,
        output,
        tables,
        inputs.held_out,
        brain=model.brain.name,
        individuals=len(model.book.individuals),
        dates=[date.date().isoformat() for date in model.dates],
    )
    return dataclasses.replace(result, model=model)


def write_results(
    run: RunDirectory,
    output: Path,
    tables: dict[str, pd.DataFrame],
    held_out: pd.DataFrame,
    *,
    brain: str,
    individuals: int,
    dates: list[str],
    extra: dict[str, Any] | None = None,
) -> GenerationRun:
    """Write the output file, the run's tables, its LLM summary and its metadata.

    Args:
        run: The run directory.
        output: The stay-point file.
        tables: ``trajectories``, ``decisions`` and ``workflow``.
        held_out: The held-out days (written when not empty).
        brain: The brain's name.
        individuals: Individuals generated.
        dates: ISO dates generated.
        extra: Further metadata.

    Returns:
        The run (without a model).
    """
    trajectories = tables["trajectories"]
    _write_stays(trajectories, output)
    if not held_out.empty:
        tables = {
            **tables,
            "held_out": held_out.drop(columns="source_row", errors="ignore"),
        }
    for name, table in tables.items():
        run.write_table(name, table)
    if run.ledger_path.is_file():
        run.write_table(
            LLM_SUMMARY_TABLE, Ledger.summarize_file(run.ledger_path).reset_index()
        )
    success = workflow_success_rate(tables["workflow"])
    run.update_metadata(
        {
            "brain": brain,
            "individuals": individuals,
            "dates": dates,
            "workflow_success_rate": success,
            **(extra or {}),
        }
    )
    logger.info("run written to %s", run.path)
    return GenerationRun(
        run,
        None,
        trajectories,
        held_out,
        output,
        brain=brain,
        individuals=individuals,
        dates=dates,
        workflow_success_rate=success,
    )


def _write_stays(stays: pd.DataFrame, path: Path) -> None:
    """Write a stay-point table atomically (Parquet or CSV by suffix)."""
    buffer = io.BytesIO()
    if path.suffix.lower() == ".csv":
        buffer.write(stays.to_csv(index=False).encode())
    else:
        stays.to_parquet(buffer, index=False)
    write_atomic(path, buffer.getvalue())
