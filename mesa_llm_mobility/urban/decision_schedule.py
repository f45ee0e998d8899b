"""Asynchronous decisions of the urban model: a reaction time of ``d`` simulated minutes.

Algorithm 1 is synchronous: each minute with a request waits for all its answers before the
traffic moves, so an LLM run's wall time is (minutes with requests) x latency whatever the
concurrency. With a reaction time ``d > 0`` a revision requested at minute ``t`` is sent at once
and applied at ``t + d`` (clamped to the day's last minute, so nothing is pending across a day
boundary or a checkpoint); the world keeps moving and waits only for an answer still missing at
its due minute, so requests of many minutes share the endpoint. What changes:

* a traveller with a decision on the way is not asked again until it is applied;
* a departure's ``end_of_activity`` revision is asked ``d`` minutes before the departure (the
  itinerary wakes the traveller that much earlier), so its answer is there when the trip leaves;
* an answer that no longer fits when it arrives is not applied and is recorded with the action
  ``"stale"``: a staying traveller who has left its place, a driver who has passed the node the
  path was decided for (a driver is asked one minute before reaching a node, so with ``d > 1``
  most en-route reroutes arrive too late);
* the three day phases (chats at 00:00, plans at 00:01, reflections at 23:50) stay synchronous:
  pending revisions are applied first (early), then the phase is decided as in Algorithm 1.

``d = 0`` is Algorithm 1 exactly: every batch is decided and applied in its own minute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mesa_llm_mobility.cognition.brain import PendingDecisions

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.agents import TravellerAgent
    from mesa_llm_mobility.urban.decisions import RevisionContext
    from mesa_llm_mobility.urban.traffic import TrafficEngine

STALE_ACTION = "stale"
"""The decisions table's action for an answer that no longer fitted when it arrived."""


@dataclass
class _Batch:
    due: int
    time: Mapping[str, Any]
    agents: frozenset[str]
    pending: PendingDecisions


class ReactionSchedule:
    """The batches on their way to the model, each due at its minute.

    Args:
        reaction_minutes: ``d``: minutes between a request and the application of its answer.

    Raises:
        ValueError: when ``reaction_minutes`` is negative.
    """

    def __init__(self, reaction_minutes: int) -> None:
        if reaction_minutes < 0:
            raise ValueError(f"reaction_minutes must be >= 0, got {reaction_minutes}")
        self.reaction_minutes = int(reaction_minutes)
        self._batches: list[_Batch] = []
        self._busy: set[str] = set()

    def __len__(self) -> int:
        return len(self._batches)

    def is_busy(self, agent_id: str) -> bool:
        """Whether ``agent_id`` has a decision on the way."""
        return agent_id in self._busy

    def add(
        self,
        pending: PendingDecisions,
        agents: frozenset[str],
        time: Mapping[str, Any],
        due: int,
    ) -> None:
        """Hold a submitted batch of ``agents``' requests until minute ``due``."""
        self._batches.append(_Batch(due, dict(time), agents, pending))
        self._busy |= agents

    def take_due(
        self, t: int | None = None
    ) -> list[tuple[Mapping[str, Any], PendingDecisions]]:
        """The batches due by minute ``t`` (all when ``None``), oldest first, released.

        The caller takes their results (waiting for a late one) and applies them.
        """
        due = [b for b in self._batches if t is None or b.due <= t]
        if not due:
            return []
        self._batches = [b for b in self._batches if b not in due]
        for batch in due:
            self._busy -= batch.agents
        return [(batch.time, batch.pending) for batch in due]


def revision_still_applies(
    agent: TravellerAgent,
    context: RevisionContext,
    engine: TrafficEngine,
    t: int,
) -> bool:
    """Whether a revision decided on ``context`` still fits the traveller at minute ``t``.

    A staying traveller must still stay where it was asked; a driver must still be approaching
    the node the revision was decided for, with no reroute pending.
    """
    if context.situation != "at_node":
        return agent.state == "staying" and agent.place == context.place
    record = agent.current_trip()
    if agent.state != "driving" or record is None or agent.pending_reroute is not None:
        return False
    approach = engine.approaching_node(record.trip_id, t)
    return approach is not None and approach[0] == context.place
