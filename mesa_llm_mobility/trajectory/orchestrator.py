"""Stage 1, the orchestrator: an individual's activity chain for one date, as a decision kind.

The prompt follows the paper (Sec. III-C2): day signals (date, weekday, day type), a few
exemplar chains of the individual's evidence days verbatim, compact summaries (activity
frequencies and the strongest transitions) and hard constraints (the activity vocabulary, no
activity twice in a row, a length bound; home start and end as a soft prior). The answer is
``{"activities": [...]}``; the domain validator checks the constraints, the LLM brain re-prompts
with its errors (the bounded generate-verify loop) and falls back to the rule policy, which
samples a chain from the individual's weekday-conditioned activity Markov model.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

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
                f"- at most {context.max_length} activities\n"
                "- the day usually starts and ends at Home\n"
                'Answer with the chain as {"activities": [...]}.'
            ),
        },
    ]


def validate_chain(context: ChainContext, chain: ActivityChain) -> list[str]:
    """Vocabulary, feasibility, no adjacent duplicates and the length bound."""
    errors = []
    activities = chain.activities
    if len(activities) > context.max_length:
        errors.append(
            f"the chain has {len(activities)} activities; at most {context.max_length} are allowed"
        )
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


def chain_rule_policy(context: ChainContext, rng: np.random.Generator) -> ActivityChain:
    """Sample a chain from the individual's weekday-conditioned activity Markov model."""
    allowed = np.array([name in context.feasible for name in ACTIVITIES])
    codes = sample_markov_chain(
        context.start_probs, context.transition_probs, rng, context.max_length, allowed
    )
    return ActivityChain(activities=[ACTIVITIES[code] for code in codes])


ACTIVITY_CHAIN: DecisionKind[ChainContext, ActivityChain] = DecisionKind(
    name="ActivityChain",
    context_type=ChainContext,
    output_schema=ActivityChain,
    render_prompt=render_chain_prompt,
    rule_policy=chain_rule_policy,
    validate=validate_chain,
)
"""The orchestrator's decision: which activities, in which order, on one date."""

__all__ = [
    "ACTIVITY_CHAIN",
    "HOME",
    "ActivityChain",
    "ChainContext",
    "chain_rule_policy",
    "render_chain_prompt",
    "sample_markov_chain",
    "validate_chain",
]
