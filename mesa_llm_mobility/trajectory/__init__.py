"""Trajectory generation (TrajGenAgent): stay points, a synthetic city, generation, metrics.

* data: the stay-point schema and validating loaders (:func:`read_staypoints`,
  :func:`read_numosim`, :func:`read_history`), the history / held-out split
  (:func:`split_history`) and a seeded synthetic city and population (:func:`synthesize`);
* generation: evidence profiles (:func:`build_evidence`), the orchestrator's
  ``ActivityChain`` decision kind, the deterministic worker workflow and the duration kinds,
  run by :class:`TrajectoryModel` (one day per step) or :func:`generate`;
* metrics: :func:`evaluate`, the paper's seven distribution metrics.

The rule brain makes all of it run offline. Importing this package has no side effects.
"""

from __future__ import annotations

from mesa_llm_mobility.trajectory.activities import ACTIVITIES, ACTIVITY_CODES
from mesa_llm_mobility.trajectory.durations import (
    DAY_DURATIONS,
    VISIT_DURATION,
    DayDurations,
    DayDurationsContext,
    DurationPrior,
    VisitDuration,
    VisitDurationContext,
)
from mesa_llm_mobility.trajectory.evidence import (
    EvidenceBook,
    IndividualEvidence,
    build_evidence,
)
from mesa_llm_mobility.trajectory.metrics import METRICS, evaluate, jensen_shannon
from mesa_llm_mobility.trajectory.model import (
    IndividualAgent,
    TrajectoryModel,
    generate,
)
from mesa_llm_mobility.trajectory.orchestrator import (
    ACTIVITY_CHAIN,
    ActivityChain,
    ChainContext,
)
from mesa_llm_mobility.trajectory.parameters import TrajectoryParameters
from mesa_llm_mobility.trajectory.staypoints import (
    STAY_COLUMNS,
    HistorySplit,
    StayPointError,
    read_history,
    read_numosim,
    read_staypoints,
    split_history,
    validate_staypoints,
    write_numosim,
)
from mesa_llm_mobility.trajectory.synth import SyntheticCity, synthesize
from mesa_llm_mobility.trajectory.workflow import INVALID_POI, WorkflowSettings

__all__ = [
    "ACTIVITIES",
    "ACTIVITY_CHAIN",
    "ACTIVITY_CODES",
    "DAY_DURATIONS",
    "INVALID_POI",
    "METRICS",
    "STAY_COLUMNS",
    "VISIT_DURATION",
    "ActivityChain",
    "ChainContext",
    "DayDurations",
    "DayDurationsContext",
    "DurationPrior",
    "EvidenceBook",
    "HistorySplit",
    "IndividualAgent",
    "IndividualEvidence",
    "StayPointError",
    "SyntheticCity",
    "TrajectoryModel",
    "TrajectoryParameters",
    "VisitDuration",
    "VisitDurationContext",
    "WorkflowSettings",
    "build_evidence",
    "evaluate",
    "generate",
    "jensen_shannon",
    "read_history",
    "read_numosim",
    "read_staypoints",
    "split_history",
    "synthesize",
    "validate_staypoints",
    "write_numosim",
]
