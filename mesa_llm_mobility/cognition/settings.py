"""One ``brain`` setting for every model: ``"rules"`` or ``"llm:<litellm model>"``.

Connection details come from arguments, else from environment variables, so that the same model
code runs offline by default and on any LLM when the user has one:

| variable | meaning |
| --- | --- |
| ``MLM_BRAIN`` | brain used when a model's ``brain`` argument is ``None`` |
| ``MLM_API_BASE`` | base URL of an OpenAI-compatible (or other) server |
| ``MLM_API_KEY`` | API key (else litellm reads the provider's own variable) |
| ``MLM_MAX_CONCURRENCY`` | calls in flight at once (default 16) |
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from mesa_llm_mobility.cognition.brain import Brain, RuleBrain
from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex
from mesa_llm_mobility.cognition.llm_brain import LLMBrain

DEFAULT_BRAIN = "rules"
LLM_PREFIX = "llm:"


def parse_brain_setting(setting: str) -> tuple[str, str | None]:
    """Split a brain setting into ``("rules", None)`` or ``("llm", model)``.

    Raises:
        ValueError: naming the setting when it is neither form.
    """
    text = setting.strip()
    if text == "rules":
        return "rules", None
    if text.startswith(LLM_PREFIX) and text[len(LLM_PREFIX) :].strip():
        return "llm", text[len(LLM_PREFIX) :].strip()
    raise ValueError(
        f"brain setting {setting!r} is not understood: use 'rules' or 'llm:<litellm model>', "
        "e.g. 'llm:openai/gpt-4o-mini' or 'llm:ollama/llama3.1'"
    )


def make_brain(
    setting: str | Brain | None = None,
    *,
    rng: np.random.Generator | int | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    max_concurrency: int | None = None,
    ledger: Ledger | str | Path | None = None,
    replay: ReplayIndex | str | Path | None = None,
    **llm_options: Any,
) -> Brain:
    """Build the brain a model asked for.

    Args:
        setting: ``"rules"``, ``"llm:<model>"``, an existing :class:`Brain` (returned as is), or
            ``None`` for ``$MLM_BRAIN`` (default ``"rules"``).
        rng: The model's generator, for rule policies and fallbacks.
        api_base: Server URL (default ``$MLM_API_BASE``).
        api_key: API key (default ``$MLM_API_KEY``).
        max_concurrency: Calls in flight (default ``$MLM_MAX_CONCURRENCY`` or 16).
        ledger: A :class:`Ledger` or a JSONL path to record decisions in.
        replay: Ledger (or path) whose identical requests are answered without calls.
        **llm_options: Further :class:`LLMBrain` arguments (``temperature``, ``max_repairs``, ...).

    Raises:
        ValueError: for an unknown setting or a non-integer ``MLM_MAX_CONCURRENCY``.
    """
    if isinstance(setting, Brain):
        return setting
    setting = (
        setting if setting is not None else os.environ.get("MLM_BRAIN", DEFAULT_BRAIN)
    )
    kind, model = parse_brain_setting(setting)
    ledger = Ledger(ledger) if isinstance(ledger, str | Path) else ledger
    if kind == "rules":
        return RuleBrain(rng=rng, ledger=ledger)
    if max_concurrency is None:
        raw = os.environ.get("MLM_MAX_CONCURRENCY", "16")
        try:
            max_concurrency = int(raw)
        except ValueError as error:
            raise ValueError(
                f"environment variable MLM_MAX_CONCURRENCY must be an integer, got {raw!r}"
            ) from error
    assert model is not None
    return LLMBrain(
        model,
        api_base=api_base or os.environ.get("MLM_API_BASE") or None,
        api_key=api_key or os.environ.get("MLM_API_KEY") or None,
        max_concurrency=max_concurrency,
        rng=rng,
        ledger=ledger,
        replay=replay,
        **llm_options,
    )
