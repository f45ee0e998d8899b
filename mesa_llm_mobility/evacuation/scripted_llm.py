"""Answers a sensible pedestrian would give, read from the evacuation prompts alone.

:func:`respond` is a responder for the local OpenAI-compatible server
(:class:`~mesa_llm_mobility.cognition.testing.FakeLLMServer`), so the evacuation model can be
driven through the real LLM brain without a model (soak and fault tests, benchmarks). It answers
both roles:

* the decision role: take the first offered route (``R1``) toward an exit with some urgency, or,
  with no route offered, turn and observe;
* the memory role: keep the first three sentences of the current memory (so later facts are
  forgotten by omission) and add one first-person sentence about the committed decision.

:func:`with_unoffered_routes` wraps a responder so that some decisions (chosen by their prompt)
name a route that was not offered, which the engine rejects: for tests of the rejection semantics.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mesa_llm_mobility.cognition.testing import Reply, Responder, json_content
from mesa_llm_mobility.evacuation.memory_role import MEMORY_POLICY, split_sentences

_FIRST_ROUTE = re.compile(r"^(R\d+):", re.MULTILINE)
_CURRENT_MEMORY = re.compile(r"^CURRENT MEMORY: (.*)$", re.MULTILINE)
_DECISION = re.compile(r"^- decision: (.*)$", re.MULTILINE)
_TIME = re.compile(r"^- time: ([\d.]+) s$", re.MULTILINE)

KEPT_SENTENCES = 3
"""Sentences of the current memory the scripted memory role keeps."""


def is_memory_request(body: dict[str, Any]) -> bool:
    """Whether a chat request is the memory role's (its system message holds the memory policy)."""
    return MEMORY_POLICY in body["messages"][0]["content"]


def _memory_answer(prompt: str) -> Reply:
    current = _CURRENT_MEMORY.search(prompt)
    text = current.group(1) if current else ""
    kept = [] if text == "(empty)" else split_sentences(text)[:KEPT_SENTENCES]
    decision = _DECISION.search(prompt)
    time = _TIME.search(prompt)
    new = (
        f"At {float(time.group(1)) if time else 0.0:.0f} s I chose: "
        f"{decision.group(1) if decision else 'nothing'}."
    )
    return json_content({"memory": " ".join([*kept, new])[:1200]})


def respond(body: dict[str, Any]) -> Reply:
    """Answer an ``EvacuationMove`` or ``EvacuationMemory`` request from its prompt.

    Args:
        body: The chat-completion request body.

    Returns:
        The assistant content (a JSON decision or memory revision).
    """
    prompt = body["messages"][-1]["content"]
    if is_memory_request(body):
        return _memory_answer(prompt)
    route = _FIRST_ROUTE.search(prompt)
    if route is None:
        decision: dict[str, Any] = {
            "action": "turn_and_observe",
            "situation": "unsure",
            "goal": "explore",
            "intent": "explore",
            "urgency": 0.3,
        }
    else:
        decision = {
            "action": "move",
            "situation": "danger" if "Fear: 0.00" not in prompt else "unsure",
            "goal": "seek_exit",
            "intent": "seek_exit",
            "urgency": 0.7,
            "route_id": route.group(1),
            "context_capsule": f"Heading along {route.group(1)} to an exit.",
        }
    return json_content(decision)


def with_unoffered_routes(responder: Responder, every: int) -> Responder:
    """Wrap ``responder`` so that about one decision answer in ``every`` names route ``R99``.

    Which ones is decided by the prompt (its character sum modulo ``every``), not by arrival
    order, so two runs of the same model get the same answers however the calls interleave.
    Memory requests pass through unchanged; ``R99`` is never offered, so the validator rejects
    the answer (``route_id 'R99' was not offered``).

    Args:
        responder: The normal answers.
        every: Period (>= 1); 1 makes every decision invalid.

    Returns:
        The wrapped responder.

    Raises:
        ValueError: If ``every`` < 1.
    """
    if every < 1:
        raise ValueError("with_unoffered_routes needs every >= 1")

    def respond_(body: dict[str, Any]) -> Reply:
        reply = responder(body)
        if is_memory_request(body) or not isinstance(reply, str):
            return reply
        if sum(map(ord, body["messages"][-1]["content"])) % every:
            return reply
        decision = json.loads(reply)
        decision.update(action="move", route_id="R99")
        decision.pop("target_offset", None)
        return json_content(decision)

    return respond_
