"""Answers a sensible planner would give, read from the trajectory prompts alone.

:func:`respond` is a responder for the local OpenAI-compatible server
(:class:`~mesa_llm_mobility.cognition.testing.FakeLLMServer`), so the trajectory model can be
driven through the real LLM brain without a model (soak and fault tests, benchmarks):

* ``ActivityChain``: the first exemplar chain of the prompt, keeping the allowed activities and
  dropping adjacent repeats;
* ``VisitDuration``: the historical average, its proportional share of the time until midnight
  when it and the remaining activities' estimate do not fit, clipped to the allowed range;
* ``DayDurations``: every visit's historical average, clipped to its range and shrunk to the
  day's budget.

:class:`SamplingNoise` wraps a responder to break a share of its answers by the request's
sampling temperature (schema violations and constraint violations, at rates the test chooses),
counting what it broke: the temperature study is checked against it.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

from mesa_llm_mobility.cognition.testing import Reply, Responder, json_content

_EXEMPLAR = re.compile(r"^1\. (\[.*\])$", re.MULTILINE)
_ALLOWED = re.compile(r"use only these activities: (.*)$", re.MULTILINE)
_VISIT_AVERAGE = re.compile(r"historical average: (\d+) minutes")
_VISIT_RANGE = re.compile(r"duration between (\d+) and (\d+) minutes")
_VISIT_REMAINING = re.compile(r"Estimated time needed for them: (\d+) minutes")
_VISIT_BUDGET = re.compile(r"Time until midnight: (\d+) minutes")
_DAY_LINE = re.compile(
    r"^\d+\. \S+: travel \d+ min before, historical average (\d+) min, allowed (\d+)-(\d+) min$",
    re.MULTILINE,
)
_DAY_BUDGET = re.compile(r"add up to at most (-?\d+) minutes")


def _chain(prompt: str) -> dict[str, Any]:
    allowed_match = _ALLOWED.search(prompt)
    allowed = (
        {name.strip() for name in allowed_match.group(1).split(",")}
        if allowed_match
        else set()
    )
    exemplar = _EXEMPLAR.search(prompt)
    names = ast.literal_eval(exemplar.group(1)) if exemplar else ["Home"]
    chain: list[str] = []
    for name in names:
        if name in allowed and (not chain or chain[-1] != name):
            chain.append(name)
    return {"activities": chain or sorted(allowed)[:1]}


def _day(prompt: str) -> dict[str, Any]:
    visits = [tuple(map(int, match)) for match in _DAY_LINE.findall(prompt)]
    budget_match = _DAY_BUDGET.search(prompt)
    budget = int(budget_match.group(1)) if budget_match else 10**6
    durations = [min(max(average, low), high) for average, low, high in visits]
    minimum = sum(low for _, low, _ in visits)
    while sum(durations) > max(budget, minimum):
        excess = sum(durations) - max(budget, minimum)
        longest = max(
            range(len(durations)), key=lambda index: durations[index] - visits[index][1]
        )
        durations[longest] -= min(excess, durations[longest] - visits[longest][1])
    return {"durations_minutes": durations}


def respond(body: dict[str, Any]) -> Reply:
    """Answer an ``ActivityChain``, ``VisitDuration`` or ``DayDurations`` request.

    Args:
        body: The chat-completion request body.

    Returns:
        The assistant content (a JSON decision).
    """
    # the first user message is the question; a repair round appends the errors after it
    prompt = next(
        message["content"] for message in body["messages"] if message["role"] == "user"
    )
    if "Exemplar chains" in prompt:
        return json_content(_chain(prompt))
    if "Visits in order:" in prompt:
        return json_content(_day(prompt))
    average = _VISIT_AVERAGE.search(prompt)
    bounds = _VISIT_RANGE.search(prompt)
    value = int(average.group(1)) if average else 60
    remaining = _VISIT_REMAINING.search(prompt)
    budget = _VISIT_BUDGET.search(prompt)
    if remaining and budget:
        wanted = value + int(remaining.group(1))
        if wanted > int(budget.group(1)):
            value = int(budget.group(1)) * value // wanted
    if bounds:
        value = min(max(value, int(bounds.group(1))), int(bounds.group(2)))
    return json_content({"duration_minutes": value})


class SamplingNoise:
    """A responder whose answers break more or less often with the sampling temperature.

    For each request, a draw ``u`` in [0, 1) from the hash of its messages and temperature
    decides: ``u < schema`` gives an answer that violates the schema (a wrong field),
    ``u < schema + constraint`` the normal answer made infeasible (an adjacent repeat in a
    chain, a duration of 0 minutes, one day duration too few), else the normal answer. The
    draws are deterministic, and repair rounds (other messages) draw again.

    Args:
        responder: The normal answers (e.g. :func:`respond`).
        rates: Temperature -> (schema rate, constraint rate); other temperatures are not broken.

    Attributes:
        schema_broken: Answers served with a schema violation.
        constraint_broken: Answers served with a constraint violation.
    """

    def __init__(
        self, responder: Responder, rates: Mapping[float, tuple[float, float]]
    ) -> None:
        self.responder = responder
        self.rates = {float(key): value for key, value in rates.items()}
        self.schema_broken = 0
        self.constraint_broken = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        """Answer, broken at the request temperature's rates."""
        temperature = float(body.get("temperature") or 0.0)
        schema, constraint = self.rates.get(temperature, (0.0, 0.0))
        digest = hashlib.sha256(
            json.dumps([body["messages"], temperature], sort_keys=True).encode()
        ).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        reply = self.responder(body)
        if draw < schema:
            with self._lock:
                self.schema_broken += 1
            return json_content({"answer": "unexpected"})
        if draw < schema + constraint and isinstance(reply, str):
            with self._lock:
                self.constraint_broken += 1
            return json_content(_infeasible(json.loads(reply)))
        return reply


def _infeasible(answer: dict[str, Any]) -> dict[str, Any]:
    """A schema-valid answer that the kind's domain validator rejects."""
    if "activities" in answer:
        return {"activities": [answer["activities"][0], *answer["activities"]]}
    if "duration_minutes" in answer:
        return {"duration_minutes": 0}
    return {"durations_minutes": answer["durations_minutes"][:-1]}
