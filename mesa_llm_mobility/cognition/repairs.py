"""Repair rounds: what the model is told about its invalid answer, and how it is asked again.

A model at temperature 0 given its own invalid answer and the errors tends to answer the same
again, word for word, and every such round is a call wasted. So a repair round differs from the
one before in two ways: it is sampled at least at a temperature that rises with the round
(:func:`repair_temperature`: :data:`REPAIR_TEMPERATURE_STEP` times the round, at most 1; a
request's own higher temperature, e.g. a temperature study's, is kept), and its instruction says
so when the answer repeated an earlier rejected one, and when the answer was cut off at the
token limit (:func:`repair_instruction`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

REPAIR_INSTRUCTION = (
    "Your previous answer could not be accepted:\n{errors}\n"
    "Reply again with only the corrected JSON object, fixing every error listed."
)

REPEATED_NOTE = (
    "Your answer repeated an earlier rejected answer word for word: change it so that it "
    "fixes the errors listed."
)

TRUNCATED_ERROR = (
    "your answer was cut off at the token limit{limit} before the JSON object was complete: "
    "answer with a shorter JSON object (short texts, no more items than asked for)"
)

REPAIR_TEMPERATURE_STEP = 0.3
"""Repair round ``k`` is sampled at least at ``k`` times this temperature (at most 1.0)."""


def repair_temperature(temperature: float, round_index: int) -> float:
    """The temperature of round ``round_index`` (0: the first answer, at ``temperature``).

    ``max(temperature, min(1, 0.3 x round))``: a near-greedy request is warmed up round by
    round; a temperature already above the floor is kept (never lowered).
    """
    if round_index <= 0:
        return temperature
    floor = min(1.0, REPAIR_TEMPERATURE_STEP * round_index)
    return round(max(temperature, floor), 6)


def repair_params(params: Mapping[str, Any], round_index: int) -> Mapping[str, Any]:
    """``params`` with the temperature of round ``round_index`` (the same object for round 0)."""
    if round_index <= 0:
        return params
    temperature = float(params.get("temperature", 0.0) or 0.0)
    return {**params, "temperature": repair_temperature(temperature, round_index)}


def truncation_error(max_tokens: int | None) -> str:
    """The error of an answer cut off at the token limit (``finish_reason == "length"``)."""
    limit = f" ({max_tokens} tokens)" if max_tokens else ""
    return TRUNCATED_ERROR.format(limit=limit)


def repair_instruction(
    errors: Sequence[str], answer: str, earlier_answers: Sequence[str]
) -> str:
    """The user message asking for a corrected answer.

    Args:
        errors: What was wrong with ``answer``.
        answer: The rejected answer.
        earlier_answers: The rejected answers of the rounds before it.
    """
    text = REPAIR_INSTRUCTION.format(errors="\n".join(f"- {e}" for e in errors))
    if answer.strip() and answer.strip() in {a.strip() for a in earlier_answers}:
        text = f"{text}\n{REPEATED_NOTE}"
    return text
