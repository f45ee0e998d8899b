"""The orchestrator and duration kinds through the real LLM brain, against the local server.

Every kind of provider failure is mixed into the answers (truncated JSON, schema violations,
429s, a 500, a hang past the timeout, a dropped connection, a 401), answers come slowly and out
of order (0-0.3 s by prompt), and the model sits idle between days. Every decision must resolve
(ok, repaired or fallback with its reason), the ledger must count exactly the HTTP calls the
server received, the workflow must ground every visit, and no key may be written anywhere.
"""

from __future__ import annotations

import ast
import time

import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.trajectory import scripted_llm
from mesa_llm_mobility.trajectory.model import TrajectoryModel
from mesa_llm_mobility.trajectory.staypoints import validate_staypoints

from .conftest import assert_days_like_history, llm_options, slow_sometimes

KEY = "trajectory-suite-key-83c1f2"
RESOLVED = {"ok", "repaired", "fallback"}
IDLE_GAP_S = 0.5


def _run(tmp_path, history, durations, days=2):
    ledger_path = tmp_path / "ledger.jsonl"
    with FakeLLMServer(
        with_faults(scripted_llm.respond, provider_faults(hang_s=1.5), every=4),
        latency_s=slow_sometimes,
    ) as server:
        model = TrajectoryModel(
            history,
            days=days,
            durations=durations,
            brain="llm:openai/fake-model",
            brain_options=llm_options(
                server, Ledger(ledger_path), KEY, temperature=0.9
            ),
            rng=5,
        )
        with model:
            for _ in range(days):
                model.step()
                time.sleep(
                    IDLE_GAP_S
                )  # idle between days: pooled connections sit unused
        received = server.request_count
    return model, ledger_path, received


@pytest.fixture(scope="module")
def history(small_split):
    # ten individuals keep the suite short; their peers are among them
    people = sorted(small_split.history["agent_id"].unique())[:10]
    return small_split.history[
        small_split.history["agent_id"].isin(people)
    ].reset_index(drop=True)


@pytest.mark.slow
@pytest.mark.parametrize("durations", ["day", "visit"])
def test_llm_days_resolve_every_decision_and_ground_every_visit(
    tmp_path, history, durations
):
    days = 2 if durations == "day" else 1
    model, ledger_path, received = _run(tmp_path, history, durations, days)
    decisions = model.decisions_frame()
    assert set(decisions["outcome"]) <= RESOLVED
    assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
    records = Ledger.read(ledger_path)
    assert len(records) == len(decisions)
    assert all(record["outcome"] in RESOLVED for record in records)
    summary = Ledger.summarize_file(ledger_path).loc["all"]
    assert summary["http_calls"] == received
    assert (
        summary["repairs"] > 0 and summary["fallback"] > 0
    )  # faults were repaired, 401s fell back
    assert model.workflow_success_rate() == 1.0
    generated = model.trajectories_frame()
    validate_staypoints(generated)
    workflow = model.workflow_frame()
    assert (
        workflow["chain_fallbacks"].sum() + workflow["duration_fallbacks"].sum()
        == (decisions["outcome"] == "fallback").sum()
    )
    kinds = set(decisions["kind"])
    assert kinds == (
        {"ActivityChain", "DayDurations"}
        if durations == "day"
        else {"ActivityChain", "VisitDuration"}
    )
    if durations == "day":  # two LLM decisions per trajectory
        assert len(decisions) == 2 * 10 * days
    leaked = [
        path
        for path in tmp_path.rglob("*")
        if path.is_file() and KEY.encode() in path.read_bytes()
    ]
    assert leaked == []


def test_llm_chains_follow_the_exemplars(tmp_path, history):
    _model, ledger_path, _ = _run(tmp_path, history, "day", days=1)
    records = [
        record
        for record in Ledger.read(ledger_path)
        if record["kind"] == "ActivityChain"
    ]
    answered = [record for record in records if record["outcome"] == "ok"]
    assert answered
    for record in answered:
        prompt = record["messages"][-1]["content"]
        assert "Exemplar chains" in prompt and "use only these activities" in prompt
        first = prompt.split("\n1. ", 1)[1].split("\n", 1)[0]
        assert record["result"]["activities"] == ast.literal_eval(first)


@pytest.mark.slow
@pytest.mark.parametrize("durations", ["day", "visit"])
def test_llm_days_end_at_home_at_midnight_with_the_history_visit_counts(
    tmp_path, history, durations
):
    """Faults, slow answers and idle gaps: days still end at Home at midnight."""
    model, _, _ = _run(tmp_path, history, durations, days=2)
    decisions = model.decisions_frame()
    assert (decisions["outcome"] == "fallback").any()  # both paths were taken
    assert (decisions["outcome"] != "fallback").any()
    assert_days_like_history(model.trajectories_frame(), history, mean_tolerance=1.0)
