"""The inputs a trajectory run reads and what it writes beside its tables.

:func:`read_inputs` reads and checks a run's history (a NumoSim folder, a stay file or a loaded
table), splits off its hold-out and builds its evidence, before anything is written. A run
directory of the shared lifecycle (:mod:`~mesa_llm_mobility.experiment.lifecycle`) then holds::

    <run>/
        config.json            the run's parameters (TrajectoryParameters)
        metadata.json          versions, the model; extra: brain, individuals, dates, success
        ledger.jsonl           every LLM exchange (LLM brains only)
        tables/<name>.parquet  trajectories (the generated stay points), decisions, workflow;
                               held_out (with a hold-out); llm_summary (LLM brains only)
        checkpoints/checkpoint_<d>.pkl  the model after d generated days (the latest two)

Generated stay points have the columns of :data:`~.staypoints.STAY_COLUMNS` (``start`` and
``end`` timezone-aware timestamps, ``latitude``/``longitude`` in degrees); the ``stays`` run
option also writes them to a ``.parquet`` or ``.csv`` file (:func:`write_stays`).
"""

from __future__ import annotations

import dataclasses
import io
import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.experiment.storage import write_atomic
from mesa_llm_mobility.trajectory.evidence import EvidenceBook, build_evidence
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters
from mesa_llm_mobility.trajectory.staypoints import (
    read_history,
    split_history,
    validate_staypoints,
)
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings

logger = logging.getLogger(__name__)

STAY_SUFFIXES = (".parquet", ".csv")
"""The files generated stay points can be written to."""


@dataclass(frozen=True)
class GenerationInputs:
    """The checked inputs of a generation run, read before anything is written.

    Attributes:
        history: The history the evidence is built from (without the held-out days).
        held_out: The held-out days (empty without a hold-out).
        dates: The dates to generate (the held-out ones), or ``None``: the parameters' days.
        book: The evidence of ``history``.
        settings: The workflow settings of the parameters.
    """

    history: pd.DataFrame
    held_out: pd.DataFrame
    dates: list[pd.Timestamp] | None
    book: EvidenceBook
    settings: WorkflowSettings


SETTINGS_PARAMETERS = ("durations", "alpha", "peers", "kinematics", "colocation_weight")
"""The workflow settings that are declared parameters (:class:`TrajectoryParameters`)."""


def settings_parameters(settings: WorkflowSettings) -> dict[str, object]:
    """The declared parameters a :class:`WorkflowSettings` sets, by name."""
    return {name: getattr(settings, name) for name in SETTINGS_PARAMETERS}


def workflow_settings(
    parameters: TrajectoryParameters, settings: WorkflowSettings | None = None
) -> WorkflowSettings:
    """The workflow settings of a run: ``settings`` with the declared parameters' values.

    Raises:
        ValueError: When ``settings`` sets a declared parameter to another value than the
            parameters (give it as a parameter, e.g. ``durations="visit"``).
    """
    base, default = settings or WorkflowSettings(), WorkflowSettings()
    for name in SETTINGS_PARAMETERS:
        given, wanted = getattr(base, name), getattr(parameters, name)
        if given != getattr(default, name) and given != wanted:
            raise ValueError(
                f"settings.{name}={given!r} differs from the parameter {name}={wanted!r}: "
                f"give {name} as a parameter"
            )
    return dataclasses.replace(
        base, **{name: getattr(parameters, name) for name in SETTINGS_PARAMETERS}
    )


def read_inputs(
    parameters: TrajectoryParameters,
    *,
    settings: WorkflowSettings | None = None,
    evidence: EvidenceBook | None = None,
) -> GenerationInputs:
    """Read and check a run's history, split off its hold-out, build its evidence.

    Args:
        parameters: The run's parameters (``history`` a file, a folder or a loaded table).
        settings: Further workflow settings (``durations``, ``alpha`` and ``peers`` are the
            parameters').
        evidence: A prebuilt evidence book of the history (built if ``None``).

    Raises:
        StayPointError: For a bad history (one line naming the file and the problem).
    """
    settings = workflow_settings(parameters, settings)
    history = parameters.history
    stays = (
        history
        if isinstance(history, pd.DataFrame)
        else read_history(history, timezone=parameters.timezone)
    )
    if parameters.hold_out > 0:
        if isinstance(history, pd.DataFrame):
            stays = validate_staypoints(stays)
        _warn_short_histories(stays, parameters.hold_out)
        split = split_history(stays, parameters.hold_out)
        stays, held_out = split.history, split.held_out
        dates = sorted(set(held_out["start"].dt.normalize()))
    else:
        held_out, dates = stays.iloc[:0], None
    book = evidence or build_evidence(
        stays,
        peers=settings.peers,
        min_history_days=settings.min_history_days,
        colocation_weight=settings.colocation_weight,
    )
    return GenerationInputs(stays, held_out, dates, book, settings)


def _warn_short_histories(stays: pd.DataFrame, hold_out: int) -> None:
    """Warn when holding out ``hold_out`` days leaves individuals (nearly) no history."""
    days = stays.groupby("agent_id")["start"].agg(lambda s: s.dt.normalize().nunique())
    short = int((days <= hold_out).sum())
    if short:
        logger.warning(
            "hold_out %d: %d of %d individuals have no more than %d days (at most %d), so "
            "each keeps only its first day as evidence and the rest is held out; hold out "
            "fewer days",
            hold_out,
            short,
            len(days),
            hold_out,
            int(days.max()),
        )


def check_stays_file(path: str | Path) -> Path:
    """The path of a stay-point file to write, if it ends in ``.parquet`` or ``.csv``.

    Raises:
        ValueError: For another suffix.
    """
    path = Path(path)
    if path.suffix.lower() not in STAY_SUFFIXES:
        raise ValueError(f"{path}: the stay points go to a .parquet or .csv file")
    return path


def write_stays(stays: pd.DataFrame, path: Path) -> None:
    """Write a stay-point table atomically (Parquet or CSV by suffix)."""
    buffer = io.BytesIO()
    if path.suffix.lower() == ".csv":
        buffer.write(stays.to_csv(index=False).encode())
    else:
        stays.to_parquet(buffer, index=False)
    write_atomic(path, buffer.getvalue())


def workflow_success_rate(workflow: pd.DataFrame) -> float:
    """Share of the kept visits of a workflow table that got a POI, a start and a duration.

    Args:
        workflow: A :meth:`~.model.TrajectoryModel.workflow_frame` (or several merged).

    Returns:
        (grounded - invalid locations) / (visits - trimmed); 1.0 when no visit was kept.
    """
    kept = workflow["visits"].sum() - workflow["trimmed_visits"].sum()
    if kept <= 0:
        return 1.0
    return float(
        (workflow["grounded_visits"].sum() - workflow["invalid_locations"].sum()) / kept
    )


def record_generation(
    run: RunDirectory,
    tables: dict[str, pd.DataFrame],
    *,
    brain: str,
    individuals: int,
    dates: list[str],
    stays_file: Path | None,
    extra: dict[str, object] | None = None,
) -> list[Path]:
    """A generation's metadata, and its stay points in ``stays_file`` when one is asked for.

    Args:
        run: The run directory.
        tables: The run's ``trajectories`` and ``workflow`` (at least).
        brain: The brain's name.
        individuals: Individuals generated.
        dates: ISO dates generated.
        stays_file: Where to write the generated stay points too, or None.
        extra: Further metadata (a sharded run's shards and executor).

    Returns:
        The stay-point file, if written.
    """
    run.update_metadata(
        {
            "brain": brain,
            "individuals": individuals,
            "dates": dates,
            "workflow_success_rate": workflow_success_rate(tables["workflow"]),
            **(extra or {}),
        }
    )
    if stays_file is None:
        return []
    write_stays(tables["trajectories"], stays_file)
    return [stays_file]
