"""What an urban traveller recalls from its own memory stream when it decides.

Three ways of asking the stream, each a plain function of the traveller's
:class:`~mesa_llm_mobility.memory.MemoryStream`:

- :func:`recall_trips`: the trips it remembers (home and work first), as experiences;
- :func:`recall_place_time`: memories about places at times of day (the spatiotemporal mode),
  for LLM travellers;
- :func:`recall_text`: reflections, chats and plans about a text (the vector store), for LLM
  travellers; rule travellers recall their route lessons by keyword instead, which is what their
  learning policies read (:mod:`~mesa_llm_mobility.urban.decisions.learning`) and keeps rule runs
  free of Chroma.

Retrieval marks what it returns as accessed, so the order of the questions is part of what a
context recalls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mesa_llm_mobility.urban.clock import MINUTES_PER_DAY
from mesa_llm_mobility.urban.decisions import TripExperience, parse_trip_memory

if TYPE_CHECKING:
    from mesa_llm_mobility.memory import MemoryStream

__all__ = [
    "RECALL_DAYS",
    "RECALL_K",
    "recall_place_time",
    "recall_text",
    "recall_trips",
]

RECALL_DAYS = 3
"""Past days the spatiotemporal recall looks at."""
RECALL_K = 3
"""Memories per spatiotemporal query."""


def recall_trips(
    memory: MemoryStream, keywords: Sequence[str], t: int
) -> list[TripExperience]:
    """The trips remembered under ``keywords`` (e.g. home and work), oldest first.

    Args:
        memory: The traveller's memory stream.
        keywords: Places the trips touch; empty ones are left out.
        t: The absolute minute.
    """
    hits = memory.retrieve(
        t, keywords=["trip", *(k for k in keywords if k)], k=20, node_types=["event"]
    )
    found = [parse_trip_memory(hit.node.content) for hit in hits]
    return sorted(
        (f for f in found if f is not None), key=lambda e: (e.day, e.departure)
    )


def recall_place_time(
    memory: MemoryStream,
    t: int,
    places: Sequence[str],
    windows: Sequence[tuple[int, int]],
    *,
    uses_llm: bool,
) -> list[str]:
    """Memories about ``places`` at these times of day: the spatiotemporal mode (LLM travellers).

    Memories' temporal scopes are absolute minutes, so each window (minutes of the day) is asked
    for today and each of the :data:`RECALL_DAYS` days before; the best :data:`RECALL_K` per
    query that match in place and time are merged, best first.

    Args:
        memory: The traveller's memory stream.
        t: The absolute minute.
        places: Facilities, nodes or links.
        windows: ``(start, end)`` minutes of the day.
        uses_llm: Whether an LLM decides (rule travellers recall nothing this way).
    """
    if not uses_llm or not places or not windows:
        return []
    day = t // MINUTES_PER_DAY
    found: dict[str, tuple[float, str]] = {}
    for past in range(max(0, day - RECALL_DAYS), day + 1):
        for start, end in windows:
            interval = (past * MINUTES_PER_DAY + start, past * MINUTES_PER_DAY + end)
            for hit in memory.retrieve(
                t,
                spatial_scope=places,
                temporal_scope=interval,
                k=RECALL_K,
                node_types=["event", "chat", "reflection"],
            ):
                best = found.get(hit.node.id, (-1.0, ""))[0]
                if hit.matches.get("spatiotemporal", 0.0) > 0 and hit.score > best:
                    found[hit.node.id] = (hit.score, hit.node.content)
    ranked = sorted(found.values(), key=lambda pair: -pair[0])
    return [content for _, content in ranked][: 2 * RECALL_K]


def recall_text(
    memory: MemoryStream, t: int, text: str, *, uses_llm: bool
) -> list[str]:
    """Reflections, chats and plans recalled about ``text``.

    Rule travellers recall their route lessons by keyword (no vector query, so a rule run still
    makes no Chroma collection).

    Args:
        memory: The traveller's memory stream.
        t: The absolute minute.
        text: What the traveller thinks about.
        uses_llm: Whether an LLM decides.
    """
    if not uses_llm:
        hits = memory.retrieve(
            t, keywords=["queues", "route"], k=10, node_types=["reflection"]
        )
        return [hit.node.content for hit in hits]
    hits = memory.retrieve(t, text=text, k=6, node_types=["reflection", "chat", "plan"])
    return [hit.node.content for hit in hits]


def recall_for_plan(
    memory: MemoryStream,
    t: int,
    places: Sequence[str],
    windows: Sequence[tuple[int, int]],
    *,
    uses_llm: bool,
) -> list[str]:
    """What a traveller recalls when it plans: its day's places and times, then its lessons.

    Args:
        memory: The traveller's memory stream.
        t: The absolute minute.
        places: The places of its day (home, work, school, appointments).
        windows: The times of day it is there.
        uses_llm: Whether an LLM decides.
    """
    recalled = recall_place_time(memory, t, places, windows, uses_llm=uses_llm)
    lessons = recall_text(memory, t, "plan today travel lessons", uses_llm=uses_llm)
    return recalled + [m for m in lessons if m not in recalled]


def recall_around(
    memory: MemoryStream,
    t: int,
    places: Sequence[str],
    window: tuple[int, int],
    text: str,
    *,
    uses_llm: bool,
) -> list[str]:
    """What a reconsidering traveller recalls: ``places`` in this window of the day, then ``text``.

    Args:
        memory: The traveller's memory stream.
        t: The absolute minute.
        places: Where it is and where it goes.
        window: Minutes of the day around now.
        text: What it reconsiders.
        uses_llm: Whether an LLM decides.
    """
    return recall_place_time(
        memory, t, places, [window], uses_llm=uses_llm
    ) + recall_text(memory, t, text, uses_llm=uses_llm)
