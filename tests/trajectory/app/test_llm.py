"""The app's generation through the real LLM brain, configured as a user would (``MLM_*``).

The local OpenAI-compatible server answers with the scripted planner, every third answer a
provider fault (truncated JSON, schema violations, 429s, a 500, a hang past the timeout, a
dropped connection, a 401), answers come slowly and out of order, and the page sits idle
between two generations (the user clicks again later). Every decision must resolve, the
session's ledger summary must count exactly the calls the server received, and the metric
table and the decisions table must be built from what came back.
"""

from __future__ import annotations

import time

import pytest

from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.trajectory import scripted_llm
from mesa_llm_mobility.trajectory.app.components import decision_counts
from mesa_llm_mobility.trajectory.app.session import SessionSettings, synthetic_session
from mesa_llm_mobility.trajectory.app.views import metrics_table
from mesa_llm_mobility.trajectory.metrics import evaluate
from mesa_llm_mobility.trajectory.staypoints import validate_staypoints

RESOLVED = {"ok", "repaired", "fallback"}
IDLE_GAP_S = 0.5


def _slow_sometimes(body):
    return (sum(map(ord, body["messages"][-1]["content"][-40:])) % 7) * 0.04


@pytest.fixture
def llm_settings(monkeypatch):
    with FakeLLMServer(
        with_faults(scripted_llm.respond, provider_faults(hang_s=1.5), every=3),
        latency_s=_slow_sometimes,
    ) as server:
        for name, value in {
            "MLM_API_BASE": server.api_base,
            "MLM_API_KEY": "sk-trajapp-local",
            "MLM_TIMEOUT_S": "1.0",
            "MLM_MAX_ATTEMPTS": "3",
            "MLM_MAX_TOTAL_S": "8",
        }.items():
            monkeypatch.setenv(name, value)
        settings = SessionSettings(
            individuals=10,
            weeks=2,
            hold_out=2,
            seed=2,
            brain="llm:openai/fake-model",
            temperature=0.9,
        )
        yield settings, server


def test_llm_sessions_resolve_every_decision_through_faults_and_idle_gaps(
    llm_settings,
):
    settings, server = llm_settings
    calls = 0
    for _ in range(2):  # a second generation after the page sat idle
        session = synthetic_session(settings)
        decisions = session.decisions
        assert set(decisions["outcome"]) <= RESOLVED
        assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
        assert len(decisions) == 2 * 10 * 2  # chain and day durations per generated day
        summary = session.llm_summary.loc["all"]
        assert summary["decisions"] == len(decisions)
        assert summary["http_calls"] == server.request_count - calls
        assert summary["repairs"] > 0 and summary["fallback"] > 0
        calls = server.request_count
        validate_staypoints(session.generated)
        counts = decision_counts(decisions).set_index("kind")
        assert counts.to_numpy().sum() == len(decisions)
        assert counts.loc["ActivityChain"].sum() == 10 * 2
        table = metrics_table(session).set_index("metric")["all individuals"]
        assert table.to_dict() == evaluate(session.held_out, session.generated)
        assert session.brain == "openai/fake-model"  # the brain's name
        time.sleep(IDLE_GAP_S)
