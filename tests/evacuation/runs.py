"""Evacuation runs for the tests, through the shared lifecycle."""

from __future__ import annotations

from typing import Any

from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.experiment.lifecycle import RunResult, start_run


def run_evacuation(
    out, config: dict[str, Any] | None = None, progress: bool = False, **values: Any
) -> RunResult:
    """Run the evacuation model with these parameters (and run options) into ``out``.

    Checkpoints at the start and the end only, unless ``checkpoint_every_s`` says otherwise.
    """
    values = {"checkpoint_every_s": None, **(config or {}), **values}
    names = set(EvacuationParameters.names())
    parameters = EvacuationParameters(**{k: v for k, v in values.items() if k in names})
    options = {k: v for k, v in values.items() if k not in names}
    return start_run(EvacuationModel, parameters, out, progress=progress, **options)
