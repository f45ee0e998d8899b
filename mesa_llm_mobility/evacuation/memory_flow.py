"""The memory role in the model's turn: summaries, requests, due revisions, their records.

When a decision is committed (:func:`~.commit.apply_decision`), :meth:`MemoryFlow.request`
states an ``EvacuationMemory`` request from the pedestrian's current memory and a
:class:`~.memory_role.TurnSummary` of the turn (:func:`turn_summary`). The model sends the queued
requests with the step's decision requests in one batch; each answer falls due at the next 1 s
boundary (:meth:`MemoryFlow.apply_due`), first thing in that turn, as in the paper (Sec. 2.3.1).
Every revision is recorded: a row of the ``memory_versions`` table (agent, version, time,
outcome, text) and, when the model has a :class:`~mesa_llm_mobility.memory.MemoryStore`, a node
of the agent's Chroma memory stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult
from mesa_llm_mobility.evacuation.memory_role import (
    EVACUATION_MEMORY,
    MemoryContext,
    MemoryRevision,
    TurnSummary,
)
from mesa_llm_mobility.evacuation.timing import step_time_s

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.agents import Pedestrian
    from mesa_llm_mobility.evacuation.decision_context import EvacuationContext
    from mesa_llm_mobility.evacuation.decisions import EvacuationDecision
    from mesa_llm_mobility.memory.store import MemoryStore

MEMORY_VERSION_COLUMNS = (
    "agent_id",
    "version",
    "request_step",
    "applied_step",
    "time_s",
    "outcome",
    "chars",
    "memory",
)
"""Columns of the ``memory_versions`` table (one row per revision)."""

MEMORY_EFFORT = "low"
"""Reasoning effort of the memory role (the paper's ordinary level)."""


def turn_summary(
    context: EvacuationContext,
    out: EvacuationDecision | None,
    *,
    intent: str,
    target: str | None,
    feedback: str,
    time_s: float,
) -> TurnSummary:
    """The committed turn as the memory role sees it (paper Sec. 2.3.3).

    Args:
        context: The decision's context (the observation it was made on).
        out: The accepted or engine-rejected answer; ``None`` when the brain rejected it.
        intent: The standing intent after the turn.
        target: The target in words, for a move.
        feedback: The engine's feedback.
        time_s: When the decision took effect.

    Returns:
        The summary.
    """
    events = [f"heard {shout.describe()}" for shout in context.heard_shouts[:2]]
    if context.fleeing_neighbours:
        events.append(f"saw {context.fleeing_neighbours} people fleeing nearby")

    def opening(o: Any) -> tuple[str, str, str, str, float]:
        return (o.kind, o.opening_id, o.state, o.direction, o.distance_m)

    stale = context.stale_sighting
    return TurnSummary(
        time_s=time_s,
        visible_people=context.visible_people,
        adversary_ids=context.adversary_ids,
        body_ids=context.body_ids,
        openings_in_view=tuple(
            opening(o) for o in context.known_openings if o.seen_age_s == 0
        ),
        fear=context.fear,
        fear_level=context.fear_level,
        events=tuple(events),
        known_openings=tuple(opening(o) for o in context.known_openings),
        stale_threat=None
        if stale is None
        else (stale.direction, stale.distance_m, stale.age_s),
        told=tuple((h.sender, h.kind, h.direction) for h in context.exit_hints),
        action=None if out is None else out.action,
        situation=context.previous.situation
        if out is None and context.previous is not None
        else (out.situation if out is not None else "normal"),
        intent=intent,
        urgency=out.urgency if out is not None else 0.0,
        target=target,
        feedback=feedback,
    )


class MemoryFlow:
    """The memory role's requests and answers in flight, and the record of every revision.

    Args:
        store: A :class:`~mesa_llm_mobility.memory.MemoryStore` whose per-agent streams receive
            every revision (``None``: the ``memory_versions`` table only).

    Attributes:
        queue: Revisions stated this step, sent with the step's decision requests.
        due: Answers waiting for their boundary: ``(due step, request step, result)``.
        rows: The ``memory_versions`` rows (:data:`MEMORY_VERSION_COLUMNS` order).
        store: The memory store, if any (never pickled: a checkpoint's owner attaches it).
    """

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.queue: list[DecisionRequest[MemoryContext, MemoryRevision]] = []
        self.due: list[tuple[int, int, DecisionResult[MemoryContext, MemoryRevision]]]
        self.due = []
        self.rows: list[tuple[object, ...]] = []
        self.store = store

    def __getstate__(self) -> dict[str, object]:
        """Everything but the store (a Chroma client)."""
        return {**self.__dict__, "store": None}

    def request(self, agent: Pedestrian, turn: TurnSummary) -> None:
        """State the pedestrian's memory revision for the turn just committed (sent next batch)."""
        context = MemoryContext(
            agent_id=agent.unique_id,
            version=agent.memory_version + 1,
            memory=agent.memory_text,
            turn=turn,
        )
        self.queue.append(
            DecisionRequest(
                EVACUATION_MEMORY,
                agent.unique_id,
                context,
                sampling={"reasoning_effort": MEMORY_EFFORT},
            )
        )

    def take_queue(self) -> list[DecisionRequest[MemoryContext, MemoryRevision]]:
        """The revisions stated since the last call (emptied)."""
        queued, self.queue = self.queue, []
        return queued

    def defer(
        self,
        result: DecisionResult[MemoryContext, MemoryRevision],
        due: int,
        step: int,
    ) -> None:
        """Keep a memory answer, requested at ``step``, until its due step."""
        self.due.append((due, step, result))

    def apply_due(self, step: int, by_uid: dict[int, Pedestrian]) -> None:
        """Install the revisions due at ``step``, in request order, and record each one.

        Args:
            step: The current step.
            by_uid: The pedestrians by agent id.
        """
        due = [entry for entry in self.due if entry[0] <= step]
        self.due = [entry for entry in self.due if entry[0] > step]
        for _due, request_step, result in due:
            agent = by_uid[result.agent_id]
            out: MemoryRevision | None = result.output
            if (
                out is None
            ):  # a memory answer is never rejected (repair, then the template)
                continue
            agent.memory_text = out.memory
            agent.memory_version += 1
            row = (  # in MEMORY_VERSION_COLUMNS order
                agent.unique_id,
                agent.memory_version,
                request_step,
                step,
                step_time_s(step),
                str(result.outcome),
                len(out.memory),
                out.memory,
            )
            self.rows.append(row)
            if self.store is not None:
                self.store.stream(agent.unique_id).remember(
                    out.memory,
                    node_type="reflection",
                    importance=1.0,
                    now=step_time_s(step) / 60.0,  # the stream's clock is in minutes
                    keywords=("long_term_memory", f"v{agent.memory_version}"),
                )

    def frame(self) -> pd.DataFrame:
        """Every memory revision: ``agent_id, version, request_step, applied_step, time_s, outcome, chars, memory``."""
        return pd.DataFrame(self.rows, columns=list(MEMORY_VERSION_COLUMNS))
