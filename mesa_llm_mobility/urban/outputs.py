"""The urban model's outputs: tidy tables over its records, and the run's KPIs.

Plain functions over what the model records (the engine's trips, the itinerary's plans,
revisions and moves, the travellers' memories); :class:`~.model.UrbanMobilityModel` answers
``trips_frame()``, ``summary()`` and the others through them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

import pandas as pd

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, format_hhmm

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.agents import PlanRevisionRecord, TravellerAgent
    from mesa_llm_mobility.urban.conversations import Conversation
    from mesa_llm_mobility.urban.itinerary import MoveRow, PlanRow
    from mesa_llm_mobility.urban.tools import ToolCallRecord
    from mesa_llm_mobility.urban.traffic import TrafficEngine

PLAN_COLUMNS = (
    "day",
    "minute",
    "agent",
    "source",
    "position",
    "facility",
    "departure_time",
    "mode",
    "path",
    "reflect_every",
    "description",
)
REVISION_COLUMNS = ("day", "minute", "agent", "situation", "place", "action", "reason")
MEMORY_COLUMNS = (
    "agent",
    "node_id",
    "type",
    "content",
    "importance",
    "created",
    "expiration",
)
CHAT_COLUMNS = (
    "day",
    "minute",
    "conversation",
    "turn",
    "speaker",
    "listener",
    "relation",
    "medium",
    "topic",
    "message",
    "proposal",
    "accept",
    "outcome",
    "agreed",
    "summary",
)
TOOL_CALL_COLUMNS = (
    "day",
    "minute",
    "agent",
    "tool",
    "arguments",
    "answer",
    "ok",
    "via",
)
COMMUTE_COLUMNS = (
    "day",
    "commuters",
    "mean_departure",
    "mean_lead",
    "late_share",
    "mean_late",
    "mean_delay",
)


class UrbanSummary(TypedDict):
    """The KPIs of an urban run (:func:`summary`)."""

    trips: int
    completed: int
    mean_delay: float
    punctuality: float
    mode_shares: dict[str, float]
    decisions: dict[tuple[str, str], int]
    llm: pd.DataFrame
    plan_errors: dict[str, int]
    interruptions: int


def trips_frame(engine: TrafficEngine, facilities: Collection[str]) -> pd.DataFrame:
    """One row per trip (the engine's trips table, cancelled ones left out) with day and lateness.

    ``late`` is measured at the door that lets the traveller in (empty if a full facility never
    did), against the target arrival.
    """
    frame = engine.trips_frame()
    frame = frame[frame["state"] != "cancelled"].reset_index(drop=True)
    frame["day"] = (frame["planned_departure"] // MINUTES_PER_DAY + 1).astype(int)
    to_facility = frame["destination"].isin(facilities)
    at_door = frame["admitted"].where(to_facility, frame["arrival"])
    frame["late"] = (at_door - frame["planned_arrival"]).clip(lower=0)
    return frame


def plans_frame(rows: Iterable[PlanRow]) -> pd.DataFrame:
    """One row per planned activity of every plan and revision."""
    return pd.DataFrame(list(rows), columns=list(PLAN_COLUMNS))


def revisions_frame(records: Iterable[PlanRevisionRecord]) -> pd.DataFrame:
    """One row per plan revision: day, minute, agent, situation, place, action, reason."""
    rows = [
        (
            int(r.minute) // MINUTES_PER_DAY + 1,
            int(r.minute) % MINUTES_PER_DAY,
            r.agent,
            r.situation,
            r.place,
            r.action,
            r.reason,
        )
        for r in records
    ]
    return pd.DataFrame(rows, columns=list(REVISION_COLUMNS))


def positions_frame(moves: Iterable[MoveRow]) -> pd.DataFrame:
    """One row per change of a traveller's state or place: time, day, agent, state, place."""
    frame = pd.DataFrame(list(moves), columns=["time", "agent", "state", "place"])
    frame.insert(1, "day", (frame["time"] // MINUTES_PER_DAY + 1).astype(int))
    return frame


def memories_frame(travellers: Mapping[str, TravellerAgent]) -> pd.DataFrame:
    """One row per live memory of every traveller."""
    rows = [
        (
            name,
            node.id,
            str(node.type),
            node.content,
            node.importance,
            node.created,
            node.expiration,
        )
        for name, agent in travellers.items()
        for node in agent.memory.nodes()
    ]
    return pd.DataFrame(rows, columns=list(MEMORY_COLUMNS))


def conversations_frame(conversations: Iterable[Conversation]) -> pd.DataFrame:
    """One row per turn of every conversation (see :data:`CHAT_COLUMNS`).

    ``conversation`` numbers the conversations of the run; ``proposal`` is the turn's proposal
    in words (empty without one), ``outcome`` the brain's (``ok``, ``repaired``, ``fallback``),
    ``agreed`` and ``summary`` the conversation's, on each of its rows.
    """
    rows = []
    for number, talk in enumerate(conversations):
        day, minute = talk.minute // MINUTES_PER_DAY + 1, talk.minute % MINUTES_PER_DAY
        agreed = "" if talk.agreed is None else talk.agreed.describe()
        for turn, line in enumerate(talk.lines):
            listener = (
                talk.partner if line.speaker == talk.initiator else talk.initiator
            )
            rows.append(
                (
                    day,
                    minute,
                    number,
                    turn,
                    line.speaker,
                    listener,
                    talk.relation,
                    talk.medium,
                    talk.topic,
                    line.message,
                    "" if line.proposal is None else line.proposal.describe(),
                    line.accept,
                    line.outcome,
                    agreed,
                    talk.summary,
                )
            )
    return pd.DataFrame(rows, columns=list(CHAT_COLUMNS))


def tool_calls_frame(calls: Iterable[ToolCallRecord]) -> pd.DataFrame:
    """One row per tool call (see :data:`TOOL_CALL_COLUMNS`); arguments as JSON text."""
    rows = [
        (
            c.minute // MINUTES_PER_DAY + 1,
            c.minute % MINUTES_PER_DAY,
            c.agent,
            c.tool,
            json.dumps(c.arguments, sort_keys=True),
            c.answer,
            c.ok,
            c.via,
        )
        for c in calls
    ]
    return pd.DataFrame(rows, columns=list(TOOL_CALL_COLUMNS))


def commute_frame(trips: pd.DataFrame) -> pd.DataFrame:
    """Per-day commute to work (trips with a target arrival): departure, lead, punctuality, delay.

    Columns: day, commuters, mean_departure (minute of the day), mean_lead (minutes between
    leaving and the work start), late_share, mean_late, mean_delay, mean_departure_hhmm.
    """
    work = trips[trips["planned_arrival"].notna() & trips["arrival"].notna()]
    if work.empty:
        return pd.DataFrame(columns=list(COMMUTE_COLUMNS))
    work = work.assign(lead=work["planned_arrival"] - work["departure"])
    grouped = work.assign(
        dep=work["departure"] % MINUTES_PER_DAY, is_late=~(work["late"] <= 0)
    ).groupby("day")
    frame = grouped.agg(
        commuters=("agent", "count"),
        mean_departure=("dep", "mean"),
        mean_lead=("lead", "mean"),
        late_share=("is_late", "mean"),
        mean_late=("late", "mean"),
        mean_delay=("delay", "mean"),
    ).reset_index()
    frame["mean_departure_hhmm"] = frame["mean_departure"].map(format_hhmm)
    return frame


def departure_histogram(
    trips: pd.DataFrame, bin_minutes: int = 10, *, commute_only: bool = True
) -> pd.DataFrame:
    """Departures per time bin and day (peak spreading): rows ``"HH:MM"`` bins, columns days.

    Args:
        trips: The trips table (:func:`trips_frame`).
        bin_minutes: Bin width in minutes.
        commute_only: Count only trips with a target arrival (the commute to work).

    Returns:
        The counts.
    """
    trips = trips[trips["departure"].notna()]
    if commute_only:
        trips = trips[trips["planned_arrival"].notna()]
    bins = (trips["departure"] % MINUTES_PER_DAY) // bin_minutes * bin_minutes
    table = (
        trips.assign(bin=bins.astype(int))
        .groupby(["bin", "day"])
        .size()
        .unstack("day", fill_value=0)
        .sort_index()
    )
    table.index = [format_hhmm(minute) for minute in table.index]
    table.index.name = "departure"
    return table


def summary(
    trips: pd.DataFrame,
    decisions: pd.DataFrame,
    *,
    llm: pd.DataFrame | None,
    plan_errors: Mapping[str, int],
    revisions: Sequence[PlanRevisionRecord],
) -> UrbanSummary:
    """Run KPIs: trips, delay, punctuality, mode shares, decisions, LLM use, plan errors.

    Args:
        trips: The trips table.
        decisions: The decisions table.
        llm: The ledger's summary (``None``: no ledger).
        plan_errors: Plan validation messages by rule.
        revisions: Every revision; ``interruptions`` counts the travels given up for the next
            activity (action ``"interrupt"``).

    Returns:
        The KPIs.
    """
    done = trips[trips["arrival"].notna()]
    targeted = done[done["planned_arrival"].notna()]
    return {
        "trips": len(trips),
        "completed": len(done),
        "mean_delay": float(done["delay"].mean()) if len(done) else math.nan,
        "punctuality": float((targeted["late"] <= 0).mean())
        if len(targeted)
        else math.nan,
        "mode_shares": done["mode"].value_counts(normalize=True).to_dict(),
        "decisions": decisions.groupby(["kind", "outcome"]).size().to_dict()
        if len(decisions)
        else {},
        "llm": llm if llm is not None else pd.DataFrame(),
        "plan_errors": dict(plan_errors),
        "interruptions": sum(1 for r in revisions if r.action == "interrupt"),
    }
