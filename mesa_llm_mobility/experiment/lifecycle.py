"""One run lifecycle for every model: start, resume, fork and stop a run in a run directory.

:func:`start_run` runs a model from its declared parameters into a new run directory,
:func:`resume_run` continues one from its latest good checkpoint, :func:`fork_run` starts a new
run from any checkpoint of another with changed parameters. The same code serves every model
through the run contract of :class:`~mesa_llm_mobility.experiment.base_model.MobilityModel`;
this module names no model (a run directory's metadata names its model class, which
:func:`resume_run` imports).

What a run does, whatever the model::

    parameters validated, inputs read  ->  nothing is written on bad input
    run directory created               ->  config.json (the parameters), metadata.json
    model built; checkpoint of its start state (memory snapshot first, then the pickle)
    step ... step                       ->  at each due checkpoint: that day's table parts,
                                            then the checkpoint (the oldest beyond the model's
                                            keep are removed)
    the end                             ->  whole-run tables, plots and summary, metadata

A run that fails while it starts leaves nothing behind. A run interrupted later (Ctrl-C, a
crash, an LLM endpoint that stopped answering) keeps its latest checkpoint: :func:`resume_run`
continues it, and an LLM brain answers the requests already in the ledger after that checkpoint
from the ledger, without calling the model. Ctrl-C raises :class:`RunInterrupted`, which says
how to resume.
"""

from __future__ import annotations

import importlib
import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.experiment import run_directory
from mesa_llm_mobility.experiment.base_model import MobilityModel
from mesa_llm_mobility.experiment.checkpoints import (
    replay_after,
    restore_memory,
    snapshot_memory,
)
from mesa_llm_mobility.experiment.parameters import ParameterError, Parameters
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError

logger = logging.getLogger(__name__)

LLM_SUMMARY_TABLE = "llm_summary"
"""The ledger's summary (one row per decision kind and ``all``), written for LLM runs."""


@dataclass(frozen=True)
class RunResult:
    """What a run left behind.

    Attributes:
        run: The run directory.
        model: The model (closed; its tables still readable).
        finished: Whether the run reached its end (False when stopped at ``stop_after``).
        outputs: The plots and other files written at the end (none while unfinished).
    """

    run: RunDirectory
    model: MobilityModel
    finished: bool
    outputs: list[Path]


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; the message says where it can be resumed from.

    Attributes:
        run: The run directory.
        checkpoint: The number of its latest checkpoint, or None if it has none.
    """

    def __init__(self, run: RunDirectory, checkpoint: int | None, command: str) -> None:
        self.run = run
        self.checkpoint = checkpoint
        if checkpoint is None:
            text = f"{run.path} has no checkpoint yet: run it again with --overwrite"
        else:
            text = (
                f"{run.path} continues from its checkpoint {checkpoint} with: "
                f"mlm {command} resume {run.path}"
            )
        super().__init__(f"interrupted; {text}")


# ---------------------------------------------------------------------------- start
def start_run(
    model_cls: type[MobilityModel],
    parameters: Parameters,
    out: str | Path,
    *,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    **options: Any,
) -> RunResult:
    """Run a model from its parameters into the new run directory ``out``.

    Args:
        model_cls: The model class.
        parameters: Its parameters (``model_cls.parameters_class``).
        out: The run directory to create.
        overwrite: Replace an earlier run in ``out``.
        brain_options: Brain options (``api_base``, ...); never written anywhere. An LLM
            brain's ledger is the run's ``ledger.jsonl``.
        progress: Show a progress bar.
        stop_after: Stop after the first checkpoint numbered at least this, as an interrupted
            run would (continue with :func:`resume_run`).
        **options: The model's run options (:meth:`MobilityModel.for_run`).

    Returns:
        The run.

    Raises:
        ParameterError: For parameters of another model.
        ValueError, OSError: For bad inputs (nothing is written).
        RunDirectoryError: When ``out`` holds another run and ``overwrite`` is false.
    """
    if not isinstance(parameters, model_cls.parameters_class):
        raise ParameterError(
            f"{model_cls.__name__} takes {model_cls.parameters_class.__name__}, "
            f"got {type(parameters).__name__}"
        )
    parameters, options_given = model_cls.prepare(
        parameters, BrainOptions(**(brain_options or {})), "parameters"
    )
    config = parameters.to_config()
    options = model_cls.run_options_class.from_values(options).values()
    inputs = model_cls.load_inputs(parameters)
    run = RunDirectory.create(
        out,
        config,
        model=parameters.model_name,
        model_class=f"{model_cls.__module__}.{model_cls.__qualname__}",
        overwrite=overwrite,
    )
    try:
        model = model_cls.for_run(
            parameters,
            run,
            inputs,
            _brain_options(run, parameters, options_given),
            **options,
        )
    except BaseException:
        shutil.rmtree(run.path, ignore_errors=True)  # a refused start leaves nothing
        raise
    try:
        _checkpoint(run, model, start=True)
    except BaseException:
        model.close()
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    return _run_to_end(run, model, progress=progress, stop_after=stop_after)


def _brain_options(
    run: RunDirectory,
    parameters: Parameters,
    brain_options: BrainOptions | None,
    replay: Any = None,
) -> BrainOptions:
    """The brain options of a run: an LLM brain's ledger is the run's (and its replay)."""
    options = dict(brain_options or {})
    brain = parameters.brain
    if isinstance(brain, str) and parse_brain_setting(brain)[0] == "llm":
        options.setdefault("ledger", run.ledger_path)
        if replay is not None:
            options.setdefault("replay", replay)
    return BrainOptions(**options)


# ---------------------------------------------------------------------------- resume
def open_run(
    run_dir: str | Path, *, model: str | None = None
) -> tuple[RunDirectory, type[MobilityModel], Parameters]:
    """Open a run directory: the run, its model class and its parameters.

    Args:
        run_dir: The run directory.
        model: The model the caller expects (its name), or None for any.

    Raises:
        RunDirectoryError: If it is not a run directory of this format (or of ``model``), or
            its model class cannot be imported.
        ParameterError: If its ``config.json`` holds parameters the model does not have.
    """
    run = RunDirectory.open(run_dir, model=model)
    path = run.metadata.get("model_class")
    try:
        module, _, name = str(path).rpartition(".")
        model_cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        raise RunDirectoryError(
            f"{run.metadata_path}: model_class {path!r} cannot be imported"
        ) from None
    if not (isinstance(model_cls, type) and issubclass(model_cls, MobilityModel)):
        raise RunDirectoryError(
            f"{run.metadata_path}: model_class {path!r} is not a MobilityModel"
        )
    parameters = model_cls.parameters_class.from_config(
        run.config, where=str(run.config_path)
    )
    return run, model_cls, parameters


def resume_run(
    run_dir: str | Path,
    *,
    model: str | None = None,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    **options: Any,
) -> RunResult:
    """Continue a run from its latest good checkpoint to its end.

    The model is unpickled from the checkpoint (a corrupt or truncated latest one is skipped
    with a warning), its memory store is put back as it was then, a new brain is built from the
    run's parameters on the model's restored generator, and the run's parameters are applied
    (a fork's changed ones). An LLM brain appends to the run's ledger; the ledger's records
    after the checkpoint (under way when the run stopped) answer the same requests again
    without calling the model, and so do a fork's source's. A finished run's outputs are
    written again.

    Args:
        run_dir: The run directory.
        model: The model the caller expects (its name: ``mlm urban resume`` refuses an
            evacuation run), or None for any.
        brain_options: Brain options (``api_base``, ``api_key``, ...); never written.
        progress: Show a progress bar.
        stop_after: As in :func:`start_run`.
        **options: The model's run options.

    Returns:
        The run.

    Raises:
        RunDirectoryError: If ``run_dir`` is not a run directory (of ``model``), or has no
            usable checkpoint or memory snapshot.
    """
    run, model_cls, parameters = open_run(run_dir, model=model)
    latest = run.latest_checkpoint(skip_corrupt=True)
    if latest is None:
        raise RunDirectoryError(
            f"{run.path}: no usable checkpoint to resume from (see {run.checkpoints_dir})"
        )
    options = model_cls.run_options_class.from_values(options).values()
    number, state = latest
    restored: MobilityModel = state["model"]
    parameters, options_given = model_cls.prepare(
        parameters, BrainOptions(**(brain_options or {})), str(run.config_path)
    )
    store = None
    if run.memory_snapshot_path(number).is_dir():
        store = restore_memory(run, number, restored.memory_embedding())
    replay = None
    if (
        isinstance(parameters.brain, str)
        and parse_brain_setting(parameters.brain)[0] == "llm"
    ):
        replay = replay_after(run, model_cls.ledger_after(number))
    try:
        restored.apply_parameters(parameters)
        restored.restore(
            run,
            number,
            store,
            _brain_options(run, parameters, options_given, replay),
            **options,
        )
    except BaseException:
        if store is not None:
            store.close()
        raise
    logger.info("resuming %s from its checkpoint %d", run.path, number)
    return _run_to_end(run, restored, progress=progress, stop_after=stop_after)


# ---------------------------------------------------------------------------- fork
def fork_run(
    source: str | Path,
    target: str | Path,
    *,
    at: int,
    changes: Mapping[str, Any] | None = None,
    model: str | None = None,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    progress: bool = True,
    **options: Any,
) -> RunResult:
    """Start a new run from checkpoint ``at`` of another, with changed parameters.

    The fork holds the source's day tables up to ``at`` and its checkpoint (and memory) then;
    it runs on with the changed parameters (only the model's forkable ones). An LLM brain
    answers the requests its source already asked identically from the source's ledger, so
    re-running what nothing changed makes no calls.

    Args:
        source: The run to fork.
        target: The new run directory.
        at: The number of the source checkpoint to start from (0: the start).
        changes: Parameter values to change (names or flags).
        model: The model the caller expects, or None for any.
        overwrite: Replace an earlier run in ``target``.
        brain_options: Brain options.
        progress: Show a progress bar.
        **options: The model's run options.

    Returns:
        The fork's run.

    Raises:
        ParameterError: For a change of a parameter a fork cannot change, or a bad value.
        RunDirectoryError: If ``source`` is not a run or ``target`` is taken.
        CheckpointError: If the source has no good checkpoint ``at``.
    """
    src, model_cls, parameters = open_run(source, model=model)
    changed = parameters.replace(**dict(changes or {}))
    differences = parameters.changed(changed)
    refused = sorted(set(differences) - set(model_cls.parameters_class.forkable()))
    if refused:
        raise ParameterError(
            f"fork of {src.path}: {', '.join(refused)} cannot change in a fork; "
            f"forkable: {', '.join(model_cls.parameters_class.forkable())}"
        )
    model_cls.check_fork(changed, at)
    run_directory.fork(
        src,
        target,
        at=at,
        config=changed.to_config(),
        changes=differences,
        overwrite=overwrite,
    )
    return resume_run(target, brain_options=brain_options, progress=progress, **options)


# ---------------------------------------------------------------------------- stepping
def _run_to_end(
    run: RunDirectory,
    model: MobilityModel,
    *,
    progress: bool,
    stop_after: int | None,
) -> RunResult:
    """Step ``model`` to its end with its checkpoints; write its outputs; close it."""
    try:
        done, total, unit = model.progress()
        with (
            model.long_run(),
            tqdm(
                total=total or None,
                initial=done,
                unit=unit,
                desc=f"{model.parameters.model_name} run",
                disable=not progress,
            ) as bar,
        ):
            while model.running:
                model.step()
                now = model.progress().done
                bar.update(now - bar.n)
                status = model.progress_status()
                if status:
                    bar.set_postfix(status, refresh=False)
                if model.checkpoint_due():
                    number = _checkpoint(run, model)
                    if (
                        stop_after is not None
                        and number >= stop_after
                        and model.running
                    ):
                        logger.info("%s: stopped after checkpoint %d", run.path, number)
                        return RunResult(run, model, finished=False, outputs=[])
        outputs = write_end(run, model)
    except KeyboardInterrupt:
        numbers = run.checkpoint_numbers()
        raise RunInterrupted(
            run,
            numbers[-1] if numbers else None,
            model.parameters.command or model.parameters.model_name,
        ) from None
    finally:
        model.close()
    return RunResult(run, model, finished=True, outputs=outputs)


def _checkpoint(run: RunDirectory, model: MobilityModel, *, start: bool = False) -> int:
    """Write the day's table parts, then the checkpoint (memory snapshot first); prune.

    The checkpoint of a run's start has no day behind it: no table parts.
    """
    number = model.checkpoint_number()
    if not start:
        for name, frame in model.period_tables().items():
            run.write_table(name, frame, day=number)
    state = model.checkpoint_state()
    if model.memory_store is not None:
        state["memory_snapshot"] = snapshot_memory(run, number, model.memory_store)
    run.write_checkpoint(number, state)
    if model.keep_checkpoints is not None:
        for old in run.checkpoint_numbers()[: -model.keep_checkpoints]:
            run.remove_checkpoint(old)
    return number


def write_end(run: RunDirectory, model: MobilityModel) -> list[Path]:
    """Write what a run writes at its end: whole-run tables, LLM summary, other outputs.

    Args:
        run: The run directory.
        model: The model, at its end (or wherever it stands: a live app saving its run).

    Returns:
        The files of :meth:`~.base_model.MobilityModel.write_outputs`.
    """
    for name, frame in model.final_tables().items():
        run.write_table(name, frame)
    if run.ledger_path.is_file():
        run.write_table(
            LLM_SUMMARY_TABLE, Ledger.summarize_file(run.ledger_path).reset_index()
        )
    outputs = model.write_outputs(run)
    logger.info("run written to %s", run.path)
    return outputs
