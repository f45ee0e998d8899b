"""One ``brain`` setting for every model: ``"rules"``, ``"llm:<litellm model>"`` or ``"dry-run:<model>"``.

``dry-run:<litellm model>`` answers with the rule policies while counting the calls and tokens
an LLM run would cost (:mod:`~mesa_llm_mobility.cognition.dry_run`).

Connection details come from arguments, else from environment variables, so that the same model
code runs offline by default and on any LLM when the user has one:

| variable | meaning |
| --- | --- |
| ``MLM_BRAIN`` | brain used when a model's ``brain`` argument is ``None`` |
| ``MLM_API_BASE`` | base URL of an OpenAI-compatible (or other) server |
| ``MLM_API_KEY`` | API key (else litellm reads the provider's own variable) |
| ``MLM_MAX_CONCURRENCY`` | calls in flight at once (default 16) |
| ``MLM_TIMEOUT_S`` | timeout of one HTTP call, seconds (default 60) |
| ``MLM_MAX_ATTEMPTS`` | transport attempts per call, the first included (default 4) |
| ``MLM_MAX_TOTAL_S`` | time budget of one call's attempts and backoffs, seconds (default 120) |
| ``MLM_MAX_REPAIRS`` | re-prompts with the validation errors before the rule fallback (default 2) |
| ``MLM_MAX_TOKENS`` | completion token limit of one call (default: the provider's) |
| ``MLM_MAX_TRANSPORT_FAILURES`` | decisions in a row without an answer that stop a run (default 5) |
| ``MLM_ALLOW_FALLBACK_ONLY`` | ``1``: an unusable endpoint does not stop a run, the rule policies answer |
| ``MLM_RESPONSE_MODE_CACHE`` | the file remembering endpoints' response modes (default: by the ledger) |
| ``MLM_CLIENT`` | ``auto``, ``direct`` or ``litellm``: who sends the calls (default ``auto``) |
| ``MLM_STRUCTURED_OUTPUT`` | how the JSON schema is asked for (default ``auto``) |
| ``MLM_TOOL_CALLING`` | ``auto``, ``native`` or ``structured``: how tools are called (default ``auto``) |

An argument given to :func:`make_brain` (or a model's ``brain_options``, or a command-line flag)
wins over the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from mesa_llm_mobility.cognition.brain import Brain, RuleBrain
from mesa_llm_mobility.cognition.dry_run import DryRunBrain
from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.response_mode_cache import RESPONSE_MODE_CACHE_FILE


class BrainOptions(TypedDict, total=False):
    """What a model's ``brain_options`` may hold: the keyword arguments of :func:`make_brain`.

    Every option is optional; see :class:`LLMBrain` for their meaning and defaults.
    """

    api_base: str | None
    api_key: str | None
    max_concurrency: int | None
    ledger: Ledger | str | Path | None
    replay: ReplayIndex | str | Path | None
    temperature: float
    max_tokens: int | None
    json_mode: bool
    structured_output: str
    client: str
    timeout_s: float
    max_attempts: int
    max_total_s: float
    max_repairs: int
    max_transport_failures: int
    allow_fallback_only: bool
    response_mode_cache: str | Path | None
    extra_params: Mapping[str, Any] | None
    cost_per_token: tuple[float, float] | None
    supports_reasoning: bool | None
    deduplicate: bool
    tool_calling: str


DEFAULT_BRAIN = "rules"
LLM_PREFIX = "llm:"
DRY_RUN_PREFIX = "dry-run:"

ENVIRONMENT_OPTIONS: dict[str, tuple[str, type]] = {
    "max_concurrency": ("MLM_MAX_CONCURRENCY", int),
    "timeout_s": ("MLM_TIMEOUT_S", float),
    "max_attempts": ("MLM_MAX_ATTEMPTS", int),
    "max_total_s": ("MLM_MAX_TOTAL_S", float),
    "max_repairs": ("MLM_MAX_REPAIRS", int),
    "max_tokens": ("MLM_MAX_TOKENS", int),
    "max_transport_failures": ("MLM_MAX_TRANSPORT_FAILURES", int),
    "allow_fallback_only": ("MLM_ALLOW_FALLBACK_ONLY", bool),
    "response_mode_cache": ("MLM_RESPONSE_MODE_CACHE", str),
    "client": ("MLM_CLIENT", str),
    "structured_output": ("MLM_STRUCTURED_OUTPUT", str),
    "tool_calling": ("MLM_TOOL_CALLING", str),
}
""":class:`LLMBrain` options read from the environment when not given: option -> (variable, type)."""


def parse_brain_setting(setting: str) -> tuple[str, str | None]:
    """Split a brain setting into ``("rules", None)``, ``("llm", model)`` or ``("dry-run", model)``.

    Raises:
        ValueError: naming the setting when it is none of these forms.
    """
    text = setting.strip()
    if text == "rules":
        return "rules", None
    for prefix in (LLM_PREFIX, DRY_RUN_PREFIX):
        if text.startswith(prefix) and text[len(prefix) :].strip():
            return prefix[:-1], text[len(prefix) :].strip()
    raise ValueError(
        f"brain setting {setting!r} is not understood: use 'rules' or 'llm:<litellm model>', "
        "e.g. 'llm:openai/gpt-4o-mini' or 'llm:ollama/llama3.1' (or 'dry-run:<litellm "
        "model>' to price an LLM run with the rule policies)"
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
        **llm_options: Further :class:`LLMBrain` arguments (``temperature``, ``timeout_s``,
            ``max_attempts``, ``max_total_s``, ``max_repairs``, ...); those of
            :data:`ENVIRONMENT_OPTIONS` default to their environment variables. Without a
            ``response_mode_cache``, a brain whose ledger is a file remembers its endpoint's
            response mode in :data:`RESPONSE_MODE_CACHE_FILE` next to it.

    Raises:
        ValueError: for an unknown setting or an environment variable that is not a number.
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
    if kind == "dry-run":
        assert model is not None
        return DryRunBrain(model, rng=rng)
    if max_concurrency is not None:
        llm_options["max_concurrency"] = max_concurrency
    given = {name: value for name, value in llm_options.items() if value is not None}
    llm_options = environment_options() | given
    if ledger is not None and ledger.path is not None:
        llm_options.setdefault(
            "response_mode_cache", ledger.path.parent / RESPONSE_MODE_CACHE_FILE
        )
    assert model is not None
    return LLMBrain(
        model,
        api_base=api_base or os.environ.get("MLM_API_BASE") or None,
        api_key=api_key or os.environ.get("MLM_API_KEY") or None,
        rng=rng,
        ledger=ledger,
        replay=replay,
        **llm_options,
    )


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def environment_options() -> dict[str, int | float | str | bool]:
    """The :data:`ENVIRONMENT_OPTIONS` set in the environment, parsed.

    Returns:
        Option name -> value, for the variables that are set and not empty.

    Raises:
        ValueError: naming the variable when its value is not a number of the right type.
    """
    options: dict[str, int | float | str | bool] = {}
    for option, (variable, kind) in ENVIRONMENT_OPTIONS.items():
        raw = os.environ.get(variable, "").strip()
        if not raw:
            continue
        if kind is bool:
            if raw.lower() not in _TRUE | _FALSE:
                raise ValueError(
                    f"environment variable {variable} must be 1 or 0 (true or false), "
                    f"got {raw!r}"
                )
            options[option] = raw.lower() in _TRUE
            continue
        try:
            options[option] = kind(raw)
        except ValueError:
            expected = "an integer" if kind is int else "a number"
            raise ValueError(
                f"environment variable {variable} must be {expected}, got {raw!r}"
            ) from None
    return options
