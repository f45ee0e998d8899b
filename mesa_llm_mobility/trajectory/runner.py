"""Generate trajectories into a file and a run directory (config, metadata, ledger, tables).

::

    <run>/
        config.json            the resolved configuration (:func:`generation_config`)
        metadata.json          versions, creation time; extra: brain, individuals, dates, success
        ledger.jsonl           every LLM exchange (LLM brains only)
        tables/<name>.parquet  trajectories, decisions, workflow; held_out (with a hold-out);
                               llm_summary (the ledger's summary, LLM brains only)

The history is read and checked before anything is written, so bad input leaves nothing behind.
"""

from __future__ import annotations

import io
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_atomic
from mesa_llm_mobility.trajectory.evidence import build_evidence
from mesa_llm_mobility.trajectory.model import TrajectoryModel
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
        model: The finished (closed) model, its tables still readable.
        trajectories: The generated stay points (also written to the output file).
        held_out: The held-out real days (empty without a hold-out).
        output: The generated stay-point file.
    """

    run: RunDirectory
    model: TrajectoryModel
    trajectories: pd.DataFrame
    held_out: pd.DataFrame
    output: Path


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


def run_generation(
    output: str | Path,
    config: GenerationConfig,
    *,
    run_dir: str | Path | None = None,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    progress: bool = False,
) -> GenerationRun:
    """Read the history, generate, write the output file and the run directory.

    Args:
        output: The generated stay-point file (``.parquet`` or ``.csv``).
        config: As built by :func:`generation_config`.
        run_dir: The run directory (default: :func:`default_run_dir`).
        overwrite: Replace an earlier run in ``run_dir``.
        brain_options: Extra brain options (``api_base``, ...); never written to the config.
        progress: Show a progress bar.

    Returns:
        The run.

    Raises:
        StayPointError: For a bad history (nothing is written).
        RunDirectoryError: When ``run_dir`` holds another run and ``overwrite`` is false.
    """
    output = Path(output)
    if output.suffix.lower() not in (".parquet", ".csv"):
        raise ValueError(f"{output}: the output must be a .parquet or .csv file")
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
    run = RunDirectory.create(
        run_dir or default_run_dir(output), dict(config), overwrite=overwrite
    )
    options = dict(brain_options or {})
    if parse_brain_setting(str(config["brain"]))[0] == "llm":
        options.setdefault("ledger", run.ledger_path)
    try:
        model = TrajectoryModel(
            history,
            days=config["days"],
            dates=dates,
            settings=settings,
            evidence=book,
            brain=config["brain"],
            brain_options=options,
            rng=config["seed"],
        )
    except BaseException:
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    with model:
        model.run(progress=progress)
    trajectories = model.trajectories_frame()
    _write_stays(trajectories, output)
    tables = {
        "trajectories": trajectories,
        "decisions": model.decisions_frame(),
        "workflow": model.workflow_frame(),
    }
    if not held_out.empty:
        tables["held_out"] = held_out.drop(columns="source_row", errors="ignore")
    for name, table in tables.items():
        run.write_table(name, table)
    if run.ledger_path.is_file():
        run.write_table(
            LLM_SUMMARY_TABLE, Ledger.summarize_file(run.ledger_path).reset_index()
        )
    extra: dict[str, Any] = {
        "brain": model.brain.name,
        "individuals": len(model.book.individuals),
        "dates": [date.date().isoformat() for date in model.dates],
        "workflow_success_rate": model.workflow_success_rate(),
    }
    run.update_metadata(extra)
    logger.info("run written to %s", run.path)
    return GenerationRun(run, model, trajectories, held_out, output)


def _write_stays(stays: pd.DataFrame, path: Path) -> None:
    """Write a stay-point table atomically (Parquet or CSV by suffix)."""
    buffer = io.BytesIO()
    if path.suffix.lower() == ".csv":
        buffer.write(stays.to_csv(index=False).encode())
    else:
        stays.to_parquet(buffer, index=False)
    write_atomic(path, buffer.getvalue())
