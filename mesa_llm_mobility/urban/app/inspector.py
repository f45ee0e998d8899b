"""What the app's inspector shows of one traveller, from a live model or a saved run.

:func:`report_of_model` reads the traveller object itself (its memory stream included, so the
memories it retrieved last are known); :func:`report_of_run` rebuilds the same report at a
minute of a saved run from its tables (its memories table holds the memories alive at the end
of the run, shown as they were created by then and not yet expired; retrieval times are not
stored, so "recently retrieved" lists the most recently created). A run that lacks a table
(the published GATSim run has no revisions, decisions, chats or tool calls of ours) shows that
part empty and names it in :attr:`TravellerReport.unrecorded`; its ``reflections`` table (the
prototype's reflection on each day plan, revision and day) joins the reflections.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from mesa_llm_mobility.urban.app.town_view import trips_by
from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY, day_clock, format_hhmm
from mesa_llm_mobility.urban.decisions import PersonaFacts

if TYPE_CHECKING:
    from mesa_llm_mobility.urban.app.saved_run import SavedRun
    from mesa_llm_mobility.urban.model import UrbanMobilityModel

PLAN_COLUMNS = ["facility", "departure_time", "mode", "path", "description"]
REVISION_COLUMNS = ["time", "situation", "place", "action", "reason"]
MEMORY_COLUMNS = ["created", "type", "importance", "content"]
TRIP_COLUMNS = [
    "origin",
    "destination",
    "mode",
    "planned_departure",
    "departure",
    "arrival",
    "delay",
    "late",
]
CONVERSATION_COLUMNS = [
    "time",
    "with",
    "medium",
    "topic",
    "turn",
    "speaker",
    "message",
    "proposal",
    "accept",
    "agreed",
]
TOOL_CALL_COLUMNS = ["time", "tool", "arguments", "answer", "via"]
MEMORIES_SHOWN = 8
RUN_PARTS = ("revisions", "chats", "tool_calls")
"""The report's parts that come from a table of their own (absent from some runs)."""


@dataclass(frozen=True)
class TravellerReport:
    """One traveller as the inspector shows it.

    Attributes:
        name: The traveller.
        state: Current state and place, in words.
        profile: Persona fields with a value (name first).
        plan: Today's activities as now planned (``PLAN_COLUMNS``).
        first_plan: Today's plan as decided at day start.
        revisions: Today's revisions with their reasons (``REVISION_COLUMNS``; time as HH:MM).
        chats: Today's chats, in words.
        recent_memories: Memories retrieved (or, in replay, created) most recently.
        important_memories: The most important memories.
        reflections: Reflections, newest first, and the long-term reflection if any.
        trips: Every trip departed so far (``TRIP_COLUMNS``; times as ``day d HH:MM``).
        conversations: Today's conversations turn by turn, the traveller's side and the
            other's (``CONVERSATION_COLUMNS``).
        tool_calls: Today's tool calls with their answers (``TOOL_CALL_COLUMNS``).
        memories: Every memory the traveller holds now, newest first (``MEMORY_COLUMNS``).
        unrecorded: The parts a saved run has no table for (``"revisions"``, ``"chats"``,
            ``"tool_calls"``), shown empty.
    """

    name: str
    state: str
    profile: dict[str, Any]
    plan: pd.DataFrame
    first_plan: pd.DataFrame
    revisions: pd.DataFrame
    chats: list[str]
    recent_memories: pd.DataFrame
    important_memories: pd.DataFrame
    reflections: list[str]
    trips: pd.DataFrame
    conversations: pd.DataFrame = dataclasses.field(
        default_factory=lambda: pd.DataFrame(columns=CONVERSATION_COLUMNS)
    )
    tool_calls: pd.DataFrame = dataclasses.field(
        default_factory=lambda: pd.DataFrame(columns=TOOL_CALL_COLUMNS)
    )
    memories: pd.DataFrame = dataclasses.field(
        default_factory=lambda: pd.DataFrame(columns=MEMORY_COLUMNS)
    )
    unrecorded: tuple[str, ...] = ()


def profile_of(persona: PersonaFacts) -> dict[str, Any]:
    """The persona's fields that have a value, times as HH:MM and lists joined."""
    profile: dict[str, Any] = {}
    for item in dataclasses.fields(persona):
        value = getattr(persona, item.name)
        if value in (None, "", ()):
            continue
        if item.name in ("work_start", "work_end"):
            value = format_hhmm(value)
        elif isinstance(value, tuple):
            value = ", ".join(map(str, value))
        profile[item.name] = value
    return profile


def _when(minute: float) -> str:
    """``"day d HH:MM"`` of an absolute minute, empty for NaN (not yet)."""
    return "" if pd.isna(minute) else day_clock(minute)


def _trip_rows(trips: pd.DataFrame, agent: str) -> pd.DataFrame:
    mine = trips[trips["agent"] == agent] if len(trips) else trips
    if not len(mine):
        return pd.DataFrame(columns=TRIP_COLUMNS)
    frame = mine[TRIP_COLUMNS].copy()
    for column in ("planned_departure", "departure", "arrival"):
        frame[column] = frame[column].map(_when)
    for column in ("delay", "late"):
        frame[column] = (
            frame[column].round(1).astype(object).where(frame[column].notna(), "")
        )
    return frame.reset_index(drop=True)


def _memory_rows(
    nodes: pd.DataFrame, order: str, shown: int | None = MEMORIES_SHOWN
) -> pd.DataFrame:
    """The first ``shown`` memories (all for None) by ``order``, descending."""
    if not len(nodes):
        return pd.DataFrame(columns=MEMORY_COLUMNS)
    top = nodes.sort_values(order, ascending=False, kind="stable")
    if shown is not None:
        top = top.head(shown)
    frame = top[MEMORY_COLUMNS].copy()
    frame["importance"] = frame["importance"].round(2)
    frame["created"] = frame["created"].map(_when)
    return frame.reset_index(drop=True)


def report_of_model(model: UrbanMobilityModel, agent: str) -> TravellerReport:
    """The inspector's report of a traveller of a live model.

    Raises:
        KeyError: For an unknown traveller (the message lists a few known names).
    """
    traveller = _traveller(model.travellers, agent)
    activities = pd.DataFrame(
        [_activity_row(a) for a in traveller.activities], columns=PLAN_COLUMNS
    )
    first = (
        pd.DataFrame(
            [_activity_row(a) for a in traveller.plan.activities], columns=PLAN_COLUMNS
        )
        if traveller.plan is not None
        else pd.DataFrame(columns=PLAN_COLUMNS)
    )
    revisions = pd.DataFrame(
        [
            (format_hhmm(r.minute), r.situation, r.place, r.action, r.reason)
            for r in traveller.revisions
        ],
        columns=REVISION_COLUMNS,
    )
    nodes = pd.DataFrame(
        [
            (n.created, str(n.type), n.importance, n.content, n.last_accessed)
            for n in traveller.memory.nodes()
        ],
        columns=[*MEMORY_COLUMNS, "last_accessed"],
    )
    reflections = _reflections(nodes, traveller.long_term_reflection)
    return TravellerReport(
        name=agent,
        state=f"{traveller.state.replace('_', ' ')} at {traveller.place}",
        profile=profile_of(traveller.persona),
        plan=activities,
        first_plan=first,
        revisions=revisions,
        chats=list(traveller.today.chats),
        recent_memories=_memory_rows(nodes, "last_accessed"),
        important_memories=_memory_rows(nodes, "importance"),
        reflections=reflections,
        trips=_trip_rows(trips_by(model.trips_frame(), model.minute), agent),
        conversations=_conversation_rows(
            model.conversations_frame(), agent, traveller.today.day, MINUTES_PER_DAY
        ),
        tool_calls=_tool_rows(
            model.tool_calls_frame(), agent, traveller.today.day, MINUTES_PER_DAY
        ),
        memories=_memory_rows(nodes, "created", shown=None),
    )


def report_of_run(run: SavedRun, agent: str, minute: float) -> TravellerReport:
    """The inspector's report of a traveller at clock ``minute`` of a saved run.

    What was decided or remembered in the steps before the clock counts, and "today" is the
    day of the last of them, as in the live model (which starts a day with its first step).

    Raises:
        KeyError: For an unknown traveller.
    """
    persona = _traveller(run.personas, agent)
    view = run.view_at(minute)
    step = max(view.minute - 1, 0)  # the last simulated minute; its day is "today"
    day, now = step // MINUTES_PER_DAY + 1, step % MINUTES_PER_DAY
    where = view.travellers[view.travellers["agent"] == agent]
    state = (
        f"{where['state'].iloc[0].replace('_', ' ')} at {where['place'].iloc[0]}"
        if len(where)
        else "unknown"
    )
    plans = _today(run.table("plans"), agent, day, now)
    current = plans[plans["minute"] == plans["minute"].max()] if len(plans) else plans
    first = plans[plans["source"] == "plan"] if len(plans) else plans
    revisions = _today(run.table("revisions"), agent, day, now)
    revision_rows = pd.DataFrame(
        [
            (format_hhmm(r.minute), r.situation, r.place, r.action, r.reason)
            for r in revisions.itertuples()
        ],
        columns=REVISION_COLUMNS,
    )
    nodes = _memories_at(run.table("memories"), agent, step)
    today_start = (day - 1) * MINUTES_PER_DAY
    chats = nodes[(nodes["type"] == "chat") & (nodes["created"] >= today_start)]
    reflections = _reflections(nodes, "") + _run_reflections(
        run.table("reflections"), agent, step
    )
    return TravellerReport(
        name=agent,
        state=state,
        profile=profile_of(persona),
        plan=_plan_rows(current),
        first_plan=_plan_rows(first),
        revisions=revision_rows,
        chats=list(chats.sort_values("created")["content"]),
        recent_memories=_memory_rows(nodes, "created"),
        important_memories=_memory_rows(nodes, "importance"),
        reflections=reflections,
        trips=_trip_rows(view.trips, agent),
        conversations=_conversation_rows(run.table("chats"), agent, day, now),
        tool_calls=_tool_rows(run.table("tool_calls"), agent, day, now),
        memories=_memory_rows(nodes, "created", shown=None),
        unrecorded=tuple(name for name in RUN_PARTS if not run.recorded(name)),
    )


def _memories_at(memories: pd.DataFrame, agent: str, step: float) -> pd.DataFrame:
    """``agent``'s memories created by ``step`` and not expired then (NaN: never expires)."""
    if not len(memories):
        return pd.DataFrame(columns=["agent", *MEMORY_COLUMNS])
    alive = memories["created"] <= step
    if "expiration" in memories.columns:
        alive &= ~(memories["expiration"] <= step)
    return memories[(memories["agent"] == agent) & alive]


def _run_reflections(table: pd.DataFrame, agent: str, step: int) -> list[str]:
    """A run's ``reflections`` table (published runs) up to ``step``, newest first, dated."""
    if not len(table):
        return []
    minutes = (table["day"] - 1) * MINUTES_PER_DAY + table["minute"]
    mine = table[(table["agent_id"] == agent) & (minutes <= step)].assign(at=minutes)
    mine = mine.sort_values("at", ascending=False, kind="stable")
    return [
        f"{day_clock(at)} ({kind}): {text}"
        for at, kind, text in zip(mine["at"], mine["kind"], mine["text"], strict=True)
    ]


def _conversation_rows(
    chats: pd.DataFrame, agent: str, day: int, now: int
) -> pd.DataFrame:
    """Turns of ``agent``'s conversations of ``day`` up to ``now``, both speakers' (oldest first)."""
    if not len(chats):
        return pd.DataFrame(columns=CONVERSATION_COLUMNS)
    mine = chats[
        (chats["day"] == day)
        & (chats["minute"] <= now)
        & ((chats["speaker"] == agent) | (chats["listener"] == agent))
    ]
    talks = set(mine.loc[mine["speaker"] == agent, "conversation"]) | set(
        mine.loc[mine["listener"] == agent, "conversation"]
    )
    rows = chats[chats["conversation"].isin(talks)].sort_values(
        ["conversation", "turn"]
    )
    frame = pd.DataFrame(
        {
            "time": rows["minute"].map(format_hhmm),
            "with": [
                listener if speaker == agent else speaker
                for speaker, listener in zip(
                    rows["speaker"], rows["listener"], strict=True
                )
            ],
            "medium": rows["medium"],
            "topic": rows["topic"],
            "turn": rows["turn"],
            "speaker": rows["speaker"],
            "message": rows["message"],
            "proposal": rows["proposal"],
            "accept": rows["accept"].map(lambda a: "yes" if a else ""),
            "agreed": rows["agreed"],
        }
    )
    return frame[CONVERSATION_COLUMNS].reset_index(drop=True)


def _tool_rows(calls: pd.DataFrame, agent: str, day: int, now: int) -> pd.DataFrame:
    """``agent``'s tool calls of ``day`` up to ``now`` with their answers."""
    if not len(calls):
        return pd.DataFrame(columns=TOOL_CALL_COLUMNS)
    mine = calls[
        (calls["agent"] == agent) & (calls["day"] == day) & (calls["minute"] <= now)
    ]
    if "via" not in mine:  # runs saved before native tool calling asked structurally
        mine = mine.assign(via="structured")
    frame = mine.assign(time=mine["minute"].map(format_hhmm))[TOOL_CALL_COLUMNS]
    return frame.reset_index(drop=True)


def _traveller(known: dict[str, Any], agent: str) -> Any:
    if agent not in known:
        names = ", ".join(sorted(known)[:5])
        raise KeyError(f"no traveller {agent!r} (travellers include {names}, ...)")
    return known[agent]


def _activity_row(activity: Any) -> tuple:
    path = activity.path if isinstance(activity.path, str) else " ".join(activity.path)
    return (
        activity.facility,
        activity.departure_time or "on arrival",
        activity.mode,
        path,
        activity.description,
    )


def _today(table: pd.DataFrame, agent: str, day: int, now: int) -> pd.DataFrame:
    if not len(table):
        return table
    return table[
        (table["agent"] == agent) & (table["day"] == day) & (table["minute"] <= now)
    ]


def _plan_rows(rows: pd.DataFrame) -> pd.DataFrame:
    if not len(rows):
        return pd.DataFrame(columns=PLAN_COLUMNS)
    frame = rows.sort_values("position")[PLAN_COLUMNS].copy()
    leave = frame["departure_time"]
    frame["departure_time"] = leave.where(leave.notna() & (leave != ""), "on arrival")
    return frame.reset_index(drop=True)


def _reflections(nodes: pd.DataFrame, long_term: str) -> list[str]:
    found = nodes[nodes["type"] == "reflection"] if len(nodes) else nodes
    texts = list(found.sort_values("created", ascending=False)["content"])
    if long_term:
        texts.append(f"Long-term: {long_term}")
    return texts
