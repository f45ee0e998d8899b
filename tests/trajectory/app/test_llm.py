"""The app's generation through the real LLM brain, configured as a user would (``MLM_*``).

The local OpenAI-compatible server answers with the scripted planner, every third answer a
provider fault (truncated JSON, schema violations, 429s, a 500, a hang past the timeout, a
dropped connection, a 401), answers come slowly and out of order, and the page sits idle
between two generations (the second one chosen in the page: the LLM brain in the sidebar,
then Open / generate). Every decision must resolve, the session's ledger summary must count
exactly the calls the server received, and the metric table and the decisions and LLM tables
must be built from what came back.
"""

from __future__ import annotations

import time

import ipyvuetify as v
import pytest
import solara
import solara.server.starlette  # per-session reactive state, as under solara run
from solara.server import kernel, kernel_context

from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.trajectory import scripted_llm
from mesa_llm_mobility.trajectory.app import components
from mesa_llm_mobility.trajectory.app.components import decision_counts
from mesa_llm_mobility.trajectory.app.session import (
    SessionSettings,
    open_session,
    synthetic_session,
)
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


def _check(session, person_days: int) -> None:
    """One chain per person-day, then (the paper's default) one duration per visit."""
    decisions = session.decisions
    assert set(decisions["outcome"]) <= RESOLVED
    assert decisions.loc[decisions["outcome"] == "fallback", "reason"].notna().all()
    assert set(decisions["kind"]) == {"ActivityChain", "VisitDuration"}
    validate_staypoints(session.generated)
    counts = decision_counts(decisions).set_index("kind")
    assert counts.to_numpy().sum() == len(decisions)
    assert counts.loc["ActivityChain"].sum() == person_days
    table = metrics_table(session).set_index("metric")["all individuals"]
    assert table.to_dict() == evaluate(session.held_out, session.generated)


@pytest.mark.slow
def test_llm_sessions_resolve_every_decision_through_faults_and_idle_gaps(
    llm_settings, monkeypatch
):
    settings, server = llm_settings
    session = synthetic_session(settings)
    _check(session, 10 * 2)  # 10 people, 2 held-out days
    summary = session.llm_summary.loc["all"]
    assert summary["decisions"] == len(session.decisions)
    assert summary["http_calls"] == server.request_count
    assert summary["repairs"] > 0 and summary["fallback"] > 0
    assert session.brain == "openai/fake-model"  # the brain's name
    calls = server.request_count

    time.sleep(IDLE_GAP_S)  # the page sat idle; then the user picks the LLM brain in it
    monkeypatch.setenv("MLM_BRAIN", settings.brain)
    monkeypatch.delenv("MLM_APP_RUN", raising=False)
    monkeypatch.delenv("MLM_APP_HISTORY", raising=False)
    made = []
    monkeypatch.setattr(
        components,
        "open_session",
        lambda path, chosen: made.append(open_session(path, chosen)) or made[-1],
    )
    context = kernel_context.VirtualKernelContext(
        id="llm", kernel=kernel.Kernel(), session_id="session-llm"
    )
    with context:
        app = solara.AppLayout(
            children=[components.Page()]
        )  # the sidebar needs the layout
        _, page = solara.render(app, handle_error=False)
        sliders = {w.label.split(":")[0]: w for w in page.find(v.Slider).widgets}
        sliders["Synthetic individuals"].v_model = 10
        sliders["Synthetic weeks"].v_model = 2
        sliders["Held-out days"].v_model = 2
        sliders["Seed"].v_model = 2
        page.find(v.Select, label="Brain").widget.v_model = settings.brain
        page.find(v.Btn, children=["Open / generate"]).widget.click()
        assert made[-1].brain == "openai/fake-model"
        _check(made[-1], 10 * 2)
        ledger = made[-1].llm_summary.loc["all"]
        assert ledger["http_calls"] == server.request_count - calls > 0
        shown = [w.unsafe_innerHTML for w in page.find(solara.widgets.HTML).widgets]
        assert any("http calls" in table for table in shown)  # headers wrap at spaces
        assert any("fallback" in table and "ActivityChain" in table for table in shown)
