"""Soak and fault suite: whole runs through the LLM brain against the local server, with faults.

Every kind of failure a real provider shows is mixed into the answers (truncated JSON, schema
violations, 429 with and without Retry-After, 500, a hang past the timeout, a dropped
connection, a 401 that echoes the key), while the scripted answers are otherwise what a sensible traveller or pedestrian
would say, and answers come slowly (0-0.3 s, out of order). The runs must complete, resolve every decision (ok, repaired or fallback, each with
its reason), bracket the HTTP calls the server received between the calls answered and the calls
started (a call a timeout gave up on may or may not have reached the server: under load, some
never do), and write no secret anywhere.
The long version (the reference town for 3 days at 1 s latency) is
``benchmarks/bench_llm_soak.py``.
"""

from __future__ import annotations

import pandas as pd
import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    Fault,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.evacuation import scripted_llm as pedestrian
from mesa_llm_mobility.evacuation.model import EvacuationModel
from mesa_llm_mobility.memory.store import MIN_HNSW_CACHE_SIZE, MemoryStore
from mesa_llm_mobility.urban import scripted_llm as traveller
from tests.urban.runs import kpis, run_urban

pytestmark = pytest.mark.slow  # its module fixtures take more than ten seconds

KEY = "soak-suite-key-5e1d7c0a93"
RESOLVED = {"ok", "repaired", "fallback"}
FAULTS = provider_faults()  # the 400 is not retried: the rule policy answers


def _slow_sometimes(body):
    """Answers take 0-0.3 s, by the prompt: batches finish out of order, as real ones do."""
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.05


CLIENTS = ["direct", "litellm"]  # the OpenAI-compatible fast path, and litellm's


def _counting_unanswerable(responder):
    """``responder``, counting the hangs and dropped connections served (``.served``)."""

    def respond(body):
        reply = responder(body)
        if isinstance(reply, Fault) and reply.kind in ("hang", "reset"):
            respond.served += 1
        return reply

    respond.served = 0
    return respond


def _brain_options(server, client, ledger=None):
    options = {
        "client": client,
        "api_base": server.api_base,
        "api_key": KEY,
        "timeout_s": 1.0,  # the hang outlives it: retried, then the next attempt answers
        "max_attempts": 3,
        "max_total_s": 8.0,
        "max_concurrency": 16,
    }
    if ledger is not None:
        options["ledger"] = ledger
    return options


def _assert_every_record_resolved(records):
    assert records
    for record in records:
        assert record["outcome"] in RESOLVED, record
        if record["outcome"] == "fallback":
            assert record["reason"], record


def _assert_no_secret(folder):
    leaked = [
        str(path)
        for path in folder.rglob("*")
        if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    assert leaked == []


@pytest.fixture(scope="module", params=CLIENTS)
def urban_soak(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("soak") / "urban"
    # the reference town: 60 travellers, more than enough to evict indexes from a small cache
    config = {"days": 1, "seed": 4, "brain": "llm:openai/fake-model"}
    counted = _counting_unanswerable(with_faults(traveller.respond, FAULTS, every=4))
    with FakeLLMServer(counted, latency_s=_slow_sometimes) as server:
        result = run_urban(
            out,
            config,
            progress=False,
            brain_options=_brain_options(server, request.param),
        )
        received = server.request_count
    return result, received, counted.served


def test_urban_day_completes_with_every_decision_resolved(urban_soak):
    result, *_ = urban_soak
    assert result.finished
    decisions = result.run.read_table("decisions")
    assert not decisions.empty
    assert set(decisions["outcome"]) <= RESOLVED
    assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
    _assert_every_record_resolved(Ledger.read(result.run.ledger_path))
    trips = result.run.read_table("trips")
    assert len(trips) > 0


def test_urban_summary_brackets_the_servers_count(urban_soak):
    result, received, unanswerable = urban_soak
    llm = kpis(result)["llm"].loc["all"]
    records = Ledger.read(result.run.ledger_path)
    assert llm["http_answered"] <= received <= llm["http_calls"]
    # every call was answered but those of the hangs and dropped connections
    assert received - llm["http_answered"] >= unanswerable > 0
    assert llm["decisions"] == len(records) == len(result.run.read_table("decisions"))
    assert llm["repairs"] > 0  # truncated JSON and schema violations were re-prompted
    assert llm["ok"] + llm["repaired"] + llm["fallback"] == llm["decisions"]
    assert llm["fallback"] > 0  # the 400s
    # transport faults cost retries: more calls than decisions plus repairs
    assert llm["http_calls"] > llm["decisions"] + llm["repairs"]


def test_urban_run_writes_no_secret(urban_soak):
    result, *_ = urban_soak
    _assert_no_secret(result.run.path)


def test_urban_memories_stay_queryable_when_their_indexes_are_evicted(urban_soak):
    """Reopened with the smallest index cache, every traveller's memories answer twice."""
    result, *_ = urban_soak
    store = MemoryStore.open(
        result.run.memory_dir,
        embedding="auto",  # the embedding the run was built with (MiniLM by default)
        hnsw_cache_size=MIN_HNSW_CACHE_SIZE,
    )
    try:
        agents = store.agent_ids()
        assert len(agents) >= 60

        def query_all():
            return {
                agent: [
                    hit.node.id
                    for hit in store.stream(agent).retrieve(
                        2000, text="travel plan congestion", k=5, touch=False
                    )
                ]
                for agent in agents
            }

        first = query_all()
        assert all(first.values())
        assert query_all() == first  # evicted indexes came back from disk, whole
    finally:
        store.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_evacuation_run_completes_with_every_decision_resolved(tmp_path, client):
    ledger_path = tmp_path / "ledger.jsonl"
    with FakeLLMServer(
        with_faults(pedestrian.respond, FAULTS, every=5), latency_s=_slow_sometimes
    ) as server:
        model = EvacuationModel(
            composition={"average": 6},
            rng=1,
            brain="llm:openai/fake-model",
            brain_options=_brain_options(server, client, ledger=ledger_path),
            time_limit_s=6,
        )
        model.run()
        received = server.request_count
        model.brain.close()
    decisions = model.decisions_frame()
    assert not decisions.empty
    # the paper's rejection semantics: an invalid decision is rejected (the pedestrian keeps
    # its plan and is told why); memory revisions are repaired or written by the templates
    assert set(decisions["outcome"]) <= RESOLVED | {"rejected"}
    unresolved = decisions[decisions["outcome"].isin(["fallback", "rejected"])]
    assert unresolved["reason"].notna().all()
    records = Ledger.read(ledger_path)
    _assert_every_record_resolved([r for r in records if r["outcome"] != "rejected"])
    assert all(r["reason"] for r in records if r["outcome"] == "rejected")
    summary = Ledger.summarize_file(ledger_path).loc["all"]
    assert summary["http_answered"] <= received <= summary["http_calls"]
    assert summary["decisions"] == len(records)
    assert summary["ok"] > 0
    assert summary["repaired"] + summary["fallback"] + summary["rejected"] > 0
    assert len(model.memory_versions_frame()) > 0
    _assert_no_secret(tmp_path)
    assert isinstance(model.outcomes_frame(), pd.DataFrame)
