"""Urban runs for the tests, through the shared lifecycle."""

from __future__ import annotations

import json
from typing import Any

from mesa_llm_mobility.experiment.lifecycle import RunResult, start_run
from mesa_llm_mobility.urban.model import UrbanMobilityModel
from mesa_llm_mobility.urban.parameters import UrbanParameters
from mesa_llm_mobility.urban.run_files import run_summary


def run_urban(
    out, config: dict[str, Any] | None = None, progress: bool = False, **values: Any
) -> RunResult:
    """Run the urban model with these parameters (and lifecycle options) into ``out``."""
    values = {**(config or {}), **values}
    names = set(UrbanParameters.names())
    parameters = UrbanParameters(**{k: v for k, v in values.items() if k in names})
    options = {k: v for k, v in values.items() if k not in names}
    return start_run(UrbanMobilityModel, parameters, out, progress=progress, **options)


def summary(result: RunResult) -> dict[str, Any]:
    """The run's ``summary.json``."""
    return json.loads((result.run.path / "summary.json").read_text())


def kpis(result: RunResult) -> dict[str, Any]:
    """The run's summary as the model gives it (LLM use as a table, from the whole ledger)."""
    return run_summary(result.run, result.model)
