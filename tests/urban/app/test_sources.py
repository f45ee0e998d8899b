from __future__ import annotations

from mesa_llm_mobility.cognition.testing import FakeLLMServer, Fault
from mesa_llm_mobility.urban.app import charts
from mesa_llm_mobility.urban.app.components import AppModel
from mesa_llm_mobility.urban.app.saved_run import SavedRun
from mesa_llm_mobility.urban.app.sources import LiveSource, ReplaySource


def test_llm_brain_outcomes_reach_the_decisions_panel(monkeypatch):
    """The app's LLM brain comes from MLM_* settings; a broken model shows as fallbacks."""
    with FakeLLMServer(lambda body: Fault.malformed_json()) as server:
        monkeypatch.setenv("MLM_API_BASE", server.api_base)
        monkeypatch.setenv("MLM_API_KEY", "sk-fake")
        model = AppModel(n_agents=10, brain="llm:openai/fake-model", seed=1)
        try:
            while model.minute < 5:  # everyone plans the day in the first minutes
                model.step()
            source = LiveSource(model)
            decisions = source.decisions()
            counts = charts.decision_counts(decisions)
            llm = source.llm_summary()
        finally:
            model.close()
    assert counts.loc["DailyPlan", "fallback"] == len(model.travellers) == 10
    assert server.request_count >= 10
    assert llm.loc["all", "decisions"] == len(
        decisions
    )  # every decision went to the model
    assert (
        LiveSource(AppModel(n_agents=10)).llm_summary().empty
    )  # rules: no ledger table


def test_replay_sources_cut_decisions_at_the_clock(finished_run):
    run = SavedRun.open(finished_run.run.path)
    early, late = ReplaySource(run, 6 * 60), ReplaySource(run, 2880)
    assert len(early.decisions()) < len(late.decisions()) == len(run.table("decisions"))
    assert (early.link_states()["time"] <= 6 * 60).all()
    assert early.llm_summary().empty  # a rule run has no ledger
    assert early.travellers() == sorted(run.personas)
