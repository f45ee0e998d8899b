"""Answers a sensible pedestrian would give, read from the evacuation prompt alone.

:func:`respond` is a responder for the local OpenAI-compatible server
(:class:`~mesa_llm_mobility.cognition.testing.FakeLLMServer`), so the evacuation model can be
driven through the real LLM brain without a model (soak and fault tests, benchmarks): take the
first offered route (``R1``) toward an exit with some urgency, or, with no route offered, turn and
observe.
"""

from __future__ import annotations

import re
from typing import Any

from mesa_llm_mobility.cognition.testing import Reply, json_content

_FIRST_ROUTE = re.compile(r"^(R\d+):", re.MULTILINE)


def respond(body: dict[str, Any]) -> Reply:
    """Answer an ``EvacuationMove`` request from its prompt.

    Args:
        body: The chat-completion request body.

    Returns:
        The assistant content (a JSON decision).
    """
    prompt = body["messages"][-1]["content"]
    route = _FIRST_ROUTE.search(prompt)
    if route is None:
        decision: dict[str, Any] = {
            "action": "turn_and_observe",
            "situation": "unsure",
            "intent": "explore",
            "urgency": 0.3,
        }
    else:
        decision = {
            "action": "move",
            "situation": "danger" if "Fear: 0.00" not in prompt else "unsure",
            "intent": "seek_exit",
            "urgency": 0.7,
            "route_id": route.group(1),
            "context_capsule": f"Heading along {route.group(1)} to an exit.",
        }
    return json_content(decision)
