"""Experiment infrastructure shared by every model: parameters, runs, sweeps.

The public names, imported from their module on first use (``import
mesa_llm_mobility.experiment`` stays light):

- :class:`~.parameters.Parameters`, :func:`~.parameters.parameter`,
  :class:`~.parameters.ParameterError`: declared model parameters.
- :func:`~.lifecycle.start_run`, :func:`~.lifecycle.resume_run`, :func:`~.lifecycle.fork_run`,
  :func:`~.lifecycle.open_run`, :class:`~.lifecycle.RunResult`,
  :class:`~.lifecycle.RunInterrupted`: one run lifecycle for every model.
- :func:`~.sweeps.sweep`: a parameter grid x seeds of any model, in ``mesa.batch_run``'s shape.
- :class:`~.run_directory.RunDirectory`, :class:`~.run_directory.RunDirectoryError`: what a
  run leaves on disk.
- :class:`~.base_model.MobilityModel`: the base of every model and its run contract.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesa_llm_mobility.experiment.base_model import MobilityModel
    from mesa_llm_mobility.experiment.lifecycle import (
        RunInterrupted,
        RunResult,
        fork_run,
        open_run,
        resume_run,
        start_run,
    )
    from mesa_llm_mobility.experiment.parameters import (
        ParameterError,
        Parameters,
        parameter,
    )
    from mesa_llm_mobility.experiment.run_directory import (
        RunDirectory,
        RunDirectoryError,
    )
    from mesa_llm_mobility.experiment.sweeps import sweep

_EXPORTS = {
    "MobilityModel": "base_model",
    "ParameterError": "parameters",
    "Parameters": "parameters",
    "RunDirectory": "run_directory",
    "RunDirectoryError": "run_directory",
    "RunInterrupted": "lifecycle",
    "RunResult": "lifecycle",
    "fork_run": "lifecycle",
    "open_run": "lifecycle",
    "parameter": "parameters",
    "resume_run": "lifecycle",
    "start_run": "lifecycle",
    "sweep": "sweeps",
}

__all__ = [
    "MobilityModel",
    "ParameterError",
    "Parameters",
    "RunDirectory",
    "RunDirectoryError",
    "RunInterrupted",
    "RunResult",
    "fork_run",
    "open_run",
    "parameter",
    "resume_run",
    "start_run",
    "sweep",
]


def __getattr__(name: str) -> Any:
    """The public names, imported from their module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
