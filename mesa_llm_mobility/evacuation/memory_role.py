"""The memory role: a second, stateless decision kind that rewrites a pedestrian's long-term memory.

After each committed turn the pedestrian's long-term memory is rewritten from two inputs only
(paper Sec. 2.3.3-2.3.4): the current memory text and a :class:`TurnSummary` of the turn (visible
people, adversaries and bodies in view, signage and opening states in view, affect and
witnessed events, the decision). The answer is first-person prose of at most 1,200 characters.
Facts live only by being rewritten: a fact left out is forgotten.

An LLM brain answers through :func:`render_memory_prompt`; the rule brain's writer
(:func:`memory_rule_policy`) composes the same kind of text from templates, one fact per
sentence: it carries the lasting facts of the current text forward (sightings, bodies, what
others said, openings), renews the transient ones from the turn (people around, shouts,
feelings, the plan) and drops those the turn no longer supports, so both brains forget by
omission and both produce records the knowledge graph (:mod:`.knowledge_graph`) can analyse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from pydantic import BaseModel, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.evacuation.prompts import MEMORY_CHARS


@dataclass(frozen=True)
class TurnSummary:
    """What the memory role is told about one committed turn (paper Sec. 2.3.3).

    Attributes:
        time_s: When the decision took effect.
        visible_people: Other pedestrians in view at decision time.
        adversary_ids: Ids of armed persons (A) in view.
        body_ids: Ids of persons lying motionless (D) in view.
        openings_in_view: ``(kind, opening id, state, direction, distance m)`` of openings in
            view (there is no signage in the plaza).
        fear: Engine fear value.
        fear_level: Its level (calm, alert, afraid, high fear).
        events: Witnessed and heard events, one phrase each (``"heard someone shouting ..."``).
        known_openings: ``(kind, opening id, state, direction, distance m)`` of every opening the
            pedestrian knows, as last seen.
        stale_threat: ``(direction, distance m, age s)`` of the remembered last sighting of the
            armed person, when it is out of view.
        told: ``(sender, kind, direction)`` of exit information received (sender ``None``:
            the plaza's system).
        action: The decided action (``None`` when the answer was rejected).
        situation: The appraisal.
        intent: The standing goal.
        urgency: Self-reported urgency.
        target: The decision's target in words (``"exit E1"``, ``"the frontier to the NE"``).
        feedback: The engine's feedback (accepted or rejected and why).
    """

    time_s: float
    visible_people: int
    adversary_ids: tuple[int, ...]
    body_ids: tuple[int, ...]
    openings_in_view: tuple[tuple[str, str, str, str, float], ...]
    fear: float
    fear_level: str
    events: tuple[str, ...]
    known_openings: tuple[tuple[str, str, str, str, float], ...]
    stale_threat: tuple[str, float, float] | None
    told: tuple[tuple[int | None, str, str], ...]
    action: str | None
    situation: str
    intent: str
    urgency: float
    target: str | None
    feedback: str

    def describe(self) -> str:
        """The summary as the memory role's user message lists it."""
        openings = "; ".join(
            f"{kind} {oid} {state}, {direction}, {dist:.0f} m"
            for kind, oid, state, direction, dist in self.openings_in_view
        )
        decision = (
            f"{self.action}, situation {self.situation}, intent {self.intent!r}, "
            f"urgency {self.urgency:.2f}"
            + (f", target {self.target}" if self.target else "")
            if self.action is not None
            else f"no new decision (answer rejected); standing intent {self.intent!r}"
        )
        return "\n".join(
            [
                f"- time: {self.time_s:.2f} s",
                f"- people in view: {self.visible_people}",
                "- armed persons (A) in view: "
                + (", ".join(map(str, self.adversary_ids)) or "none"),
                "- persons lying motionless (D) in view: "
                + (", ".join(map(str, self.body_ids)) or "none"),
                "- signage in view: none; openings in view: " + (openings or "none"),
                f"- affect: fear {self.fear:.2f} ({self.fear_level})",
                "- events: " + ("; ".join(self.events) or "none"),
                f"- decision: {decision}",
                f"- engine feedback: {self.feedback}",
            ]
        )


@dataclass(frozen=True, eq=False)
class MemoryContext:
    """What the memory role gets: one pedestrian's current memory and its committed turn."""

    agent_id: int
    version: int
    """The version this revision will be (1 for the first)."""
    memory: str
    turn: TurnSummary


class MemoryRevision(BaseModel):
    """The answer to an ``EvacuationMemory`` request: the rewritten memory."""

    memory: str = Field(
        min_length=1,
        max_length=MEMORY_CHARS,
        description="first-person account, at most 1,200 characters",
    )


MEMORY_POLICY = (
    "You keep the long-term memory of one pedestrian in a public plaza. You are given the "
    "current memory text and a summary of the turn just committed; nothing else is kept "
    "between calls. Rewrite the memory as a first-person account of at most 1,200 characters, "
    "one fact per sentence. Keep the facts that still hold, reword or correct the ones the turn "
    "changed, and leave out the ones that expired: what you leave out is forgotten. When an "
    "armed person is out of sight, keep only where and when you last saw it. Answer with one "
    'JSON object: {"memory": "..."}.'
)


def render_memory_prompt(context: MemoryContext) -> list[Message]:
    """System message (the memory policy) and user message (current memory, committed turn)."""
    return [
        {"role": "system", "content": MEMORY_POLICY},
        {
            "role": "user",
            "content": (
                f"PEDESTRIAN {context.agent_id}, revision {context.version}.\n"
                f"CURRENT MEMORY: {context.memory or '(empty)'}\n"
                f"COMMITTED TURN:\n{context.turn.describe()}"
            ),
        },
    ]


# --------------------------------------------------------------------- the rule writer
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

LASTING_KEYS = ("sighting", "body", "told", "opening")
"""Fact tracks the rule writer carries forward from the current text until the turn replaces them."""

_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^I know of the (\w+) (\S+?) "), "opening:{1}"),
    (re.compile(r"^I saw an armed person"), "sighting"),
    (re.compile(r"^I last saw the armed person"), "sighting"),
    (re.compile(r"^I saw a person lying motionless"), "body"),
    (re.compile(r"^Pedestrian (\d+) told me"), "told:{0}"),
    (
        re.compile(r"^The plaza's announcement told me an open \w+ lies to the (\w+)"),
        "told:system:{0}",
    ),
)


def split_sentences(text: str) -> list[str]:
    """The sentences of a memory text (split after ``.``, ``!`` or ``?`` and white space)."""
    return [part.strip() for part in _SENTENCE_END.split(text.strip()) if part.strip()]


@lru_cache(maxsize=1 << 16)
def fact_key(sentence: str) -> str | None:
    """The rule writer's key of a lasting fact sentence (``opening:E1``, ``sighting``, ...).

    Cached: memory texts are built from a few templates, so a crowd's texts repeat the same
    sentences turn after turn.
    """
    for pattern, key in _KEY_PATTERNS:
        match = pattern.match(sentence)
        if match:
            return key.format(*match.groups())
    return None


def turn_facts(turn: TurnSummary) -> list[tuple[str | None, str]]:
    """The turn's facts as ``(key, sentence)``: lasting ones keyed, transient ones not."""
    facts: list[tuple[str | None, str]] = []
    for kind, oid, state, direction, dist in turn.known_openings:
        facts.append(
            (
                f"opening:{oid}",
                (
                    f"I know of the {kind} {oid} to the {direction}, about {dist:.0f} m away, "
                    f"{state} when I last saw it."
                ),
            )
        )
    if turn.adversary_ids:
        facts.append(
            (
                "sighting",
                f"I saw an armed person rushing at the crowd at {turn.time_s:.0f} s.",
            )
        )
    elif turn.stale_threat is not None:
        direction, dist, age = turn.stale_threat
        facts.append(
            (
                "sighting",
                (
                    f"I last saw the armed person {age:.0f} s ago, now to my {direction}, about "
                    f"{dist:.0f} m away."
                ),
            )
        )
    if turn.body_ids:
        facts.append(("body", "I saw a person lying motionless on the ground."))
    for sender, kind, direction in turn.told:
        facts.append(
            (
                f"told:{sender}",
                f"Pedestrian {sender} told me an open {kind} lies to the {direction}.",
            )
            if sender is not None
            else (
                f"told:system:{direction}",
                f"The plaza's announcement told me an open {kind} lies to the {direction}.",
            )
        )
    facts.extend((None, f"I {event}.") for event in turn.events)
    if turn.visible_people:
        facts.append((None, f"I can see {turn.visible_people} other people around me."))
    facts.append((None, f"I feel {turn.fear_level}."))
    if turn.action is not None:
        target = f" toward {turn.target}" if turn.target else ""
        facts.append((None, f"I decided to {turn.intent.replace('_', ' ')}{target}."))
    else:
        facts.append(
            (
                None,
                f"My last answer was rejected, so I keep trying to {turn.intent.replace('_', ' ')}.",
            )
        )
    return facts


def compose_memory(memory: str, turn: TurnSummary) -> str:
    """The rule writer's revision: lasting facts carried or renewed, transient ones from the turn.

    Lasting facts of ``memory`` (:data:`LASTING_KEYS`) stay unless the turn states the same fact
    anew; every other sentence of ``memory`` is dropped (forgotten) unless the turn renews it.
    When the text exceeds :data:`~.prompts.MEMORY_CHARS`, the oldest transient facts go first,
    then the oldest lasting ones.

    Args:
        memory: The current memory text.
        turn: The committed turn.

    Returns:
        The new memory text (never empty, at most ``MEMORY_CHARS`` characters).
    """
    new = turn_facts(turn)
    renewed = {key for key, _ in new if key is not None}
    kept = [
        (key, sentence)
        for sentence in split_sentences(memory)
        if (key := fact_key(sentence)) is not None and key not in renewed
    ]
    facts = kept + new
    while len(" ".join(s for _, s in facts)) > MEMORY_CHARS and len(facts) > 1:
        transient = [k for k, (key, _) in enumerate(facts) if key is None]
        facts.pop(transient[0] if transient else 0)
    return " ".join(s for _, s in facts)[:MEMORY_CHARS]


def memory_rule_policy(
    context: MemoryContext, rng: np.random.Generator
) -> MemoryRevision:
    """The rule brain's memory writer (templates; draws nothing from ``rng``)."""
    return MemoryRevision(memory=compose_memory(context.memory, context.turn))


EVACUATION_MEMORY: DecisionKind[MemoryContext, MemoryRevision] = DecisionKind(
    name="EvacuationMemory",
    context_type=MemoryContext,
    output_schema=MemoryRevision,
    render_prompt=render_memory_prompt,
    rule_policy=memory_rule_policy,
)
"""The memory role's decision kind (stateless: the context is the whole input)."""
