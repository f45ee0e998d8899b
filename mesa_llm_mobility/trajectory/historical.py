"""Fixed historical chains and the verification table, shared by the workflow baselines.

* the ``HistoricalChain`` decision kind (:data:`HISTORICAL_CHAIN`): one of the individual's
  evidence-day chains for the target's weekday, drawn at random, cleaned to the orchestrator's
  constraints (:func:`historical_chain_policy`); :class:`HistoricalChainAgent` states it instead
  of the orchestrator's ``ActivityChain``;
* :class:`VerifiedTrajectoryModel`: the trajectory model that also keeps, per decision, the
  rounds that failed at each stage of the verifier (:data:`STAGES`), from which the temperature
  study counts the verifier's failures.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
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
from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.model import IndividualAgent, TrajectoryModel
from mesa_llm_mobility.trajectory.orchestrator import ActivityChain, validate_chain
from mesa_llm_mobility.trajectory.workflow import INVALID_POI, GroundedDay

STAGES = ("json", "schema", "domain", "transport")
"""Where an answer can fail: columns of the verification table (rounds failed there)."""

VERIFICATION_COLUMNS = ("day", "date", "agent_id", "kind", "outcome", *STAGES)
"""Columns of :attr:`BaselineRun.verification`: one row per decision."""

TOOL_USE_COLUMNS = (
    "day",
    "date",
    "agent_id",
    "visits",
    "visits_ok",
    "trajectory_ok",
    "tool_calls",
    "answer_outcome",
)
"""Columns of a tool-use table (the paper's Table V): one row per trajectory."""


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
        self._grounding_rows: list[dict[str, Any]] = []

    def _commit(
        self,
        agents: list[IndividualAgent],
        grounded: list[GroundedDay],
        schedules: list[tuple[list[float], list[float]]],
    ) -> None:
        """Commit the day, and count per trajectory the planned visits that got a POI and a time."""
        super()._commit(agents, grounded, schedules)
        date = self.dates[self.day].date().isoformat()
        for agent, day, (starts, _) in zip(agents, grounded, schedules, strict=True):
            planned = len(day.pois) + day.trimmed
            ok = sum(poi != INVALID_POI for poi in day.pois[: len(starts)])
            self._grounding_rows.append(
                {
                    "day": self.day + 1,
                    "date": date,
                    "agent_id": agent.person_id,
                    "visits": planned,
                    "visits_ok": ok,
                    "trajectory_ok": ok == planned,
                    "tool_calls": 2 * len(starts),
                    "answer_outcome": "workflow",
                }
            )

    def tool_use_frame(self) -> pd.DataFrame:
        """One row per trajectory: planned visits, those grounded (a POI and a time), calls.

        The workflow calls its location and time modules in code, once each per visit it
        keeps; a visit fails when no POI had the activity or the day could not hold it.
        """
        return pd.DataFrame(self._grounding_rows, columns=list(TOOL_USE_COLUMNS))

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
