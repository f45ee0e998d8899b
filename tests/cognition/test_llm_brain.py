"""The LLM brain end to end: the real litellm client against the local OpenAI-compatible server."""

import asyncio
import json

import numpy as np
import pytest

from mesa_llm_mobility.cognition.demo import (
    DEPARTURE_CHOICE,
    demo_responder,
    facts_from_request,
)
from mesa_llm_mobility.cognition.kinds import DecisionRequest, Outcome, RulePolicyError
from mesa_llm_mobility.cognition.ledger import Ledger, ReplayIndex
from mesa_llm_mobility.cognition.llm_brain import LLMBrain
from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault, json_content

API_KEY = "sk-secret-never-logged-1234"
VALID = demo_responder()


CLIENT = {"name": "auto"}


@pytest.fixture(autouse=True, params=["direct", "litellm"])
def client(request):
    """Every test runs on both clients: the direct OpenAI-compatible one and litellm."""
    CLIENT["name"] = request.param
    yield request.param
    CLIENT["name"] = "auto"


def _brain(server, **options):
    options.setdefault("rng", np.random.default_rng(0))
    options.setdefault("client", CLIENT["name"])
    options.setdefault("timeout_s", 5.0)
    return LLMBrain(
        "openai/fake-model", api_base=server.api_base, api_key=API_KEY, **options
    )


def _fast_retries(brain):
    brain.policy = type(brain.policy)(
        max_attempts=brain.policy.max_attempts,
        max_total_s=brain.policy.max_total_s,
        timeout_s=brain.policy.timeout_s,
        backoff_base_s=0.01,
        backoff_max_s=0.05,
    )
    return brain


@pytest.mark.slow
def test_valid_answers_parse_into_the_schema(batch):
    with FakeLLMServer(VALID) as server, _brain(server) as brain:
        results = brain.decide_all(batch)
    assert [r.agent_id for r in results] == [request.agent_id for request in batch]
    assert all(r.outcome is Outcome.OK for r in results)
    for result in results:
        facts = result.request.context
        expected = max(
            facts.earliest_departure_minute,
            facts.work_start_minute - facts.expected_travel_minutes - 10,
        )
        assert result.output.depart_minute == expected
    assert server.request_count == len(batch)
    assert brain.ledger.summary().loc["all", "ok"] == len(batch)


@pytest.mark.parametrize(
    "fault",
    [
        Fault.malformed_json(),
        Fault.schema_violation(),
        Fault.http(429),
        Fault.rate_limited(None),
        Fault.http(500),
        Fault.reset(),
    ],
    ids=["malformed", "schema", "429", "429-no-retry-after", "500", "reset"],
)
def test_a_single_fault_is_overcome(request_for_ada, fault):
    with (
        FakeLLMServer(VALID, script=[fault]) as server,
        _fast_retries(_brain(server)) as brain,
    ):
        result = brain.decide(request_for_ada)
    record = brain.ledger.rows().iloc[0]
    assert server.request_count == 2
    if fault.kind in {
        "http",
        "reset",
    }:  # transport faults are retried, the answer was fine
        assert result.outcome is Outcome.OK
        assert result.attempts == 2
    else:  # content faults are repaired by re-prompting with the errors
        assert result.outcome is Outcome.REPAIRED
        # the rejected first round's errors stay on the result
        assert [r.stage for r in result.round_errors] == [
            "json" if fault.kind == "malformed_json" else "schema"
        ]
    assert record["outcome"] == str(result.outcome)


def test_repair_prompt_carries_the_exact_errors(request_for_ada):
    late = json_content({"depart_minute": 470, "reason": "late"})
    with FakeLLMServer(VALID, script=[late]) as server, _brain(server) as brain:
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.REPAIRED
    repair_messages = server.requests[1]["messages"]
    assert repair_messages[-2] == {"role": "assistant", "content": late}
    assert (
        "depart_minute 470 arrives after work starts at 480; leave at 450 or earlier"
        in repair_messages[-1]["content"]
    )


def test_persistent_invalid_answers_fall_back_to_rules(request_for_ada):
    with (
        FakeLLMServer(lambda body: Fault.schema_violation()) as server,
        _brain(server, max_repairs=2) as brain,
    ):
        result = brain.decide(request_for_ada)
    assert server.request_count == 3  # first answer + 2 repairs
    assert result.outcome is Outcome.FALLBACK
    assert "no valid answer after 2 repair(s)" in result.reason
    assert "field depart_minute: Field required" in result.reason
    expected_rule = DEPARTURE_CHOICE.rule_policy(
        request_for_ada.context, np.random.default_rng(0)
    )
    assert result.output == expected_rule


def test_a_hang_past_the_timeout_is_retried(request_for_ada):
    with (
        FakeLLMServer(VALID, script=[Fault.hang()]) as server,
        _brain(server, timeout_s=0.5) as brain,
    ):
        result = _fast_retries(brain).decide(request_for_ada)
    assert result.outcome is Outcome.OK
    assert result.attempts == 2
    assert server.request_count == 2


def test_always_429_falls_back_after_max_attempts(request_for_ada):
    with (
        FakeLLMServer(lambda body: Fault.http(429)) as server,
        _brain(server, max_attempts=3, max_total_s=30.0) as brain,
    ):
        result = _fast_retries(brain).decide(request_for_ada)
    assert server.request_count == 3
    assert result.outcome is Outcome.FALLBACK
    assert result.attempts == 3
    assert "gave up after 3 attempt(s)" in result.reason
    assert "RateLimitError" in result.reason


def test_retry_time_budget_bounds_attempts(request_for_ada):
    with (
        FakeLLMServer(lambda body: Fault.http(503), latency_s=0.2) as server,
        _brain(server, max_attempts=50, max_total_s=0.5, timeout_s=0.4) as brain,
    ):
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.FALLBACK
    assert (
        server.request_count < 50
    )  # the time budget, not the attempt budget, ended it


def test_non_retryable_errors_fall_back_at_once(request_for_ada):
    with (
        FakeLLMServer(lambda body: Fault.http(400, "bad request")) as server,
        # one mode alone: a 400 to a response format being probed steps down the modes
        _brain(server, structured_output="json_object") as brain,
    ):
        result = brain.decide(request_for_ada)
    assert server.request_count == 1
    assert result.outcome is Outcome.FALLBACK
    assert "BadRequestError" in result.reason


def test_calls_really_overlap(batch):
    with (
        FakeLLMServer(VALID, latency_s=0.3) as server,
        _brain(server, max_concurrency=8) as brain,
    ):
        brain.decide_all(batch)
    assert 1 < server.max_in_flight <= 8


def test_concurrency_limit_is_respected(batch):
    with (
        FakeLLMServer(VALID, latency_s=0.05) as server,
        _brain(server, max_concurrency=2) as brain,
    ):
        brain.decide_all(batch)
    assert server.max_in_flight <= 2


def test_replay_gives_identical_results_without_requests(tmp_path, batch):
    ledger_path = tmp_path / "ledger.jsonl"
    flaky = demo_responder(fault_rate=0.5, seed=1)
    with FakeLLMServer(
        lambda body: (
            flaky(body) if body["messages"][-1]["role"] == "user" else VALID(body)
        )
    ) as server:
        with _brain(server, ledger=Ledger(ledger_path), max_repairs=0) as original:
            first = original.decide_all(batch)
        assert {r.outcome for r in first} >= {Outcome.OK, Outcome.FALLBACK}
        server.reset_stats()
        with _brain(server, replay=ledger_path) as replaying:
            second = replaying.decide_all(batch)
        assert server.request_count == 0
    assert [r.output for r in second] == [r.output for r in first]
    assert [r.outcome for r in second] == [r.outcome for r in first]
    # the errors of every round come back too, checked again from the recorded answers
    assert [r.round_errors for r in second] == [r.round_errors for r in first]
    assert any(r.round_errors for r in first)
    assert all(r.replayed for r in second)
    assert replaying.ledger.summary().loc["all", "replayed"] == len(batch)


def test_replay_misses_go_to_the_model(tmp_path, request_for_ada, facts):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    with FakeLLMServer(VALID) as server:
        with _brain(server, ledger=ledger) as original:
            original.decide(request_for_ada)
        server.reset_stats()
        changed = DecisionRequest(
            DEPARTURE_CHOICE, "ada", facts.model_copy(update={"last_delay_minutes": 9})
        )
        with _brain(server, replay=ReplayIndex.from_ledger(ledger.path)) as replaying:
            results = replaying.decide_all([request_for_ada, changed])
    assert [r.replayed for r in results] == [True, False]
    assert server.request_count == 1


def test_fallbacks_are_deterministic_whatever_the_answer_order(batch):
    def fail_slowly(body):  # answers arrive in a different order than they were asked
        return Fault.schema_violation()

    outputs = []
    for latency in (
        lambda body: 0.0,
        lambda body: 0.01 * (facts_from_request(body).expected_travel_minutes % 7),
    ):
        with (
            FakeLLMServer(fail_slowly, latency_s=latency) as server,
            _brain(server, max_repairs=0) as brain,
        ):
            outputs.append([r.output for r in brain.decide_all(batch)])
    assert outputs[0] == outputs[1]


def test_the_api_key_never_reaches_the_ledger(tmp_path, batch):
    path = tmp_path / "ledger.jsonl"
    with (
        FakeLLMServer(
            VALID, script=[Fault.malformed_json(), Fault.http(500)]
        ) as server,
        _fast_retries(_brain(server, ledger=Ledger(path))) as brain,
    ):
        brain.decide_all(batch)
    text = path.read_text()
    assert API_KEY not in text
    assert "sk-" not in text
    assert "api_key" not in text
    record = json.loads(text.splitlines()[0])
    assert record["params"] == {"temperature": 0.0}
    # the local server takes every format: the kind's schema is asked for, and recorded
    assert record["response_mode"] == "json_schema"


def test_ledger_records_tokens_messages_and_rounds(request_for_ada):
    with (
        FakeLLMServer(VALID, script=[Fault.malformed_json()]) as server,
        _brain(server) as brain,
    ):
        brain.decide(request_for_ada, tags={"step": 3})
    row = brain.ledger.rows().iloc[0]
    assert row["prompt_tokens"] > 0
    assert row["completion_tokens"] > 0
    assert row["attempts"] == 2


def test_rule_policy_failure_in_fallback_is_raised_and_recorded(facts, broken_kind):
    request = DecisionRequest(broken_kind, "bob", facts)
    with (
        FakeLLMServer(lambda body: Fault.malformed_json()) as server,
        _brain(server, max_repairs=0) as brain,
        pytest.raises(RulePolicyError, match="'Broken' failed for agent 'bob'"),
    ):
        brain.decide(request)
    row = brain.ledger.rows().iloc[0]
    assert row["outcome"] == "error"


def test_async_api_works_inside_a_running_loop(batch):
    async def notebook_cell(brain):
        return await brain.adecide_all(batch)

    with FakeLLMServer(VALID) as server, _brain(server) as brain:
        results = asyncio.run(notebook_cell(brain))
    assert len(results) == len(batch)


def test_sync_api_works_while_a_loop_runs_in_this_thread(batch):
    async def jupyter_like(
        brain,
    ):  # Jupyter runs a loop in the main thread; sync code inside it must work
        return brain.decide_all(batch)

    with FakeLLMServer(VALID) as server, _brain(server) as brain:
        results = asyncio.run(jupyter_like(brain))
    assert all(r.outcome is Outcome.OK for r in results)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"max_repairs": -1}, "max_repairs"),
        ({"max_attempts": 0}, "max_attempts"),
    ],
)
def test_bad_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        LLMBrain("openai/x", **options)


def test_custom_model_price_is_recorded(request_for_ada):
    with (
        FakeLLMServer(VALID) as server,
        LLMBrain(
            "openai/self-hosted-priced",
            api_base=server.api_base,
            api_key=API_KEY,
            rng=0,
            cost_per_token=(1e-3, 2e-3),
        ) as brain,
    ):
        brain.decide(request_for_ada)
    row = brain.ledger.rows().iloc[0]
    expected = row["prompt_tokens"] * 1e-3 + row["completion_tokens"] * 2e-3
    assert row["cost_usd"] == pytest.approx(expected)
    assert row["cost_usd"] > 0


def test_retry_after_is_the_least_wait_before_a_retry(request_for_ada, monkeypatch):
    waits = []
    real_sleep = asyncio.sleep

    async def recording_sleep(seconds, *args, **kwargs):
        waits.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(
        "mesa_llm_mobility.cognition.transport.asyncio.sleep", recording_sleep
    )
    with (
        FakeLLMServer(VALID, script=[Fault.rate_limited(7.5)]) as server,
        _fast_retries(_brain(server, max_total_s=60)) as brain,
    ):
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.OK and server.request_count == 2
    # the announced wait, not the 0.05 s backoff cap (asyncio.sleep is patched for every
    # caller, litellm's own zero-second sleeps included)
    assert max(waits) == 7.5


def test_a_retry_after_past_the_budget_gives_up_at_once(request_for_ada):
    with (
        FakeLLMServer(VALID, script=[Fault.rate_limited(600)]) as server,
        _fast_retries(_brain(server, max_total_s=5)) as brain,
    ):
        result = brain.decide(request_for_ada)
    assert result.outcome is Outcome.FALLBACK and server.request_count == 1
    assert "RateLimitError" in result.reason
