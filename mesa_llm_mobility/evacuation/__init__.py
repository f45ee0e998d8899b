"""Crowd evacuation under a moving threat in a plaza (the LLM plaza-evacuation paper's world).

The model (:class:`EvacuationModel`) runs offline with the rule brain; pedestrians decide through
the ``EvacuationMove`` decision kind, so any brain of :mod:`mesa_llm_mobility.cognition` can answer.
Importing this package has no side effects.
"""

from __future__ import annotations

from mesa_llm_mobility.evacuation.decisions import (
    EVACUATION_MOVE,
    EvacuationContext,
    EvacuationDecision,
)
from mesa_llm_mobility.evacuation.layers import GateSchedule
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.evacuation.outputs import outcome_measures, write_run
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

__all__ = [
    "ARCHETYPES",
    "COMPOSITIONS",
    "EVACUATION_MOVE",
    "EvacuationContext",
    "EvacuationDecision",
    "EvacuationModel",
    "GateSchedule",
    "Personality",
    "Plaza",
    "PlazaFormatError",
    "load_plaza",
    "outcome_measures",
    "parse_plaza",
    "write_run",
]
