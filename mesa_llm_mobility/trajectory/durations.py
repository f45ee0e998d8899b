"""Dwell times as decision kinds: one visit at a time, or every visit of a day in one call.

``VisitDuration`` is the paper's duration worker (Sec. III-D3): given the visit's start, the time
left before midnight, the activity and its historical prior, and the activities still to come,
answer ``{"duration_minutes": n}``; the verifier accepts ``n`` in ``[d_min, min(d_max, budget
left)]``; the LLM brain re-prompts with the error and falls back to the rule policy, which draws
from the individual's observed dwell times of that activity (the prior).

``DayDurations`` asks for all of a day's durations at once (one call per trajectory instead of
one per visit): the context holds the whole grounded day (activities, travel times, priors) and
the verifier checks every duration's bounds and that the day ends by midnight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from mesa_llm_mobility.clock import MINUTES_PER_DAY
from mesa_llm_mobility.cognition.kinds import DecisionKind, Message

DURATION_JITTER_SIGMA = 0.1
"""Log-normal jitter of a dwell time drawn from the prior (keeps days from being copies)."""


def _clock(minute: float) -> str:
    minute = round(minute)
    return f"{minute // 60:02d}:{minute % 60:02d}"


@dataclass(frozen=True)
class DurationPrior:
    """What the history says about one visit's dwell time.

    Attributes:
        activity: The activity.
        prior_minutes: Mean observed dwell (60 when never observed).
        samples: Observed dwell minutes (may be empty).
        min_minutes: Shortest allowed.
        max_minutes: Longest allowed (before the budget).
    """

    activity: str
    prior_minutes: float
    samples: np.ndarray
    min_minutes: int
    max_minutes: int

    def draw(self, rng: np.random.Generator) -> float:
        """A dwell time from the prior: an observed one with a little jitter, else the mean."""
        if self.samples.size:
            value = float(self.samples[int(rng.integers(self.samples.size))])
            return value * math.exp(rng.normal(0.0, DURATION_JITTER_SIGMA))
        return self.prior_minutes


# ---------------------------------------------------------------------------- one visit
@dataclass(frozen=True)
class VisitDurationContext:
    """What the duration worker knows for one visit.

    Attributes:
        agent_id: The individual.
        prior: The visit's dwell-time prior and bounds.
        start_minute: When the visit starts (minutes after midnight).
        remaining: The activities after this one.
        remaining_expected_minutes: Their prior dwell times, summed.
        remaining_travel_minutes: Travel before them, summed.
    """

    agent_id: object
    prior: DurationPrior
    start_minute: float
    remaining: tuple[str, ...]
    remaining_expected_minutes: float
    remaining_travel_minutes: float = 0.0

    @property
    def budget_minutes(self) -> int:
        """Whole minutes left before midnight."""
        return max(int(MINUTES_PER_DAY - self.start_minute), 0)

    @property
    def reserved_minutes(self) -> int:
        """Minutes the remaining visits need at least: their travel and ``d_min`` each."""
        return int(
            np.ceil(
                self.remaining_travel_minutes
                + self.prior.min_minutes * len(self.remaining)
            )
        )

    @property
    def bounds(self) -> tuple[int, int]:
        """``[d_min, min(d_max, budget left)]``, the budget net of :attr:`reserved_minutes`.

        Reserving the remaining visits' minimum keeps the day's last visits (its return home)
        inside the day; the paper's ``budget_left`` without it let a long visit push them past
        midnight, where they were dropped.
        """
        upper = min(
            self.prior.max_minutes,
            max(self.budget_minutes - self.reserved_minutes, 0),
        )
        return min(self.prior.min_minutes, upper), upper


class VisitDuration(BaseModel):
    """How long the visit lasts."""

    duration_minutes: int = Field(ge=0, description="whole minutes")


def render_visit_duration_prompt(context: VisitDurationContext) -> list[Message]:
    """The paper's duration prompt: time, activity and prior, schedule pressure."""
    low, high = context.bounds
    return [
        {"role": "system", "content": "You schedule time for one individual's day."},
        {
            "role": "user",
            "content": (
                f"Current time: {_clock(context.start_minute)}\n"
                f"Activity to schedule: {context.prior.activity} (historical average: "
                f"{round(context.prior.prior_minutes)} minutes)\n"
                f"Remaining activities today: {list(context.remaining)}\n"
                f"Estimated time needed for them: {round(context.remaining_expected_minutes)} minutes\n"
                f"Time until midnight: {context.budget_minutes} minutes, at least "
                f"{context.reserved_minutes} of them for the remaining activities and travel\n"
                f"Decide a realistic duration between {low} and {high} minutes."
            ),
        },
    ]


def validate_visit_duration(
    context: VisitDurationContext, answer: VisitDuration
) -> list[str]:
    """The duration lies in ``[d_min, min(d_max, budget left)]``."""
    low, high = context.bounds
    if not low <= answer.duration_minutes <= high:
        return [
            (
                f"duration_minutes {answer.duration_minutes} is outside [{low}, {high}] "
                f"({context.budget_minutes} minutes are left before midnight, "
                f"{context.reserved_minutes} of them for the remaining activities)"
            )
        ]
    return []


def visit_duration_rule_policy(
    context: VisitDurationContext, rng: np.random.Generator
) -> VisitDuration:
    """Draw from the prior; under schedule pressure, only this visit's share; clipped.

    When the draw and the remaining visits' priors do not fit in the time left after the
    remaining travel, the visit keeps its proportional share of that time (as
    :func:`fit_durations` shrinks a whole day), so the day's last visits are not pushed past
    midnight and dropped.
    """
    low, high = context.bounds
    drawn = context.prior.draw(rng)
    available = context.budget_minutes - context.remaining_travel_minutes
    wanted = drawn + context.remaining_expected_minutes
    if context.remaining and wanted > available:
        drawn = max(available, 0.0) * drawn / wanted
    value = round(float(np.clip(drawn, low, high)))
    return VisitDuration(duration_minutes=value)


def visit_duration_schema(
    context: VisitDurationContext, schema: dict[str, Any]
) -> dict[str, Any]:
    """The request's schema: the duration within the visit's bounds."""
    low, high = context.bounds
    schema["properties"]["duration_minutes"] |= {"minimum": low, "maximum": high}
    return schema


VISIT_DURATION: DecisionKind[VisitDurationContext, VisitDuration] = DecisionKind(
    name="VisitDuration",
    context_type=VisitDurationContext,
    output_schema=VisitDuration,
    render_prompt=render_visit_duration_prompt,
    rule_policy=visit_duration_rule_policy,
    validate=validate_visit_duration,
    request_schema=visit_duration_schema,
)
"""One visit's dwell time (the paper's per-visit duration worker)."""


# ---------------------------------------------------------------------------- a whole day
@dataclass(frozen=True)
class DayDurationsContext:
    """A grounded day waiting for its dwell times.

    Attributes:
        agent_id: The individual.
        date: The date (ISO).
        first_start_minute: When the first visit starts.
        travel_minutes: Travel time before each visit (0 for the first).
        priors: Each visit's dwell-time prior and bounds.
    """

    agent_id: object
    date: str
    first_start_minute: float
    travel_minutes: tuple[float, ...]
    priors: tuple[DurationPrior, ...]

    @property
    def travel_total(self) -> float:
        """Minutes spent travelling."""
        return float(sum(self.travel_minutes))

    def end_minute(self, durations: list[int]) -> float:
        """When the day's last visit ends, with these durations."""
        return self.first_start_minute + self.travel_total + float(sum(durations))


class DayDurations(BaseModel):
    """Every visit's duration, in visit order."""

    durations_minutes: list[int] = Field(description="whole minutes, one per visit")


def render_day_durations_prompt(context: DayDurationsContext) -> list[Message]:
    """All visits of the day with their travel times and priors; the budget to midnight."""
    lines = [
        f"{index}. {prior.activity}: travel {round(travel)} min before, historical average "
        f"{round(prior.prior_minutes)} min, allowed {prior.min_minutes}-{prior.max_minutes} min"
        for index, (prior, travel) in enumerate(
            zip(context.priors, context.travel_minutes, strict=True), 1
        )
    ]
    budget = MINUTES_PER_DAY - context.first_start_minute - context.travel_total
    return [
        {"role": "system", "content": "You schedule time for one individual's day."},
        {
            "role": "user",
            "content": (
                f"Date {context.date}. The first visit starts at {_clock(context.first_start_minute)}.\n"
                "Visits in order:\n" + "\n".join(lines) + "\n"
                f"The durations must add up to at most {int(budget)} minutes so that the day ends "
                "by midnight.\nDecide a realistic duration for every visit."
            ),
        },
    ]


def validate_day_durations(
    context: DayDurationsContext, answer: DayDurations
) -> list[str]:
    """One duration per visit, each within its bounds, the day over by midnight."""
    durations = answer.durations_minutes
    if len(durations) != len(context.priors):
        return [
            f"durations_minutes has {len(durations)} values; the day has {len(context.priors)} visits"
        ]
    errors = [
        f"visit {index} ({prior.activity}): {value} minutes is outside "
        f"[{prior.min_minutes}, {prior.max_minutes}]"
        for index, (prior, value) in enumerate(
            zip(context.priors, durations, strict=True), 1
        )
        if not prior.min_minutes <= value <= prior.max_minutes
    ]
    end = context.end_minute(durations)
    if end > MINUTES_PER_DAY:
        errors.append(
            f"the day would end at minute {int(end)}, after midnight: shorten the durations by "
            f"{int(np.ceil(end - MINUTES_PER_DAY))} minutes in total"
        )
    return errors


def fit_durations(
    durations: np.ndarray, minimum: np.ndarray, budget: float
) -> np.ndarray:
    """Shrink durations above their minimum proportionally so that they sum to <= budget.

    Args:
        durations: Drawn durations (each >= its minimum).
        minimum: The minimums.
        budget: Minutes available (>= ``minimum.sum()``).

    Returns:
        Whole-minute durations summing to at most ``budget`` (floored).
    """
    durations = np.asarray(durations, dtype=float)
    total = durations.sum()
    if total > budget:
        slack = durations - minimum
        excess = total - budget
        durations = durations - slack * (
            excess / slack.sum() if slack.sum() > 0 else 0.0
        )
    return np.floor(durations + 1e-9).astype(np.int64)


def day_durations_rule_policy(
    context: DayDurationsContext, rng: np.random.Generator
) -> DayDurations:
    """Draw every duration from its prior, then shrink to fit before midnight."""
    drawn = np.array(
        [
            min(max(prior.draw(rng), prior.min_minutes), prior.max_minutes)
            for prior in context.priors
        ]
    )
    minimum = np.array([prior.min_minutes for prior in context.priors], dtype=float)
    budget = MINUTES_PER_DAY - context.first_start_minute - context.travel_total
    fitted = fit_durations(drawn, minimum, budget)
    return DayDurations(durations_minutes=[int(value) for value in fitted])


def day_durations_schema(
    context: DayDurationsContext, schema: dict[str, Any]
) -> dict[str, Any]:
    """The request's schema: one duration per visit, within the widest of their bounds."""
    durations = schema["properties"]["durations_minutes"]
    durations["minItems"] = durations["maxItems"] = len(context.priors)
    if context.priors:
        durations["items"] = {
            "type": "integer",
            "minimum": min(prior.min_minutes for prior in context.priors),
            "maximum": max(prior.max_minutes for prior in context.priors),
        }
    return schema


DAY_DURATIONS: DecisionKind[DayDurationsContext, DayDurations] = DecisionKind(
    name="DayDurations",
    context_type=DayDurationsContext,
    output_schema=DayDurations,
    render_prompt=render_day_durations_prompt,
    rule_policy=day_durations_rule_policy,
    validate=validate_day_durations,
    request_schema=day_durations_schema,
)
"""Every dwell time of one day, in one decision (one LLM call per trajectory)."""
