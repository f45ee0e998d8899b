"""Shared test set-up: litellm must never reach the network, whatever the test imports first.

Also a local Ray for the tests of Ray executors (the ``local_ray`` fixture) and the helpers of
every suite that drives the LLM brain through the project's local server
(``from tests.conftest import ...``): brain options with short timeouts and bounded retries, and
answer latencies that vary by prompt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def local_ray() -> Iterator[None]:
    """A local Ray of 2 CPUs for one test, shut down after it."""
    import ray  # noqa: PLC0415  (only the tests that ask for Ray pay its import)

    ray.init(num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


def latency_by_prompt(
    steps: int, step_s: float
) -> Callable[[Mapping[str, Any]], float]:
    """A latency for the local server of 0 to ``(steps - 1) * step_s`` seconds, by the prompt.

    The same prompt always waits as long, so runs stay deterministic while batches of answers
    arrive out of order, as real ones do.
    """

    def latency(body: Mapping[str, Any]) -> float:
        return (sum(map(ord, body["messages"][-1]["content"][-40:])) % steps) * step_s

    return latency


slow_sometimes = latency_by_prompt(7, 0.05)
"""Answers take 0-0.3 s, by the prompt."""


def local_server_options(server: Any, key: str, **extra: Any) -> dict[str, Any]:
    """LLM brain options for the local server: 1 s timeouts (a hang outlives one), 3 attempts.

    Args:
        server: The running local server (``FakeLLMServer``).
        key: The API key the suite uses (tests check it never reaches a file).
        **extra: More options, e.g. ``max_concurrency`` or ``ledger``.

    Returns:
        The ``brain_options`` mapping.
    """
    return {
        "api_base": server.api_base,
        "api_key": key,
        "timeout_s": 1.0,
        "max_attempts": 3,
        "max_total_s": 8.0,
        **extra,
    }
