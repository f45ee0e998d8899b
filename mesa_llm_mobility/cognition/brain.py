"""The brain interface and the rule brain.

A brain answers a batch of decision requests with validated results. Models hand every request of
a step to ``brain.decide_all`` at once, so an LLM brain can run them concurrently; the rule brain
answers them in order with each kind's rule policy.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mesa_llm_mobility.cognition.kinds import DecisionRequest, DecisionResult, Outcome
from mesa_llm_mobility.cognition.ledger import Ledger, decision_record


class PendingDecisions:
    """The answers of a submitted batch, taken when the model needs them.

    Args:
        finish: Returns the batch's results (waiting for them when they are still on the way).
        done: Tells whether the answers have arrived (``None``: they are made at :meth:`result`).
    """

    def __init__(
        self,
        finish: Callable[[], list[DecisionResult]],
        *,
        done: Callable[[], bool] | None = None,
    ) -> None:
        self._finish = finish
        self._done = done
        self._results: list[DecisionResult] | None = None

    def done(self) -> bool:
        """Whether :meth:`result` would return without waiting for a model."""
        return self._results is not None or self._done is None or self._done()

    def result(self) -> list[DecisionResult]:
        """The results, in request order (computed once; later calls return the same list).

        Raises:
            RulePolicyError: as :meth:`Brain.decide_all` does.
        """
        if self._results is None:
            self._results = self._finish()
        return self._results


class Brain(abc.ABC):
    """Answers decision requests. Subclasses implement :meth:`decide_all`.

    Attributes:
        name: Short label recorded with each decision (``"rules"`` or the LLM model string).
        ledger: Where decisions are recorded, or ``None``.
        rng: Generator for rule policies (the model's ``rng`` makes runs reproducible).
        native_tools: Whether requests' :class:`~.tool_calling.Toolbox` tools are offered to
            the model natively; a model asks its look-ups another way when not.
    """

    name: str = "brain"
    native_tools: bool = False

    def __init__(
        self,
        *,
        rng: np.random.Generator | int | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.rng = (
            rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        )
        self.ledger = ledger

    @abc.abstractmethod
    def decide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer every request, in request order.

        Args:
            requests: The batch (typically every request of one model step).
            tags: Extra fields recorded with each ledger record (e.g. ``{"step": 42}``).
        """

    def submit(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> PendingDecisions:
        """Hand over a batch now and take its answers later (asynchronous decisions).

        The base brain answers at :meth:`PendingDecisions.result` (the rule brain then draws
        from its generator in the order the results are taken, on the caller's thread); an LLM
        brain sends the calls at once and lets them run while the model moves on.
        """
        batch = list(requests)
        return PendingDecisions(lambda: self.decide_all(batch, tags=tags))

    def decide(
        self, request: DecisionRequest, *, tags: Mapping[str, Any] | None = None
    ) -> DecisionResult:
        """Answer one request (prefer :meth:`decide_all` for batches)."""
        return self.decide_all([request], tags=tags)[0]

    def close(self) -> None:
        """Release resources (connections, threads, the ledger file)."""
        if self.ledger is not None:
            self.ledger.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class RuleBrain(Brain):
    """Answers with each kind's rule policy: the offline default and the scientific baseline.

    Deterministic given ``rng``: requests are answered in order, each policy drawing from the same
    generator. Recording to a ledger is optional (off by default: rule decisions are cheap and
    numerous).
    """

    name = "rules"

    def decide_all(
        self,
        requests: Sequence[DecisionRequest],
        *,
        tags: Mapping[str, Any] | None = None,
    ) -> list[DecisionResult]:
        """Answer every request with its rule policy, in order, validated by the kind.

        Raises:
            RulePolicyError: naming the kind, the agent and the errors when a policy fails or
                returns an answer its kind's validator rejects (a bug of the policy).
        """
        results = [
            DecisionResult(
                request, request.kind.apply_rule_policy(request, self.rng), Outcome.OK
            )
            for request in requests
        ]
        if self.ledger is not None:
            self.ledger.append_many(
                rule_answer_record(result, self.name, tags) for result in results
            )
        return results


def rule_answer_record(
    result: DecisionResult,
    model: str,
    tags: Mapping[str, Any] | None,
    *,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
) -> dict[str, Any]:
    """The ledger record of a rule policy's answer (no call; tokens of a dry run's estimate).

    Args:
        result: The answer.
        model: The brain's name.
        tags: The caller's tags.
        prompt_tokens: Tokens the request would have cost an LLM (a dry run's estimate).
        completion_tokens: Tokens of the answer, likewise.
    """
    return decision_record(
        kind=result.kind,
        agent_id=result.agent_id,
        model=model,
        params={},
        messages=None,
        digest=None,
        key=None,
        rounds=(),
        result=result.output.model_dump(mode="json"),
        outcome=result.outcome,
        reason=None,
        attempts=0,
        latency_s=0.0,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost_usd=0.0,
        replayed=False,
        tags=tags,
    )
