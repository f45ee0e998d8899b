"""What a pedestrian answers: the ``EvacuationMove`` output schema and its goal categories.

The paper's decision model reports an action, a situation assessment, an intention with its
urgency (the standing goal), and an offered route or a target (Sec. 2.3.2). The engine acts on
the answer (whom it shouts to, whom it tells of an exit, how far a decision revises the last),
so every field it relies on is an explicit, enumerated field the policy text explains
(:mod:`.prompts`), never words of the free-text ``intent``:

- ``goal``: the standing goal's category (:data:`GOAL_CATEGORIES`), beside ``intent``, the
  same goal in the pedestrian's own words;
- ``situation`` and ``action``: enumerated, as in the paper.

Enumerated values are read whatever their case and punctuation (``"Seek exit"``,
``"SEEK-EXIT."`` and ``"seek_exit"`` are one value); unknown extra fields are ignored;
``intent`` and ``context_capsule`` may be left out (the standing intent and the capsule then
stay as they were: a standing goal persists until the pedestrian changes it).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

CAPSULE_CHARS = 500
"""Length limit of the short-term context capsule (paper Sec. 2.3.3)."""

Situation = Literal["normal", "unsure", "danger"]
Action = Literal["move", "wait", "turn_and_observe"]
Goal = Literal["tour", "observe", "explore", "seek_exit", "follow_others", "escape"]

GOAL_CATEGORIES: dict[str, str] = {
    "tour": "go on with your visit to the plaza as if nothing were wrong",
    "observe": "stop or look around to make sense of what is happening",
    "explore": "explore the parts of the plaza you do not know yet",
    "seek_exit": "head for an exit or gate to leave the plaza",
    "follow_others": "go where the people around you are going",
    "escape": "get away from a danger",
}
"""Every standing-goal category, with the meaning the policy text gives it."""

EVACUATING_GOALS: tuple[str, ...] = ("seek_exit", "follow_others", "escape")
"""Goals of a pedestrian who is leaving: heading for an opening with one of them, it tells
others nearby where that opening is (exit information, paper Sec. 2.3.7)."""

ESCAPE_GOAL = "escape"
"""The goal of a pedestrian who decided to escape (it shouts while it moves)."""


def enumerated(value: object) -> object:
    """An enumerated answer's value in the schema's spelling: lower case, words joined by ``_``.

    ``"Seek exit"``, ``"SEEK-EXIT."`` and ``" seek_exit "`` all become ``"seek_exit"``; a value
    that is not a string is returned as it is (the schema then refuses it).
    """
    if not isinstance(value, str):
        return value
    return re.sub(r"[^a-z0-9]+", "_", value.strip().lower()).strip("_")


class Offset(BaseModel):
    """A cell offset relative to ``@``: dx east, dy north."""

    dx: int = Field(ge=-200, le=200)
    dy: int = Field(ge=-200, le=200)


class EvacuationDecision(BaseModel):
    """The answer to an ``EvacuationMove`` request (every field is named in the policy text)."""

    action: Action = Field(description="move, wait or turn_and_observe")
    situation: Situation = Field(description="your appraisal: normal, unsure or danger")
    goal: Goal = Field(description="the category of your standing goal")
    intent: str | None = Field(
        default=None,
        min_length=1,
        max_length=80,
        description="your standing goal in your own words (left out: it stays as it was)",
    )
    urgency: float = Field(
        ge=0.0, le=1.0, description="how strongly immediate action is needed, 0-1"
    )
    route_id: str | None = Field(
        default=None, description="id of an offered route (R1...)"
    )
    target_offset: Offset | None = Field(
        default=None,
        description="target cell relative to @ when no offered route suits",
    )
    waypoint_offset: Offset | None = Field(
        default=None, description="optional intermediate cell relative to @"
    )
    context_capsule: str | None = Field(
        default=None,
        max_length=CAPSULE_CHARS,
        description="your working notes for the next turns (left out: they stay as they were)",
    )

    @field_validator("action", "situation", "goal", mode="before")
    @classmethod
    def _enumerated(cls, value: object) -> object:
        return enumerated(value)
