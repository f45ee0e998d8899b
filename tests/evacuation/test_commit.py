"""Committing answers: a call that failed is no answer, so nothing of it reaches a mind.

Under the paper's rejection semantics an invalid answer is rejected and its reason is the
pedestrian's feedback on the next turn (and part of the turn its memory role remembers). A call
that failed (a dropped connection) is no answer of the model: its error text must appear in no
later prompt and no memory, while the model's own invalid answers are still fed back.
"""

from __future__ import annotations

import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, with_faults
from mesa_llm_mobility.evacuation import scripted_llm
from mesa_llm_mobility.evacuation.model import EvacuationModel

INFRASTRUCTURE_WORDS = (
    "transport",
    "no answer",
    "ServerDisconnected",
    "ClientOSError",
    "Connection",
    "gave up",
    "HTTP",
)


@pytest.mark.slow
def test_transport_failures_reach_no_prompt_and_no_memory(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    # every third request loses its connection (not retried: max_attempts 1); the scripted
    # pedestrian also names an unoffered route now and then (rejected: the model's own error)
    responder = with_faults(
        scripted_llm.with_unoffered_routes(scripted_llm.respond, every=4),
        (Fault.reset(),),
        every=3,
    )
    with FakeLLMServer(responder) as server:
        model = EvacuationModel(
            composition={"average": 4},
            rng=3,
            brain="llm:openai/fake-model",
            brain_options={
                "api_base": server.api_base,
                "api_key": "sk-commit-local",
                "timeout_s": 2.0,
                "max_attempts": 1,
                "ledger": ledger,
            },
            time_limit_s=10,
        )
        model.run()
        bodies = server.requests
        model.close()
    records = Ledger.read(ledger)
    failed = [r for r in records if r["rounds"] and r["rounds"][-1]["raw"] is None]
    invalid = [
        r
        for r in records
        if r["outcome"] == "rejected" and r["rounds"][-1]["raw"] is not None
    ]
    assert failed and invalid  # both cases happened
    prompts = "\n".join(
        str(message["content"]) for body in bodies for message in body["messages"]
    )
    assert "was not offered" in prompts  # the model's own errors are fed back
    for word in INFRASTRUCTURE_WORDS:
        assert word not in prompts, word
    memories = "\n".join(model.memory_versions_frame()["memory"])
    assert memories
    for word in INFRASTRUCTURE_WORDS:
        assert word not in memories, word
