"""The four generators of the benchmark, on equal terms: same history, same dates, same schema.

:func:`run_baseline` runs one of :data:`BASELINES` on a history for the given dates and returns
its stay points (:data:`~.staypoints.STAY_COLUMNS`, like :func:`~.model.generate`'s) with what
it cost:

* ``"markov"``: a first-order Markov chain over (activity, POI, time bin) states fitted on each
  individual's history (:class:`~.markov.MarkovChainBaseline`); no workflow, no brain;
* ``"historical"``: the evidence workflow (locations, travel times, rule durations) on a fixed
  historical chain: each day's activities are one of the individual's evidence-day chains,
  drawn at random (the ``HistoricalChain`` kind), with no orchestrator reasoning;
* ``"rules"``: the full workflow with the rule brain (what :func:`~.model.generate` does by
  default: the orchestrator's rule policy is the individual's weekday activity Markov model);
* ``"llm"``: the full workflow with an LLM brain (``brain="llm:<model>"``), every decision
  through the verifier, repaired or falling back to the rule policy.

The workflow baselines also keep a verification table: per decision, the rounds that failed at
each stage (``json``, ``schema``, ``domain``, ``transport``), from which the temperature study
counts the verifier's failures (:func:`~.benchmark.verifier_failure_rates`).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    DecisionResult,
    Message,
)
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, parse_brain_setting
from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.evidence import EvidenceBook, build_evidence
from mesa_llm_mobility.trajectory.markov import MarkovChainBaseline
from mesa_llm_mobility.trajectory.model import IndividualAgent, TrajectoryModel
from mesa_llm_mobility.trajectory.orchestrator import ActivityChain, validate_chain
from mesa_llm_mobility.trajectory.workflow import WorkflowSettings

BASELINES = ("markov", "historical", "rules", "llm")
"""The benchmark's generators, in the order of its tables."""

BASELINE_LABELS = {
    "markov": "Markov chain (activity, POI, hour)",
    "historical": "workflow, sampled historical chain",
    "rules": "full workflow, rule brain",
    "llm": "full workflow, LLM brain",
}
"""A readable name of each baseline, for tables and figures."""

STAGES = ("json", "schema", "domain", "transport")
"""Where an answer can fail: columns of the verification table (rounds failed there)."""

VERIFICATION_COLUMNS = ("day", "date", "agent_id", "kind", "outcome", *STAGES)
"""Columns of :attr:`BaselineRun.verification`: one row per decision."""


# ---------------------------------------------------------------------------- historical chain
@dataclass(frozen=True)
class HistoricalChainContext:
    """What the fixed-chain baseline knows: the individual's evidence-day chains.

    Attributes:
        agent_id: The individual.
        date: The target date (ISO).
        chains: The chains of the evidence days of the target's weekday, oldest first.
        feasible: Activities with candidate POIs (as the orchestrator's vocabulary).
        max_length: Most activities a chain may have.
        first_activity: No start anchor (the chain is an evidence day's own).
        last_activity: No end anchor.
    """

    agent_id: object
    date: str
    chains: tuple[tuple[str, ...], ...]
    feasible: tuple[str, ...]
    max_length: int
    first_activity: str | None = None
    last_activity: str | None = None

    @property
    def length_range(self) -> tuple[int, int]:
        """Any length up to the bound (the orchestrator's verifier reads it)."""
        return 1, self.max_length


def render_historical_chain_prompt(context: HistoricalChainContext) -> list[Message]:
    """The question, should an LLM be asked: repeat one of the listed chains."""
    listed = "\n".join(
        f"{index}. {list(chain)}" for index, chain in enumerate(context.chains, 1)
    )
    return [
        {"role": "system", "content": "You copy one activity chain from a list."},
        {
            "role": "user",
            "content": (
                f"Individual {context.agent_id}, date {context.date}. Historical chains:\n"
                f'{listed}\nAnswer with one of them as {{"activities": [...]}}.'
            ),
        },
    ]


def historical_chain_policy(
    context: HistoricalChainContext, rng: np.random.Generator
) -> ActivityChain:
    """One evidence-day chain drawn uniformly, cleaned to the orchestrator's constraints.

    Infeasible activities and adjacent repeats are dropped and the chain is cut to
    ``max_length`` (a real history may repeat an activity; the workflow's chains never do).
    """
    chain = context.chains[int(rng.integers(len(context.chains)))]
    cleaned: list[str] = []
    for name in chain:
        if name in context.feasible and (not cleaned or cleaned[-1] != name):
            cleaned.append(name)
    return ActivityChain(activities=cleaned[: context.max_length] or [chain[0]])


HISTORICAL_CHAIN: DecisionKind[HistoricalChainContext, ActivityChain] = DecisionKind(
    name="HistoricalChain",
    context_type=HistoricalChainContext,
    output_schema=ActivityChain,
    render_prompt=render_historical_chain_prompt,
    rule_policy=historical_chain_policy,
    validate=validate_chain,
)
"""The fixed-chain baseline's stage 1: a sampled historical chain instead of the orchestrator."""


class HistoricalChainAgent(IndividualAgent):
    """An individual whose day is one of its historical chains (no orchestrator)."""

    def chain_request(
        self, date: pd.Timestamp
    ) -> DecisionRequest[HistoricalChainContext, ActivityChain]:
        """The ``HistoricalChain`` request for a date (evidence days of its weekday)."""
        days = self.evidence.evidence_days(int(date.weekday()))
        context = HistoricalChainContext(
            agent_id=self.person_id,
            date=date.date().isoformat(),
            chains=tuple(
                tuple(ACTIVITIES[code] for code in self.evidence.chains[day])
                for day in days
            ),
            feasible=self.model.worker.feasible(self.person_id),
            max_length=self.model.settings.max_chain_length,
        )
        return DecisionRequest(
            HISTORICAL_CHAIN, self.person_id, context, rng=self.stream
        )


# ---------------------------------------------------------------------------- models
class VerifiedTrajectoryModel(TrajectoryModel):
    """The trajectory model, also keeping every decision's failed rounds by stage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._verification_rows: list[dict[str, Any]] = []

    def record_decision(
        self, result: DecisionResult[Any, Any], time: Mapping[str, Any], **columns: Any
    ) -> None:
        """Add the decision's row, and its failed rounds per stage to the verification table."""
        super().record_decision(result, time, **columns)
        stages = Counter(round_.stage for round_ in result.round_errors)
        self._verification_rows.append(
            {
                "day": time["day"],
                "date": time["date"],
                "agent_id": result.agent_id,
                "kind": result.kind,
                "outcome": str(result.outcome),
                **{stage: stages.get(stage, 0) for stage in STAGES},
            }
        )

    def verification_frame(self) -> pd.DataFrame:
        """One row per decision: day, date, agent, kind, outcome and failed rounds per stage."""
        return pd.DataFrame(self._verification_rows, columns=list(VERIFICATION_COLUMNS))


class HistoricalChainModel(VerifiedTrajectoryModel):
    """The evidence workflow on sampled historical chains (the ``"historical"`` baseline)."""

    agent_class: ClassVar[type[IndividualAgent]] = HistoricalChainAgent


# ---------------------------------------------------------------------------- running
@dataclass(frozen=True)
class BaselineRun:
    """One baseline's output and cost.

    Attributes:
        name: The baseline (one of :data:`BASELINES`).
        brain: Who decided (``"none"`` for the Markov chain).
        stays: The generated stay points.
        wall_s: Wall time, fitting (evidence or chains) included.
        cpu_s: CPU time of this process (user + system) over the same span.
        decisions: The model's decisions table (empty for the Markov chain).
        workflow: The model's workflow table (empty for the Markov chain).
        verification: Failed rounds per decision and stage (empty for the Markov chain).
        ledger_summary: The LLM ledger's summary per kind (``None`` without an LLM).
        workflow_success_rate: Share of kept visits grounded (``None`` for the Markov chain).
    """

    name: str
    brain: str
    stays: pd.DataFrame
    wall_s: float
    cpu_s: float
    decisions: pd.DataFrame
    workflow: pd.DataFrame
    verification: pd.DataFrame
    ledger_summary: pd.DataFrame | None
    workflow_success_rate: float | None


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def run_baseline(
    name: str,
    history: pd.DataFrame,
    dates: Sequence[str | pd.Timestamp],
    *,
    seed: int = 0,
    brain: str = "rules",
    brain_options: BrainOptions | None = None,
    settings: WorkflowSettings | None = None,
    evidence: EvidenceBook | None = None,
    bin_minutes: int = 60,
    progress: bool = False,
) -> BaselineRun:
    """Generate the given dates with one baseline.

    Args:
        name: One of :data:`BASELINES`.
        history: The evidence: a valid stay-point table.
        dates: The dates to generate (e.g. the held-out dates).
        seed: Random seed (the same for every baseline).
        brain: The LLM setting ``"llm:<model>"`` of the ``"llm"`` baseline (others ignore it).
        brain_options: Options of the LLM brain (``api_base``, ``temperature``, ``ledger``, ...).
        settings: Workflow parameters (workflow baselines).
        evidence: A prebuilt evidence book of ``history`` (built, and timed, when ``None``).
        bin_minutes: Start-bin width of the Markov chain.
        progress: Show the model's progress bar.

    Returns:
        The run.

    Raises:
        ValueError: For an unknown baseline, or ``"llm"`` without an LLM setting.
    """
    if name not in BASELINES:
        raise ValueError(f"unknown baseline {name!r} (use {', '.join(BASELINES)})")
    if name == "llm" and parse_brain_setting(brain)[0] != "llm":
        raise ValueError(
            f"the llm baseline needs an LLM brain ('llm:<model>'), got {brain!r}"
        )
    began, cpu = time.perf_counter(), _cpu_seconds()
    if name == "markov":
        chains = MarkovChainBaseline.fit(
            history,
            bin_minutes=bin_minutes,
            max_length=(settings or WorkflowSettings()).max_chain_length,
        )
        stays = chains.generate(dates, seed)
        empty = pd.DataFrame()
        return BaselineRun(
            name,
            "none",
            stays,
            time.perf_counter() - began,
            _cpu_seconds() - cpu,
            empty,
            empty,
            pd.DataFrame(columns=list(VERIFICATION_COLUMNS)),
            None,
            None,
        )
    settings = settings or WorkflowSettings()
    book = evidence or build_evidence(
        history, peers=settings.peers, min_history_days=settings.min_history_days
    )
    model_class = (
        HistoricalChainModel if name == "historical" else VerifiedTrajectoryModel
    )
    options = dict(brain_options or {}) if name == "llm" else {}
    with model_class(
        history,
        dates=dates,
        settings=settings,
        evidence=book,
        brain=brain if name == "llm" else "rules",
        brain_options=options,
        rng=seed,
    ) as model:
        model.run(progress=progress)
        ledger = model.ledger if model.uses_llm else None
        summary = ledger.summary() if isinstance(ledger, Ledger) else None
        return BaselineRun(
            name,
            model.brain.name,
            model.trajectories_frame(),
            time.perf_counter() - began,
            _cpu_seconds() - cpu,
            model.decisions_frame(),
            model.workflow_frame(),
            model.verification_frame(),
            summary,
            model.workflow_success_rate(),
        )


def with_temperature(options: BrainOptions | None, temperature: float) -> BrainOptions:
    """Brain options with the sampling temperature replaced (the temperature study)."""
    return BrainOptions(**{**dict(options or {}), "temperature": float(temperature)})


__all__ = [
    "BASELINES",
    "BASELINE_LABELS",
    "HISTORICAL_CHAIN",
    "STAGES",
    "VERIFICATION_COLUMNS",
    "BaselineRun",
    "HistoricalChainAgent",
    "HistoricalChainContext",
    "HistoricalChainModel",
    "VerifiedTrajectoryModel",
    "historical_chain_policy",
    "run_baseline",
    "with_temperature",
]
