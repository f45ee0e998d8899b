import numpy as np
import pytest

from mesa_llm_mobility.cognition.demo import (
    CommuteFacts,
    demo_requests,
    departure_rule_policy,
    run_cognition_demo,
    validate_departure,
)


def test_rule_policy_output_is_always_valid():
    rng = np.random.default_rng(0)
    for request in demo_requests(200, rng):
        decision = departure_rule_policy(request.context, rng)
        assert validate_departure(request.context, decision) == []


def test_rule_policy_keeps_the_margin():
    facts = CommuteFacts(
        name="Bo",
        work_start_minute=540,
        expected_travel_minutes=40,
        last_delay_minutes=12,
        earliest_departure_minute=360,
    )
    depart = departure_rule_policy(facts, np.random.default_rng(1)).depart_minute
    assert 540 - 40 - 12 - 10 <= depart <= 540 - 40 - 12


def test_demo_needs_agents():
    with pytest.raises(ValueError, match="n_agents must be >= 1"):
        demo_requests(0, np.random.default_rng(0))


def test_rule_demo_runs_offline():
    report = run_cognition_demo(15, seed=3)
    assert report.brain == "rules"
    assert len(report.decisions()) == 15
    assert report.summary.loc["DepartureChoice", "ok"] == 15


def test_fake_llm_demo_shows_repairs(tmp_path):
    report = run_cognition_demo(
        30,
        serve_fake_llm=True,
        fault_rate=0.5,
        latency_s=0.0,
        ledger_path=str(tmp_path / "l.jsonl"),
    )
    summary = report.summary.loc["DepartureChoice"]
    assert summary["decisions"] == 30
    assert summary["http_calls"] == report.server_requests  # every request counted
    assert summary["repaired"] > 0
    assert summary["ok"] + summary["repaired"] + summary["fallback"] == 30
    assert report.server_requests >= 30
    assert (tmp_path / "l.jsonl").exists()
    assert set(report.decisions()["outcome"]) <= {"ok", "repaired", "fallback"}
