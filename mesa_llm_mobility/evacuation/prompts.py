"""The decision role's prompt: the shared policy, the identity section and the user message.

The paper's system prompt (Sec. 2.1, Table 2) is one **shared policy** of seven instruction blocks,
identical for every pedestrian, followed by an agent-specific **identity section** (id,
demographic type, five T-scores with bands, salient facets of non-average domains, one
behavioural anchor per domain). The user message carries what changes every turn: the ASCII
view, the engine-computed affect, the short-term capsule (with its compression rule), the
long-term memory, the route options table, the stale threat record, what was heard and told,
and the engine's feedback on the previous answer. The rules are the paper's, in our words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mesa_llm_mobility.cognition.kinds import Message

if TYPE_CHECKING:
    from mesa_llm_mobility.evacuation.decision_context import EvacuationContext

CAPSULE_CHARS = 500
"""Length limit of the short-term context capsule (paper Sec. 2.3.3)."""

MEMORY_CHARS = 1200
"""Length limit of the long-term first-person memory (paper Sec. 2.3.3)."""

DEMOGRAPHIC_TYPE = "adult"
"""Every pedestrian of the paper's experiment is an adult (its perception and walking speed)."""

CAPSULE_RULE = (
    "Write context_capsule as your working notes for the next turns (at most 500 characters). "
    "Keep: your current intention, strategies the environment confirmed, corrections the engine "
    "made to your answers, open questions. Drop: reasoning, restatements, map details that "
    "expired, and offsets that your movement made wrong. Record the outcome of each attempt, "
    "not how you reached it. An accepted answer replaces the capsule; a rejected one keeps the "
    "previous capsule."
)

POLICY_BLOCKS: tuple[tuple[str, str], ...] = (
    (
        "IDENTITY",
        (
            "You are an ordinary pedestrian in a public plaza. You act only on what you perceive "
            "now, the part of the map you have seen yourself, your memory, your feelings and the "
            "messages you hear. Nobody gives you the full map."
        ),
    ),
    (
        "MAP",
        (
            "The view is a north-up character grid of the cells you perceive; one cell is 0.4 m. "
            "Offsets are (dx, dy) from @: dx > 0 is east, dx < 0 west, dy > 0 north, dy < 0 south. "
            "Glyphs: ? unknown or hidden, . walkable, # wall or outside, T tree or fixed obstacle, "
            "E exit, G gate open, g gate closing, X gate closed, @ you, p another pedestrian, "
            "D a person lying motionless on the ground, A an abnormal person rushing toward the crowd."
        ),
    ),
    (
        "JUDGMENT",
        (
            "Choosing the target is yours; whether a route is legal is the engine's. Seeing A or D "
            "directly is strong evidence of danger: then report situation danger (the action is "
            "still yours: move, wait or turn_and_observe). A shout you hear is uncertain evidence. "
            "A target is usually 5-20 cells away."
        ),
    ),
    (
        "INTENT",
        (
            "intent (what you are trying to do) and urgency (0-1: how strongly you judge that "
            "immediate action is needed) are a standing goal: they stay as they are until you "
            "change them, and your previous values are shown to you each turn."
        ),
    ),
    (
        "ROUTE OPTIONS",
        (
            "The engine offers up to four routes over the cells you have seen, each to a known "
            "opening or to the edge of what you know, plus one alternative by another corridor. "
            "Each lists its length in cells, familiarity (share already walked), people along it, "
            "closest approach to a visible A or D, and whether the 20-cell horizon reaches its end. "
            "The shortest route need not be the one you take. At most 20 cells are committed per "
            "decision."
        ),
    ),
    (
        "PAST EXPERIENCE",
        "Use your context capsule and the engine's feedback on your previous answer: it says "
        "whether the answer was accepted and, if not, why, so you can correct it now. "
        + CAPSULE_RULE,
    ),
    (
        "OUTPUT",
        (
            "Answer with one JSON object: action (move, wait or turn_and_observe), situation "
            "(normal, unsure or danger), intent, urgency and context_capsule. For move give either "
            "route_id of an offered route or target_offset (dx, dy) of a cell you observed, that is "
            "passable and reachable through observed cells, optionally with one waypoint_offset. "
            "Anything else is rejected, your previous plan stays, and you are told why."
        ),
    ),
)
"""The shared policy's seven blocks (paper Table 2): name and instruction."""

SHARED_POLICY = "\n".join(f"{name}: {text}" for name, text in POLICY_BLOCKS)
"""The shared policy section of every pedestrian's system prompt."""


def identity_section(context: EvacuationContext) -> str:
    """The agent-specific identity section: id, demographic type, personality lines.

    Args:
        context: The pedestrian's decision context.

    Returns:
        The section text (fixed for a pedestrian over the run).
    """
    return (
        f"YOUR IDENTITY: pedestrian {context.agent_id}, {DEMOGRAPHIC_TYPE}.\n"
        f"{context.personality.identity_text()}"
    )


def user_message(context: EvacuationContext) -> str:
    """The turn's user message: view, affect, capsule, memory, options, evidence, feedback.

    Args:
        context: The pedestrian's decision context.

    Returns:
        The message text; route options are lines ``R<k>: ...``.
    """
    lines = [
        f"TIME {context.time_s:.2f} s. You face {context.heading}. Current view:",
        context.view.text,
        (
            f"AFFECT (engine): Fear: {context.fear:.2f} ({context.fear_level}); "
            f"active stimuli: {', '.join(context.stimuli) or 'none'}."
        ),
        "HEARD: "
        + ("; ".join(s.describe() for s in context.heard_shouts) or "nothing"),
        "MESSAGES: " + ("; ".join(h.describe() for h in context.exit_hints) or "none"),
        "STALE THREAT RECORD: "
        + (
            context.stale_sighting.describe()
            if context.stale_sighting is not None
            else "none"
        ),
        "OPENINGS YOU KNOW: "
        + ("; ".join(o.describe() for o in context.known_openings) or "none"),
    ]
    if context.options:
        lines.append(
            "ROUTE OPTIONS (id: anchor, offset, length, familiarity, people, clearance, reach):"
        )
        lines.extend(o.describe() for o in context.options)
    else:
        lines.append(
            "ROUTE OPTIONS: none (choose a target_offset, wait or turn_and_observe)"
        )
    if context.previous is not None:
        p = context.previous
        lines.append(
            f"STANDING GOAL: intent {p.intent!r}, urgency {p.urgency:.2f}, situation {p.situation}."
        )
        lines.append(f"FEEDBACK ON YOUR PREVIOUS ANSWER: {p.feedback}")
    else:
        lines.append("STANDING GOAL: none yet (first decision).")
        lines.append("FEEDBACK ON YOUR PREVIOUS ANSWER: none (first decision).")
    lines.append(
        f"CONTEXT CAPSULE (<= {CAPSULE_CHARS} chars): {context.capsule or '(empty)'}"
    )
    lines.append(
        f"LONG-TERM MEMORY (<= {MEMORY_CHARS:,} chars): {context.memory or '(nothing yet)'}"
    )
    return "\n".join(lines)


def render_evacuation_prompt(context: EvacuationContext) -> list[Message]:
    """System message (shared policy + identity section) and the turn's user message.

    Args:
        context: The pedestrian's decision context.

    Returns:
        The two messages.
    """
    return [
        {
            "role": "system",
            "content": f"{SHARED_POLICY}\n\n{identity_section(context)}",
        },
        {"role": "user", "content": user_message(context)},
    ]
