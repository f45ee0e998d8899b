"""The four baselines on equal terms: valid stay points of exactly the held-out days.

The LLM baseline runs through the real LLM brain against the local server, with provider
faults, slow answers and idle gaps; the verifier's failures are counted by stage exactly as the
server broke them, and every fallback is recorded with its reason.
"""

from __future__ import annotations

import time

import pytest

from mesa_llm_mobility.cognition.ledger import Ledger
from mesa_llm_mobility.cognition.testing import (
    FakeLLMServer,
    Fault,
    provider_faults,
    with_faults,
)
from mesa_llm_mobility.trajectory import scripted_llm
from mesa_llm_mobility.trajectory.activities import ACTIVITIES
from mesa_llm_mobility.trajectory.baselines import (
    BASELINES,
    LLM_BASELINES,
    NEURAL_BASELINES,
    HistoricalChainModel,
    VerifiedTrajectoryModel,
    run_baseline,
)
from mesa_llm_mobility.trajectory.evidence import build_evidence
from mesa_llm_mobility.trajectory.staypoints import (
    STAY_COLUMNS,
    local_dates,
    validate_staypoints,
)

from .conftest import llm_options, slow_sometimes

KEY = "trajbench-suite-key-5d1a"
TRANSPORT_FAULTS = (
    Fault.rate_limited(0.05),
    Fault.http(500, "upstream failed"),
    Fault.hang(1.5),
    Fault.reset(),
)


@pytest.fixture(scope="module")
def ten(small_split):
    people = sorted(small_split.history["agent_id"].unique())[:10]
    keep = small_split.history["agent_id"].isin(people)
    held = small_split.held_out["agent_id"].isin(people)
    return (
        small_split.history[keep].reset_index(drop=True),
        small_split.held_out[held].reset_index(drop=True),
    )


def _dates(held_out):
    return sorted(set(local_dates(held_out)))


def _assert_valid_for(stays, history, held_out):
    assert list(stays.columns) == list(STAY_COLUMNS)
    validate_staypoints(stays)
    assert set(local_dates(stays)) == set(local_dates(held_out))
    assert set(stays["agent_id"]) == set(history["agent_id"])
    days = stays.groupby(["agent_id", local_dates(stays)]).ngroups
    assert days == history["agent_id"].nunique() * len(_dates(held_out))


OFFLINE = ("markov", "historical", "rules", "no_kinematics")


def test_every_baseline_is_offline_llm_or_neural():
    assert set(BASELINES) == {*OFFLINE, *LLM_BASELINES, *NEURAL_BASELINES}


@pytest.mark.parametrize("name", OFFLINE)
def test_offline_baselines_generate_valid_held_out_days(small_split, name):
    run = run_baseline(name, small_split.history, _dates(small_split.held_out), seed=2)
    _assert_valid_for(run.stays, small_split.history, small_split.held_out)
    assert run.wall_s > 0 and run.cpu_s >= 0 and run.ledger_summary is None
    if name == "markov":
        assert run.brain == "none" and run.decisions.empty
    else:
        assert run.workflow_success_rate == 1.0
        assert set(run.decisions["outcome"]) == {"ok"}
        assert len(run.verification) == len(run.decisions)
        assert (
            run.verification[["json", "schema", "domain", "transport"]].sum().sum() == 0
        )


def test_the_historical_baseline_copies_an_evidence_chain(small_split):
    history = small_split.history
    dates = _dates(small_split.held_out)
    run = run_baseline("historical", history, dates, seed=4)
    assert set(run.decisions["kind"]) == {
        "HistoricalChain",
        "VisitDuration",
    }  # per visit: the paper's
    book = build_evidence(history)
    generated = run.stays.groupby(["agent_id", local_dates(run.stays)])["activity"].agg(
        tuple
    )
    for (agent, date), chain in generated.items():
        evidence = book.individuals[agent]
        candidates = {
            tuple(ACTIVITIES[code] for code in evidence.chains[day])
            for day in evidence.evidence_days(date.weekday())
        }
        # the workflow may trim trailing visits that do not fit before midnight
        assert any(candidate[: len(chain)] == chain for candidate in candidates)
    # the rules baseline plans with its Markov model instead: not always a historical chain
    rules = run_baseline("rules", history, dates, seed=4)
    assert set(rules.decisions["kind"]) == {"ActivityChain", "VisitDuration"}


def test_the_same_seed_gives_the_same_days(small_split):
    dates = _dates(small_split.held_out)
    for name in ("markov", "historical"):
        first = run_baseline(name, small_split.history, dates, seed=9).stays
        second = run_baseline(name, small_split.history, dates, seed=9).stays
        assert first.equals(second)


def test_llm_baselines_need_an_llm_brain(small_split):
    for name in LLM_BASELINES:
        with pytest.raises(ValueError, match=f"the {name} baseline needs an LLM brain"):
            run_baseline(name, small_split.history, _dates(small_split.held_out))
    with pytest.raises(ValueError, match="unknown baseline"):
        run_baseline("gan", small_split.history, _dates(small_split.held_out))


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_llm_baseline_through_faults_and_slow_answers(tmp_path, ten):
    history, held_out = ten
    ledger = tmp_path / "ledger.jsonl"
    with FakeLLMServer(
        with_faults(scripted_llm.respond, provider_faults(hang_s=1.5), every=4),
        latency_s=slow_sometimes,
    ) as server:
        run = run_baseline(
            "llm",
            history,
            _dates(held_out)[:2],
            seed=3,
            brain="llm:openai/fake-model",
            brain_options=llm_options(server, ledger, KEY, temperature=0.9),
        )
        received = server.request_count
    _assert_valid_for(
        run.stays, history, held_out[local_dates(held_out).isin(_dates(held_out)[:2])]
    )
    assert run.workflow_success_rate == 1.0
    summary = Ledger.summarize_file(ledger).loc["all"]
    assert (
        summary["http_calls"] == received == run.ledger_summary.loc["all", "http_calls"]
    )
    assert summary["decisions"] == len(run.decisions)
    kinds = run.decisions["kind"].value_counts()
    assert kinds["ActivityChain"] == 2 * 10  # one chain per person-day
    # then one duration per visit of every chain (the paper's per-visit worker)
    assert kinds["VisitDuration"] == len(run.decisions) - 2 * 10 > 2 * 10
    fallbacks = run.decisions[run.decisions["outcome"] == "fallback"]
    assert len(fallbacks) > 0 and fallbacks["reason"].notna().all()  # the 401s
    assert summary["repairs"] > 0
    # malformed JSON and schema violations were counted at their stages
    assert run.verification[["json", "schema"]].sum().sum() > 0
    assert (run.verification["outcome"] == run.decisions["outcome"].to_numpy()).all()
    assert not any(
        KEY.encode() in path.read_bytes()
        for path in tmp_path.rglob("*")
        if path.is_file()
    )


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_verification_counts_what_the_server_broke_across_idle_gaps(tmp_path, ten):
    history, held_out = ten
    noise = scripted_llm.SamplingNoise(scripted_llm.respond, {0.9: (0.15, 0.2)})
    with FakeLLMServer(
        with_faults(noise, TRANSPORT_FAULTS, every=6), latency_s=slow_sometimes
    ) as server:
        model = VerifiedTrajectoryModel(
            history,
            dates=_dates(held_out)[:2],
            brain="llm:openai/fake-model",
            brain_options=llm_options(
                server, tmp_path / "ledger.jsonl", KEY, temperature=0.9
            ),
            rng=1,
        )
        with model:
            for _ in range(2):
                model.step()
                time.sleep(0.5)  # idle between days: pooled connections sit unused
    verification = model.verification_frame()
    assert noise.schema_broken > 0 and noise.constraint_broken > 0
    assert (
        verification["json"].sum() + verification["schema"].sum() == noise.schema_broken
    )
    assert verification["domain"].sum() == noise.constraint_broken
    assert (
        verification["transport"].sum() >= 0
    )  # retried hangs succeed or fail for good
    decisions = model.decisions_frame()
    fallbacks = decisions["outcome"] == "fallback"
    assert decisions.loc[fallbacks, "reason"].notna().all()
    workflow = model.workflow_frame()
    assert (
        workflow["chain_fallbacks"].sum() + workflow["duration_fallbacks"].sum()
        == fallbacks.sum()
    )
    assert model.workflow_success_rate() == 1.0


def test_historical_model_is_a_trajectory_model(small_split):
    model = HistoricalChainModel(small_split.history, days=1, rng=0)
    with model:
        model.run()
    assert len(model.individuals) == small_split.history["agent_id"].nunique()
    assert set(model.decisions_frame()["kind"]) == {
        "HistoricalChain",
        "VisitDuration",  # per visit: the paper's default
    }
