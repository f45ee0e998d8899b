"""Crowd evacuation under a moving threat in a plaza (the LLM plaza-evacuation paper's world).

The model (:class:`EvacuationModel`) runs offline with the rule brain; pedestrians decide through
the ``EvacuationMove`` decision kind (:data:`EVACUATION_MOVE`), so any brain of
:mod:`mesa_llm_mobility.cognition` can answer. Its parameters are declared once
(:class:`EvacuationParameters`); :func:`mesa_llm_mobility.experiment.start_run` writes a run
directory (:mod:`.run_files`); :func:`outcome_measures` and :func:`summary_table` are
functions over the model's tables.
Importing this package has no side effects.
"""

from __future__ import annotations

from mesa_llm_mobility.evacuation.affect import StimulusIntensities
from mesa_llm_mobility.evacuation.decision_context import EvacuationContext
from mesa_llm_mobility.evacuation.decision_output import EvacuationDecision
from mesa_llm_mobility.evacuation.decisions import EVACUATION_MOVE
from mesa_llm_mobility.evacuation.layers import GateSchedule
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.outputs import (
    outcome_measures,
    plot_trajectories,
    summary_table,
)
from mesa_llm_mobility.evacuation.parameters import EvacuationParameters
from mesa_llm_mobility.evacuation.personality import (
    ARCHETYPES,
    COMPOSITIONS,
    Personality,
)
from mesa_llm_mobility.evacuation.plaza import (
    Plaza,
    PlazaFormatError,
    load_plaza,
    parse_plaza,
)
from mesa_llm_mobility.evacuation.run_files import run_tables

__all__ = [
    "ARCHETYPES",
    "COMPOSITIONS",
    "EVACUATION_MOVE",
    "EvacuationContext",
    "EvacuationDecision",
    "EvacuationModel",
    "EvacuationParameters",
    "GateSchedule",
    "Personality",
    "Plaza",
    "PlazaFormatError",
    "StimulusIntensities",
    "load_plaza",
    "outcome_measures",
    "parse_plaza",
    "plot_trajectories",
    "run_tables",
    "summary_table",
]
