"""Run one evacuation into a run directory: config, metadata, ledger, tables and the plot.

An evacuation runs once (its time unit is the run, not the day), so its run directory
(:class:`~mesa_llm_mobility.experiment.run_directory.RunDirectory`) holds whole-run tables
only::

    <run>/
        config.json            the resolved configuration (:func:`evacuation_config`)
        metadata.json          versions, creation time; extra: brain, pedestrians, steps, end time
        ledger.jsonl           every LLM exchange (LLM brains only)
        tables/<name>.parquet  positions, decisions, events, pedestrians, outcomes, model,
                               memory_versions, memory_operations,
                               opening_observations, exit_information; llm_summary (the
                               ledger's summary, LLM brains only)
        knowledge_graph.graphml  the run's knowledge graph (memory, decisions, routes,
                               affect, observations)
        memory/                the Chroma store: each pedestrian's memory revisions
                               (``memory_stream=True``, as ``mlm evac run`` does)
        checkpoints/step_<s>.pkl  the model after s steps, every ``checkpoint_every_s``
                               simulated seconds (``mlm evac run``: 60) and at the end;
                               checkpoints/step_<s>_memory/ the memory store then
        plots/trajectories.png

:func:`resume_evacuation` (``mlm evac resume``) continues an interrupted run from its latest
good checkpoint; the finished run is the same as one never interrupted. An LLM brain answers the
requests of the steps under way when the run stopped from the ledger, without calling the model.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pandas as pd
from tqdm.auto import tqdm

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.evacuation.knowledge_graph import (
    knowledge_graph,
    memory_links_per_decision,
    memory_operations,
    operation_counts,
    write_graphml,
)
from mesa_llm_mobility.evacuation.layers import GateSchedule
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.outputs import plot_trajectories
from mesa_llm_mobility.evacuation.timing import STEPS_PER_SECOND
from mesa_llm_mobility.experiment.checkpoints import (
    record_tag,
    replay_after,
    restore_memory,
    snapshot_dir,
    snapshot_memory,
)
from mesa_llm_mobility.experiment.collector import LongRun
from mesa_llm_mobility.experiment.run_directory import RunDirectory, RunDirectoryError
from mesa_llm_mobility.memory.store import MemoryStore

logger = logging.getLogger(__name__)

TABLES = (
    "positions",
    "decisions",
    "events",
    "pedestrians",
    "outcomes",
    "model",
    "memory_versions",
    "memory_operations",
    "opening_observations",
    "exit_information",
)
"""The tables an evacuation run writes (``tables/<name>.parquet``)."""

LLM_SUMMARY_TABLE = "llm_summary"
"""The ledger's summary (one row per decision kind and ``all``), for LLM brains."""

PLOT_FILE = "trajectories.png"

KEEP_CHECKPOINTS = 2
"""Checkpoints a run keeps: the latest, and the one before should the latest be torn (one
holds the whole model: about 0.6 GB for 10,000 pedestrians)."""

MEMORY_EMBEDDING = "hash"
"""The memory streams' embedding (offline; the runs store revisions, they never search them)."""

GRAPH_FILE = "knowledge_graph.graphml"
"""The run's knowledge graph (:func:`~.knowledge_graph.knowledge_graph`), as GraphML."""


class GateTimes(TypedDict):
    """When the gates start closing and are closed (seconds)."""

    closing_at_s: float
    closed_at_s: float


class EvacuationConfig(TypedDict):
    """The resolved configuration of one evacuation run (``config.json``)."""

    plaza: str | None
    composition: str | dict[str, int]
    block: int | None
    seed: int | None
    brain: str
    time_limit_s: float
    gate_schedule: GateTimes
    rejection: str


@dataclass(frozen=True)
class EvacuationRun:
    """What :func:`run_evacuation` returns.

    Attributes:
        run: The run directory written.
        model: The finished (closed) model, its tables still readable.
        plot: The trajectory plot (``None`` for a run stopped by ``stop_after_step``).
    """

    run: RunDirectory
    model: EvacuationModel
    plot: Path | None

    @property
    def finished(self) -> bool:
        """Whether the run reached its end (and its tables and plot are written)."""
        return self.plot is not None


def evacuation_config(
    *,
    plaza: str | Path | None = None,
    composition: str | Mapping[str, int] = "A",
    block: int | None = None,
    seed: int | None = 0,
    brain: str = "rules",
    time_limit_s: float = 240.0,
    gate_schedule: GateSchedule | None = None,
    rejection: str = "paper",
) -> EvacuationConfig:
    """The resolved configuration of one evacuation run (what ``config.json`` holds).

    Args:
        plaza: Plaza map file, or ``None`` for the shipped reference plaza.
        composition: ``"A"``-``"H"`` or archetype counts.
        block: Matched block 1-8, or ``None``.
        seed: Random seed.
        brain: ``"rules"`` or ``"llm:<litellm model>"``.
        time_limit_s: Run length limit in seconds.
        gate_schedule: When the gates close (default: the paper's schedule).
        rejection: ``"paper"`` or ``"repair"`` (see :class:`EvacuationModel`).

    Returns:
        The configuration, JSON-ready.
    """
    schedule = gate_schedule or GateSchedule()
    return {
        "plaza": None if plaza is None else str(plaza),
        "composition": composition
        if isinstance(composition, str)
        else dict(composition),
        "block": block,
        "seed": seed,
        "brain": brain,
        "time_limit_s": float(time_limit_s),
        "gate_schedule": {
            "closing_at_s": schedule.closing_at_s,
            "closed_at_s": schedule.closed_at_s,
        },
        "rejection": rejection,
    }


def run_evacuation(
    out: str | Path,
    config: EvacuationConfig,
    *,
    overwrite: bool = False,
    brain_options: BrainOptions | None = None,
    memory_stream: bool = False,
    route_workers: int = 1,
    checkpoint_every_s: float | None = None,
    stop_after_step: int | None = None,
    progress: bool = False,
) -> EvacuationRun:
    """Run one evacuation to its end and write its run directory ``out``.

    Args:
        out: Run directory to create.
        config: As built by :func:`evacuation_config`.
        overwrite: Replace an earlier run in ``out``.
        brain_options: Extra :func:`~mesa_llm_mobility.cognition.make_brain` options for LLM
            brains (``api_base``, ``timeout_s``, ...); never written to the config. An LLM
            brain's ledger is the run's ``ledger.jsonl``.
        memory_stream: Also store every memory revision in the pedestrians' Chroma memory
            streams under ``memory/`` (offline hash embedding; about 2.5 s more for a run of
            11 pedestrians, so sweeps leave it off); the ``memory_versions`` table is written
            either way. ``mlm evac run`` turns it on.
        route_workers: Processes that plan the routes (see :class:`EvacuationModel`); the
            results do not depend on it, so it is not part of the configuration.
        checkpoint_every_s: Write a checkpoint at the start, every this many simulated seconds
            and at the end, so that :func:`resume_evacuation` can continue an interrupted run
            (``None``: none; ``mlm evac run`` writes one a minute). A checkpoint holds the whole
            model: about 8 MB for the reference plaza's 11 pedestrians, 0.6 GB for 10,000
            (the latest two are kept).
        stop_after_step: Stop after the checkpoint of this step, as an interrupted run would
            (continue with :func:`resume_evacuation`); needs ``checkpoint_every_s``.
        progress: Show a progress bar (steps, with the pedestrians still in the plaza,
            evacuated and reached); ``mlm evac run`` does.

    Returns:
        The run directory, the finished model and the plot.

    Raises:
        RunDirectoryError: When ``out`` holds another run and ``overwrite`` is false.
        ValueError: For invalid model parameters (from the model), or a
            ``checkpoint_every_s`` that is not positive; ``out`` is then removed.
    """
    every = _checkpoint_steps(checkpoint_every_s, stop_after_step)
    run = RunDirectory.create(
        out, dict(config), overwrite=overwrite, checkpoint_unit="step"
    )
    options = dict(brain_options or {})
    if parse_brain_setting(str(config["brain"]))[0] == "llm":
        options.setdefault("ledger", run.ledger_path)
    schedule = config["gate_schedule"]
    store = None
    try:
        if memory_stream:
            store = MemoryStore.persistent(run.memory_dir, embedding=MEMORY_EMBEDDING)
            store.defer_writes = True
        model = EvacuationModel(
            plaza=config["plaza"],
            composition=config["composition"],
            block=config["block"],
            brain=config["brain"],
            brain_options=options,
            rng=config["seed"],
            time_limit_s=config["time_limit_s"],
            gate_schedule=GateSchedule(
                schedule["closing_at_s"], schedule["closed_at_s"]
            ),
            memory_store=store,
            rejection=config.get("rejection", "paper"),
            route_workers=route_workers,
        )
    except BaseException:
        # a refused configuration leaves no run behind (it holds only config and metadata)
        if store is not None:
            store.close()
        shutil.rmtree(run.path, ignore_errors=True)
        raise
    return _run_to_end(run, model, every, stop_after_step, progress)


def resume_evacuation(
    run_dir: str | Path,
    *,
    brain_options: BrainOptions | None = None,
    route_workers: int = 1,
    stop_after_step: int | None = None,
    progress: bool = False,
) -> EvacuationRun:
    """Continue an evacuation from its latest good checkpoint to its end.

    The model is unpickled from the checkpoint (a corrupt or truncated latest one is skipped
    with a warning), its memory store is replaced by the checkpoint's snapshot, and a new brain
    is built from the run's config on the model's restored generator. An LLM brain appends to
    the run's ledger; the ledger's records of the steps after the checkpoint (under way when the
    run stopped) are taken out of it and answer the same requests again without calling the
    model. Checkpoints go on at the run's interval; the tables and the plot are written as
    :func:`run_evacuation` writes them, the same as an uninterrupted run's. A finished run's
    outputs are written again from its last checkpoint.

    Args:
        run_dir: The run directory (written by :func:`run_evacuation` with checkpoints).
        brain_options: Extra brain options (``api_base``, ``api_key``, ...); never written.
        route_workers: Processes that plan the routes from now on (the run does not depend
            on it).
        stop_after_step: As in :func:`run_evacuation`.
        progress: As in :func:`run_evacuation`.

    Returns:
        The run directory, the finished model and the plot.

    Raises:
        RunDirectoryError: If ``run_dir`` is not an evacuation run directory, has no usable
            checkpoint or its checkpoint's memory snapshot is missing.
    """
    run = RunDirectory.open(run_dir)
    if run.checkpoint_unit != "step":
        raise RunDirectoryError(
            f"{run.path}: not an evacuation run (its checkpoints count "
            f"{run.checkpoint_unit}s; resume it with its own model's command)"
        )
    latest = run.latest_checkpoint(skip_corrupt=True)
    if latest is None:
        raise RunDirectoryError(
            f"{run.path}: no usable checkpoint to resume from (see {run.checkpoints_dir}; "
            "runs write them with checkpoint_every_s, mlm evac run does by default)"
        )
    step, state = latest
    model: EvacuationModel = state["model"]
    config = run.config
    options = dict(brain_options or {})
    if parse_brain_setting(str(config["brain"]))[0] == "llm":
        options.setdefault("ledger", run.ledger_path)
        options.setdefault(
            "replay",
            replay_after(run, lambda record: record_tag(record, "step") >= step),
        )
    store = None
    if state.get("memory_snapshot") is not None:
        store = restore_memory(run, step, state, MEMORY_EMBEDDING)
    try:
        model.attach(config["brain"], store, options, route_workers)
    except BaseException:
        if store is not None:
            store.close()
        raise
    logger.info("resuming %s after step %d", run.path, step)
    return _run_to_end(run, model, int(state["every_steps"]), stop_after_step, progress)


def _checkpoint_steps(every_s: float | None, stop_after_step: int | None) -> int:
    """Steps between checkpoints (0: none), checked."""
    if every_s is None:
        if stop_after_step is not None:
            raise ValueError("stop_after_step needs checkpoint_every_s")
        return 0
    steps = round(every_s * STEPS_PER_SECOND)
    if not every_s > 0 or steps < 1:
        raise ValueError(
            f"checkpoint_every_s must be at least one step (1/{STEPS_PER_SECOND} s), "
            f"got {every_s!r}"
        )
    return steps


def _run_to_end(
    run: RunDirectory,
    model: EvacuationModel,
    every: int,
    stop_after_step: int | None,
    progress: bool,
) -> EvacuationRun:
    """Step ``model`` to its end with a checkpoint every ``every`` steps; write the outputs.

    The model is closed when this returns or raises (its memory store too).
    """
    store = model.memory_store
    try:
        with (
            model,
            LongRun(),
            tqdm(
                total=model.limit_steps,
                initial=model.tick,
                unit="step",
                desc="evacuation",
                disable=not progress,
            ) as bar,
        ):
            if every and not run.checkpoint_days():
                _checkpoint(run, model, every)
            while model.running:
                model.step()
                bar.update()
                if model.tick % STEPS_PER_SECOND == 0:
                    bar.set_postfix(
                        active=model.active_count,
                        evacuated=model.evacuated_count,
                        reached=model.reached_count,
                        refresh=False,
                    )
                if every and (model.tick % every == 0 or not model.running):
                    _checkpoint(run, model, every)
                    stop = stop_after_step is not None and model.tick >= stop_after_step
                    if stop and model.running:
                        logger.info("%s: stopped after step %d", run.path, model.tick)
                        return EvacuationRun(run, model, None)
    finally:
        if store is not None:
            store.close()
    plot = write_run(model, run)
    return EvacuationRun(run, model, plot)


def _checkpoint(run: RunDirectory, model: EvacuationModel, every: int) -> None:
    """Checkpoint the model after its steps so far: memory snapshot first, then the model.

    Only the latest :data:`KEEP_CHECKPOINTS` are kept (with their memory snapshots).
    """
    state: dict[str, Any] = {"model": model, "step": model.tick, "every_steps": every}
    state["memory_snapshot"] = (
        snapshot_memory(run, model.tick, model.memory_store)
        if model.memory_store is not None
        else None
    )
    run.write_checkpoint(model.tick, state)
    for step in run.checkpoint_days()[:-KEEP_CHECKPOINTS]:
        run.remove_checkpoint(step)
        shutil.rmtree(snapshot_dir(run, step), ignore_errors=True)


def write_run(model: EvacuationModel, run: RunDirectory) -> Path:
    """Write a finished model's tables, metadata and trajectory plot into ``run``.

    Args:
        model: The model, run to its end.
        run: The run directory (created with the run's config).

    Returns:
        The trajectory plot (``plots/trajectories.png``).
    """
    tables = run_tables(model)
    for name, table in tables.items():
        run.write_table(name, table)
    graph = knowledge_graph(
        tables["memory_versions"], tables["decisions"], tables["events"]
    )
    write_graphml(graph, run.path / GRAPH_FILE)
    extra: dict[str, Any] = {
        "brain": model.brain.name,
        "pedestrians": model.n_pedestrians,
        "steps": model.tick,
        "ended_at_s": round(model.time_s, 4),
        "memory_operations": operation_counts(tables["memory_operations"]),
        "memory_links_per_decision": round(memory_links_per_decision(graph), 3),
    }
    run.update_metadata(extra)
    if run.ledger_path.is_file():
        run.write_table(
            LLM_SUMMARY_TABLE, Ledger.summarize_file(run.ledger_path).reset_index()
        )
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    plot = plot_trajectories(model, run.plots_dir / PLOT_FILE)
    logger.info("run written to %s", run.path)
    return plot


def run_tables(model: EvacuationModel) -> dict[str, pd.DataFrame]:
    """The tables of a run, by name (see :data:`TABLES`).

    Args:
        model: The model.

    Returns:
        ``positions``, ``decisions``, ``events``, ``pedestrians``, ``outcomes``, ``model``
        (the per-step model reporters, with a ``step`` column), ``memory_versions``,
        ``memory_operations`` (:func:`~.knowledge_graph.memory_operations`),
        ``opening_observations`` and ``exit_information``
        (:mod:`~mesa_llm_mobility.evacuation.exit_knowledge`).
    """
    return {
        "positions": model.positions_frame(),
        "decisions": model.decisions_frame(),
        "events": model.events_frame(),
        "pedestrians": model.pedestrians_frame(),
        "outcomes": model.outcomes_frame(),
        "memory_versions": model.memory_versions_frame(),
        "memory_operations": memory_operations(model.memory_versions_frame()),
        "model": model.datacollector.get_model_vars_dataframe()
        .reset_index(drop=True)
        .rename_axis("step")
        .reset_index(),
        "opening_observations": model.opening_observations_frame(),
        "exit_information": model.exit_information_frame(),
    }
