"""Decision kinds of urban travellers: day plans, plan revisions, chats and daily reflections.

One module per kind (:mod:`.daily_plan`, :mod:`.plan_revision`, :mod:`.chat` (a
conversation's opening) and :mod:`.chat_turn` (its further turns), :mod:`.reflection`), each declaring its context (what the traveller knows), output schema,
prompt, domain validator and rule policy; :mod:`.persona` holds what they share (the profile,
recalled trips, prompt pieces). The rule policies learn only through memory (experienced trips
recalled from event memories written by :func:`trip_memory_text`).

Importance scoring is part of the kinds that create memories (plan concepts, chat summaries,
reflections carry their importance); trip memories, which the world writes on arrival, are
scored by :mod:`.trip_importance` (LLM travellers, one call per traveller and minute of
arrivals) or, at the reflection, by :mod:`.reflection`.
"""

from __future__ import annotations

from mesa_llm_mobility.cognition.kinds import DecisionKind
from mesa_llm_mobility.urban.decisions.chat import (
    CHAT,
    CHAT_TOPICS,
    MAX_CHAT_TURNS,
    ChatAgreement,
    ChatContext,
    ChatOutput,
    SpeakerFacts,
    chat_rule_policy,
    render_chat_prompt,
    validate_agreement,
    validate_chat,
)
from mesa_llm_mobility.urban.decisions.chat_turn import (
    CHAT_TURN,
    ChatTurnContext,
    ChatTurnOutput,
    chat_turn_rule_policy,
    render_chat_turn_prompt,
    validate_chat_turn,
)
from mesa_llm_mobility.urban.decisions.daily_plan import (
    DAILY_PLAN,
    DEFAULT_LEISURE,
    FACILITY_STAYS,
    LEISURE_PROBABILITY,
    LIFESTYLE_PLACES,
    PlanningContext,
    can_drive,
    choose_mode,
    plan_rule_policy,
    render_plan_prompt,
    validate_daily_plan,
)
from mesa_llm_mobility.urban.decisions.persona import (
    SCHOOL,
    SYSTEM_ROLE,
    PersonaFacts,
    TripExperience,
    expected_travel_minutes,
    parse_trip_memory,
    school_runs,
    trip_memory_text,
)
from mesa_llm_mobility.urban.decisions.plan_revision import (
    PLAN_REVISION,
    REROUTE_THRESHOLD_MINUTES,
    PlanRevisionOutput,
    RevisionContext,
    RouteOption,
    Situation,
    render_revision_prompt,
    revision_rule_policy,
    validate_revision,
)
from mesa_llm_mobility.urban.decisions.reflection import (
    DAILY_REFLECTION,
    ReflectionContext,
    ReflectionOutput,
    reflection_rule_policy,
    render_reflection_prompt,
)
from mesa_llm_mobility.urban.decisions.travel_query import (
    TRAVEL_QUERY,
    ToolCall,
    TravelQueryContext,
    TravelQueryOutput,
)
from mesa_llm_mobility.urban.decisions.trip_importance import (
    TRIP_IMPORTANCE,
    TripImportanceContext,
    TripImportanceOutput,
    formula_importance,
)

URBAN_KINDS: tuple[DecisionKind, ...] = (
    DAILY_PLAN,
    PLAN_REVISION,
    CHAT,
    CHAT_TURN,
    TRAVEL_QUERY,
    TRIP_IMPORTANCE,
    DAILY_REFLECTION,
)
"""The urban decision kinds, in the order of a day."""

__all__ = [
    "CHAT",
    "CHAT_TOPICS",
    "CHAT_TURN",
    "DAILY_PLAN",
    "DAILY_REFLECTION",
    "DEFAULT_LEISURE",
    "FACILITY_STAYS",
    "LEISURE_PROBABILITY",
    "LIFESTYLE_PLACES",
    "MAX_CHAT_TURNS",
    "PLAN_REVISION",
    "REROUTE_THRESHOLD_MINUTES",
    "SCHOOL",
    "SYSTEM_ROLE",
    "TRAVEL_QUERY",
    "TRIP_IMPORTANCE",
    "URBAN_KINDS",
    "ChatAgreement",
    "ChatContext",
    "ChatOutput",
    "ChatTurnContext",
    "ChatTurnOutput",
    "PersonaFacts",
    "PlanRevisionOutput",
    "PlanningContext",
    "ReflectionContext",
    "ReflectionOutput",
    "RevisionContext",
    "RouteOption",
    "Situation",
    "SpeakerFacts",
    "ToolCall",
    "TravelQueryContext",
    "TravelQueryOutput",
    "TripExperience",
    "TripImportanceContext",
    "TripImportanceOutput",
    "can_drive",
    "chat_rule_policy",
    "chat_turn_rule_policy",
    "choose_mode",
    "expected_travel_minutes",
    "formula_importance",
    "parse_trip_memory",
    "plan_rule_policy",
    "reflection_rule_policy",
    "render_chat_prompt",
    "render_chat_turn_prompt",
    "render_plan_prompt",
    "render_reflection_prompt",
    "render_revision_prompt",
    "revision_rule_policy",
    "school_runs",
    "trip_memory_text",
    "validate_agreement",
    "validate_chat",
    "validate_chat_turn",
    "validate_daily_plan",
    "validate_revision",
]
