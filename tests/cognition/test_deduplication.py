"""Identical requests in a run are answered once, through the LLM brain and the local server."""

import numpy as np
import pytest
from pydantic import BaseModel

from mesa_llm_mobility.cognition.deduplication import AnswerMemo, group_identical
from mesa_llm_mobility.cognition.demo import demo_responder
from mesa_llm_mobility.cognition.kinds import DecisionKind, DecisionRequest, Outcome
from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault

VALID = demo_responder()


def _brain(server, client, path, **options):
    return LLMBrain(
        "openai/fake-model",
        api_base=server.api_base,
        api_key="sk-dedup",
        client=client,
        rng=np.random.default_rng(0),
        ledger=Ledger(path),
        **options,
    )


def _twins(request_for_ada, n):
    """``n`` agents asking exactly what Ada asks."""
    return [
        DecisionRequest(request_for_ada.kind, f"twin{i}", request_for_ada.context)
        for i in range(n)
    ]


def test_identical_requests_in_a_batch_cost_one_call(tmp_path, request_for_ada, client):
    path = tmp_path / "ledger.jsonl"
    with FakeLLMServer(VALID, latency_s=0.05) as server:
        brain = _brain(server, client, path)
        results = brain.decide_all(_twins(request_for_ada, 4))
        again = brain.decide_all(
            _twins(request_for_ada, 2)
        )  # a later batch: remembered
        calls = server.request_count
    brain.close()
    assert calls == 1
    assert [r.outcome for r in results + again] == [Outcome.OK] * 6
    assert len({r.output.depart_minute for r in results + again}) == 1
    records = Ledger.read(path)
    assert [r["deduplicated"] for r in records] == [False] + [True] * 5
    assert [r["attempts"] for r in records] == [1, 0, 0, 0, 0, 0]
    assert Ledger.summarize_file(path).loc["all", "http_calls"] == calls


def test_a_repaired_answer_is_shared_without_counting_its_repairs_twice(
    tmp_path, request_for_ada, client
):
    path = tmp_path / "ledger.jsonl"
    with FakeLLMServer(
        VALID, script=[Fault.malformed_json()], latency_s=0.02
    ) as server:
        brain = _brain(server, client, path)
        results = brain.decide_all(_twins(request_for_ada, 3))
        calls = server.request_count
    brain.close()
    assert calls == 2
    assert [r.outcome for r in results] == [Outcome.REPAIRED] * 3
    summary = Ledger.summarize_file(path).loc["all"]
    assert summary["repairs"] == 1 and summary["http_calls"] == 2


def test_a_failed_leader_leaves_each_twin_to_its_rule_policy(
    tmp_path, request_for_ada, client
):
    path = tmp_path / "ledger.jsonl"
    with FakeLLMServer(lambda body: Fault.schema_violation()) as server:
        brain = _brain(server, client, path, max_repairs=1)
        results = brain.decide_all(_twins(request_for_ada, 3))
        calls = server.request_count
    brain.close()
    assert calls == 2  # one conversation: the answer and one repair
    assert [r.outcome for r in results] == [Outcome.FALLBACK] * 3
    assert all("no valid answer" in r.reason for r in results)
    # nothing invalid is remembered: a later twin asks the model again
    with FakeLLMServer(VALID) as server:
        brain = _brain(server, client, tmp_path / "again.jsonl")
        brain.decide_all(_twins(request_for_ada, 1))
        assert server.request_count == 1
    brain.close()


class Hidden(BaseModel):
    shown: str
    hidden: int


class Answer(BaseModel):
    value: int


HIDDEN_KIND = DecisionKind(
    name="Hidden",
    context_type=Hidden,
    output_schema=Answer,
    render_prompt=lambda c: [{"role": "user", "content": c.shown}],
    rule_policy=lambda c, rng: Answer(value=c.hidden),
    validate=lambda c, out: [] if out.value <= c.hidden else [f"value > {c.hidden}"],
)


def test_same_messages_but_different_contexts_are_not_shared(tmp_path, client):
    requests = [
        DecisionRequest(HIDDEN_KIND, "a", Hidden(shown="same", hidden=1)),
        DecisionRequest(HIDDEN_KIND, "b", Hidden(shown="same", hidden=9)),
    ]
    with FakeLLMServer(lambda body: '{"value": 1}') as server:
        brain = _brain(server, client, tmp_path / "l.jsonl")
        brain.decide_all(requests)
        calls = server.request_count
    brain.close()
    assert calls == 2


def test_deduplication_can_be_switched_off(tmp_path, request_for_ada, client):
    with FakeLLMServer(VALID) as server:
        brain = _brain(server, client, tmp_path / "l.jsonl", deduplicate=False)
        brain.decide_all(_twins(request_for_ada, 3))
        calls = server.request_count
    brain.close()
    assert calls == 3


def test_grouping_and_the_bounded_memo():
    leaders, followers = group_identical(
        [(0, "k", 1), (1, "k", 1), (2, "k", 2), (3, "j", 1), (4, "k", 2)]
    )
    assert leaders == [0, 2, 3]
    assert followers == {1: 0, 4: 2}
    memo = AnswerMemo(size=2)
    for key in "abc":
        memo.put(key, None, key.upper())
    assert len(memo) == 2 and memo.get("a", None) is None
    assert memo.get("c", None) == "C" and memo.get("c", "other") is None
    with pytest.raises(ValueError, match="size must be >= 0"):
        AnswerMemo(size=-1)
