"""The ``RealismJudgement`` decision: which of two responses to a travel scenario is more realistic.

GATSim's microscopic validation (section 4.3) shows a judge model one scenario (environment,
profile, traffic, perceptions, memories) and two responses, a generative agent's and a human
annotator's, in random order, and asks whether the first, the second or neither ("tie") is more
realistic. Any brain can judge: an LLM through the LLM brain, or offline the rule judge
(:func:`judge_rule_policy`), a crude stand-in that prefers the response that engages more with
the scenario's specifics; it is there so the harness runs without a model, not to rate realism.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mesa_llm_mobility.cognition.kinds import DecisionKind, Message
from mesa_llm_mobility.urban.plans import compact_schema

JUDGE_SYSTEM = (
    "You are an impartial judge of human travel behaviour. You compare two responses to the same "
    "travel scenario and decide which one a real person in that situation would more plausibly "
    "give. Ignore the order and the length of the responses."
)
TIE_MARGIN = 0.05
"""The rule judge calls a tie when the two specificity scores differ by less than this."""
_TOKEN = re.compile(r"[A-Za-z_]+\d*(?:_link_\d+)?|\d\d:\d\d")


@dataclass(frozen=True)
class JudgeContext:
    """One blinded pair to judge.

    Attributes:
        pair_id: The pair's id (the judge never sees which response is whose).
        situation: The scenario as the responders saw it.
        first: The first response.
        second: The second response.
    """

    pair_id: str
    situation: str
    first: str
    second: str


class JudgeOutput(BaseModel):
    """The judge's verdict: the more realistic response, or a tie."""

    model_config = ConfigDict(json_schema_extra=compact_schema)

    verdict: Literal["first", "second", "tie"]
    reason: str = Field(default="", max_length=600)


def render_judge_prompt(ctx: JudgeContext) -> list[Message]:
    """Show the scenario and the two responses; ask for first, second or tie."""
    user = "\n".join(
        [
            "Scenario:",
            ctx.situation,
            "",
            "Response 1:",
            ctx.first,
            "",
            "Response 2:",
            ctx.second,
            "",
            (
                "Which response is more realistic for this person? Answer verdict "
                '"first", "second" or "tie", with a one-sentence reason.'
            ),
        ]
    )
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": user},
    ]


def specificity(situation: str, response: str) -> float:
    """Share of the response's distinct tokens that name something in the situation."""
    known = {t.lower() for t in _TOKEN.findall(situation) if len(t) > 3}
    said = {t.lower() for t in _TOKEN.findall(response) if len(t) > 3}
    return len(said & known) / len(said) if said else 0.0


def judge_rule_policy(ctx: JudgeContext, rng: np.random.Generator) -> JudgeOutput:
    """Prefer the response that refers more to the scenario's places, times and people."""
    first = specificity(ctx.situation, ctx.first)
    second = specificity(ctx.situation, ctx.second)
    if abs(first - second) < TIE_MARGIN:
        return JudgeOutput(verdict="tie", reason=f"equally specific ({first:.2f})")
    verdict = "first" if first > second else "second"
    return JudgeOutput(
        verdict=verdict,
        reason=f"more specific to the scenario ({max(first, second):.2f} vs {min(first, second):.2f})",
    )


REALISM_JUDGEMENT: DecisionKind[JudgeContext, JudgeOutput] = DecisionKind(
    name="RealismJudgement",
    context_type=JudgeContext,
    output_schema=JudgeOutput,
    render_prompt=render_judge_prompt,
    rule_policy=judge_rule_policy,
)
