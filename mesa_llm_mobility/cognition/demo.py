"""A small, complete decision kind and a demo that runs it: ``mlm demo cognition``.

Commuters choose when to leave home from what they know (work start, expected travel time, the
delay they met last time). The kind shows every part a model declares: context, output schema,
prompt, domain validator and rule policy. The demo asks N commuters at once, through the rule
brain or through the LLM brain against the project's local OpenAI-compatible server (whose
answers can be made faulty, to watch repairs and fallbacks happen), and reports the ledger.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from mesa_llm_mobility.cognition.brain import Brain
from mesa_llm_mobility.cognition.kinds import (
    DecisionKind,
    DecisionRequest,
    DecisionResult,
    Message,
)
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.settings import BrainOptions, make_brain

FACTS_MARKER = "Facts: "


class CommuteFacts(BaseModel):
    """What a commuter knows when choosing a departure time (minutes after midnight)."""

    name: str
    work_start_minute: int = Field(ge=0, lt=1440)
    expected_travel_minutes: int = Field(ge=0)
    last_delay_minutes: int = Field(ge=0)
    earliest_departure_minute: int = Field(ge=0, lt=1440)


class DepartureDecision(BaseModel):
    """The chosen departure minute and a one-sentence reason."""

    depart_minute: int = Field(ge=0, lt=1440, description="minutes after midnight")
    reason: str = Field(min_length=1, max_length=300)


def render_departure_prompt(facts: CommuteFacts) -> list[Message]:
    """Ask for a departure time, stating the facts as JSON."""
    return [
        {
            "role": "system",
            "content": f"You are {facts.name}, a commuter in a small town, deciding when to leave home for work.",
        },
        {
            "role": "user",
            "content": (
                f"{FACTS_MARKER}{facts.model_dump_json()}\n"
                "Times are minutes after midnight. Choose when to leave so that you arrive on time, "
                "not before your earliest possible departure."
            ),
        },
    ]


def validate_departure(facts: CommuteFacts, decision: DepartureDecision) -> list[str]:
    """Domain checks: not before the earliest departure; arriving by work start if possible."""
    errors = []
    if decision.depart_minute < facts.earliest_departure_minute:
        errors.append(
            f"depart_minute {decision.depart_minute} is before the earliest possible departure "
            f"{facts.earliest_departure_minute}"
        )
    latest = facts.work_start_minute - facts.expected_travel_minutes
    if latest >= facts.earliest_departure_minute and decision.depart_minute > latest:
        errors.append(
            f"depart_minute {decision.depart_minute} arrives after work starts at {facts.work_start_minute}; "
            f"leave at {latest} or earlier"
        )
    return errors


def departure_rule_policy(
    facts: CommuteFacts, rng: np.random.Generator
) -> DepartureDecision:
    """Leave at work start - expected travel - (last delay + a random 0-10 min safety margin)."""
    margin = facts.last_delay_minutes + int(rng.integers(0, 11))
    depart = max(
        facts.earliest_departure_minute,
        facts.work_start_minute - facts.expected_travel_minutes - margin,
    )
    return DepartureDecision(
        depart_minute=depart, reason=f"expected travel plus a {margin}-minute margin"
    )


DEPARTURE_CHOICE: DecisionKind[CommuteFacts, DepartureDecision] = DecisionKind(
    name="DepartureChoice",
    context_type=CommuteFacts,
    output_schema=DepartureDecision,
    render_prompt=render_departure_prompt,
    rule_policy=departure_rule_policy,
    validate=validate_departure,
)


def demo_requests(n_agents: int, rng: np.random.Generator) -> list[DecisionRequest]:
    """N commuters with varied work starts, travel times and past delays."""
    if n_agents < 1:
        raise ValueError(f"n_agents must be >= 1, got {n_agents}")
    requests = []
    for agent_id in range(n_agents):
        facts = CommuteFacts(
            name=f"Commuter {agent_id}",
            work_start_minute=int(rng.choice([420, 480, 510, 540])),
            expected_travel_minutes=int(rng.integers(10, 60)),
            last_delay_minutes=int(rng.integers(0, 20)),
            earliest_departure_minute=360,
        )
        requests.append(DecisionRequest(DEPARTURE_CHOICE, agent_id, facts))
    return requests


def facts_from_request(body: dict[str, Any]) -> CommuteFacts:
    """Read the facts back from a chat request (used by the demo's fake LLM)."""
    for message in reversed(body.get("messages", [])):
        content = message.get("content") or ""
        if message.get("role") == "user" and FACTS_MARKER in content:
            line = content.split(FACTS_MARKER, 1)[1].splitlines()[0]
            return CommuteFacts.model_validate_json(line)
    raise ValueError("request carries no commute facts")


def demo_responder(
    fault_rate: float = 0.0, seed: int = 0
) -> Callable[[dict[str, Any]], Any]:
    """A fake LLM for the demo: sensible answers, with a share of faulty ones.

    A repair request (one whose last user message lists errors) is always answered correctly, so
    faults show up as ``repaired`` outcomes; HTTP 500 faults are retried by the transport.
    """
    from mesa_llm_mobility.cognition.testing import Fault, json_content  # noqa: PLC0415

    chooser = random.Random(seed)
    faults = [Fault.malformed_json(), Fault.schema_violation(), Fault.http(500)]

    def respond(body: dict[str, Any]) -> Any:
        facts = facts_from_request(body)
        is_repair = body["messages"][-1]["content"].startswith("Your previous answer")
        if not is_repair and chooser.random() < fault_rate:
            return chooser.choice(faults)
        depart = max(
            facts.earliest_departure_minute,
            facts.work_start_minute - facts.expected_travel_minutes - 10,
        )
        return json_content(
            {"depart_minute": depart, "reason": "ten minutes of slack before work"}
        )

    return respond


@dataclass(frozen=True)
class DemoReport:
    """What the cognition demo produced."""

    brain: str
    results: list[DecisionResult]
    summary: pd.DataFrame
    server_requests: int | None = None
    server_max_in_flight: int | None = None

    def decisions(self) -> pd.DataFrame:
        """One row per commuter: the chosen departure and how it was reached."""
        return pd.DataFrame(
            {
                "agent_id": result.agent_id,
                "depart_minute": result.output.depart_minute,
                "outcome": str(result.outcome),
                "reason": result.reason or result.output.reason,
            }
            for result in self.results
        )


def run_cognition_demo(
    n_agents: int = 20,
    *,
    brain: str | Brain | None = "rules",
    seed: int = 0,
    serve_fake_llm: bool = False,
    latency_s: float = 0.05,
    fault_rate: float = 0.0,
    ledger_path: str | None = None,
    max_concurrency: int | None = None,
    brain_options: BrainOptions | None = None,
) -> DemoReport:
    """Ask ``n_agents`` commuters for a departure time in one batch and report the ledger.

    Args:
        n_agents: Number of commuters (requests in the batch).
        brain: Brain setting (``"rules"``, ``"llm:<model>"``) or a :class:`Brain`.
        seed: Seed of the commuters' facts and of the rule policies.
        serve_fake_llm: Start the local OpenAI-compatible server and decide through the LLM
            brain (model ``openai/fake-model``) against it; ``brain`` is then ignored.
        latency_s: The fake server's latency per call.
        fault_rate: Share of the fake server's first answers that are faulty (malformed JSON,
            schema violation, HTTP 500).
        ledger_path: JSONL file for the ledger (in memory when ``None``).
        max_concurrency: LLM calls in flight at once (else ``$MLM_MAX_CONCURRENCY`` or 16).
        brain_options: Further :func:`make_brain` options (``api_base``, ``timeout_s``, ...);
            with ``serve_fake_llm`` the local server's address wins.
    """
    options = {"max_concurrency": max_concurrency, **dict(brain_options or {})}
    rng = np.random.default_rng(seed)
    requests = demo_requests(n_agents, rng)
    ledger = Ledger(ledger_path)
    if not serve_fake_llm:
        with make_brain(brain, rng=rng, ledger=ledger, **options) as chosen:
            results = chosen.decide_all(requests)
            return DemoReport(
                brain=chosen.name, results=results, summary=ledger.summary()
            )

    from mesa_llm_mobility.cognition.testing import FakeLLMServer  # noqa: PLC0415

    with (
        FakeLLMServer(demo_responder(fault_rate, seed), latency_s=latency_s) as server,
        make_brain(
            "llm:openai/fake-model",
            rng=rng,
            ledger=ledger,
            **({"timeout_s": 10.0} | _without_connection(options)),
            api_base=server.api_base,
            api_key="sk-local-fake",
        ) as llm,
    ):
        results = llm.decide_all(requests)
        return DemoReport(
            brain=llm.name,
            results=results,
            summary=ledger.summary(),
            server_requests=server.request_count,
            server_max_in_flight=server.max_in_flight,
        )


def _without_connection(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options less the server address and key (the local server's take their place)."""
    return {k: v for k, v in options.items() if k not in {"api_base", "api_key"}}
