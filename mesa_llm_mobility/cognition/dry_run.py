"""Price an LLM run before paying for it: a rule-brain pass that counts what an LLM would be sent.

A :class:`DryRunBrain` answers every request with its kind's rule policy, as the rule brain does,
but the model sees an LLM brain (``model.uses_llm``), so it makes the requests an LLM run makes
(trip importance scoring, recalled memories in the contexts, ...). For each request it renders
the exact messages an :class:`~mesa_llm_mobility.cognition.LLMBrain` would send (the kind's
renderer with its schema instruction) and counts their tokens; the rule policy's answer, as
JSON, stands for the completion. :meth:`DryRunBrain.estimate` sums them per kind and prices them
with litellm's bundled cost map where it knows the model::

    brain = make_brain("dry-run:openai/gpt-4o-mini", rng=0)
    model = UrbanMobilityModel(days=1, brain=brain)
    model.run()
    for line in brain.estimate().lines():
        print(line)

**Token estimator** (:func:`estimate_tokens`): one token per four characters of text (OpenAI's
rule of thumb for English) plus four tokens per message and three for the answer's priming (the
chat format's overhead). JSON, numbers and non-English text tokenize denser, so read the counts
as ±25 %. **Calls**: one per decision, a lower bound: repair rounds (at most ``max_repairs`` per
invalid answer) and transport retries come on top, and an LLM's answers lead the run elsewhere
than the rule policies' (a different plan asks other questions later), so the later days of a
long run are the least certain part of the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mesa_llm_mobility.cognition.brain import Brain, rule_answer_record
from mesa_llm_mobility.cognition.kinds import (
    DecisionRequest,
    DecisionResult,
    Message,
    Outcome,
)
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.transport import price_tokens

CHARS_PER_TOKEN = 4
"""Characters of text per token of :func:`estimate_tokens`."""

TOKENS_PER_MESSAGE = 4
"""The chat format's tokens around each message."""

ANSWER_PRIMING_TOKENS = 3
"""The chat format's tokens that open the assistant's answer."""

ESTIMATE_COLUMNS = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` by the four-characters rule (rounded up; see the module docstring)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_tokens(
    messages: Sequence[Message], count: Callable[[str], int] = estimate_tokens
) -> int:
    """Tokens of a chat request's messages, with the chat format's overhead."""
    return ANSWER_PRIMING_TOKENS + sum(
        TOKENS_PER_MESSAGE + count(str(message.get("content") or ""))
        for message in messages
    )


@dataclass(frozen=True)
class LLMRunEstimate:
    """What an LLM run would cost, from a rule-brain pass (see the module docstring).

    Attributes:
        model: The litellm model priced.
        table: One row per decision kind plus ``all``: ``calls`` (one per decision),
            ``prompt_tokens``, ``completion_tokens`` (estimated) and ``cost_usd`` (NaN when
            litellm has no price for the model).
    """

    model: str
    table: pd.DataFrame

    @property
    def calls(self) -> int:
        """Calls of the whole run (one per decision; repairs and retries come on top)."""
        return int(self.table.loc["all", "calls"]) if len(self.table) else 0

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of the whole run (estimated)."""
        return int(self.table.loc["all", "prompt_tokens"]) if len(self.table) else 0

    def lines(self) -> list[str]:
        """The estimate as command-line lines: one per kind, then the total."""
        lines = [
            (
                f"dry run for {self.model}: what an LLM run would send (one call per "
                "decision; repairs and retries come on top; tokens by 4 characters each, "
                "+-25 %)"
            )
        ]
        for kind, row in self.table.iterrows():
            cost = row["cost_usd"]
            price = "no price known" if pd.isna(cost) else f"${cost:.4f}"
            lines.append(
                f"  {kind:18s} {int(row['calls']):>9,d} calls  "
                f"{int(row['prompt_tokens']):>13,d} prompt tokens  "
                f"{int(row['completion_tokens']):>11,d} completion tokens  {price}"
            )
        return lines


class DryRunBrain(Brain):
    """The rule brain's answers under an LLM's name, counting what the LLM would be sent.

    Args:
        model: The litellm model to price (``"openai/gpt-4o-mini"``).
        rng: The model's generator (for the rule policies).
        count_tokens: The token estimator (default :func:`estimate_tokens`).

    Its in-memory ledger records each decision as the rule brain would, with the estimated
    tokens, so a model's LLM summary shows the pass.
    """

    def __init__(
        self,
        model: str,
        *,
        rng: np.random.Generator | int | None = None,
        count_tokens: Callable[[str], int] = estimate_tokens,
    ) -> None:
        super().__init__(rng=rng, ledger=Ledger())
        self.model = model
        self.name = f"dry-run:{model}"
        self.count_tokens = count_tokens
        self._rows: list[tuple[str, int, int]] = []

    def decide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer with the rule policies, in order; count each request's tokens.

        Raises:
            RulePolicyError: as the rule brain does.
        """
        results = []
        records = []
        for request in requests:
            output = request.kind.apply_rule_policy(request, self.rng)
            result = DecisionResult(request, output, Outcome.OK)
            results.append(result)
            messages = request.kind.messages(request.context)
            sent = prompt_tokens(messages, self.count_tokens)
            answer = self.count_tokens(output.model_dump_json())
            self._rows.append((request.kind.name, sent, answer))
            records.append(
                rule_answer_record(
                    result,
                    self.name,
                    tags,
                    prompt_tokens=sent,
                    completion_tokens=answer,
                )
            )
        assert self.ledger is not None
        self.ledger.append_many(records)
        return results

    def estimate(self) -> LLMRunEstimate:
        """The calls, tokens and price of the requests answered so far."""
        frame = pd.DataFrame(
            self._rows, columns=["kind", "prompt_tokens", "completion_tokens"]
        )
        if frame.empty:
            return LLMRunEstimate(
                self.model, pd.DataFrame(columns=list(ESTIMATE_COLUMNS))
            )
        table = frame.groupby("kind").agg(
            calls=("prompt_tokens", "size"),
            prompt_tokens=("prompt_tokens", "sum"),
            completion_tokens=("completion_tokens", "sum"),
        )
        table.loc["all"] = table.sum()
        table["cost_usd"] = [
            price_tokens(self.model, int(row.prompt_tokens), int(row.completion_tokens))
            for row in table.itertuples()
        ]
        table["cost_usd"] = table["cost_usd"].astype(float)
        return LLMRunEstimate(self.model, table[list(ESTIMATE_COLUMNS)])
