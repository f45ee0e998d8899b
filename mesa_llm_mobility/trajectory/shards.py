"""Trajectory generation sharded by individuals, on the sweep's executors.

:func:`run_sharded_generation` splits the individuals of a history into shards (contiguous in
history order), generates each shard as its own :class:`~.model.TrajectoryModel` on an
:mod:`~mesa_llm_mobility.experiment.executors` executor (``"serial"``, ``"process"``,
``"ray"``), and merges the shards into the run directory an unsharded run writes
(:mod:`~.runner`). Every shard's model holds the whole history's evidence (so every peer pool is
the same) and generates only its individuals; each individual draws from their own stream
(:func:`~.model.individual_stream`), so the merged result is the unsharded one, whatever the
executor and the number of shards. The run directory is the one an unsharded run writes
(:mod:`~.run_files`, without checkpoints) and gains a ``shards/`` folder::

    <run>/
        config.json, metadata.json, ledger.jsonl, tables/   as unsharded (merged)
        shards/
            inputs.pickle      the checked history, its evidence, the hold-out and the plan
            plan.json          shards and individuals per shard
            shard-<k>/         one shard: tables/{trajectories,decisions,workflow}.parquet,
                               ledger.jsonl (LLM brains), then done.json (written last), or
                               error.txt (the traceback of a failed attempt)

Runs resume: the same call (same config, no ``overwrite``) again skips the shards whose
``done.json`` is written and runs the others; a failed shard is recorded, the others go on, and
the next call tries it again, its LLM answers replayed from the failed attempt's ledger (a
replayed fallback draws nothing from the individual's stream, so their later draws can differ
from an uninterrupted run's; rule-brain shards are always the same). LLM
shards share their endpoint's budget as a sweep's runs do
(:func:`~mesa_llm_mobility.experiment.sweeps.share_endpoint_budget`).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import pickle
import traceback
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.experiment.executors import (
    Executor,
    ExecutorName,
    make_executor,
)
from mesa_llm_mobility.experiment.lifecycle import LLM_SUMMARY_TABLE
from mesa_llm_mobility.experiment.run_directory import LEDGER_FILE, RunDirectory
from mesa_llm_mobility.experiment.storage import write_atomic, write_json
from mesa_llm_mobility.experiment.sweeps import endpoint_of, share_endpoint_budget
from mesa_llm_mobility.trajectory.durations import VISIT_DURATION
from mesa_llm_mobility.trajectory.model import WORKFLOW_COLUMNS, TrajectoryModel
from mesa_llm_mobility.trajectory.orchestrator import ACTIVITY_CHAIN
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters
from mesa_llm_mobility.trajectory.run_files import (
    GenerationInputs,
    check_stays_file,
    record_generation,
)

logger = logging.getLogger(__name__)

SHARDS_DIR = "shards"
INPUTS_FILE = "inputs.pickle"
PLAN_FILE = "plan.json"
DONE_FILE = "done.json"
ERROR_FILE = "error.txt"
RETRY_LEDGER_FILE = "ledger.failed.jsonl"
"""A failed attempt's ledger, replayed by the next attempt of its shard."""

SHARD_TABLES = ("trajectories", "decisions", "workflow")
SHARDS_PER_WORKER = 4
"""Default shards per worker: small enough shards that a failure or a resume loses little."""


class ShardsFailedError(RuntimeError):
    """Some shards of a sharded generation failed; the others are kept for the next call.

    Attributes:
        failures: Shard index -> ``"<Type>: <message>"``.
    """

    def __init__(self, run_dir: Path, failures: Mapping[int, str], total: int) -> None:
        self.failures = dict(failures)
        first = min(self.failures)
        super().__init__(
            f"{run_dir}: {len(self.failures)} of {total} shards failed (shard {first}: "
            f"{self.failures[first]}; traceback in "
            f"{shard_dir(run_dir, first) / ERROR_FILE}); run the same command again to "
            "retry them, the finished shards are kept"
        )


@dataclass(frozen=True)
class ShardInputs:
    """What every shard reads (``shards/inputs.pickle``): the checked inputs and the plan.

    Attributes:
        inputs: History, hold-out, dates, evidence and settings.
        shards: The individuals' ids of each shard, in history order.
    """

    inputs: GenerationInputs
    shards: list[list[Hashable]]


@dataclass(frozen=True)
class ShardTask:
    """One shard: plain, picklable data for an executor.

    Attributes:
        index: The shard's index.
        path: Its folder.
        inputs: The run's ``shards/inputs.pickle``.
        config: The run's parameters (``config.json``).
        brain_options: Brain options (the shard's share of the endpoint budget included).
    """

    index: int
    path: str
    inputs: str
    config: dict[str, Any]
    brain_options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ShardOutcome:
    """What one shard returned.

    Attributes:
        index: The shard's index.
        error: ``"<Type>: <message>"`` of a failed shard, else ``None``.
        executed: False when the shard was complete already.
    """

    index: int
    error: str | None = None
    executed: bool = True


def shard_dir(run_dir: str | Path, index: int) -> Path:
    """The folder of shard ``index`` of a run."""
    return Path(run_dir) / SHARDS_DIR / f"shard-{index:04d}"


def split_individuals(ids: list[Hashable], shards: int) -> list[list[Hashable]]:
    """Split ids into ``shards`` contiguous parts of nearly equal size (none empty).

    Raises:
        ValueError: If ``shards`` is below 1.
    """
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    count = max(1, min(shards, len(ids)))
    bounds = [part * len(ids) // count for part in range(count + 1)]
    return [ids[start:end] for start, end in itertools.pairwise(bounds)]


# ---------------------------------------------------------------------------- one shard
@functools.lru_cache(maxsize=1)
def _load_inputs(path: str, mtime_ns: int) -> ShardInputs:
    # one worker process runs many shards of one run: read the inputs once
    with open(path, "rb") as handle:
        return pickle.load(handle)  # noqa: S301 - written by this run (see the module doc)


def load_inputs(path: str | Path) -> ShardInputs:
    """The ``shards/inputs.pickle`` of a run (cached per process while unchanged)."""
    path = str(path)
    return _load_inputs(path, os.stat(path).st_mtime_ns)


def run_shard(task: ShardTask) -> ShardOutcome:
    """Generate one shard into its folder (an executor's function; module-level).

    Any exception is caught: its traceback goes to ``error.txt`` and its one-line form into
    the outcome. A complete shard is not run again.

    Args:
        task: The shard.

    Returns:
        Its outcome.
    """
    path = Path(task.path)
    if (path / DONE_FILE).is_file():
        return ShardOutcome(task.index, executed=False)
    try:
        done = _generate_shard(task, path)
    except Exception as error:
        path.mkdir(parents=True, exist_ok=True)
        (path / ERROR_FILE).write_text(traceback.format_exc(), encoding="utf-8")
        text = str(error).strip().splitlines()
        message = f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")
        logger.warning("shard %d failed: %s", task.index, message)
        return ShardOutcome(task.index, error=message)
    (path / ERROR_FILE).unlink(missing_ok=True)
    write_json(path / DONE_FILE, done)
    return ShardOutcome(task.index)


def _generate_shard(task: ShardTask, path: Path) -> dict[str, Any]:
    """Run the shard's model and write its tables; return what ``done.json`` holds."""
    shard = load_inputs(task.inputs)
    inputs = shard.inputs
    parameters = TrajectoryParameters.from_config(task.config, where=task.inputs)
    options = dict(task.brain_options)
    if parse_brain_setting(parameters.brain)[0] == "llm":
        ledger = path / LEDGER_FILE
        if ledger.is_file():  # a failed attempt: replay what it was answered
            ledger.replace(path / RETRY_LEDGER_FILE)
        if (path / RETRY_LEDGER_FILE).is_file():
            # the shard's own records: their HTTP calls stay counted in its summary
            options["replay"] = ReplayIndex(
                Ledger.read(path / RETRY_LEDGER_FILE), own_run=True
            )
        options["ledger"] = ledger
    run = RunDirectory(path)
    with TrajectoryModel(
        parameters.replace(history=inputs.history, hold_out=0),
        dates=inputs.dates,
        settings=inputs.settings,
        evidence=inputs.book,
        brain_options=BrainOptions(**options),
        individuals=shard.shards[task.index],
    ) as model:
        model.run()
        brain = model.brain.name
    run.write_table("trajectories", model.trajectories_frame())
    run.write_table("decisions", model.decisions_frame())
    run.write_table("workflow", model.workflow_frame())
    return {
        "shard": task.index,
        "individuals": len(model.individuals),
        "brain": brain,
        "dates": [date.date().isoformat() for date in model.dates],
    }


def lost_shard(task: ShardTask, message: str) -> ShardOutcome:
    """The outcome of a shard whose worker died under it: recorded as failed."""
    path = Path(task.path)
    path.mkdir(parents=True, exist_ok=True)
    (path / ERROR_FILE).write_text(message + "\n", encoding="utf-8")
    return ShardOutcome(task.index, error=f"WorkerLostError: {message}")


# ---------------------------------------------------------------------------- merging
def merge_shards(
    run_dir: str | Path, shards: list[list[Hashable]]
) -> dict[str, pd.DataFrame]:
    """The tables of an unsharded run, from the complete shards of a run.

    ``trajectories`` are sorted by individual and start as the model sorts them;
    ``decisions`` are put in the order one model applies them (day, then the day's batches:
    activity chains, then durations by visit, then history order); ``workflow`` counts are
    summed per day.

    Args:
        run_dir: The run directory.
        shards: The plan (ids per shard, in history order).

    Returns:
        ``trajectories``, ``decisions`` and ``workflow``.
    """
    parts = {
        name: [
            RunDirectory(shard_dir(run_dir, index)).read_table(name)
            for index in range(len(shards))
        ]
        for name in SHARD_TABLES
    }
    trajectories = pd.concat(parts["trajectories"], ignore_index=True)
    trajectories = trajectories.sort_values(
        ["agent_id", "start"], kind="stable"
    ).reset_index(drop=True)
    position = {
        agent_id: rank for rank, agent_id in enumerate(itertools.chain(*shards))
    }
    decisions = pd.concat(parts["decisions"], ignore_index=True)
    batch = np.where(
        decisions["kind"] == ACTIVITY_CHAIN.name,
        -1,
        np.where(
            decisions["kind"] == VISIT_DURATION.name,
            pd.to_numeric(decisions["visit"]).fillna(0),
            0,
        ),
    )
    order = pd.DataFrame(
        {
            "day": decisions["day"].to_numpy(),
            "batch": batch,
            "position": decisions["agent_id"].map(position).to_numpy(),
        }
    ).sort_values(["day", "batch", "position"], kind="stable")
    decisions = decisions.iloc[order.index].reset_index(drop=True)
    workflow = pd.concat(parts["workflow"], ignore_index=True)
    workflow = (
        workflow.groupby(["day", "date"], sort=True)
        .sum()
        .reset_index()[list(WORKFLOW_COLUMNS)]
    )
    return {
        "trajectories": trajectories,
        "decisions": decisions,
        "workflow": workflow,
    }


def _merge_ledgers(run: RunDirectory, count: int) -> None:
    parts = [shard_dir(run.path, index) / LEDGER_FILE for index in range(count)]
    if any(part.is_file() for part in parts):
        write_atomic(
            run.ledger_path,
            b"".join(part.read_bytes() for part in parts if part.is_file()),
        )


# ---------------------------------------------------------------------------- the run
@dataclass(frozen=True)
class ShardedRun:
    """What :func:`run_sharded_generation` returns.

    Attributes:
        run: The run directory (merged).
        shards: How many shards it was split into.
        tables: The merged ``trajectories``, ``decisions`` and ``workflow``.
        outputs: The stay-point file, if one was asked for.
    """

    run: RunDirectory
    shards: int
    tables: dict[str, pd.DataFrame]
    outputs: list[Path]


def run_sharded_generation(
    parameters: TrajectoryParameters,
    run_dir: str | Path,
    *,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    progress: bool = False,
    executor: ExecutorName | Executor = "serial",
    workers: int | None = None,
    shards: int | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    stays: str | Path | None = None,
) -> ShardedRun:
    """Generate in shards of individuals on an executor; merge into one run directory.

    Example::

        from mesa_llm_mobility.trajectory import TrajectoryParameters
        from mesa_llm_mobility.trajectory.shards import run_sharded_generation

        if __name__ == "__main__":  # the process executor spawns workers
            parameters = TrajectoryParameters(history="data/", days=7, seed=0)
            run_sharded_generation(parameters, "runs/gen", executor="process", workers=2)

    Args:
        parameters: The run's parameters; needs a seed.
        run_dir: The run directory.
        overwrite: Replace an earlier run in ``run_dir`` (else a run of the same parameters
            there is resumed).
        brain_options: Extra brain options; ``max_concurrency`` is the endpoint's budget,
            shared by the shards running at once. The ledger is the run's: no ``ledger``.
        progress: Show a progress bar (shards).
        executor: ``"serial"``, ``"process"``, ``"ray"`` or an executor.
        workers: Worker processes (``"process"``).
        shards: Shards (default: :data:`SHARDS_PER_WORKER` per worker, at most one per
            individual); a resumed run keeps its plan.
        ray_address: Ray cluster address (``"ray"``; ``None``: a local instance).
        num_cpus: CPUs of a local Ray instance.
        stays: Also write the generated stay points to this ``.parquet`` or ``.csv`` file.

    Returns:
        The merged run.

    Raises:
        StayPointError: For a bad history (nothing is written).
        RunDirectoryError: When ``run_dir`` holds another run and ``overwrite`` is false.
        ValueError: Without a seed, with a ``ledger`` option, or with ``shards`` other than
            the plan of the run being resumed.
        ShardsFailedError: When shards failed; the finished ones are kept for the next call.
    """
    stays_file = None if stays is None else check_stays_file(stays)
    if parameters.seed is None:
        raise ValueError(
            "sharded generation needs a seed: every individual's stream is derived from it"
        )
    if brain_options and "ledger" in brain_options:
        raise ValueError(
            "sharded generation writes its ledger into the run directory; "
            "drop brain_options['ledger']"
        )
    config = parameters.to_config()
    path = Path(run_dir)
    inputs_path = path / SHARDS_DIR / INPUTS_FILE
    resumed = not overwrite and _same_run(path, config)
    fresh = None if resumed else TrajectoryModel.load_inputs(parameters)
    with make_executor(
        executor, max_workers=workers, address=ray_address, num_cpus=num_cpus
    ) as pool:
        if resumed:
            run = RunDirectory.open(path, model=parameters.model_name)
            plan = load_inputs(inputs_path)
            if shards is not None and shards != len(plan.shards):
                raise ValueError(
                    f"{path}: this run is split into {len(plan.shards)} shards; pass "
                    f"shards={len(plan.shards)} (--shards) to resume it or overwrite it"
                )
        else:
            assert fresh is not None
            ids = list(fresh.book.individuals)
            plan = ShardInputs(
                fresh,
                split_individuals(ids, shards or SHARDS_PER_WORKER * pool.workers),
            )
            run = RunDirectory.create(
                path,
                config,
                model=parameters.model_name,
                model_class=f"{TrajectoryModel.__module__}.{TrajectoryModel.__qualname__}",
                overwrite=overwrite,
            )
            write_atomic(inputs_path, pickle.dumps(plan))
            write_json(
                path / SHARDS_DIR / PLAN_FILE,
                {
                    "shards": len(plan.shards),
                    "individuals": list(map(len, plan.shards)),
                },
            )
        failures = _run_shards(
            pool, run, plan, config, inputs_path, brain_options, progress
        )
        executor_name = pool.name
    _load_inputs.cache_clear()
    if failures:
        raise ShardsFailedError(path, failures, len(plan.shards))
    tables = merge_shards(path, plan.shards)
    if not plan.inputs.held_out.empty:
        tables["held_out"] = plan.inputs.held_out.drop(
            columns="source_row", errors="ignore"
        )
    for name, table in tables.items():
        run.write_table(name, table)
    _merge_ledgers(run, len(plan.shards))
    if run.ledger_path.is_file():
        run.write_table(
            LLM_SUMMARY_TABLE, Ledger.summarize_file(run.ledger_path).reset_index()
        )
    done = json.loads((shard_dir(path, 0) / DONE_FILE).read_text(encoding="utf-8"))
    outputs = record_generation(
        run,
        tables,
        brain=done["brain"],
        individuals=len(plan.inputs.book.individuals),
        dates=done["dates"],
        stays_file=stays_file,
        extra={"shards": len(plan.shards), "executor": executor_name},
    )
    return ShardedRun(run, len(plan.shards), tables, outputs)


def _same_run(path: Path, config: Mapping[str, Any]) -> bool:
    """Whether ``path`` holds a sharded run of this very config (to resume)."""
    if not (path / SHARDS_DIR / INPUTS_FILE).is_file():
        return False
    try:
        stored = RunDirectory.open(path).config
    except ValueError:
        return False
    return stored == json.loads(json.dumps(dict(config)))


def _run_shards(
    pool: Executor,
    run: RunDirectory,
    plan: ShardInputs,
    config: Mapping[str, Any],
    inputs_path: Path,
    brain_options: BrainOptions | None,
    progress: bool,
) -> dict[int, str]:
    """Run the unfinished shards on the pool; return the failures (index -> message)."""
    tasks = [
        ShardTask(
            index, str(shard_dir(run.path, index)), str(inputs_path), dict(config)
        )
        for index in range(len(plan.shards))
    ]
    pending = [task for task in tasks if not (Path(task.path) / DONE_FILE).is_file()]
    options = dict(brain_options or {})
    if endpoint_of({"brain": config["brain"]}, options) is not None:
        options = dict(
            share_endpoint_budget(options, min(pool.workers, max(len(pending), 1)))
        )
    pending = [
        ShardTask(task.index, task.path, task.inputs, task.config, options)
        for task in pending
    ]
    failures: dict[int, str] = {}
    with tqdm(
        total=len(tasks),
        initial=len(tasks) - len(pending),
        unit="shard",
        desc="shards",
        disable=not progress,
    ) as bar:
        for outcome in pool.imap_unordered(run_shard, pending, on_lost=lost_shard):
            bar.update(1)
            if outcome.error:
                failures[outcome.index] = outcome.error
                bar.set_postfix(failed=len(failures))
    return failures
