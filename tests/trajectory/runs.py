"""Trajectory runs for the tests: the shared lifecycle, or sharded on an executor.

:func:`run_generation` writes the run directory ``<output stem>.run`` beside ``output`` and
the generated stay points to ``output``, as ``mlm traj run --out <stem>.run --stays <output>``
does, and returns what the tests read of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mesa_llm_mobility.experiment.lifecycle import start_run
from mesa_llm_mobility.experiment.run_directory import RunDirectory
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters
from mesa_llm_mobility.trajectory.shards import run_sharded_generation


@dataclass(frozen=True)
class Generation:
    """A finished generation as the tests read it."""

    run: RunDirectory
    model: TrajectoryModel | None
    output: Path
    shards: int | None

    @property
    def trajectories(self) -> pd.DataFrame:
        return self.run.read_table("trajectories")

    @property
    def held_out(self) -> pd.DataFrame:
        if "held_out" in self.run.table_names():
            return self.run.read_table("held_out")
        return pd.DataFrame()

    @property
    def workflow_success_rate(self) -> float:
        return self.run.metadata["extra"]["workflow_success_rate"]


def generation_config(history, **values: Any) -> dict[str, Any]:
    """The parameters of a run from ``history``, as ``config.json`` holds them."""
    return TrajectoryParameters(history=str(history), **values).to_config()


def run_generation(
    output,
    config: dict[str, Any],
    *,
    executor: str | None = None,
    shards: int | None = None,
    workers: int | None = None,
    overwrite: bool = False,
    brain_options: dict[str, Any] | None = None,
) -> Generation:
    """Generate into ``<output stem>.run`` and ``output``, sharded when asked."""
    output = Path(output)
    run_dir = output.with_name(f"{output.stem}.run")
    parameters = TrajectoryParameters(**config)
    if executor is None and shards is None:
        result = start_run(
            TrajectoryModel,
            parameters,
            run_dir,
            overwrite=overwrite,
            brain_options=brain_options,
            progress=False,
            stays=str(output),
        )
        return Generation(result.run, result.model, output, None)
    sharded = run_sharded_generation(
        parameters,
        run_dir,
        overwrite=overwrite,
        brain_options=brain_options,
        executor=executor or "serial",
        workers=workers,
        shards=shards,
        stays=output,
    )
    return Generation(sharded.run, None, output, sharded.shards)
