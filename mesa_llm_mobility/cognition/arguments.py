"""The command-line arguments of a brain, shared by every ``mlm`` model command.

:func:`add_brain_arguments` adds one argument group (``--brain``, the server, concurrency,
sampling, timeouts and retry budgets) to a command's parser; :func:`brain_options` turns the
parsed flags into the ``brain_options`` a model passes to
:func:`~mesa_llm_mobility.cognition.make_brain`. A flag that is not given is left out, so the
environment variables of :mod:`~mesa_llm_mobility.cognition.settings` (``MLM_TIMEOUT_S``, ...)
and then the brain's defaults apply.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from mesa_llm_mobility.cognition.openai_compatible import CLIENT_CHOICES
from mesa_llm_mobility.cognition.structured_output import STRUCTURED_OUTPUT_CHOICES
from mesa_llm_mobility.cognition.tool_calling import TOOL_CALLING_CHOICES

BRAIN_FLAGS: dict[str, str] = {
    "api_base": "api_base",
    "concurrency": "max_concurrency",
    "temperature": "temperature",
    "timeout": "timeout_s",
    "max_attempts": "max_attempts",
    "max_total": "max_total_s",
    "max_repairs": "max_repairs",
    "max_tokens": "max_tokens",
    "max_transport_failures": "max_transport_failures",
    "allow_fallback_only": "allow_fallback_only",
    "client": "client",
    "structured_output": "structured_output",
    "tool_calling": "tool_calling",
}
"""Parsed flag (``args`` attribute) -> :func:`make_brain` option."""


def _bounded(kind: type, zero_allowed: bool) -> Any:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            expected = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(
                f"expected {expected}, got {text!r}"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if value < 0 or (value == 0 and not zero_allowed):
            bound = ">= 0" if zero_allowed else "> 0"
            raise argparse.ArgumentTypeError(f"expected a value {bound}, got {text!r}")
        return value

    return parse


def _positive(kind: type) -> Any:
    """Argparse type: a number of ``kind`` > 0, with a one-line error otherwise."""
    return _bounded(kind, zero_allowed=False)


positive_int = _positive(int)
"""argparse type: an integer > 0, with a one-line error otherwise."""

_non_negative_int = _bounded(int, zero_allowed=True)

non_negative_float = _bounded(float, zero_allowed=True)
"""argparse type: a number >= 0, with a one-line error otherwise."""


def add_brain_arguments(
    parser: argparse.ArgumentParser,
    *,
    default: str | None = "rules",
    choose_brain: bool = True,
) -> argparse._ArgumentGroup:
    """Add the brain argument group to a command.

    Args:
        parser: The command's parser.
        default: Default of ``--brain`` (``None`` where the brain is optional, e.g. a fork).
        choose_brain: Whether the command takes ``--brain`` at all (a resumed run keeps the
            brain it was started with, and takes only the connection flags).

    Returns:
        The argument group, for commands that add more brain flags.
    """
    group = parser.add_argument_group(
        "brain", "who decides: the rule brain (offline) or an LLM through litellm"
    )
    if choose_brain:
        group.add_argument(
            "--brain",
            default=default,
            help=(
                "'rules' or 'llm:<litellm model>', e.g. 'llm:openai/gpt-4o-mini'"
                + (f" (default {default})" if default else "")
            ),
        )
    group.add_argument(
        "--api-base", default=None, help="LLM server URL (else $MLM_API_BASE)"
    )
    group.add_argument(
        "--concurrency",
        type=_positive(int),
        default=None,
        help="LLM calls in flight (else $MLM_MAX_CONCURRENCY or 16)",
    )
    group.add_argument(
        "--temperature",
        type=float,
        default=None,
        help="LLM sampling temperature (default 0; the evacuation model 0.2, as its paper)",
    )
    group.add_argument(
        "--timeout",
        type=_positive(float),
        default=None,
        metavar="SECONDS",
        help="timeout of one LLM call (else $MLM_TIMEOUT_S or 60)",
    )
    group.add_argument(
        "--max-attempts",
        type=_positive(int),
        default=None,
        help="transport attempts per LLM call, first included (else $MLM_MAX_ATTEMPTS or 4)",
    )
    group.add_argument(
        "--max-total",
        type=_positive(float),
        default=None,
        metavar="SECONDS",
        help="time budget of one LLM call's attempts and backoffs, at least --timeout (else "
        "$MLM_MAX_TOTAL_S, or 120 or twice --timeout, whichever is more)",
    )
    group.add_argument(
        "--max-repairs",
        type=_non_negative_int,
        default=None,
        help="re-prompts with the validation errors before the rule fallback "
        "(else $MLM_MAX_REPAIRS or 2)",
    )
    group.add_argument(
        "--max-tokens",
        type=_positive(int),
        default=None,
        help="completion token limit of one LLM call (else $MLM_MAX_TOKENS or the provider's)",
    )
    group.add_argument(
        "--max-transport-failures",
        type=_positive(int),
        default=None,
        metavar="N",
        help="LLM decisions in a row without an answer (connection refused, timeouts, server "
        "errors) that stop the run, as a 401, 403 or 404 does at once (else "
        "$MLM_MAX_TRANSPORT_FAILURES or 5)",
    )
    group.add_argument(
        "--allow-fallback-only",
        action="store_true",
        default=None,
        help="let the rule policies answer when the LLM endpoint cannot (the run then goes on "
        "as a rule-brain run under the LLM's name; else $MLM_ALLOW_FALLBACK_ONLY)",
    )
    group.add_argument(
        "--client",
        choices=CLIENT_CHOICES,
        default=None,
        help="'direct' posts to an OpenAI-compatible --api-base itself, 'litellm' goes through "
        "litellm, 'auto' picks direct for openai/ and hosted_vllm/ models with an api base "
        "(else $MLM_CLIENT or auto)",
    )
    group.add_argument(
        "--structured-output",
        choices=STRUCTURED_OUTPUT_CHOICES,
        default=None,
        help="how the answer's JSON schema is asked for; 'auto' takes the provider family's "
        "best and steps down to JSON mode where rejected (else $MLM_STRUCTURED_OUTPUT or auto)",
    )
    group.add_argument(
        "--tool-calling",
        choices=TOOL_CALLING_CHOICES,
        default=None,
        help="how an LLM calls tools (urban --tools): 'native' sends tools= and runs the "
        "model's tool calls, 'structured' asks a query decision first, 'auto' is native where "
        "litellm knows the model calls functions (else $MLM_TOOL_CALLING or auto)",
    )
    return group


def brain_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`make_brain` options of the flags that were given.

    Args:
        args: Parsed arguments of a command with :func:`add_brain_arguments`.

    Returns:
        Option name -> value; flags left out are absent.
    """
    return {
        option: getattr(args, flag)
        for flag, option in BRAIN_FLAGS.items()
        if getattr(args, flag, None) is not None
    }
