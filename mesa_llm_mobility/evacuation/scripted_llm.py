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

:func:`exact_respond` and :func:`realistic_respond` are one scripted pedestrian
(:func:`scripted_decision`: it escapes what it sees, seeks an exit when alarmed, tours
otherwise) in two voices: the engine's own tokens with every field, and the words of a real
model (paraphrased intents, varied case and punctuation, optional fields left out, unknown
fields added, sometimes the paper's minimal output, sometimes in a code fence). Whatever the
engine derives from an answer (shouting, exit information, goal revisions) must come out the
same for both: ``tests/evacuation/test_scripted_llm.py`` checks it over many runs.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
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


# ------------------------------------------------- a pedestrian that answers like a model
_STIMULI = re.compile(r"active stimuli: (.*)$", re.MULTILINE)
_FEAR = re.compile(r"Fear: ([\d.]+)")
_HEARD = re.compile(r"^HEARD: (.*)$", re.MULTILINE)
_MESSAGES = re.compile(r"^MESSAGES: (.*)$", re.MULTILINE)
_STALE = re.compile(r"^STALE THREAT RECORD: (.*)$", re.MULTILINE)
_STANDING = re.compile(r"^STANDING GOAL: .*situation (\w+)", re.MULTILINE)
_ROUTE = re.compile(r"^(R\d+): to (exit|gate|frontier)", re.MULTILINE)
_VIEW = re.compile(r"Current view:\n(.*?)\nAFFECT", re.DOTALL)

GOAL_TOKENS = {"ordinary": "tour", "exit": "seek_exit", "threat": "escape"}
"""The engine's example tokens for each goal (what the token-exact answerer writes)."""

PARAPHRASES: dict[str, tuple[str, ...]] = {
    "ordinary": (
        "tour",
        "keep touring the plaza",
        "Explore the plaza",
        "stroll around and look at the trees",
        "continue walking around",
        "TOUR",
    ),
    "exit": (
        "seek_exit",
        "Seek exit",
        "head for the nearest exit",
        "find a way out of the plaza",
        "get to the exit quickly!",
        "leave the plaza through an exit",
        "SEEK EXIT",
    ),
    "threat": (
        "escape",
        "Escape from the armed person!",
        "get away from the attacker",
        "flee the danger",
        "run away from the threat, toward an exit",
        "ESCAPE",
        "move away from the armed person",
    ),
}
"""How a real model words each goal: reworded, recased, punctuated (first: the token)."""

GOAL_SPELLINGS = ("{}", "{}", "{upper}", "{title}", "{spaced}", "{spaced}.")
"""How a real model spells the goal category it picks: the token, upper case, capitalised,
with a space for the underscore, with a full stop (the schema's enum, read whatever its case
and punctuation)."""


def _spelled(token: str, variant: int) -> str:
    spaced = token.replace("_", " ")
    form = GOAL_SPELLINGS[(variant // 7) % len(GOAL_SPELLINGS)]
    return form.format(
        token, upper=token.upper(), title=spaced.capitalize(), spaced=spaced
    )


_EXTRA_FIELDS = (
    {"reasoning": "I saw what is around me and chose the safest option."},
    {"confidence": 0.8},
    {"notes": "keep watching the crowd", "mood": "tense"},
)


@dataclass(frozen=True)
class ScriptedDecision:
    """What the scripted pedestrian decides, before it is worded.

    Attributes:
        action: ``move`` or ``turn_and_observe``.
        situation: ``normal``, ``unsure`` or ``danger``.
        goal: ``ordinary``, ``exit`` or ``threat``.
        urgency: In [0, 1].
        route_id: The chosen offered route (``None`` without one).
    """

    action: str
    situation: str
    goal: str
    urgency: float
    route_id: str | None


def scripted_decision(prompt: str) -> ScriptedDecision:
    """A sensible pedestrian's decision from an ``EvacuationMove`` user message.

    Danger when it sees A or D (or remembers A while afraid); unsure after a shout, a message,
    a remembered sighting, noticeable fear or an earlier alarm; otherwise normal. Danger means
    escaping, unsure seeking an exit, normal touring; urgency grows with the appraisal and the
    fear. An evacuating pedestrian takes the first offered route to an exit (then a gate, then
    the first route), a touring one the first route to a frontier; without routes it turns and
    observes.

    Args:
        prompt: The user message.

    Returns:
        The decision.
    """
    stimuli = _STIMULI.search(prompt)
    stimuli_text = stimuli.group(1) if stimuli else ""
    view = _VIEW.search(prompt)
    sees = "in sight" in stimuli_text or (
        view is not None and ("A" in view.group(1) or "D" in view.group(1))
    )
    fear_match = _FEAR.search(prompt)
    fear = float(fear_match.group(1)) if fear_match else 0.0

    def given(pattern: re.Pattern[str], empty: str) -> bool:
        found = pattern.search(prompt)
        return found is not None and not found.group(1).startswith(empty)

    stale = given(_STALE, "none")
    standing = _STANDING.search(prompt)
    alarmed_before = standing is not None and standing.group(1) != "normal"
    if sees or (stale and fear >= 0.45):
        situation, goal, urgency = "danger", "threat", 0.75 + 0.25 * fear
    elif (
        stale
        or given(_HEARD, "nothing")
        or given(_MESSAGES, "none")
        or fear >= 0.2
        or alarmed_before
    ):
        situation, goal, urgency = "unsure", "exit", 0.45 + 0.3 * fear
    else:
        situation, goal, urgency = "normal", "ordinary", 0.1 + 0.2 * fear
    routes = _ROUTE.findall(prompt)
    if not routes:
        return ScriptedDecision(
            "turn_and_observe", situation, goal, round(urgency, 2), None
        )
    wanted = ("exit", "gate") if situation != "normal" else ("frontier",)
    chosen = next(
        (rid for kind in wanted for rid, k in routes if k == kind), routes[0][0]
    )
    return ScriptedDecision(
        "move", situation, goal, round(min(urgency, 1.0), 2), chosen
    )


def exact_answer(decision: ScriptedDecision) -> dict[str, Any]:
    """The decision in the engine's own tokens, every field given."""
    answer: dict[str, Any] = {
        "action": decision.action,
        "situation": decision.situation,
        "goal": GOAL_TOKENS[decision.goal],
        "intent": GOAL_TOKENS[decision.goal],
        "urgency": decision.urgency,
        "context_capsule": f"{GOAL_TOKENS[decision.goal]}; took {decision.route_id}",
    }
    if decision.route_id is not None:
        answer["route_id"] = decision.route_id
    return answer


def realistic_answer(decision: ScriptedDecision, variant: int) -> dict[str, Any]:
    """The decision as a real model might word it (``variant`` picks the wording).

    The goal category is spelled in varied case and punctuation and the intent is paraphrased,
    recased and punctuated; about one answer in four is minimal (action, situation, goal,
    urgency and the route: no intent, no capsule); of the others, one in three also sends a
    ``shout`` field (which the engine ignores), one in four omits the capsule, and one in three
    adds fields the schema does not have.

    Args:
        decision: What the pedestrian decided.
        variant: Any integer (e.g. a hash of the prompt).

    Returns:
        The answer's JSON object.
    """
    words = PARAPHRASES[decision.goal]
    answer: dict[str, Any] = {
        "action": decision.action,
        "situation": decision.situation,
        "goal": _spelled(GOAL_TOKENS[decision.goal], variant),
        "urgency": decision.urgency,
    }
    if decision.route_id is not None:
        answer["route_id"] = decision.route_id
    if variant % 4 == 0:  # minimal: the required fields and the route
        return answer
    answer["intent"] = words[variant % len(words)]
    if variant % 3 == 0 and decision.situation == "danger":
        answer["shout"] = True
    if variant % 4 != 1:
        answer["context_capsule"] = (
            f"Goal: {answer['intent']}. Took {decision.route_id or 'no route'}."
        )
    if variant % 3 == 1:
        answer.update(_EXTRA_FIELDS[(variant // 3) % len(_EXTRA_FIELDS)])
    return answer


def _wrapped(answer: dict[str, Any], variant: int) -> str:
    """The JSON as a model may send it: bare, in a code fence, or after a sentence."""
    text = json.dumps(answer, indent=2 if variant % 2 else None)
    if variant % 5 == 2:
        return f"```json\n{text}\n```"
    if variant % 10 == 7:
        return f"Here is my decision:\n{text}"
    return text


def _variant(prompt: str) -> int:
    return zlib.crc32(prompt.encode("utf-8"))


def exact_respond(body: dict[str, Any]) -> Reply:
    """The scripted pedestrian in the engine's tokens (memory requests as :func:`respond`)."""
    prompt = body["messages"][-1]["content"]
    if is_memory_request(body):
        return _memory_answer(prompt)
    return json_content(exact_answer(scripted_decision(prompt)))


def realistic_respond(body: dict[str, Any]) -> Reply:
    """The same pedestrian worded like a real model (:func:`realistic_answer`).

    Its decisions are :func:`exact_respond`'s; only the words differ, chosen by a hash of the
    prompt, so two runs of one model get the same answers however the calls interleave.
    """
    prompt = body["messages"][-1]["content"]
    if is_memory_request(body):
        return _memory_answer(prompt)
    variant = _variant(prompt)
    return _wrapped(realistic_answer(scripted_decision(prompt), variant), variant)
