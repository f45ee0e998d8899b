"""What an evacuation run writes into its run directory, and its summary for the command line.

An evacuation runs once (its checkpoints count steps), so the shared run lifecycle
(:mod:`~mesa_llm_mobility.experiment.lifecycle`) writes whole-run tables only, through the
model's run contract::

    <run>/
        config.json            the run's parameters (EvacuationParameters)
        metadata.json          versions, the model; extra: brain, pedestrians, steps, end time
        ledger.jsonl           every LLM exchange (LLM brains only)
        tables/<name>.parquet  positions, decisions, events, pedestrians, outcomes, model,
                               memory_versions, memory_operations,
                               opening_observations, exit_information; llm_summary (the
                               ledger's summary, LLM brains only)
        knowledge_graph.graphml  the run's knowledge graph (memory, decisions, routes,
                               affect, observations)
        memory/                the Chroma store: each pedestrian's memory revisions
                               (the ``memory_stream`` run option, on in ``mlm evac run``)
        checkpoints/checkpoint_<s>.pkl  the model after s steps, at the start, every
                               ``checkpoint_every_s`` simulated seconds (``mlm evac run``: 60)
                               and at the end (the latest two are kept), with its memory
        plots/trajectories.png

Positions are grid cells (``x``, ``y``; one cell is the plaza's ``cell_size_m``, 0.4 m for the
reference plaza) and times are seconds since the emergency started (``time_s``) or steps of
1/3 s (``step``); see ``docs/run_directory.md`` for every table's columns and units.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mesa_llm_mobility.evacuation.knowledge_graph import (
    knowledge_graph,
    memory_links_per_decision,
    memory_operations,
    operation_counts,
    write_graphml,
)
from mesa_llm_mobility.evacuation.outputs import plot_trajectories, summary_table
from mesa_llm_mobility.experiment.run_directory import RunDirectory

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.model import EvacuationModel

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

PLOT_FILE = "trajectories.png"

MEMORY_EMBEDDING = "hash"
"""The memory streams' embedding (offline; the runs store revisions, they never search them)."""

GRAPH_FILE = "knowledge_graph.graphml"
"""The run's knowledge graph (:func:`~.knowledge_graph.knowledge_graph`), as GraphML."""


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


def write_outputs(model: EvacuationModel, run: RunDirectory) -> list[Path]:
    """The knowledge graph, the run's metadata and the trajectory plot, from its tables.

    Args:
        model: The model, run to its end.
        run: The run directory, its tables written.

    Returns:
        The trajectory plot (``plots/trajectories.png``).
    """
    tables = {
        name: run.read_table(name)
        for name in ("memory_versions", "decisions", "events")
    }
    graph = knowledge_graph(
        tables["memory_versions"], tables["decisions"], tables["events"]
    )
    write_graphml(graph, run.path / GRAPH_FILE)
    extra: dict[str, Any] = {
        "brain": model.brain.name,
        "pedestrians": model.n_pedestrians,
        "steps": model.tick,
        "ended_at_s": round(model.time_s, 4),
        "memory_operations": operation_counts(run.read_table("memory_operations")),
        "memory_links_per_decision": round(memory_links_per_decision(graph), 3),
    }
    run.update_metadata(extra)
    run.plots_dir.mkdir(parents=True, exist_ok=True)
    return [plot_trajectories(model, run.plots_dir / PLOT_FILE)]


def summary_lines(model: EvacuationModel, run: RunDirectory) -> list[str]:
    """Where and when the run ended, and the outcome table (for the command line)."""
    table = summary_table(model.outcomes_frame(), model.pedestrians_frame())
    head = (
        f"plaza {model.plaza.name}, composition {json.dumps(model.composition)}, block "
        f"{model.block}, brain {model.brain.name}, seed {model.seed}: ended at "
        f"{model.time_s:.1f} s ({model.tick} steps)"
    )
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        return [head, table.to_string()]
