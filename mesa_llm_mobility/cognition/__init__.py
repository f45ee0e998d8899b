"""Cognition core: decision kinds and requests, brains, the LLM gateway and the ledger.

An agent never calls an LLM itself. It states a typed :class:`DecisionRequest`; the model gathers
every request of a step and hands them to its brain (:class:`RuleBrain` or :class:`LLMBrain`) in
one batch; the brain answers each with a validated :class:`DecisionResult`.
"""

from __future__ import annotations

from mesa_llm_mobility.cognition.brain import Brain, RuleBrain
from mesa_llm_mobility.cognition.json_extract import JSONExtractionError, extract_json
from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    DecisionResult,
    Message,
    Outcome,
    RoundErrors,
    RulePolicyError,
    dispatch,
)
from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.settings import (
    BrainOptions,
    make_brain,
    parse_brain_setting,
)
from mesa_llm_mobility.cognition.tool_calling import Toolbox, ToolUse
from mesa_llm_mobility.cognition.transport import RetryPolicy, TransportError

__all__ = [
    "Brain",
    "BrainOptions",
    "DecisionKind",
    "DecisionRequest",
    "DecisionResult",
    "JSONExtractionError",
    "LLMBrain",
    "Ledger",
    "Message",
    "Outcome",
    "ReplayIndex",
    "RetryPolicy",
    "RoundErrors",
    "RuleBrain",
    "RulePolicyError",
    "ToolUse",
    "Toolbox",
    "TransportError",
    "dispatch",
    "extract_json",
    "make_brain",
    "parse_brain_setting",
]
