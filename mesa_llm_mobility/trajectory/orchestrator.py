"""Stage 1, the orchestrator: an individual's activity chain for one date, as a decision kind.

The prompt follows the paper (Sec. III-C2): day signals (date, weekday, day type), a few
exemplar chains of the individual's evidence days verbatim, compact summaries (activity
frequencies and the strongest transitions) and hard constraints (the activity vocabulary, no
activity twice in a row, a length bound; home start and end as a soft prior). The answer is
``{"activities": [...]}``; the domain validator checks the constraints, the LLM brain re-prompts
with its errors (the bounded generate-verify loop) and falls back to the rule policy, which
samples a chain from the individual's weekday-conditioned activity Markov model.

Two constraints come from the evidence days themselves: the chain's length lies within their
range, and when nearly all of them start (end) with one activity, Home in any stay-point data
whose days run from midnight to midnight, the chain starts (ends) with it too. The rule policy
draws a length from the evidence days and samples the Markov chain conditioned on that length
and on the anchors (an unconditioned first-order chain ends a day at its first return home:
its lengths are geometric, a quarter of them a lone Home visit).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.trajectory.activities import ACTIVITIES, ACTIVITY_INDEX, HOME
from mesa_llm_mobility.trajectory.evidence import END, WEEKDAYS, day_type


@dataclass(frozen=True)
class ChainContext:
    """What the orchestrator knows about an individual and the target date.

    Attributes:
        agent_id: The individual.
        date: The target date (ISO).
        weekday: 0 = Monday.
        exemplars: Evidence chains, verbatim (most recent first).
        activity_shares: (activity, share of visits) in the evidence, largest first.
        transitions: (from, to, share of transitions), strongest first.
        feasible: Activities with candidate POIs (own or peers'): the chain's vocabulary.
        max_length: Most activities a chain may have.
        start_probs: Start probabilities of the Markov model, shape (16,).
        transition_probs: Transition probabilities with the end state, shape (16, 17).
        lengths: Activities per evidence day (empty: no length constraint).
        first_activity: The activity the day must start with (``None``: any).
        last_activity: The activity the day must end with (``None``: any).
    """

    agent_id: object
    date: str
    weekday: int
    exemplars: tuple[tuple[str, ...], ...]
    activity_shares: tuple[tuple[str, float], ...]
    transitions: tuple[tuple[str, str, float], ...]
    feasible: tuple[str, ...]
    max_length: int
    start_probs: np.ndarray
    transition_probs: np.ndarray
    lengths: tuple[int, ...] = ()
    first_activity: str | None = None
    last_activity: str | None = None

    @property
    def length_range(self) -> tuple[int, int]:
        """Shortest and longest allowed chain (the evidence days' range, within the bound)."""
        if not self.lengths:
            return 1, self.max_length
        return min(*self.lengths, self.max_length), min(
            max(self.lengths), self.max_length
        )


class ActivityChain(BaseModel):
    """The day's activities, in order."""

    activities: list[str] = Field(
        min_length=1,
        description="activity names from the vocabulary, in visiting order",
    )


def render_chain_prompt(context: ChainContext) -> list[Message]:
    """The orchestrator prompt: day signals, exemplars, summaries and constraints."""
    weekday = WEEKDAYS[context.weekday]
    exemplars = "\n".join(
        f"{index}. {list(chain)}" for index, chain in enumerate(context.exemplars, 1)
    )
    shares = ", ".join(f"{name} {share:.2f}" for name, share in context.activity_shares)
    transitions = ", ".join(
        f"{first}->{second} {share:.2f}" for first, second, share in context.transitions
    )
    shortest, longest = context.length_range
    length_line = (
        f"- between {shortest} and {longest} activities (the history's days have "
        f"{np.mean(context.lengths):.1f} on average)\n"
        if context.lengths
        else f"- at most {context.max_length} activities\n"
    )
    anchors = [
        f"- the day must {verb} with {name} (as the history's days do)\n"
        for verb, name in (
            ("start", context.first_activity),
            ("end", context.last_activity),
        )
        if name is not None
    ]
    soft_home = "" if anchors else "- the day usually starts and ends at Home\n"
    return [
        {
            "role": "system",
            "content": (
                "You plan realistic daily activity chains for one individual of a city, "
                "grounded in their own history."
            ),
        },
        {
            "role": "user",
            "content": (
                f"Individual {context.agent_id}. Date {context.date}: {weekday}, "
                f"a {day_type(context.weekday)}.\n"
                f"Exemplar chains from this individual's history:\n{exemplars}\n"
                f"Activity frequencies: {shares}\n"
                f"Typical transitions: {transitions}\n"
                "Constraints:\n"
                f"- use only these activities: {', '.join(context.feasible)}\n"
                "- never the same activity twice in a row\n"
                + length_line
                + "".join(anchors)
                + soft_home
                + 'Answer with the chain as {"activities": [...]}.'
            ),
        },
    ]


def validate_chain(context: ChainContext, chain: ActivityChain) -> list[str]:
    """Vocabulary, feasibility, no adjacent duplicates, the length range and the anchors."""
    errors = []
    activities = chain.activities
    shortest, longest = context.length_range
    if not shortest <= len(activities) <= longest:
        errors.append(
            f"the chain has {len(activities)} activities; between {shortest} and {longest} "
            "are allowed"
        )
    for verb, name, actual in (
        ("start", context.first_activity, activities[0] if activities else None),
        ("end", context.last_activity, activities[-1] if activities else None),
    ):
        if name is not None and actual != name:
            errors.append(f"the chain must {verb} with {name}, not {actual}")
    unknown = [name for name in activities if name not in ACTIVITY_INDEX]
    if unknown:
        errors.append(
            f"unknown activities {unknown}; use only: {', '.join(ACTIVITIES)}"
        )
    infeasible = sorted(
        {
            name
            for name in activities
            if name in ACTIVITY_INDEX and name not in context.feasible
        }
    )
    if infeasible:
        errors.append(
            f"activities {infeasible} have no known place for this individual; use only: "
            f"{', '.join(context.feasible)}"
        )
    repeats = [
        f"{first} at positions {index} and {index + 1}"
        for index, (first, second) in enumerate(itertools.pairwise(activities), 1)
        if first == second
    ]
    if repeats:
        errors.append(f"the same activity twice in a row: {'; '.join(repeats)}")
    return errors


def sample_markov_chain(
    start_probs: np.ndarray,
    transition_probs: np.ndarray,
    rng: np.random.Generator,
    max_length: int,
    allowed: np.ndarray | None = None,
) -> list[int]:
    """Draw a chain of activity codes from a Markov model with an end state.

    Args:
        start_probs: Shape (16,).
        transition_probs: Shape (16, 17); column 16 is the end of the day.
        rng: The generator.
        max_length: The chain stops at this length.
        allowed: Optional mask of allowed activities (others are never drawn).

    Returns:
        The codes; never two alike in a row.
    """
    start = start_probs if allowed is None else np.where(allowed, start_probs, 0.0)
    if start.sum() <= 0:
        start = np.ones_like(start) if allowed is None else allowed.astype(float)
    transitions = np.array(transition_probs, dtype=float)
    np.fill_diagonal(transitions[:, :END], 0.0)
    if allowed is not None:
        transitions[:, :END][:, ~allowed] = 0.0
    cumulative = np.cumsum(transitions, axis=1)
    start_cumulative = np.cumsum(start)
    chain = [_draw(start_cumulative, rng)]
    while len(chain) < max_length:
        row = cumulative[chain[-1]]
        if row[-1] <= 0:
            break
        following = _draw(row, rng)
        if following == END:
            break
        chain.append(following)
    return chain


def _draw(cumulative: np.ndarray, rng: np.random.Generator) -> int:
    """Index drawn with probabilities given by a cumulative sum (zero entries never drawn)."""
    index = int(
        np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")
    )
    return min(index, len(cumulative) - 1)


def sample_conditioned_chain(
    start_probs: np.ndarray,
    transition_probs: np.ndarray,
    rng: np.random.Generator,
    length: int,
    allowed: np.ndarray | None = None,
    first: int | None = None,
    last: int | None = None,
) -> list[int] | None:
    """Draw a chain of exactly ``length`` codes from a Markov model with an end state.

    The chain is drawn from the model conditioned on ending after ``length`` activities (and,
    if given, on starting with ``first`` and ending with ``last``): backward probabilities
    ``b_k(s)`` of ending after exactly ``k`` more steps weight every draw.

    Args:
        start_probs: Shape (16,).
        transition_probs: Shape (16, 17); column 16 is the end of the day.
        rng: The generator.
        length: Activities in the chain (>= 1).
        allowed: Optional mask of allowed activities.
        first: Optional code the chain starts with.
        last: Optional code the chain ends with.

    Returns:
        The codes (never two alike in a row), or ``None`` when the model cannot produce such
        a chain.
    """
    transitions = np.array(transition_probs, dtype=float)
    np.fill_diagonal(transitions[:, :END], 0.0)
    start = np.array(start_probs, dtype=float)
    if allowed is not None:
        transitions[:, :END][:, ~allowed] = 0.0
        start = np.where(allowed, start, 0.0)
    if first is not None:
        start = np.where(np.arange(start.size) == first, start, 0.0)
    if last is not None:
        ending = transitions[:, END].copy()
        transitions[:, END] = 0.0
        transitions[last, END] = ending[last] if ending[last] > 0 else 1.0
    backward = [transitions[:, END]]
    for _ in range(length - 1):
        backward.append(transitions[:, :END] @ backward[-1])
    weights = start * backward[length - 1]
    if weights.sum() <= 0:
        return None
    chain = [_draw(np.cumsum(weights), rng)]
    for step in range(length - 2, -1, -1):
        chain.append(
            _draw(np.cumsum(transitions[chain[-1], :END] * backward[step]), rng)
        )
    return chain


def chain_rule_policy(context: ChainContext, rng: np.random.Generator) -> ActivityChain:
    """Sample a chain from the individual's weekday-conditioned activity Markov model.

    With evidence lengths: a length drawn from them, the chain conditioned on it and on the
    anchors (:func:`sample_conditioned_chain`); where the model cannot make such a chain (or
    without lengths), the unconditioned chain.
    """
    allowed = np.array([name in context.feasible for name in ACTIVITIES])
    codes = None
    if context.lengths:
        shortest, longest = context.length_range
        length = int(
            min(
                max(context.lengths[int(rng.integers(len(context.lengths)))], shortest),
                longest,
            )
        )
        codes = sample_conditioned_chain(
            context.start_probs,
            context.transition_probs,
            rng,
            length,
            allowed,
            first=_code(context.first_activity),
            last=_code(context.last_activity),
        )
    if codes is None:
        codes = sample_markov_chain(
            context.start_probs,
            context.transition_probs,
            rng,
            context.max_length,
            allowed,
        )
    return ActivityChain(activities=[ACTIVITIES[code] for code in codes])


def _code(name: str | None) -> int | None:
    return None if name is None else ACTIVITY_INDEX[name]


def chain_schema(context: ChainContext, schema: dict[str, Any]) -> dict[str, Any]:
    """The request's schema: activities of the individual's vocabulary, as many as allowed."""
    activities = schema["properties"]["activities"]
    if context.feasible:
        activities["items"] = {"type": "string", "enum": list(context.feasible)}
    activities["minItems"], activities["maxItems"] = context.length_range
    return schema


ACTIVITY_CHAIN: DecisionKind[ChainContext, ActivityChain] = DecisionKind(
    name="ActivityChain",
    context_type=ChainContext,
    output_schema=ActivityChain,
    render_prompt=render_chain_prompt,
    rule_policy=chain_rule_policy,
    validate=validate_chain,
    request_schema=chain_schema,
)
"""The orchestrator's decision: which activities, in which order, on one date."""

__all__ = [
    "ACTIVITY_CHAIN",
    "HOME",
    "ActivityChain",
    "ChainContext",
    "chain_rule_policy",
    "render_chain_prompt",
    "sample_conditioned_chain",
    "sample_markov_chain",
    "validate_chain",
]
